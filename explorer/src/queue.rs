//! The child queue under the explorer: what its instances may do, the
//! requests they send, and the checker of their answers (pure: no world, no
//! I/O), as [`crate::judge`] is for leases.
//!
//! The ghost keeps what was acknowledged: saves, claims and completions,
//! each numbered in the order its answer came (`seq`). An answer is judged
//! only against what was acknowledged before its operation was invoked
//! (earlier in real time, so earlier in any linearization) and against what
//! was surely true at every server instant of its execution: an operation
//! of several commands takes effect at one of them, and a store may have
//! ordered concurrent operations either way.

use model::contract::{ChildState, ChildView, Reply, Request};
use model::history::instance_name;

use crate::property::Property;
use crate::state::{Op, State};
use crate::LEASE_MS;

pub(crate) use crate::queue_ghost::{ClaimGrant, SaveAck, CHILDREN};

/// A child's id.
pub(crate) fn child_name(k: u8) -> String {
    format!("c{k}")
}

/// A child's depth: the first saved is shallower than the two after it,
/// which tie.
fn depth_of(k: u8) -> i64 {
    i64::from(k > 0)
}

/// A child's payload.
fn payload_of(k: u8) -> String {
    format!("p{k}")
}

/// The child an id names, if it is one of the explored children.
fn child_of(name: &str) -> Option<u8> {
    (0..CHILDREN).find(|k| child_name(*k) == name)
}

/// A claim's length, in ms of server time.
pub(crate) const CLAIM_MS: i64 = LEASE_MS;

/// The operations idle instance `i` may start, in a fixed order: save the
/// first child no save was acknowledged for, claim (holding no claim) or
/// complete the claim it holds, and read the first child.
pub(crate) fn possible(state: &State, i: usize, out: &mut Vec<Op>) {
    if let Some(k) = (0..CHILDREN).find(|k| state.queue.saved[*k as usize].is_none()) {
        out.push(Op::Save(k));
    }
    match state.insts[i].claim {
        None => out.push(Op::Claim),
        Some(_) => out.push(Op::Complete),
    }
    out.push(Op::QueueRead);
}

/// The request instance `i` sends for queue operation `op` in `state`.
pub(crate) fn request(state: &State, i: usize, op: Op) -> Request {
    let instance = crate::state::holder(i).to_string();
    match op {
        Op::Save(k) => Request::QueueSave {
            child: child_name(k),
            depth: depth_of(k),
            payload: payload_of(k),
        },
        Op::Complete => {
            let (k, attempt) = state.insts[i].claim.unwrap_or((0, 0));
            Request::QueueComplete {
                child: child_name(k),
                instance,
                attempt,
            }
        }
        Op::QueueRead => Request::QueueRead {
            child: child_name(0),
        },
        _ => Request::QueueClaim {
            instance,
            claim_ttl_ms: CLAIM_MS,
        },
    }
}

/// The nearest future instant a claim's promise ends, or the store may
/// rightly stop holding one.
pub(crate) fn nearest_expiry(state: &State) -> Option<i64> {
    state
        .queue
        .claims
        .iter()
        .filter(|c| !c.completed)
        .flat_map(|c| [c.valid_until, c.may_hold_until])
        .chain(state.queue.unacked_claim_until)
        .filter(|t| *t > state.now)
        .min()
}

/// Whether another instance than `i` may change which child is claimable
/// now: a claim or a completion of another instance in flight, or a claim a
/// crash cut short that may still hold.
pub(crate) fn contended(state: &State, i: usize) -> bool {
    state
        .queue
        .unacked_claim_until
        .is_some_and(|t| t > state.now)
        || state.insts.iter().enumerate().any(|(j, o)| {
            j != i
                && !o.crashed
                && matches!(
                    o.pending.as_ref().map(|p| p.op),
                    Some(Op::Claim | Op::Complete)
                )
        })
}

/// Instance `i` crashes between two commands of its queue operation `op`:
/// what it was doing may hold on the store, though nobody was told.
pub(crate) fn crashed(next: &mut State, i: usize, op: Op) {
    let now = next.now;
    let q = &mut next.queue;
    match op {
        Op::Claim => {
            q.unacked_claim_until = q.unacked_claim_until.max(Some(now + CLAIM_MS));
        }
        Op::Complete => {
            if let Some((k, _)) = next.insts[i].claim {
                q.maybe_done[k as usize] = true;
            }
        }
        _ => {}
    }
    next.insts[i].claim = None;
}

