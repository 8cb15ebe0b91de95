//! A whole store written on the kit, as a Rust author writes one: the
//! lease, queue and rate contracts on Redis, one Lua script per operation
//! (the Node example's, `adapters/node/example/lua`: each decides
//! atomically, leases and queue on the server's `TIME`, rate limits on the
//! caller's clock), kept executions in SQLite, the server checked on
//! connect. [`Certification`](crate::Certification) certifies it in the
//! crate's doc example, in `tests/library.rs` and, with every suite, in
//! `examples/certify_kit_example.rs`.

use std::path::PathBuf;

use async_trait::async_trait;
use redis::aio::MultiplexedConnection;

use super::{
    check_server, is_server_reply, operation_failure, redis_command_failure, ChildState, ChildView,
    KeptExecutions, LeaseView, Request,
};
use crate::StoreInfo;
use crate::{Call, Contract, ErrorKind, Hello, Reply, StoreClient, StoreError, StoreFactory};

/// Server time and exact decimal comparison, in front of every script.
const PRELUDE: &str = include_str!("../../adapters/node/example/lua/_prelude.lua");

/// Each operation's script.
const SCRIPTS: [(&str, &str); 13] = [
    (
        "lease.take",
        include_str!("../../adapters/node/example/lua/lease_take.lua"),
    ),
    (
        "lease.renew",
        include_str!("../../adapters/node/example/lua/lease_renew.lua"),
    ),
    (
        "lease.release",
        include_str!("../../adapters/node/example/lua/lease_release.lua"),
    ),
    (
        "lease.read",
        include_str!("../../adapters/node/example/lua/lease_read.lua"),
    ),
    (
        "queue.save",
        include_str!("../../adapters/node/example/lua/queue_save.lua"),
    ),
    (
        "queue.claim",
        include_str!("../../adapters/node/example/lua/queue_claim.lua"),
    ),
    (
        "queue.complete",
        include_str!("../../adapters/node/example/lua/queue_complete.lua"),
    ),
    (
        "queue.read",
        include_str!("../../adapters/node/example/lua/queue_read.lua"),
    ),
    (
        "rate.acquire_slot",
        include_str!("../../adapters/node/example/lua/rate_acquire_slot.lua"),
    ),
    (
        "rate.release_slot",
        include_str!("../../adapters/node/example/lua/rate_release_slot.lua"),
    ),
    (
        "rate.hit",
        include_str!("../../adapters/node/example/lua/rate_hit.lua"),
    ),
    (
        "rate.pause",
        include_str!("../../adapters/node/example/lua/rate_pause.lua"),
    ),
    (
        "rate.read",
        include_str!("../../adapters/node/example/lua/rate_read.lua"),
    ),
];

/// The example store: [`ExampleStore::new`] with the SQLite file its kept
/// executions go to.
pub struct ExampleStore {
    kept_db: PathBuf,
    scripts: Vec<(&'static str, String)>,
}

impl ExampleStore {
    /// The store, its kept executions in the SQLite file `kept_db`.
    pub fn new(kept_db: impl Into<PathBuf>) -> ExampleStore {
        let scripts = SCRIPTS.iter().map(|(op, s)| (*op, s.to_string())).collect();
        ExampleStore {
            kept_db: kept_db.into(),
            scripts,
        }
    }

    /// Operation `op`'s script (without the prelude).
    pub fn script(&self, op: &str) -> Option<&str> {
        self.scripts
            .iter()
            .find(|(o, _)| *o == op)
            .map(|(_, s)| s.as_str())
    }

