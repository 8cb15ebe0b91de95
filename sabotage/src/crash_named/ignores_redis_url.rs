//! `sabotage:ignores-redis-url`: the built-in Redis store connected to a
//! server of its own (the library's default `localhost:6379`, here a
//! durable `redis-server` it starts on first use) instead of the server its
//! hello names. Every answer is right, but nothing it keeps lives on the
//! server the harness crashes, so while the crashed server is down it still
//! answers ok (`crash.down-server-unavailable`).

use async_trait::async_trait;
use harness::contract::{ErrorKind, StoreError};
use harness::server::{ManagedServer, ServerOptions};
use harness::store::{DurableState, Hello, StoreClient, StoreFactory, StoreInfo};
use stores::redis::RedisStoreFactory;
use tokio::sync::OnceCell;

/// The built-in store on a server of its own, whatever its hello names.
pub struct IgnoresRedisUrl {
    inner: RedisStoreFactory,
    /// Its own server, started by the first connect and stopped (with its
    /// data) when the factory is dropped.
    own: OnceCell<ManagedServer>,
}

impl IgnoresRedisUrl {
    /// `inner`, pointed at a server of its own.
    pub fn new(inner: RedisStoreFactory) -> Self {
        IgnoresRedisUrl {
            inner,
            own: OnceCell::new(),
        }
    }

    /// The URL of its own server, started if it is not yet.
    async fn own_url(&self) -> Result<String, StoreError> {
        let server = self
            .own
            .get_or_try_init(|| async {
                // Durable and on real time: the default server it "finds"
                // is a well-configured one, so its server checks pass.
                ManagedServer::start(ServerOptions::default().with_virtual_clock(false)).await
            })
            .await
            .map_err(|e| {
                StoreError::new(
                    ErrorKind::Unavailable,
                    format!("its own server did not start: {e}"),
                )
            })?;
        Ok(server.url())
    }
}

#[async_trait]
impl StoreFactory for IgnoresRedisUrl {
    fn spec(&self) -> String {
        "sabotage:ignores-redis-url".into()
    }

    async fn durable_state(&self, prefix: &str) -> Result<Option<DurableState>, StoreError> {
        self.inner.durable_state(prefix).await
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let mut hello = hello.clone();
        hello.redis_url = self.own_url().await?;
        self.inner.connect(&hello, clock_ms).await
    }
}
