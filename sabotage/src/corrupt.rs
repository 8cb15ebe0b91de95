//! One wrong answer for every right one.

use harness::contract::{ChildState, ErrorKind, LeaseView, Reply, StoreError};

/// An answer the contract forbids where `outcome` was given to `op`: values
/// moved by one, outcomes swapped (a release answers `not_held` where it
/// released, and `released` where it held nothing), a refusal accepted.
/// Each is a meaningful answer of the operation, wrong only because of the
/// state, so the checks must follow the state to catch it.
pub fn corrupt(op: &str, outcome: Result<Reply, StoreError>) -> Result<Reply, StoreError> {
    let reply = match outcome {
        // A refused bad request that is accepted instead.
        Err(e) if e.kind == ErrorKind::BadRequest => return Ok(Reply::Kept {}),
        Err(e) => return Err(e),
        Ok(r) => r,
    };
    Ok(match reply {
        Reply::Granted {
            epoch,
            expires_at_ms,
        } => Reply::Granted {
            epoch,
            expires_at_ms: expires_at_ms + 1,
        },
        Reply::Busy {
            holder,
            epoch,
            expires_at_ms,
        } => Reply::Busy {
            holder,
            epoch: epoch + 1,
            expires_at_ms,
        },
        Reply::Renewed { expires_at_ms } => Reply::Renewed {
            expires_at_ms: expires_at_ms - 1,
        },
        Reply::Lost { .. } => Reply::Renewed { expires_at_ms: 0 },
        Reply::Released {} if op == "rate.release_slot" => Reply::Unknown {},
        Reply::Released {} => Reply::NotHeld {},
        Reply::NotHeld {} => Reply::Released {},
        Reply::Lease(None) => Reply::Lease(Some(LeaseView {
            holder: Some("ghost".into()),
            epoch: 1,
            expires_at_ms: Some(0),
            live: false,
        })),
        Reply::Lease(Some(mut v)) => {
            v.epoch += 1;
            Reply::Lease(Some(v))
        }
        Reply::Kept {} => Reply::Saved {},
        Reply::Executions(mut v) => {
            v.push("phantom-execution".into());
            Reply::Executions(v)
        }
        Reply::Saved {} => Reply::Exists {
            state: ChildState::Queued,
        },
        Reply::Exists { .. } => Reply::Saved {},
        Reply::Claimed {
            child,
            depth,
            payload,
            attempt,
        } => Reply::Claimed {
            child,
            depth,
            payload,
            attempt: attempt + 1,
        },
        Reply::Empty {} => Reply::Claimed {
            child: "phantom-child".into(),
            depth: 0,
            payload: String::new(),
            attempt: 1,
        },
        Reply::Completed {} => Reply::NotClaimer {
            claimer: None,
            attempt: None,
        },
        Reply::NotClaimer { .. } => Reply::Completed {},
        Reply::Child(None) => Reply::Child(Some(harness::contract::ChildView {
            state: ChildState::Queued,
            claimer: None,
            attempt: 0,
            depth: 0,
        })),
        Reply::Child(Some(mut v)) => {
            v.attempt += 1;
            Reply::Child(Some(v))
        }
        Reply::Acquired { .. } => Reply::Full { retry_at_ms: 0 },
        Reply::Full { retry_at_ms } => Reply::Full {
            retry_at_ms: retry_at_ms + 1,
        },
        Reply::Paused { until_ms } => Reply::Paused {
            until_ms: until_ms + 1,
        },
        Reply::Unknown {} => Reply::Released {},
        Reply::Allowed { remaining } => Reply::Allowed {
            remaining: remaining + 1,
        },
        Reply::Limited { retry_at_ms } => Reply::Limited {
            retry_at_ms: retry_at_ms - 1,
        },
        Reply::RateState {
            slots_in_use,
            paused_until_ms,
        } => Reply::RateState {
            slots_in_use: slots_in_use + 1,
            paused_until_ms,
        },
        // The fencing set: a fenced write that claims it landed, a landed one
        // that claims it was fenced, a repeat that claims it is the first.
        Reply::Applied {} | Reply::Begun {} => Reply::Fenced { epoch: 0 },
        Reply::Fenced { .. } if op == "call.begin" => Reply::Begun {},
        Reply::Fenced { .. } if op == "call.finish" => Reply::Finished {},
        Reply::Fenced { .. } => Reply::Applied {},
        Reply::Duplicate {} if op == "call.begin" => Reply::Begun {},
        Reply::Duplicate {} => Reply::Applied {},
        Reply::Finished {} => Reply::NotBegun {},
        Reply::AlreadyFinished { response } => Reply::AlreadyFinished {
            response: format!("{response}-corrupted"),
        },
        Reply::NotBegun {} => Reply::Finished {},
    })
}