/// Whether child `k` was surely claimable at every server instant from
/// `from` on, judged in `state` for an operation of instance `i` that was
/// invoked after `acked_before` acknowledgements and not contended: its
/// save acknowledged before, never done (nor maybe), no completion of it in
/// flight, and every claim of it ended by `from`.
fn surely_claimable(state: &State, k: u8, from: i64, acked_before: usize, i: usize) -> bool {
    let q = &state.queue;
    let idx = k as usize;
    q.saved[idx].as_ref().is_some_and(|s| s.seq < acked_before)
        && q.done[idx].is_none()
        && !q.maybe_done[idx]
        && q.claims
            .iter()
            .filter(|c| c.child == k)
            .all(|c| c.may_hold_until <= from)
        && q.unacked_claim_until.is_none_or(|t| t <= from)
        && !state.insts.iter().enumerate().any(|(j, o)| {
            j != i
                && o.claim.is_some_and(|(c, _)| c == k)
                && o.pending.as_ref().is_some_and(|p| p.op == Op::Complete)
        })
}

/// Whether child `a` surely comes before child `b` in claim order: deeper
/// first, then, at one depth, the earlier save — only when `a`'s save was
/// acknowledged before `b`'s was invoked. Then `a` was saved at a server
/// time no later than `b`, and at the same time earlier in save order, so
/// it waited longer or as long and was saved first. Saves that ran
/// together the store may have ordered either way.
fn precedes(state: &State, a: u8, b: u8) -> bool {
    let q = &state.queue;
    match depth_of(a).cmp(&depth_of(b)) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => match (&q.saved[a as usize], &q.saved[b as usize]) {
            (Some(x), Some(y)) => x.seq < y.after,
            _ => false,
        },
    }
}

/// Instance `i`'s queue operation `op` (sent as `req`) was answered `reply`
/// at server time `next.now`; it was invoked at server time `asked_at`,
/// after `acked_before` acknowledgements, and `contended` says whether
/// another instance could have changed what was claimable meanwhile.
/// Updates the instance's belief and the ghost, and records what the answer
/// breaks and the races it reaches.
pub(crate) fn answered(
    next: &mut State,
    i: usize,
    op: Op,
    reply: &Reply,
    asked_at: i64,
    invoked: crate::state::Invoked,
) {
    let acked_before = invoked.acked_before;
    let contended = invoked.contended;
    let now = next.now;
    let name = instance_name(i);
    let seq = next.queue.acks;
    if op == Op::Claim && matches!(reply, Reply::Claimed { .. } | Reply::Empty {}) {
        note_claim_races(next, i);
    }
    match (op, reply) {
        (Op::Save(k), Reply::Saved {} | Reply::Exists { .. }) => {
            next.queue.acks += 1;
            let slot = &mut next.queue.saved[k as usize];
            if slot.is_none() {
                *slot = Some(SaveAck {
                    invoked_at: asked_at,
                    seq,
                    after: acked_before,
                });
            }
        }
        (
            Op::Claim,
            Reply::Claimed {
                child,
                attempt,
                depth,
                payload,
            },
        ) => {
            let Some(k) = child_of(child) else {
                next.violate(
                    Property::QueueAnswered,
                    format!("instance {name}'s claim answered the child {child:?}, which no save asked for"),
                );
                return;
            };
            if (*depth, payload.as_str()) != (depth_of(k), payload_of(k).as_str()) {
                next.violate(
                    Property::QueueAnswered,
                    format!(
                        "instance {name}'s claim of {child} answered depth {depth} and payload {payload:?}, but {child} was saved with depth {} and payload {:?}",
                        depth_of(k),
                        payload_of(k)
                    ),
                );
            }
            next.queue.acks += 1;
            judge_claim(next, i, k, asked_at, acked_before, contended);
            next.queue.claims.push(ClaimGrant {
                instance: i,
                child: k,
                attempt: *attempt,
                valid_until: asked_at + CLAIM_MS,
                may_hold_until: now + CLAIM_MS,
                seq,
                after: acked_before,
                completed: false,
            });
            next.insts[i].claim = Some((k, *attempt));
        }
        (Op::Claim, Reply::Empty {}) if !contended => {
            if let Some(k) =
                (0..CHILDREN).find(|k| surely_claimable(next, *k, asked_at, acked_before, i))
            {
                next.violate(
                    Property::QueueNoSaveLost,
                    format!(
                        "instance {name}'s claim at server time {now} answered empty, but child {} was saved (acknowledged) and ready: never completed, every claim of it run out",
                        child_name(k)
                    ),
                );
            }
        }
        (Op::QueueRead, Reply::Child(view)) => judge_read(next, i, view.as_ref(), acked_before),
        (Op::Complete, reply) => {
            let belief = next.insts[i].claim;
            next.insts[i].claim = None;
            let Some((k, attempt)) = belief else { return };
            let ours = next
                .queue
                .claims
                .iter()
                .rposition(|c| c.instance == i && c.child == k && c.attempt == attempt);
            let racing_claim = next
                .insts
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && o.pending.as_ref().is_some_and(|p| p.op == Op::Claim));
            if let Some(c) = ours.map(|p| next.queue.claims[p].clone()) {
                if now == c.valid_until || now == c.may_hold_until {
                    let claimed_now = next
                        .queue
                        .last_claim
                        .is_some_and(|(j, t)| j != i && t == now);
                    if racing_claim || claimed_now {
                        next.queue.complete_race_reached = true;
                    }
                    next.queue.last_expiry_complete = Some((i, now));
                }
            }
            if !matches!(reply, Reply::Completed {}) {
                return;
            }
            next.queue.acks += 1;
            let Some(pos) = ours else { return };
            let c = next.queue.claims[pos].clone();
            // A newer claim of the child (asked for after this claim was
            // acknowledged), acknowledged before this completion was asked
            // for: the claim completed was stale.
            let superseded = next
                .queue
                .claims
                .iter()
                .any(|o| o.child == k && o.after > c.seq && o.seq < acked_before);
            if superseded {
                next.violate(
                    Property::QueueCompleteOnlyLive,
                    format!(
                        "instance {name}'s completion of {} (attempt {attempt}) was accepted after another claim of it had been granted",
                        child_name(k)
                    ),
                );
            } else if asked_at >= c.may_hold_until {
                next.violate(
                    Property::QueueCompleteOnlyLive,
                    format!(
                        "instance {name}'s completion of {} (attempt {attempt}) asked at server time {asked_at} was accepted, but its claim had run out at {} at the latest",
                        child_name(k),
                        c.may_hold_until
                    ),
                );
            }
            next.queue.claims[pos].completed = true;
            if next.queue.done[k as usize].is_none() {
                next.queue.done[k as usize] = Some(seq);
            }
            // A newer claim granted concurrently: in either order one of the
            // two broke the contract (a done child handed out, or a stale
            // claim completed).
            if let Some(o) = next
                .queue
                .claims
                .iter()
                .find(|o| o.child == k && o.after > c.seq && o.seq >= acked_before)
            {
                let who = instance_name(o.instance);
                next.violate(
                    Property::QueueDoneNeverClaimed,
                    format!(
                        "instance {name}'s completion of {} (attempt {attempt}) was accepted, and instance {who}'s claim of it (attempt {}) was granted while it ran: one of them came after the other",
                        child_name(k),
                        o.attempt
                    ),
                );
            }
        }
        _ => {}
    }
}

