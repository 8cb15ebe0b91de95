//! Issue 40: stores of other designs than one Lua script per operation on
//! RESP2, explored as the built-in one is. The built-in store on RESP3
//! connections (`HELLO 3`: nulls and maps of their own) finds the same
//! states and verdicts as on RESP2; a take written as a Redis Function
//! (`FUNCTION LOAD` at connect, `FCALL` per take) passes every check, and
//! its twin that ignores expiry is caught.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use explorer::{explore, ExplorerConfig, ExplorerOutcome};
use harness::contract::{Call, Reply, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::Verdict;
use redis::aio::MultiplexedConnection;
use stores::redis::RedisStoreFactory;

/// The built-in store, its connections opened with RESP3.
struct Resp3(RedisStoreFactory);

#[async_trait]
impl StoreFactory for Resp3 {
    fn spec(&self) -> String {
        "test:resp3".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let hello = Hello {
            redis_url: format!("{}?protocol=resp3", hello.redis_url.trim_end_matches('/')),
            ..hello.clone()
        };
        self.0.connect(&hello, clock_ms).await
    }
}

/// A library of one function, the take; `LIVE` is its test of a live lease.
const LIBRARY: &str = "#!lua name=spdesigns
redis.register_function('sp_take', function(keys, args)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local rec = redis.call('HMGET', keys[1], 'holder', 'epoch', 'expires_at', 'released')
  local epoch = tonumber(rec[2]) or 0
  if LIVE then
    return {'busy', rec[1], tostring(epoch), rec[3]}
  end
  epoch = epoch + 1
  local expires = string.format('%d', now + tonumber(args[2]))
  redis.call('HSET', keys[1], 'holder', args[1], 'epoch', string.format('%d', epoch),
    'expires_at', expires, 'released', '0')
  return {'granted', tostring(epoch), expires}
end)";

/// The built-in test of a live lease.
const EXPIRY: &str = "rec[2] and rec[4] ~= '1' and now < tonumber(rec[3])";
/// A flawed one: any record not released is live, even an expired one's
/// (so a tree whose holder died is stuck).
const NO_EXPIRY: &str = "rec[2] and rec[4] ~= '1'";

/// The built-in store with its take an `FCALL`.
struct Functions {
    inner: RedisStoreFactory,
    live: &'static str,
    /// Its clients say they may remember (as an adapter's process does),
    /// so the explorer starts fresh ones, in whatever state it is in.
    remembers: bool,
}

struct FunctionsClient {
    inner: Box<dyn StoreClient>,
    conn: MultiplexedConnection,
    prefix: String,
    remembers: bool,
}

#[async_trait]
impl StoreClient for FunctionsClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        if call.op != "lease.take" {
            return self.inner.call(call, clock_ms).await;
        }
        let text = |k: &str| call.args[k].as_str().unwrap_or_default().to_string();
        let key = format!("{}lease:{}", self.prefix, text("tree"));
        let answer: Vec<String> = redis::cmd("FCALL")
            .arg("sp_take")
            .arg(1)
            .arg(&key)
            .arg(text("holder"))
            .arg(call.args["ttl_ms"].as_i64().unwrap_or_default())
            .query_async(&mut self.conn)
            .await
            .map_err(common::failed)?;
        let number = |i: usize| {
            answer
                .get(i)
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or(0)
        };
        if answer.first().map(String::as_str) == Some("busy") {
            return Ok(Reply::Busy {
                holder: answer.get(1).cloned().unwrap_or_default(),
                epoch: number(2),
                expires_at_ms: number(3),
            });
        }
        Ok(Reply::Granted {
            epoch: number(1),
            expires_at_ms: number(2),
        })
    }

    fn remembers(&self) -> bool {
        self.remembers
    }
}

#[async_trait]
impl StoreFactory for Functions {
    fn spec(&self) -> String {
        "test:functions".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        let mut conn = common::connection(&hello.redis_url).await?;
        // Loaded at connect, as scripts are: a set-up command.
        redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(LIBRARY.replace("LIVE", self.live))
            .query_async::<String>(&mut conn)
            .await
            .map_err(common::failed)?;
        Ok((
            info,
            Box::new(FunctionsClient {
                inner,
                conn,
                prefix: hello.prefix.clone(),
                remembers: self.remembers,
            }),
        ))
    }
}

fn run(store: Arc<dyn StoreFactory>) -> ExplorerOutcome {
    let config = ExplorerConfig {
        depth: 5,
        walks: 0,
        seed: 3,
        threads: 1,
        skews: vec![0, 500],
        cache_check_one_in: 4,
        ..Default::default()
    };
    explore(store, None, "sp:designs:".into(), &config, &mut |l| {
        eprintln!("{l}")
    })
}

fn verdicts(outcome: &ExplorerOutcome) -> Vec<(String, Verdict)> {
    outcome
        .checks
        .iter()
        .map(|c| (c.id.clone(), c.verdict))
        .collect()
}

#[test]
fn the_builtin_store_on_resp3_is_explored_as_on_resp2() {
    let dir = tempfile::tempdir().unwrap();
    let kept = || RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let resp3 = run(Arc::new(Resp3(kept())));
    let resp2 = run(Arc::new(kept()));
    for c in &resp3.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    assert_eq!(verdicts(&resp3), verdicts(&resp2));
    let states = |o: &ExplorerOutcome| -> Vec<usize> {
        o.figures.per_skew.iter().map(|r| r.unique_states).collect()
    };
    assert_eq!(states(&resp3), states(&resp2));
}

#[test]
fn a_take_written_as_a_redis_function_passes_and_its_twin_without_expiry_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let kept = || RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let correct = run(Arc::new(Functions {
        inner: kept(),
        live: EXPIRY,
        remembers: false,
    }));
    for c in &correct.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    let flawed = run(Arc::new(Functions {
        inner: kept(),
        live: NO_EXPIRY,
        remembers: false,
    }));
    let stuck = common::check(&flawed, "explorer.no-tree-stuck");
    assert_eq!(stuck.verdict, Verdict::Fail, "{}", stuck.reason);
}

/// A process the harness starts (here: a client that may remember, as an
/// adapter's process may, and a fresh one for each probe of an operation's
/// place) sets itself up on a server with room: its `FUNCTION LOAD` is the harness's doing, not a step
/// of the schedule, so a server the schedule filled does not refuse it and
/// leave the checks undecided ("could not connect: OOM").
#[test]
fn a_function_loaded_at_connect_is_loaded_even_when_the_schedule_filled_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Functions {
        inner: RedisStoreFactory::new(dir.path().join("kept.sqlite")),
        live: EXPIRY,
        remembers: true,
    });
    // At seed 3 (and 2) an operation's place is first met on a full
    // server, and its probe starts a fresh process there: without the room
    // made for its set-up, every check was undecided ("instance a could
    // not connect: store_full").
    let config = ExplorerConfig {
        depth: 4,
        walks: 20,
        seed: 3,
        threads: 1,
        skews: vec![0],
        ..Default::default()
    };
    let outcome = explore(store, None, "sp:designs:".into(), &config, &mut |l| {
        eprintln!("{l}")
    });
    for c in &outcome.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
}
