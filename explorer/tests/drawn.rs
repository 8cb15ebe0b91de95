//! Issue 40, item 3: a store that draws a value at random for each
//! operation (a uuid, written into the record and read back) is explored as
//! its deterministic twin is. An operation continued from the middle runs
//! again and draws another value: the gate takes the new one for the
//! recorded one (and back in replies) rather than calling the store not
//! deterministic, and states that differ only by what was drawn are one.
//! Its twin that compares the drawn token where it should compare expiry
//! is caught.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use explorer::{explore, ExplorerConfig, ExplorerOutcome};
use harness::contract::{Call, ErrorKind, Reply, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::Verdict;
use redis::aio::MultiplexedConnection;
use stores::redis::RedisStoreFactory;

/// The built-in take with the operation's token (ARGV[3]) written into the
/// record (`op`: the `KEPT` one; `last`: always this one); `LIVE` is the
/// test of a live lease.
const TAKE: &str = "local key = KEYS[1]
local holder, ttl, token = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = redis.call('HMGET', key, 'holder', 'epoch', 'expires_at', 'released', 'op')
local epoch = tonumber(rec[2]) or 0
if LIVE then
  return {'busy', rec[1], tostring(epoch), rec[3]}
end
epoch = epoch + 1
local expires = string.format('%d', now + ttl)
redis.call('HSET', key, 'holder', holder, 'epoch', string.format('%d', epoch),
  'expires_at', expires, 'released', '0', 'op', KEPT, 'last', token)
return {'granted', tostring(epoch), expires}";

/// A value never drawn before in this process: a new one at every call,
/// as a random draw would be, but the same sequence on every run of the
/// test (splitmix64 of a counter), so that what a search meets repeats.
fn draw() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let mut z = NEXT
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What a take draws for its token.
#[derive(Clone, Copy, PartialEq)]
enum Token {
    /// A fresh random value per operation.
    Drawn,
    /// The same value every time: the deterministic twin.
    Fixed,
    /// A value drawn once per client, as lock libraries name their owner
    /// by process.
    PerProcess,
}

struct TokenStore {
    inner: RedisStoreFactory,
    token: Token,
    /// Whether the take reads the record back (a second command) or is
    /// its one script alone.
    read_back: bool,
    /// The take's test of a live lease, in Lua.
    live: &'static str,
    /// The token the record keeps, in Lua.
    kept: &'static str,
}

struct TokenClient {
    inner: Box<dyn StoreClient>,
    conn: MultiplexedConnection,
    prefix: String,
    token: Token,
    read_back: bool,
    script: String,
    /// Drawn when the client connected ([`Token::PerProcess`]).
    own: String,
}

impl TokenClient {
    /// The take's script with a token, then a read-back of the record.
    async fn take(&mut self, tree: &str, holder: &str, ttl_ms: i64) -> Result<Reply, StoreError> {
        let token = match self.token {
            Token::Drawn => format!("{:016x}{:016x}", draw(), draw()),
            Token::Fixed => "feedfacecafebeef0123456789abcdef".to_string(),
            Token::PerProcess => self.own.clone(),
        };
        let key = format!("{}lease:{tree}", self.prefix);
        let answer: Vec<String> = redis::cmd("EVAL")
            .arg(&self.script)
            .arg(1)
            .arg(&key)
            .arg(holder)
            .arg(ttl_ms)
            .arg(&token)
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
        if !self.read_back {
            return Ok(Reply::Granted {
                epoch: number(1),
                expires_at_ms: number(2),
            });
        }
        // Read back: a record of this holder with another token would be
        // a write lost (the lease may since have expired and been taken by
        // another, whose token it then holds).
        let (held_by, mine): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(&key)
            .arg("holder")
            .arg("op")
            .query_async(&mut self.conn)
            .await
            .map_err(common::failed)?;
        if held_by.as_deref() == Some(holder) && mine.as_deref() != Some(token.as_str()) {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                format!("the record's token is {mine:?}, not this take's {token}"),
            ));
        }
        Ok(Reply::Granted {
            epoch: number(1),
            expires_at_ms: number(2),
        })
    }
}