/// Instance `i`'s read of `c0` showed `view`: judged against what was
/// acknowledged before it was invoked (`acked_before`) and what may have
/// happened while it ran. A read that shows fields of different moments (a
/// record read in several commands while it changed) shows a child no
/// order of the operations explains.
fn judge_read(next: &mut State, i: usize, view: Option<&ChildView>, acked_before: usize) {
    let name = instance_name(i);
    let child = child_name(0);
    let q = &next.queue;
    let saved = q.saved[0].as_ref().is_some_and(|s| s.seq < acked_before);
    let done_before = q.done[0].is_some_and(|d| d < acked_before);
    // The newest claim of the child acknowledged before the read.
    let claimed_before = q
        .claims
        .iter()
        .filter(|c| c.child == 0 && c.seq < acked_before)
        .map(|c| c.attempt)
        .max();
    let may_be_done = q.done[0].is_some()
        || q.maybe_done[0]
        || next.insts.iter().any(|o| {
            o.claim.is_some_and(|(c, _)| c == 0)
                && o.pending.as_ref().is_some_and(|p| p.op == Op::Complete)
        });
    let why = match view {
        None if saved => {
            Some("its save was acknowledged before the read was asked for".to_string())
        }
        None => None,
        Some(v) => read_contradiction(v, done_before, claimed_before, may_be_done),
    };
    if let Some(why) = why {
        let shown = match view {
            None => "no such child".to_string(),
            Some(v) => format!(
                "it {}, claimer {}, attempt {}, depth {}",
                match v.state {
                    ChildState::Queued => "queued",
                    ChildState::Claimed => "claimed",
                    ChildState::Done => "done",
                },
                v.claimer.as_deref().unwrap_or("null"),
                v.attempt,
                v.depth
            ),
        };
        next.violate(
            Property::QueueAnswered,
            format!("instance {name}'s read of {child} showed {shown}, but {why}"),
        );
    }
}

