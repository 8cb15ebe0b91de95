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

use super::{reply_of_words, KeptExecutions, Request, ScriptedConnection};
use crate::{
    Call, Contract, ErrorKind, Hello, Reply, StoreClient, StoreError, StoreFactory, StoreInfo,
};

/// The Lua file `$name` of the Node example.
macro_rules! lua {
    ($name:literal) => {
        include_str!(concat!("../../adapters/node/example/lua/", $name, ".lua"))
    };
}

/// Server time and exact decimal comparison, in front of every script.
const PRELUDE: &str = lua!("_prelude");

/// Each operation's script.
#[rustfmt::skip]
const SCRIPTS: [(&str, &str); 13] = [
    ("lease.take", lua!("lease_take")), ("lease.renew", lua!("lease_renew")),
    ("lease.release", lua!("lease_release")), ("lease.read", lua!("lease_read")),
    ("queue.save", lua!("queue_save")), ("queue.claim", lua!("queue_claim")),
    ("queue.complete", lua!("queue_complete")), ("queue.read", lua!("queue_read")),
    ("rate.acquire_slot", lua!("rate_acquire_slot")), ("rate.release_slot", lua!("rate_release_slot")),
    ("rate.hit", lua!("rate_hit")), ("rate.pause", lua!("rate_pause")), ("rate.read", lua!("rate_read")),
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
        let found = self.scripts.iter().find(|(o, _)| *o == op);
        found.map(|(_, s)| s.as_str())
    }

    /// The same store running `source` for operation `op` (a test's variant).
    pub fn with_script(mut self, op: &str, source: &str) -> ExampleStore {
        for (_, s) in self.scripts.iter_mut().filter(|(o, _)| *o == op) {
            *s = source.to_string();
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
        let scripts: Vec<_> = self
            .scripts
            .iter()
            .map(|(op, body)| (op.to_string(), format!("{PRELUDE}{body}")))
            .collect();
        let conn = ScriptedConnection::connect(hello, scripts).await?;
        let kept = KeptExecutions::open(self.kept_db.clone(), &hello.prefix).await?;
        let info = StoreInfo {
            name: "example-store".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            contracts: vec![Contract::Lease, Contract::Queue, Contract::Rate],
        };
        let prefix = hello.prefix.clone();
        Ok((info, Box::new(Client { conn, prefix, kept })))
    }
}

/// One instance: its connection and scripts, key prefix, kept executions.
struct Client {
    conn: ScriptedConnection,
    prefix: String,
    kept: KeptExecutions,
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
        let words = self.conn.run(req.op(), req.op(), &keys, &args).await?;
        match reply_of_words(&words) {
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
