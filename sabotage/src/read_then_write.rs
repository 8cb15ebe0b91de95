//! A lease store whose take (or renew) is a read and then a write: two
//! commands, not one atomic script. One at a time it keeps the contract;
//! interleaved with another take between its read and its write, it grants
//! two holders (a take), or renews a lease a take already found expired and
//! took over (a renew). `conformance.lease.take-races` must catch both.

use async_trait::async_trait;
use harness::contract::{Call, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use redis::aio::MultiplexedConnection;
use stores::redis::Keys;
use stores::redis::RedisStoreFactory;

use crate::conn::{self, refused};
use redis::Script;

/// Reads server time and the record in one read-only script.
const READ: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expires_at', 'released')
return {now, rec[1] or false, rec[2] or false, rec[3] or false, rec[4] or false}
";

/// Which operation is split into a read and a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    Take,
    Renew,
}

/// The built-in Redis store with a non-atomic `lease.take` (or `lease.renew`).
pub struct ReadThenWriteLease {
    inner: RedisStoreFactory,
    split: Split,
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
            split: Split::Take,
            random_tag: false,
        }
    }

    /// Wraps the built-in store; only `lease.renew` changes: it reads the
    /// lease, then sets the new expiry in a second command.
    pub fn renew(inner: RedisStoreFactory) -> Self {
        ReadThenWriteLease {
            inner,
            split: Split::Renew,
            random_tag: false,
        }
    }

    /// The same store, also non-deterministic: each read carries a random tag.
    pub fn nondeterministic(inner: RedisStoreFactory) -> Self {
        ReadThenWriteLease {
            inner,
            split: Split::Take,
            random_tag: true,
        }
    }
}

struct Client {
    split: Split,
    random_tag: bool,
    inner: Box<dyn StoreClient>,
    conn: MultiplexedConnection,
    keys: Keys,
    read: Script,
}

/// What the read saw: server now, and the record's holder, epoch, expiry and
/// released flag.
type Seen = (
    i64,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

impl Client {
    /// Command 1: the read of server time and the record.
    async fn read(&mut self, key: &str) -> Result<Seen, StoreError> {
        self.read
            .key(key)
            .arg(if self.random_tag {
                rand::random::<u32>()
            } else {
                0
            })
            .invoke_async(&mut self.conn)
            .await
            .map_err(refused)
    }

    async fn renew(
        &mut self,
        tree: &str,
        holder: &str,
        epoch: i64,
        ttl_ms: i64,
    ) -> Result<Reply, StoreError> {
        let key = self.keys.lease(tree);
        let (now, rec_holder, rec_epoch, expires, released) = self.read(&key).await?;
        let live = released.as_deref() != Some("1") && expires.is_some_and(|x| now < x);
        if !live {
            return Ok(Reply::Lost {
                holder: None,
                epoch: None,
            });
        }
        if rec_holder.as_deref() != Some(holder) || rec_epoch != Some(epoch) {
            return Ok(Reply::Lost {
                holder: rec_holder,
                epoch: rec_epoch,
            });
        }
        let expires_at_ms = now + ttl_ms;
        // Command 2: the write, decided on what command 1 saw (the lease may
        // have expired and been taken over in between).
        redis::cmd("HSET")
            .arg(&key)
            .arg("expires_at")
            .arg(expires_at_ms)
            .query_async::<()>(&mut self.conn)
            .await
            .map_err(refused)?;
        Ok(Reply::Renewed { expires_at_ms })
    }

    async fn take(&mut self, tree: &str, holder: &str, ttl_ms: i64) -> Result<Reply, StoreError> {
        let key = self.keys.lease(tree);
        let (now, rec_holder, epoch, expires, released) = self.read(&key).await?;
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
            .map_err(refused)?;
        Ok(Reply::Granted {
            epoch,
            expires_at_ms,
        })
    }
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match (self.split, Request::parse(call)) {
            (
                Split::Take,
                Ok(Request::LeaseTake {
                    tree,
                    holder,
                    ttl_ms,
                }),
            ) => self.take(&tree, &holder, ttl_ms).await,
            (
                Split::Renew,
                Ok(Request::LeaseRenew {
                    tree,
                    holder,
                    epoch,
                    ttl_ms,
                }),
            ) => self.renew(&tree, &holder, epoch, ttl_ms).await,
            _ => self.inner.call(call, clock_ms).await,
        }
    }
}

#[async_trait]
impl StoreFactory for ReadThenWriteLease {
    fn spec(&self) -> String {
        match self.split {
            Split::Take => "sabotage:read-then-write-take".into(),
            Split::Renew => "sabotage:read-then-write-renew".into(),
        }
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
                split: self.split,
                random_tag: self.random_tag,
            }),
        ))
    }
}
