//! A fail-open rate limiter: when its Redis call fails or times out
//! (`unavailable`: the outcome is unknown, the limiter may well have
//! refused), it grants the slot or the hit anyway, so that an outage of the
//! limiter never blocks the caller. The bug it stands for: whenever the
//! limiter's answer is lost, limits stop holding (a refused `full` or
//! `limited` turned into a grant); `faults.rate-bounds` must catch it.

use harness::contract::{ErrorKind, Reply, Request};
use harness::store::StoreFactory;

use crate::sabotaged::{Sabotaged, SucceedOnError};

/// `inner`, granting every rate acquire or hit it could not decide.
pub(crate) type FailOpen<F> = Sabotaged<F, SucceedOnError>;

/// `inner` failing open.
pub(crate) fn fail_open<F: StoreFactory>(inner: F) -> FailOpen<F> {
    Sabotaged::wrapping(
        inner,
        SucceedOnError::new(
            "sabotage:rate-fails-open",
            ErrorKind::Unavailable,
            let_through,
        ),
    )
}

/// The limiter could not be asked: let the caller through (the `n`-th
/// made-up slot is numbered so); any other call keeps its error.
fn let_through(req: &Request, _clock_ms: i64, n: u64) -> Option<Reply> {
    match req {
        Request::RateAcquireSlot { .. } => Some(Reply::Acquired {
            slot: format!("fail-open-{n}"),
        }),
        Request::RateHit { .. } => Some(Reply::Allowed { remaining: 0 }),
        _ => None,
    }
}
