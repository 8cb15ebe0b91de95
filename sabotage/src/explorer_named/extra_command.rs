//! The built-in Redis store with one extra command beside a lease
//! operation's script, on a connection of its own to the same URL (so
//! through the same gate, where the explorer schedules it as a step). Every
//! answer is still the built-in script's; only what goes over the wire
//! differs:
//!
//! - [`Extra::ReadBack`] reads the lease record (`HGETALL`) and its
//!   remaining time (`PTTL`) back after the script, the same bytes on every
//!   run, so each operation it names is three steps (after the script: the
//!   lease is still decided when it was asked for, which is what a holder
//!   counts from);
//! - [`Extra::WallClockStamp`] first publishes an event stamped with the
//!   machine's wall clock and a counter kept in process memory, so the same
//!   operation from the same state never sends the same command twice.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use harness::contract::{Call, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient};
use redis::aio::MultiplexedConnection;
use stores::redis::{Keys, RedisStoreFactory};

use crate::conn::{self, refused};
use crate::{ClientSabotage, Sabotaged};

/// What is sent ahead of each lease operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extra {
    /// `HGETALL` and `PTTL` of the operation's lease record after the
    /// script of these operations.
    ReadBack(&'static [&'static str]),
    /// `PUBLISH` of an event stamped with the wall clock and a process-local
    /// sequence number, before the script of every lease operation.
    WallClockStamp,
}

/// The built-in store with [`Extra`] ahead of (or after) every lease
/// operation.
pub(crate) type ExtraCommand = Sabotaged<RedisStoreFactory, Sends>;

/// What [`ExtraCommand`] sends, and its name.
pub(crate) struct Sends {
    extra: Extra,
    name: &'static str,
    /// Operations stamped so far by every instance of this process.
    sequence: Arc<AtomicU64>,
}

/// `inner` run as `sabotage:<name>`, sending `extra` too.
pub(crate) fn extra_command(
    inner: RedisStoreFactory,
    extra: Extra,
    name: &'static str,
) -> ExtraCommand {
    Sabotaged::wrapping(
        inner,
        Sends {
            extra,
            name,
            sequence: Arc::new(AtomicU64::new(0)),
        },
    )
}

struct Client {
    inner: Box<dyn StoreClient>,
    conn: MultiplexedConnection,
    keys: Keys,
    instance: String,
    extra: Extra,
    sequence: Arc<AtomicU64>,
}

/// The machine's wall clock in ms (0 if it reads before 1970).
fn wall_clock_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

impl Client {
    /// The extra command sent with `req`, if any (lease operations only).
    fn extra_for(&self, req: &Request) -> Option<Vec<redis::Cmd>> {
        let tree = match req {
            Request::LeaseTake { tree, .. }
            | Request::LeaseRenew { tree, .. }
            | Request::LeaseRelease { tree, .. }
            | Request::LeaseRead { tree } => tree,
            _ => return None,
        };
        Some(match self.extra {
            Extra::ReadBack(ops) if !ops.contains(&req.op()) => return None,
            Extra::ReadBack(_) => {
                let mut all = redis::cmd("HGETALL");
                all.arg(self.keys.lease(tree));
                let mut ttl = redis::cmd("PTTL");
                ttl.arg(self.keys.lease(tree));
                vec![all, ttl]
            }
            Extra::WallClockStamp => {
                let n = self.sequence.fetch_add(1, Ordering::SeqCst);
                let mut cmd = redis::cmd("PUBLISH");
                cmd.arg(self.keys.lease(&format!("{tree}:events")))
                    .arg(format!(
                        "{} {} #{n} at {}",
                        self.instance,
                        req.op(),
                        wall_clock_ms()
                    ));
                vec![cmd]
            }
        })
    }
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        let Some(cmds) = Request::parse(call).ok().and_then(|r| self.extra_for(&r)) else {
            return self.inner.call(call, clock_ms).await;
        };
        let after = matches!(self.extra, Extra::ReadBack(_));
        let mut reply = None;
        if after {
            reply = Some(self.inner.call(call, clock_ms).await?);
        }
        // Their replies are only logged, never used: the script decides.
        for cmd in cmds {
            cmd.query_async::<redis::Value>(&mut self.conn)
                .await
                .map_err(refused)?;
        }
        match reply {
            Some(reply) => Ok(reply),
            None => self.inner.call(call, clock_ms).await,
        }
    }
}

#[async_trait]
impl ClientSabotage for Sends {
    fn spec(&self) -> String {
        format!("sabotage:{}", self.name)
    }

    async fn wrap(
        &self,
        hello: &Hello,
        inner: Box<dyn StoreClient>,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        let conn = conn::open(&hello.redis_url, &[]).await?;
        Ok(Box::new(Client {
            inner,
            conn,
            keys: Keys::new(&hello.prefix),
            instance: hello.instance.clone(),
            extra: self.extra,
            sequence: self.sequence.clone(),
        }))
    }
}
