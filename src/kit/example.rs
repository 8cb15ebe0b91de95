//! A whole lease store written on the kit, as a Rust author writes one: a
//! hash per tree on Redis, one Lua script per operation (each decides on
//! the server's `TIME`, atomically), kept executions in SQLite, the server
//! checked on connect. [`Certification`](crate::Certification) certifies
//! it in the crate's doc example and in `tests/library.rs`.
//!
//! Its [`Scripts`] are public so that a test can certify a variant (a take
//! split into a read and a write fails `conformance.lease.take-races`).

use std::path::PathBuf;

use async_trait::async_trait;
use redis::aio::MultiplexedConnection;

use super::{
    check_server, is_server_reply, operation_failure, redis_command_failure, KeptExecutions,
    LeaseView, Request,
};
use crate::StoreInfo;
use crate::{Call, Contract, ErrorKind, Hello, Reply, StoreClient, StoreError, StoreFactory};

/// Server time in ms, in front of every script.
const NOW: &str =
    "local t = redis.call('TIME')\nlocal now = t[1] * 1000 + math.floor(t[2] / 1000)\n";

/// The store's scripts: `KEYS[1]` is the tree's hash (holder, epoch,
/// expires_at, released), never deleted and with no TTL, so epochs only
/// grow; `now` is the server's time in ms.
#[derive(Debug, Clone, Copy)]
pub struct Scripts {
    /// `lease.take`, ARGV holder, ttl_ms: `busy` with the live lease, or
    /// `granted` with the new epoch and expiry.
    pub take: &'static str,
    /// `lease.renew`, ARGV holder, epoch, ttl_ms: `renewed` or `lost`.
    pub renew: &'static str,
    /// `lease.release`, ARGV holder, epoch: `released` or `not_held`.
    pub release: &'static str,
    /// `lease.read`: the record and whether it is live, or nothing.
    pub read: &'static str,
}

impl Default for Scripts {
    fn default() -> Self {
        Scripts {
            take: r"
local r = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expires_at', 'released')
if r[2] and r[4] ~= '1' and now < tonumber(r[3]) then return {'busy', r[1], r[2], r[3]} end
local epoch = string.format('%d', (tonumber(r[2]) or 0) + 1)
local expires = string.format('%d', now + ARGV[2])
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'epoch', epoch, 'expires_at', expires, 'released', '0')
return {'granted', epoch, expires}",
            renew: r"
local r = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expires_at', 'released')
if not (r[2] and r[4] ~= '1' and now < tonumber(r[3])) then return {'lost'} end
if r[1] ~= ARGV[1] or r[2] ~= ARGV[2] then return {'lost', r[1], r[2]} end
local expires = string.format('%d', now + ARGV[3])
redis.call('HSET', KEYS[1], 'expires_at', expires)
return {'renewed', expires}",
            release: r"
local r = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'released')
if r[2] and r[1] == ARGV[1] and r[2] == ARGV[2] and r[3] ~= '1' then
  redis.call('HSET', KEYS[1], 'released', '1')
  return {'released'}
end
return {'not_held'}",
            read: r"
local r = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expires_at', 'released')
if not r[2] then return {'none'} end
return {'lease', r[1], r[2], r[3], (r[4] ~= '1' and now < tonumber(r[3])) and '1' or '0'}",
        }
    }
}

/// The example lease store: [`LeaseStore::new`] with the SQLite file its
/// kept executions go to.
pub struct LeaseStore {
    kept_db: PathBuf,
    scripts: Scripts,
}

impl LeaseStore {
    /// The store, its kept executions in the SQLite file `kept_db`.
    pub fn new(kept_db: impl Into<PathBuf>) -> LeaseStore {
        LeaseStore {
            kept_db: kept_db.into(),
            scripts: Scripts::default(),
        }
    }

    /// The same store running `scripts` instead.
    pub fn with_scripts(self, scripts: Scripts) -> LeaseStore {
        LeaseStore { scripts, ..self }
    }
}