#[async_trait]
impl StoreClient for TokenClient {
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
impl StoreFactory for TokenStore {
    fn spec(&self) -> String {
        "test:token".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        let conn = common::connection(&hello.redis_url).await?;
        Ok((
            info,
            Box::new(TokenClient {
                inner,
                conn,
                prefix: hello.prefix.clone(),
                token: self.token,
                read_back: self.read_back,
                script: TAKE.replace("LIVE", self.live).replace("KEPT", self.kept),
                own: format!("{:016x}{:016x}", draw(), draw()),
            }),
        ))
    }
}

/// The built-in test of a live lease.
const EXPIRY: &str = "rec[2] and rec[4] ~= '1' and now < tonumber(rec[3])";
/// A flawed one: a lease whose token is not the caller's is taken as free.
const TOKEN_ONLY: &str = "rec[2] and rec[4] ~= '1' and rec[5] == token";

/// The token each grant keeps: its own.
const OWN: &str = "token";
/// The least of the record's and its own: what is drawn compared by order.
const LEAST: &str = "(rec[5] and rec[5] < token) and rec[5] or token";

fn run(token: Token, live: &'static str, read_back: bool, depth: usize) -> ExplorerOutcome {
    explore_with(token, (live, OWN), read_back, depth, 8)
}

fn explore_with(
    token: Token,
    (live, kept): (&'static str, &'static str),
    read_back: bool,
    depth: usize,
    checks_per_level: usize,
) -> ExplorerOutcome {
    let dir = tempfile::tempdir().unwrap();
    let store = TokenStore {
        inner: RedisStoreFactory::new(dir.path().join("kept.sqlite")),
        token,
        read_back,
        live,
        kept,
    };
    let config = ExplorerConfig {
        shift_checks_per_level: checks_per_level,
        depth,
        walks: 0,
        seed: 3,
        // A token per process differs between two worlds' processes only.
        threads: if token == Token::PerProcess { 2 } else { 1 },
        skews: vec![0],
        cache_check_one_in: 4,
        ..Default::default()
    };
    explore(
        Arc::new(store),
        None,
        "sp:drawn:".into(),
        &config,
        &mut |l| eprintln!("{l}"),
    )
}

fn unique_states(outcome: &ExplorerOutcome) -> usize {
    outcome
        .figures
        .per_skew
        .iter()
        .map(|r| r.unique_states)
        .sum()
}

/// Every check passes, and the search finds as many states as the
/// fixed twin's.
fn explored_as_its_fixed_twin(token: Token, read_back: bool) {
    let drawn = run(token, EXPIRY, read_back, 5);
    for c in &drawn.checks {
        eprintln!("{} {}: {}", c.id, c.verdict.word(), c.reason);
        if let Some(x) = &c.counterexample {
            eprintln!(
                "COUNTEREXAMPLE {}",
                serde_json::to_string_pretty(x).unwrap_or_default()
            );
        }
    }
    common::passes(&drawn);
    let fixed = run(Token::Fixed, EXPIRY, read_back, 5);
    assert_eq!(unique_states(&drawn), unique_states(&fixed));
    let row = &drawn.figures.per_skew[0];
    assert!(row.drawn_values > 0 && row.drawn_merges > 0, "{row:?}");
    assert!(
        row.drawn_failure.is_none() && row.shift_failure.is_none(),
        "{row:?}"
    );
    let pass = common::check(&drawn, "explorer.one-live-holder");
    assert!(
        pass.reason.contains("values the store drew"),
        "{}",
        pass.reason
    );
}

/// The token is continued from the middle (its take reads the record
/// back): each re-run draws again, and the gate renames.
#[test]
fn a_token_drawn_per_operation_is_explored_as_its_fixed_twin() {
    explored_as_its_fixed_twin(Token::Drawn, true);
}

/// One script per operation with the token an argument: never replayed,
/// so what is drawn is learnt by running the take twice where it first
/// sends its script.
#[test]
fn a_token_argument_of_one_script_is_explored_as_its_fixed_twin() {
    explored_as_its_fixed_twin(Token::Drawn, false);
}

/// A token drawn once per process, the argument of one script: the same
/// on every run of one process, so it is learnt by running the take again
/// on a fresh one where it first sends its script (it was taken for a
/// time shift's difference, and searched again on absolute times).
#[test]
fn a_token_drawn_per_process_is_explored_as_its_fixed_twin() {
    explored_as_its_fixed_twin(Token::PerProcess, false);
}

#[test]
fn a_take_that_trusts_the_token_over_the_expiry_is_caught() {
    let outcome = run(Token::Drawn, TOKEN_ONLY, true, 4);
    let holder = common::check(&outcome, "explorer.one-live-holder");
    assert_eq!(holder.verdict, Verdict::Fail, "{}", holder.reason);
}

/// The renaming of drawn values is a reduction, and its check can fail: a
/// take that keeps the least of two tokens (an order, not an equality) goes
/// on differently from two states that differ only by what was drawn. The
/// search is run again reading every byte; the store is correct, so every
/// check still passes, and the PASS says the renaming was given up.
#[test]
fn a_store_that_orders_what_it_draws_is_searched_again_reading_every_byte() {
    let outcome = explore_with(Token::Drawn, (EXPIRY, LEAST), false, 5, 10_000);
    let row = &outcome.figures.per_skew[0];
    let why = row.drawn_failure.as_deref().expect("no drawn failure");
    assert!(
        why.contains("renaming of the values the store drew"),
        "{why}"
    );
    for c in &outcome.checks {
        if c.id.contains("race-reached") {
            continue;
        }
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    let pass = common::check(&outcome, "explorer.one-live-holder");
    assert!(pass.reason.contains("was given up"), "{}", pass.reason);
}
