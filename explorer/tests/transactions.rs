//! Issue 40, item 2: a store written with optimistic transactions (`WATCH`,
//! read, `MULTI` … `EXEC`, retry on abort) is explored like any other. The
//! explorer restores the server between commands and answers an
//! operation's earlier commands from a recording, so the gate keeps each
//! connection's transaction itself and the explorer says when a watched
//! key was modified: the textbook take passes every check, and its twin
//! that forgets the `WATCH` is caught granting a second live holder.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use explorer::{explore, ExplorerConfig, ExplorerOutcome};
use harness::contract::{Call, ErrorKind, Reply, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::Verdict;
use redis::aio::MultiplexedConnection;
use stores::redis::RedisStoreFactory;

/// The take's read: server time and the record, nothing written.
const READ: &str = "local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expires_at', 'released')
return {now, r[1] or '', r[2] or '0', r[3] or '0', r[4] or ''}";

/// The built-in store with its take written as an optimistic transaction.
struct Optimistic {
    inner: RedisStoreFactory,
    /// Whether the take watches the record before reading it.
    watch: bool,
}

struct OptimisticClient {
    inner: Box<dyn StoreClient>,
    conn: MultiplexedConnection,
    prefix: String,
    watch: bool,
}

fn unavailable(e: redis::RedisError) -> StoreError {
    StoreError::new(ErrorKind::Unavailable, e.to_string())
}

/// A failed command of the take as the contract names it: `store_full`
/// for a full server's `OOM` (or a transaction it aborted), else
/// `unavailable`.
fn failed(e: redis::RedisError) -> StoreError {
    match e.code() {
        Some("OOM" | "EXECABORT") => StoreError::new(ErrorKind::StoreFull, e.to_string()),
        _ => unavailable(e),
    }
}

impl OptimisticClient {
    /// `WATCH` the record, read it with the server's time, and write the
    /// grant in `MULTI` … `EXEC`; an aborted `EXEC` (someone wrote the
    /// record meanwhile) starts again.
    async fn take(&mut self, tree: &str, holder: &str, ttl_ms: i64) -> Result<Reply, StoreError> {
        let key = format!("{}lease:{tree}", self.prefix);
        for _ in 0..8 {
            if self.watch {
                redis::cmd("WATCH")
                    .arg(&key)
                    .query_async::<()>(&mut self.conn)
                    .await
                    .map_err(unavailable)?;
            }
            let (now, held_by, epoch, expires, released): (i64, String, i64, i64, String) =
                redis::cmd("EVAL")
                    .arg(READ)
                    .arg(1)
                    .arg(&key)
                    .query_async(&mut self.conn)
                    .await
                    .map_err(failed)?;
            if epoch > 0 && released != "1" && now < expires {
                if self.watch {
                    redis::cmd("UNWATCH")
                        .query_async::<()>(&mut self.conn)
                        .await
                        .map_err(unavailable)?;
                }
                return Ok(Reply::Busy {
                    holder: held_by,
                    epoch,
                    expires_at_ms: expires,
                });
            }
            // MULTI, the write, EXEC: each its own command, so that a
            // server error (OOM on a full server) keeps its code.
            redis::cmd("MULTI")
                .query_async::<()>(&mut self.conn)
                .await
                .map_err(failed)?;
            redis::cmd("HSET")
                .arg(&key)
                .arg("holder")
                .arg(holder)
                .arg("epoch")
                .arg(epoch + 1)
                .arg("expires_at")
                .arg(now + ttl_ms)
                .arg("released")
                .arg("0")
                .query_async::<()>(&mut self.conn)
                .await
                .map_err(failed)?;
            let granted = redis::cmd("EXEC")
                .query_async::<redis::Value>(&mut self.conn)
                .await
                .map_err(failed)?;
            if granted != redis::Value::Nil {
                return Ok(Reply::Granted {
                    epoch: epoch + 1,
                    expires_at_ms: now + ttl_ms,
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
impl StoreClient for OptimisticClient {
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
impl StoreFactory for Optimistic {
    fn spec(&self) -> String {
        "test:optimistic".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        let conn = redis::Client::open(hello.redis_url.as_str())
            .map_err(unavailable)?
            .get_multiplexed_async_connection()
            .await
            .map_err(unavailable)?;
        Ok((
            info,
            Box::new(OptimisticClient {
                inner,
                conn,
                prefix: hello.prefix.clone(),
                watch: self.watch,
            }),
        ))
    }
}

fn run(watch: bool, depth: usize) -> ExplorerOutcome {
    let dir = tempfile::tempdir().unwrap();
    let store = Optimistic {
        inner: RedisStoreFactory::new(dir.path().join("kept.sqlite")),
        watch,
    };
    let config = ExplorerConfig {
        depth,
        walks: 0,
        seed: 3,
        threads: 1,
        skews: vec![0],
        cache_check_one_in: 4,
        ..Default::default()
    };
    explore(Arc::new(store), None, "sp:tx:".into(), &config, &mut |l| {
        eprintln!("{l}")
    })
}

#[test]
fn a_take_in_an_optimistic_transaction_passes() {
    let outcome = run(true, 5);
    for c in &outcome.checks {
        eprintln!("{} {}: {}", c.id, c.verdict.word(), c.reason);
        if let Some(x) = &c.counterexample {
            eprintln!(
                "COUNTEREXAMPLE {}",
                serde_json::to_string(x).unwrap_or_default()
            );
        }
    }
    common::passes(&outcome);
    // MULTI, the queued HSET and UNWATCH ran as soon as they were next,
    // and every PASS says so (explorer/src/fused.rs).
    assert!(outcome.figures.fused_steps > 0, "{:?}", outcome.figures);
    let holder = common::check(&outcome, "explorer.one-live-holder");
    assert!(
        holder
            .reason
            .contains("an operation's commands that only its own connection sees"),
        "{}",
        holder.reason
    );
    assert_eq!(
        outcome.figures.cache.differed, 0,
        "{:?}",
        outcome.figures.cache
    );
}

#[test]
fn a_take_that_forgets_its_watch_grants_a_second_live_holder() {
    let outcome = run(false, 5);
    let holder = common::check(&outcome, "explorer.one-live-holder");
    assert_eq!(holder.verdict, Verdict::Fail, "{}", holder.reason);
    let answered = common::check(&outcome, "explorer.answered");
    assert_ne!(answered.verdict, Verdict::Fail, "{}", answered.reason);
}
