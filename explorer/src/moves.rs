//! What an instance sends for an operation, where a tick moves time, and
//! the recording of an answer: pure functions of a state, beneath every
//! world (the Redis one and the local one) that runs them.

use harness::contract::{Reply, Request, StoreError};

use crate::judge;
use crate::state::{Inst, Note, Op, State, Tick};
use crate::{LEASE_MS, TREE};

/// The request instance `i` sends for `op` invoked now in `state`.
pub fn request(state: &State, i: usize, op: Op) -> Request {
    request_as_invoked(state, i, op, state.ghost.len())
}

/// The request instance `i` sends for `op` in `state`, invoked when
/// `acked_before` grants had been acknowledged (an operation in flight
/// sends what it was invoked with).
pub fn request_as_invoked(state: &State, i: usize, op: Op, acked_before: usize) -> Request {
    let holder = crate::symmetry::holder(i).to_string();
    // A holder names its epoch; an instance holding nothing renews or
    // releases another's (`judge::stranger_epoch`), as a client with a
    // wrong token would.
    let epoch = state.insts[i]
        .held
        .or_else(|| crate::judge::stranger_epoch(state, i, acked_before))
        .unwrap_or(0);
    match op {
        Op::Take => Request::LeaseTake {
            tree: TREE.into(),
            holder,
            ttl_ms: LEASE_MS,
        },
        Op::Renew => Request::LeaseRenew {
            tree: TREE.into(),
            holder,
            epoch,
            ttl_ms: LEASE_MS,
        },
        Op::Release => Request::LeaseRelease {
            tree: TREE.into(),
            holder,
            epoch,
        },
        Op::Read => Request::LeaseRead { tree: TREE.into() },
        Op::Save(_) | Op::Claim | Op::Complete | Op::QueueRead => {
            crate::queue::request(state, i, op)
        }
        Op::Acquire | Op::ReleaseSlot | Op::Hit | Op::Pause | Op::RateRead => {
            crate::rate::request(state, i, op)
        }
    }
}

/// Records what the step that finished instance `i`'s operation did (for
/// counterexamples) and has the answer judged.
pub(crate) fn answered(
    next: &mut State,
    i: usize,
    op: Op,
    req: &Request,
    out: Result<Reply, StoreError>,
    commands: Vec<String>,
    invoked: judge::Invoked,
) {
    judge::answered(next, i, op, req, &out, invoked);
    next.note = Note {
        commands,
        answer: Some(out),
    };
}

/// Where a tick moves server time.
pub fn tick_target(state: &State, t: Tick) -> i64 {
    match t {
        Tick::NearestExpiry(d) => {
            nearest_expiry(state).map_or(state.now, |e| (e + d as i64).max(state.now))
        }
        Tick::HalfLease => state.now + LEASE_MS / 2,
        Tick::Lease => state.now + LEASE_MS,
        Tick::LongPause => state.now + 100 * LEASE_MS,
    }
}

/// The nearest future instant a promised lease ends, or the store may
/// rightly stop holding one.
pub fn nearest_expiry(state: &State) -> Option<i64> {
    state
        .ghost
        .iter()
        .filter(|g| !g.released)
        .flat_map(|g| [g.valid_until, g.may_hold_until])
        .filter(|t| *t > state.now)
        .chain(crate::queue::nearest_expiry(state))
        .chain(crate::rate::nearest_expiry(state))
        .min()
}

/// Which instances are idle (can start an operation).
pub fn idle(inst: &Inst) -> bool {
    !inst.crashed && inst.pending.is_none()
}
