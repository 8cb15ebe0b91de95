//! A store that retries blindly: after an `unavailable` answer it sends the
//! same call once more and answers whatever that says, as client libraries
//! do by default. The bug it stands for: a retried `lease.take` whose first
//! attempt landed (only its reply was lost) finds the caller's own live
//! lease and answers `busy {holder: itself, epoch}`, an epoch no answered
//! operation granted; `faults.lease-linearizable` must catch it.

use async_trait::async_trait;
use harness::contract::{Call, ErrorKind, Reply, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory};

use crate::sabotaged::{ClientSabotage, Sabotaged};

/// `inner`, retrying every call once after an `unavailable` answer.
pub type BlindRetry<F> = Sabotaged<F, RetryOnce>;

/// The sabotage of [`BlindRetry`]: retry once after `unavailable`.
pub struct RetryOnce;

impl<F: StoreFactory> BlindRetry<F> {
    /// Wraps `inner`; only calls answered `unavailable` change.
    pub fn new(inner: F) -> Self {
        Sabotaged::wrapping(inner, RetryOnce)
    }
}

#[async_trait]
impl ClientSabotage for RetryOnce {
    fn spec(&self) -> String {
        "sabotage:blind-retry".to_string()
    }

    async fn wrap(
        &self,
        _: &Hello,
        inner: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        Ok(Box::new(Client { inner }))
    }
}

struct Client {
    inner: Box<dyn StoreClient>,
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match self.inner.call(call, clock_ms).await {
            // The first attempt may have landed: retrying hides that.
            Err(e) if e.kind == ErrorKind::Unavailable => self.inner.call(call, clock_ms).await,
            other => other,
        }
    }
}