/// What makes `v`, a read of `c0`, impossible, in words: `None` when some
/// order of the operations explains it.
fn read_contradiction(
    v: &ChildView,
    done_before: bool,
    claimed_before: Option<i64>,
    may_be_done: bool,
) -> Option<String> {
    if v.depth != depth_of(0) {
        return Some(format!("it was saved with depth {}", depth_of(0)));
    }
    match v.state {
        ChildState::Queued if v.attempt != 0 || v.claimer.is_some() => {
            return Some("a queued child was never claimed: attempt 0, no claimer".into())
        }
        ChildState::Claimed | ChildState::Done if v.attempt < 1 || v.claimer.is_none() => {
            return Some("a claimed or done child was claimed: attempt 1 or more, a claimer".into())
        }
        ChildState::Done if !may_be_done => {
            return Some("no completion of it was asked for".into())
        }
        _ => {}
    }
    if done_before && v.state != ChildState::Done {
        return Some("its completion was acknowledged before the read was asked for".into());
    }
    if let Some(attempt) = claimed_before {
        if v.state == ChildState::Queued || v.attempt < attempt {
            return Some(format!(
                "its claim of attempt {attempt} was acknowledged before the read was asked for, and a claimed child never goes back"
            ));
        }
    }
    None
}

/// The claim of child `k` instance `i` was granted: a done child, one held
/// by a live claim, or one that skips a child first in claim order breaks
/// the contract.
fn judge_claim(
    next: &mut State,
    i: usize,
    k: u8,
    asked_at: i64,
    acked_before: usize,
    contended: bool,
) {
    let now = next.now;
    let name = instance_name(i);
    let child = child_name(k);
    // Another instance's complete of this child in flight, or answered at
    // this instant, at its claim's expiry: the second race.
    let holder_completing = next.insts.iter().enumerate().any(|(j, o)| {
        j != i
            && o.claim.is_some_and(|(c, _)| c == k)
            && o.pending.as_ref().is_some_and(|p| p.op == Op::Complete)
    });
    if holder_completing
        && next.queue.claims.iter().any(|c| {
            c.child == k && !c.completed && (now == c.valid_until || now == c.may_hold_until)
        })
    {
        next.queue.complete_race_reached = true;
    }
    if let Some(done) = next.queue.done[k as usize].filter(|d| *d < acked_before) {
        let _ = done;
        next.violate(
            Property::QueueDoneNeverClaimed,
            format!("instance {name} was granted {child}, which had been completed (acknowledged) before it asked"),
        );
    }
    let live: Vec<String> = next
        .queue
        .claims
        .iter()
        .filter(|c| c.child == k && !c.completed && c.valid_until > now)
        .filter(|c| {
            // A claimer that asked to complete has stopped relying on it.
            !next.insts.get(c.instance).is_some_and(|o| {
                o.claim == Some((c.child, c.attempt))
                    && o.pending.as_ref().is_some_and(|p| p.op == Op::Complete)
            })
        })
        .map(|c| {
            format!(
                "{} (attempt {}, promised until {})",
                instance_name(c.instance),
                c.attempt,
                c.valid_until
            )
        })
        .collect();
    if !live.is_empty() {
        next.violate(
            Property::QueueOneClaimHolder,
            format!(
                "instance {name} was granted {child} at server time {now} while {} still held it",
                live.join(" and ")
            ),
        );
    }
    if !contended {
        if let Some(first) = (0..CHILDREN).find(|c| {
            *c != k
                && precedes(next, *c, k)
                && surely_claimable(next, *c, asked_at, acked_before, i)
        }) {
            let why = if depth_of(first) > depth_of(k) {
                format!(
                    "it is deeper (depth {} against {})",
                    depth_of(first),
                    depth_of(k)
                )
            } else {
                format!(
                    "both are at depth {} and its save was acknowledged before {child}'s was asked for, so it has waited longer",
                    depth_of(k)
                )
            };
            next.violate(
                Property::QueueClaimOrder,
                format!(
                    "instance {name}'s claim at server time {now} was granted {child}, but {} was ready and comes first in claim order: {why}",
                    child_name(first)
                ),
            );
        }
    }
}

/// Records the races instance `i`'s claim, answered now, took part in:
/// another instance's claim in flight or answered at the same instant with
/// at most one child ready (two claims for the last ready child), or a
/// completion answered at its claim's expiry at this instant (a claim
/// against a completion).
fn note_claim_races(next: &mut State, i: usize) {
    let now = next.now;
    let q = &next.queue;
    let other_claim = next
        .insts
        .iter()
        .enumerate()
        .any(|(j, o)| j != i && o.pending.as_ref().is_some_and(|p| p.op == Op::Claim))
        || q.last_claim.is_some_and(|(j, t)| j != i && t == now);
    let ready = (0..CHILDREN)
        .filter(|c| q.saved[*c as usize].is_some() && q.done[*c as usize].is_none())
        .count();
    let against_complete = q
        .last_expiry_complete
        .is_some_and(|(j, t)| j != i && t == now);
    if other_claim && ready == 1 {
        next.queue.claim_race_reached = true;
    }
    if against_complete {
        next.queue.complete_race_reached = true;
    }
    next.queue.last_claim = Some((i, now));
}

#[cfg(test)]
mod tests;
