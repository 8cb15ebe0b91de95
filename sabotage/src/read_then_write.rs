//! A lease store whose take is a read and then a write: two commands, not
//! one atomic script. One at a time it keeps the contract; interleaved with
//! another take between its read and its write, it grants two holders.
//! `conformance.lease.take-races` must catch it.

use async_trait::async_trait;
use harness::contract::{Call, Reply, Request, StoreError};
use harness::store::redis::keys::Keys;
use harness::store::redis::RedisStoreFactory;
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use redis::aio::MultiplexedConnection;

use crate::conn::{self, unavailable};
use redis::Script;

/// Reads server time and the record in one read-only script.
const READ: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expires_at', 'released')
return {now, rec[1] or false, rec[2] or false, rec[3] or false, rec[4] or false}
";

/// The built-in Redis store with a non-atomic `lease.take`.
pub struct ReadThenWriteLease {
    inner: RedisStoreFactory,
    /// Tag every read with a random number: the store then sends different
    /// commands when an operation is re-run, which the explorer must report
    /// as non-determinism rather than guess.
    random_tag: bool,
}

impl ReadThenWriteLease {
    /// Wraps the built-in store; only `lease.take` changes.
    pub fn new(inner: RedisStoreFactory) -> Self {
        ReadThenWriteLease {
            inner,
            random_tag: false,
        }
    }

    /// The same store, also non-deterministic: each read carries a random tag.
    pub fn nondeterministic(inner: RedisStoreFactory) -> Self {
        ReadThenWriteLease {
            inner,
            random_tag: true,
        }
    }
}

struct Client {
    random_tag: bool,
    inner: Box<dyn StoreClient>,
    conn: MultiplexedConnection,
    keys: Keys,
    read: Script,
}

impl Client {
    async fn take(&mut self, tree: &str, holder: &str, ttl_ms: i64) -> Result<Reply, StoreError> {
        let key = self.keys.lease(tree);
        // Command 1: the read.
        let (now, rec_holder, epoch, expires, released): (
            i64,
            Option<String>,
            Option<i64>,
            Option<i64>,
            Option<String>,
        ) = self
            .read
            .key(&key)
            .arg(if self.random_tag {
                rand::random::<u32>()
            } else {
                0
            })
            .invoke_async(&mut self.conn)
            .await
            .map_err(unavailable)?;
        if let (Some(h), Some(e), Some(x)) = (&rec_holder, epoch, expires) {
            if released.as_deref() != Some("1") && now < x {
                return Ok(Reply::Busy {
                    holder: h.clone(),
                    epoch: e,
                    expires_at_ms: x,
                });
            }
        }
        let epoch = epoch.unwrap_or(0) + 1;
        let expires_at_ms = now + ttl_ms;
        // Command 2: the write, decided on what command 1 saw.
        redis::cmd("HSET")
            .arg(&key)
            .arg("holder")
            .arg(holder)
            .arg("epoch")
            .arg(epoch)
            .arg("expires_at")
            .arg(expires_at_ms)
            .arg("released")
            .arg("0")
            .query_async::<()>(&mut self.conn)
            .await
            .map_err(unavailable)?;
        Ok(Reply::Granted {
            epoch,
            expires_at_ms,
        })
    }
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match Request::parse(call) {
            Ok(Request::LeaseTake {
                tree,
                holder,
                ttl_ms,
            }) => self.take(&tree, &holder, ttl_ms).await,
            _ => self.inner.call(call, clock_ms).await,
        }
    }
}

#[async_trait]
impl StoreFactory for ReadThenWriteLease {
    fn spec(&self) -> String {
        "sabotage:read-then-write-take".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        let read = Script::new(READ);
        // Loaded now, so a take sends exactly two scheduled commands.
        let conn = conn::open(&hello.redis_url, &[&read]).await?;
        Ok((
            info,
            Box::new(Client {
                inner,
                conn,
                keys: Keys::new(&hello.prefix),
                read,
                random_tag: self.random_tag,
            }),
        ))
    }
}
