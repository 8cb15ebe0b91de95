//! A store that swallows "out of memory": when the server refuses a write
//! because it is full (`store_full`), it answers a success instead, as code
//! that treats every non-exception as success does. The bug it stands for:
//! acknowledged writes that never landed (a take answered `granted` with an
//! invented epoch, a child `saved` that is not queued);
//! `faults.full-server-refuses` and `faults.lease-linearizable` must catch it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use harness::contract::{Call, ErrorKind, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory};

use crate::sabotaged::{ClientSabotage, Sabotaged};

/// `inner`, with every `store_full` answer turned into a success.
pub type OomSwallowed<F> = Sabotaged<F, SwallowOom>;

/// The sabotage of [`OomSwallowed`]: invent a success for `store_full`,
/// counting the inventions across instances.
pub struct SwallowOom {
    invented: Arc<AtomicU64>,
}

impl<F: StoreFactory> OomSwallowed<F> {
    /// Wraps `inner`; only answers `store_full` change.
    pub fn new(inner: F) -> Self {
        Sabotaged::wrapping(
            inner,
            SwallowOom {
                invented: Arc::new(AtomicU64::new(0)),
            },
        )
    }

    /// How many successes it invented so far.
    pub fn invented(&self) -> u64 {
        self.how.invented.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ClientSabotage for SwallowOom {
    fn spec(&self) -> String {
        "sabotage:oom-swallowed".to_string()
    }

    async fn wrap(
        &self,
        _: &Hello,
        inner: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        Ok(Box::new(Client {
            inner,
            invented: self.invented.clone(),
        }))
    }
}

struct Client {
    inner: Box<dyn StoreClient>,
    invented: Arc<AtomicU64>,
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

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match self.inner.call(call, clock_ms).await {
            Err(e) if e.kind == ErrorKind::StoreFull => {
                let n = self.invented.fetch_add(1, Ordering::SeqCst);
                let made_up = Request::parse(call)
                    .ok()
                    .and_then(|req| invented(&req, clock_ms, n));
                match made_up {
                    Some(reply) => Ok(reply),
                    None => Err(e),
                }
            }
            other => other,
        }
    }
}
