//! A store that retries blindly: after an `unavailable` answer it sends the
//! same call once more and answers whatever that says, as client libraries
//! do by default. The bug it stands for: a retried `lease.take` whose first
//! attempt landed (only its reply was lost) finds the caller's own live
//! lease and answers `busy {holder: itself, epoch}`, an epoch no answered
//! operation granted; `faults.lease-linearizable` must catch it.

use async_trait::async_trait;
use harness::contract::{Call, ErrorKind, Reply, StoreError};
use harness::store::{DurableState, Hello, StoreClient, StoreFactory, StoreInfo};

/// `inner`, retrying every call once after an `unavailable` answer.
pub struct BlindRetry<F> {
    inner: F,
}

impl<F: StoreFactory> BlindRetry<F> {
    /// Wraps `inner`; only calls answered `unavailable` change.
    pub fn new(inner: F) -> Self {
        BlindRetry { inner }
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

#[async_trait]
impl<F: StoreFactory> StoreFactory for BlindRetry<F> {
    fn spec(&self) -> String {
        "sabotage:blind-retry".to_string()
    }

    fn keeps_state_in_redis(&self) -> bool {
        self.inner.keeps_state_in_redis()
    }

    async fn durable_state(&self, prefix: &str) -> Result<Option<DurableState>, StoreError> {
        self.inner.durable_state(prefix).await
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        Ok((info, Box::new(Client { inner })))
    }
}
