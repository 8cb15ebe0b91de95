//! One factory for every sabotage that only changes what each instance's
//! client does: the store it wraps connects, validates its server and keeps
//! its state as always; [`ClientSabotage::wrap`] changes the client.

use async_trait::async_trait;
use harness::contract::StoreError;
use harness::store::{DurableState, Hello, StoreClient, StoreFactory, StoreInfo};

/// How a sabotage changes each instance's client, and its name.
#[async_trait]
pub trait ClientSabotage: Send + Sync {
    /// The `--store` spec it runs as, e.g. `sabotage:blind-retry`.
    fn spec(&self) -> String;

    /// The sabotaged client around `inner`, a connected client of the
    /// wrapped store, for the instance that said `hello` (a sabotage may
    /// open a connection of its own to `hello.redis_url`).
    async fn wrap(
        &self,
        hello: &Hello,
        inner: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError>;
}

/// `inner` with every instance's client changed by `how`; where it keeps
/// its state and its durable end state are `inner`'s.
pub struct Sabotaged<F, S> {
    pub(crate) inner: F,
    pub(crate) how: S,
}

impl<F: StoreFactory, S: ClientSabotage> Sabotaged<F, S> {
    /// `inner`, its clients changed by `how`.
    pub fn wrapping(inner: F, how: S) -> Self {
        Sabotaged { inner, how }
    }
}

#[async_trait]
impl<F: StoreFactory, S: ClientSabotage> StoreFactory for Sabotaged<F, S> {
    fn spec(&self) -> String {
        self.how.spec()
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
        Ok((info, self.how.wrap(hello, inner).await?))
    }
}
