//! Issue 40, item 5: a store with a pool of connections that reads with a
//! pipeline (server time and the record, two commands sent at once on one
//! connection) and writes on another, conditionally on the epoch it read
//! (compare and set), is explored like a store of one script: it passes
//! every check, without a reduction given up. Its twin whose write is
//! unconditional is caught granting a second live holder.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use explorer::{explore, ExplorerConfig, ExplorerOutcome};
use harness::contract::{Call, ErrorKind, Reply, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::Verdict;
use redis::aio::MultiplexedConnection;
use stores::redis::RedisStoreFactory;

/// The write: the grant, if the record's epoch is still the one read
/// (`ARGV[5]`, `''` for no record); `0` if someone wrote it since.
const CAS: &str = "local e = redis.call('HGET', KEYS[1], 'epoch') or ''
if e ~= ARGV[5] then return 0 end
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'epoch', ARGV[2], 'expires_at', ARGV[3], 'released', ARGV[4])
return 1";

/// The write with no condition: the flawed twin's.
const BLIND: &str =
    "redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'epoch', ARGV[2], 'expires_at', ARGV[3], 'released', ARGV[4])
return 1";

struct Pooled {
    inner: RedisStoreFactory,
    write: &'static str,
}

struct PooledClient {
    inner: Box<dyn StoreClient>,
    /// The pool: reads on the first, writes on the second.
    pool: [MultiplexedConnection; 2],
    prefix: String,
    write: &'static str,
}

/// What the pipelined read answers: `TIME`, then the record's fields.
type Read = (
    (String, String),
    (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ),
);

impl PooledClient {
    async fn take(&mut self, tree: &str, holder: &str, ttl_ms: i64) -> Result<Reply, StoreError> {
        let key = format!("{}lease:{tree}", self.prefix);
        for _ in 0..8 {
            // One pipeline: TIME and the record, sent together.
            let ((secs, micros), (held_by, epoch, expires, released)): Read = redis::pipe()
                .cmd("TIME")
                .cmd("HMGET")
                .arg(&key)
                .arg("holder")
                .arg("epoch")
                .arg("expires_at")
                .arg("released")
                .query_async(&mut self.pool[0])
                .await
                .map_err(common::failed)?;
            let now =
                secs.parse::<i64>().unwrap_or(0) * 1000 + micros.parse::<i64>().unwrap_or(0) / 1000;
            let number = |s: &Option<String>| s.as_deref().and_then(|s| s.parse::<i64>().ok());
            let live = epoch.is_some()
                && released.as_deref() != Some("1")
                && number(&expires).is_some_and(|e| now < e);
            if live {
                return Ok(Reply::Busy {
                    holder: held_by.unwrap_or_default(),
                    epoch: number(&epoch).unwrap_or(0),
                    expires_at_ms: number(&expires).unwrap_or(0),
                });
            }
            let next = number(&epoch).unwrap_or(0) + 1;
            let until = now + ttl_ms;
            let written: i64 = redis::cmd("EVAL")
                .arg(self.write)
                .arg(1)
                .arg(&key)
                .arg(holder)
                .arg(next)
                .arg(until)
                .arg("0")
                .arg(epoch.as_deref().unwrap_or(""))
                .query_async(&mut self.pool[1])
                .await
                .map_err(common::failed)?;
            if written == 1 {
                return Ok(Reply::Granted {
                    epoch: next,
                    expires_at_ms: until,
                });
            }
        }
        Err(StoreError::new(
            ErrorKind::Unavailable,
            "the record kept changing under the take",
        ))
    }
}

#[async_trait]
impl StoreClient for PooledClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        if call.op != "lease.take" {
            return self.inner.call(call, clock_ms).await;
        }
        let text = |k: &str| call.args[k].as_str().unwrap_or_default().to_string();
        let ttl = call.args["ttl_ms"].as_i64().unwrap_or_default();
        self.take(&text("tree"), &text("holder"), ttl).await
    }
}

#[async_trait]
impl StoreFactory for Pooled {
    fn spec(&self) -> String {
        "test:pooled".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        let client = redis::Client::open(hello.redis_url.as_str()).map_err(common::failed)?;
        let first = client
            .get_multiplexed_async_connection()
            .await
            .map_err(common::failed)?;
        let second = client
            .get_multiplexed_async_connection()
            .await
            .map_err(common::failed)?;
        Ok((
            info,
            Box::new(PooledClient {
                inner,
                pool: [first, second],
                prefix: hello.prefix.clone(),
                write: self.write,
            }),
        ))
    }
}

/// `fail_fast`: a twin that must fail stops at the level that breaks a
/// property (that level whole).
fn run(write: &'static str, fail_fast: bool) -> ExplorerOutcome {
    let dir = tempfile::tempdir().unwrap();
    let store = Pooled {
        inner: RedisStoreFactory::new(dir.path().join("kept.sqlite")),
        write,
    };
    let config = ExplorerConfig {
        depth: 5,
        walks: 0,
        seed: 3,
        threads: 1,
        skews: vec![0, 500],
        cache_check_one_in: 4,
        fail_fast,
        ..Default::default()
    };
    explore(
        Arc::new(store),
        None,
        "sp:pool:".into(),
        &config,
        &mut |l| eprintln!("{l}"),
    )
}

#[test]
fn a_pooled_store_with_pipelined_reads_and_a_compare_and_set_passes() {
    let outcome = run(CAS, false);
    for c in &outcome.checks {
        eprintln!("{} {}: {}", c.id, c.verdict.word(), c.reason);
    }
    common::passes(&outcome);
    for row in &outcome.figures.per_skew {
        assert!(row.shift_failure.is_none(), "{row:?}");
        assert!(!row.absolute_times, "{row:?}");
    }
}

#[test]
fn its_twin_with_a_blind_write_grants_a_second_live_holder() {
    let outcome = run(BLIND, true);
    let holder = common::check(&outcome, "explorer.one-live-holder");
    assert_eq!(holder.verdict, Verdict::Fail, "{}", holder.reason);
}
