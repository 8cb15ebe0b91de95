//! A store that swallows "out of memory": when the server refuses a write
//! because it is full (`store_full`), it answers a success instead, as code
//! that treats every non-exception as success does. The bug it stands for:
//! acknowledged writes that never landed (a take answered `granted` with an
//! invented epoch, a child `saved` that is not queued);
//! `faults.full-server-refuses` and `faults.lease-linearizable` must catch it.

use harness::contract::{ErrorKind, Reply, Request};
use harness::store::StoreFactory;

use crate::sabotaged::{Sabotaged, SucceedOnError};

/// `inner`, with every `store_full` answer turned into a success.
pub type OomSwallowed<F> = Sabotaged<F, SucceedOnError>;

impl<F: StoreFactory> OomSwallowed<F> {
    /// Wraps `inner`; only answers `store_full` change.
    pub fn new(inner: F) -> Self {
        Sabotaged::wrapping(
            inner,
            SucceedOnError::new("sabotage:oom-swallowed", ErrorKind::StoreFull, invented),
        )
    }

    /// How many successes it invented so far.
    pub fn invented(&self) -> u64 {
        self.how.made_up()
    }
}

/// The success `req` would most plausibly have had, made up. `None` for an
/// operation with no success to invent (reads are never refused as full).
fn invented(req: &Request, clock_ms: i64, n: u64) -> Option<Reply> {
    Some(match req {
        // Epoch 1: what a fresh tree would get; the store never looked.
        Request::LeaseTake { ttl_ms, .. } => Reply::Granted {
            epoch: 1,
            expires_at_ms: clock_ms.saturating_add(*ttl_ms),
        },
        Request::LeaseRenew { ttl_ms, .. } => Reply::Renewed {
            expires_at_ms: clock_ms.saturating_add(*ttl_ms),
        },
        Request::LeaseRelease { .. } | Request::RateReleaseSlot { .. } => Reply::Released {},
        Request::LeaseKeepExecution { .. } => Reply::Kept {},
        Request::QueueSave { .. } => Reply::Saved {},
        Request::QueueClaim { .. } => Reply::Empty {},
        Request::QueueComplete { .. } => Reply::Completed {},
        Request::RateAcquireSlot { .. } => Reply::Acquired {
            slot: format!("oom-{n}"),
        },
        Request::RateHit { limit, .. } => Reply::Allowed {
            remaining: limit.saturating_sub(1).max(0),
        },
        Request::RatePause { until_ms, .. } => Reply::Paused {
            until_ms: *until_ms,
        },
        _ => return None,
    })
}