    /// The same store running `source` for operation `op` (a test's variant).
    pub fn with_script(mut self, op: &str, source: &str) -> ExampleStore {
        for (o, s) in &mut self.scripts {
            if *o == op {
                *s = source.to_string();
            }
        }
        self
    }
}

#[async_trait]
impl StoreFactory for ExampleStore {
    fn spec(&self) -> String {
        "rust:example-store".into()
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
        let mut scripts = Vec::new();
        // Loaded now, so that every operation sends one `EVALSHA`.
        for (op, body) in &self.scripts {
            let script = redis::Script::new(&format!("{PRELUDE}{body}"));
            let loaded = script.prepare_invoke().load_async(&mut conn).await;
            loaded.map_err(|e| redis_command_failure("SCRIPT LOAD", &e))?;
            scripts.push((*op, script));
        }
        let info = StoreInfo {
            name: "example-store".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            contracts: vec![Contract::Lease, Contract::Queue, Contract::Rate],
        };
        let kept = KeptExecutions::open(self.kept_db.clone(), &hello.prefix).await?;
        let prefix = hello.prefix.clone();
        let conn = Some(conn);
        Ok((
            info,
            Box::new(Client {
                client,
                conn,
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
    scripts: Vec<(&'static str, redis::Script)>,
    kept: KeptExecutions,
}

impl Client {
    /// Runs operation `op`'s script: its reply's words. A server that
    /// restarted and forgot the script (`NOSCRIPT`) is sent it again; a
    /// connection that broke is dropped.
    async fn run(
        &mut self,
        op: &str,
        keys: &[String],
        args: &[String],
    ) -> Result<Vec<Option<String>>, StoreError> {
        let script = self.scripts.iter().find(|(o, _)| *o == op).map(|(_, s)| s);
        let script = script
            .ok_or_else(|| StoreError::new(ErrorKind::Unsupported, format!("{op}: no script")))?;
        let mut conn = match &self.conn {
            Some(conn) => conn.clone(),
            None => self
                .client
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| operation_failure(op, &e))?,
        };
        self.conn = Some(conn.clone());
        let mut invocation = script.prepare_invoke();
        for k in keys {
            invocation.key(k);
        }
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
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        let req = Request::parse(call)?;
        match &req {
            Request::LeaseKeepExecution { tree, execution } => {
                self.kept.keep(tree, execution).await?;
                return Ok(Reply::Kept {});
            }
            Request::LeaseKeptExecutions { tree } => {
                return Ok(Reply::Executions(self.kept.list(tree).await?))
            }
            _ => {}
        }
        let (keys, args) = invocation(&req, &self.prefix, clock_ms).ok_or_else(|| {
            StoreError::new(ErrorKind::Unsupported, format!("{}: not offered", req.op()))
        })?;
        let words = self.run(req.op(), &keys, &args).await?;
        match reply(&words) {
            Some(reply) if reply.answers(&req) => Ok(reply),
            _ => Err(StoreError::new(
                ErrorKind::Unavailable,
                format!("{}: the script answered {words:?}", req.op()),
            )),
        }
    }
}

/// The script's KEYS and ARGV for `req` (a table: one operation a line).
#[rustfmt::skip]
fn invocation(req: &Request, prefix: &str, clock_ms: i64) -> Option<(Vec<String>, Vec<String>)> {
    use Request::*;
    let k = |kind: &str, id: &str| format!("{prefix}{kind}:{id}");
    let (c, s) = (clock_ms.to_string(), |n: &i64| n.to_string());
    Some(match req {
        LeaseTake { tree, holder, ttl_ms } => (vec![k("lease", tree)], vec![holder.clone(), s(ttl_ms)]),
        LeaseRenew { tree, holder, epoch, ttl_ms } => (vec![k("lease", tree)], vec![holder.clone(), s(epoch), s(ttl_ms)]),
        LeaseRelease { tree, holder, epoch } => (vec![k("lease", tree)], vec![holder.clone(), s(epoch)]),
        LeaseRead { tree } => (vec![k("lease", tree)], vec![]),
        // Deeper children first: the rank is i64::MAX - depth, 19 digits.
        QueueSave { child, depth, payload } => (vec![k("child", child), k("queue", "index"), k("queue", "seq")],
            vec![child.clone(), s(depth), payload.clone(), format!("{:019}", i64::MAX - depth)]),
        QueueClaim { instance, claim_ttl_ms } => (vec![k("queue", "index")], vec![k("child", ""), instance.clone(), s(claim_ttl_ms)]),
        QueueComplete { child, instance, attempt } => (vec![k("child", child), k("queue", "index")], vec![instance.clone(), s(attempt)]),
        QueueRead { child } => (vec![k("child", child)], vec![]),
        // Rate limits decide on the caller's clock, never server time.
        RateAcquireSlot { provider: p, limit, ttl_ms, .. } => (vec![k("slots", p), k("pause", p), k("seq", p)], vec![c, s(limit), s(ttl_ms)]),
        RateReleaseSlot { provider, slot } => (vec![k("slots", provider)], vec![c, slot.clone()]),
        RateHit { provider: p, limit, window_ms } => (vec![k("hits", p), k("pause", p), k("seq", p)], vec![c, s(limit), s(window_ms)]),
        RatePause { provider, until_ms } => (vec![k("pause", provider)], vec![s(until_ms)]),
        RateRead { provider: p } => (vec![k("slots", p), k("pause", p)], vec![c]),
        _ => return None,
    })
}

/// A script's words as the contract's reply (a table: one outcome a line).
#[rustfmt::skip]
fn reply(words: &[Option<String>]) -> Option<Reply> {
    let text = |i: usize| words.get(i).cloned().flatten();
    let int = |i: usize| text(i).and_then(|w| w.parse::<i64>().ok());
    let state = |i: usize| match text(i)?.as_str() {
        "queued" => Some(ChildState::Queued),
        "claimed" => Some(ChildState::Claimed),
        "done" => Some(ChildState::Done),
        _ => None,
    };
    Some(match text(0)?.as_str() {
        "granted" => Reply::Granted { epoch: int(1)?, expires_at_ms: int(2)? },
        "busy" => Reply::Busy { holder: text(1)?, epoch: int(2)?, expires_at_ms: int(3)? },
        "renewed" => Reply::Renewed { expires_at_ms: int(1)? },
        "lost" => Reply::Lost { holder: text(1), epoch: int(2) },
        "released" => Reply::Released {},
        "not_held" => Reply::NotHeld {},
        "lease" if words.len() == 1 => Reply::Lease(None),
        "lease" => Reply::Lease(Some(LeaseView { holder: text(1), epoch: int(2)?, expires_at_ms: int(3), live: text(4)? == "1" })),
        "saved" => Reply::Saved {},
        "exists" => Reply::Exists { state: state(1)? },
        "claimed" => Reply::Claimed { child: text(1)?, depth: int(2)?, payload: text(3)?, attempt: int(4)? },
        "empty" => Reply::Empty {},
        "completed" => Reply::Completed {},
        "not_claimer" => Reply::NotClaimer { claimer: text(1), attempt: int(2) },
        "child" if words.len() == 1 => Reply::Child(None),
        "child" => Reply::Child(Some(ChildView { state: state(1)?, claimer: text(2), attempt: int(3)?, depth: int(4)? })),
        "acquired" => Reply::Acquired { slot: text(1)? },
        "full" => Reply::Full { retry_at_ms: int(1)? },
        "paused" => Reply::Paused { until_ms: int(1)? },
        "unknown" => Reply::Unknown {},
        "allowed" => Reply::Allowed { remaining: int(1)? },
        "limited" => Reply::Limited { retry_at_ms: int(1)? },
        "rate" => Reply::RateState { slots_in_use: int(1)?, paused_until_ms: int(2) },
        _ => return None,
    })
}
