//! `sabotage:queue-not-propagated`: the built-in Redis store with every
//! queue script keeping its writes out of the append-only file and the
//! replication stream (`redis.set_repl(redis.REPL_NONE)` before them).
//!
//! All three scripts, not the save alone: with only the save kept out, a
//! later claim (propagated) leaves half a record after the restart, which
//! the built-in cannot read and answers `unavailable`, and the crash suite
//! can then decide nothing. With all three out, the restarted server simply
//! has no child at all.

use async_trait::async_trait;
use harness::contract::{ErrorKind, StoreError};
use harness::store::redis::RedisStoreFactory;
use harness::store::{DurableState, Hello, StoreClient, StoreFactory, StoreInfo};

use crate::{LuaPatch, PatchError};

/// The built-in store with several [`LuaPatch`]es, each of its own script.
/// When one does not apply, every connect is refused with the reason
/// (`adapter_failed`), never the unpatched store judged in its place.
pub struct Patched {
    name: &'static str,
    store: Result<RedisStoreFactory, PatchError>,
}

impl Patched {
    /// `inner` with every one of `patches` applied, named `sabotage:<name>`.
    pub fn new(name: &'static str, patches: &[LuaPatch], inner: RedisStoreFactory) -> Self {
        let store = patches
            .iter()
            .try_fold(inner, |store, patch| patch.patch(store));
        Patched { name, store }
    }
}

#[async_trait]
impl StoreFactory for Patched {
    fn spec(&self) -> String {
        format!("sabotage:{}", self.name)
    }

    async fn durable_state(&self, prefix: &str) -> Result<Option<DurableState>, StoreError> {
        match &self.store {
            Ok(store) => store.durable_state(prefix).await,
            Err(_) => Ok(None),
        }
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        match &self.store {
            Ok(store) => store.connect(hello, clock_ms).await,
            Err(e) => Err(StoreError::new(
                ErrorKind::AdapterFailed,
                format!("sabotage:{} cannot be built: {e}", self.name),
            )),
        }
    }
}