#[async_trait]
impl StoreFactory for LeaseStore {
    fn spec(&self) -> String {
        "rust:example-lease-store".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        _clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let client = redis::Client::open(hello.redis_url.as_str())
            .map_err(|e| StoreError::new(ErrorKind::BadRequest, format!("redis_url: {e}")))?;
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| redis_command_failure("connect", &e))?;
        check_server(&mut conn, hello.opt_out.as_deref()).await?;
        let s = self.scripts;
        let scripts = [s.take, s.renew, s.release, s.read]
            .map(|body| redis::Script::new(&format!("{NOW}{body}")));
        // Loaded now, so that every operation sends one `EVALSHA`.
        for script in &scripts {
            script
                .prepare_invoke()
                .load_async(&mut conn)
                .await
                .map_err(|e| redis_command_failure("SCRIPT LOAD", &e))?;
        }
        let info = StoreInfo {
            name: "example-lease-store".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            contracts: vec![Contract::Lease],
        };
        let kept = KeptExecutions::open(self.kept_db.clone(), &hello.prefix).await?;
        let prefix = hello.prefix.clone();
        Ok((
            info,
            Box::new(Client {
                client,
                conn: Some(conn),
                prefix,
                scripts,
                kept,
            }),
        ))
    }
}

/// One instance: its connection (none after one broke: the next operation
/// opens another), key prefix and scripts.
struct Client {
    client: redis::Client,
    conn: Option<MultiplexedConnection>,
    prefix: String,
    scripts: [redis::Script; 4],
    kept: KeptExecutions,
}

impl Client {
    /// Runs script `which` of operation `op` on `tree`'s hash: its
    /// reply's words. A server that restarted and forgot the script
    /// (`NOSCRIPT`) is sent it again; a connection that broke is dropped.
    async fn run(
        &mut self,
        op: &str,
        which: usize,
        tree: &str,
        args: &[String],
    ) -> Result<Vec<Option<String>>, StoreError> {
        let mut conn = match &self.conn {
            Some(conn) => conn.clone(),
            None => self
                .client
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| operation_failure(op, &e))?,
        };
        self.conn = Some(conn.clone());
        let mut invocation = self.scripts[which].key(format!("{}lease:{tree}", self.prefix));
        for a in args {
            invocation.arg(a);
        }
        invocation.invoke_async(&mut conn).await.map_err(|e| {
            if !is_server_reply(&e) {
                self.conn = None;
            }
            operation_failure(op, &e)
        })
    }
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, _clock_ms: i64) -> Result<Reply, StoreError> {
        let words = match Request::parse(call)? {
            Request::LeaseTake {
                tree,
                holder,
                ttl_ms,
            } => {
                self.run("lease.take", 0, &tree, &[holder, ttl_ms.to_string()])
                    .await?
            }
            Request::LeaseRenew {
                tree,
                holder,
                epoch,
                ttl_ms,
            } => {
                self.run(
                    "lease.renew",
                    1,
                    &tree,
                    &[holder, epoch.to_string(), ttl_ms.to_string()],
                )
                .await?
            }
            Request::LeaseRelease {
                tree,
                holder,
                epoch,
            } => {
                self.run("lease.release", 2, &tree, &[holder, epoch.to_string()])
                    .await?
            }
            Request::LeaseRead { tree } => self.run("lease.read", 3, &tree, &[]).await?,
            Request::LeaseKeepExecution { tree, execution } => {
                self.kept.keep(&tree, &execution).await?;
                return Ok(Reply::Kept {});
            }
            Request::LeaseKeptExecutions { tree } => {
                return Ok(Reply::Executions(self.kept.list(&tree).await?))
            }
            other => {
                return Err(StoreError::new(
                    ErrorKind::Unsupported,
                    format!("{}: a lease store only", other.op()),
                ))
            }
        };
        reply(&words).ok_or_else(|| {
            StoreError::new(
                ErrorKind::Unavailable,
                format!("a script answered {words:?}"),
            )
        })
    }
}

/// A script's words as the contract's reply.
fn reply(words: &[Option<String>]) -> Option<Reply> {
    let text = |i: usize| words.get(i).cloned().flatten();
    let int = |i: usize| text(i).and_then(|w| w.parse::<i64>().ok());
    Some(match text(0)?.as_str() {
        "granted" => Reply::Granted {
            epoch: int(1)?,
            expires_at_ms: int(2)?,
        },
        "busy" => Reply::Busy {
            holder: text(1)?,
            epoch: int(2)?,
            expires_at_ms: int(3)?,
        },
        "renewed" => Reply::Renewed {
            expires_at_ms: int(1)?,
        },
        "lost" => Reply::Lost {
            holder: text(1),
            epoch: int(2),
        },
        "released" => Reply::Released {},
        "not_held" => Reply::NotHeld {},
        "none" => Reply::Lease(None),
        "lease" => Reply::Lease(Some(LeaseView {
            holder: text(1),
            epoch: int(2)?,
            expires_at_ms: int(3),
            live: text(4)? == "1",
        })),
        _ => return None,
    })
}
