//! The built-in Redis stores against a real `redis-server` (7.0 here): every
//! operation, the refusals of docs/PROTOCOL.md §7, odd ids, kept executions in
//! SQLite, and a full server.
//!
//! Each test starts its own server (free port, its own directory) so tests
//! run in parallel and never see each other's keys.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::contract::{Call, ChildState, ChildView, ErrorKind, LeaseView, Reply, StoreError};
use harness::store::redis::{script_sources, RedisStoreFactory};
use harness::store::{Hello, StoreClient, StoreFactory, OPT_OUT_WRITES_MAY_BE_LOST};
use redis::aio::MultiplexedConnection;
use serde_json::{json, Value};
use tempfile::TempDir;

// ---------------------------------------------------------------------------
// A redis-server of our own (the managed-server module is written elsewhere).

/// A `redis-server` on a free port with the durable settings, killed on drop.
struct TestServer {
    child: Option<Child>,
    port: u16,
    dir: TempDir,
    extra: Vec<String>,
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

impl TestServer {
    /// A durable server (`appendonly yes`, `appendfsync always`) plus `extra`
    /// arguments, which come last and so win.
    fn start(extra: &[&str]) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut server = TestServer {
            child: None,
            port: free_port(),
            dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", &self.dir.path().display().to_string()])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .args(["--logfile", "redis.log"])
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        self.wait_for_ping();
    }

    fn wait_for_ping(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                let mut buf = [0u8; 64];
                if s.write_all(b"PING\r\n").is_ok() {
                    if let Ok(n) = s.read(&mut buf) {
                        if buf[..n].starts_with(b"+PONG") {
                            return;
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server on port {} did not answer PING", self.port);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts it again on the same port and directory
    /// (it replays its AOF).
    fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn kept_db(&self) -> PathBuf {
        self.dir.path().join("kept.sqlite")
    }

    async fn admin(&self) -> MultiplexedConnection {
        redis::Client::open(self.url())
            .expect("client")
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---------------------------------------------------------------------------
// Helpers.

const PREFIX: &str = "sp:test:";
const CLOCK: i64 = 1_700_000_000_000;

fn hello(url: &str, prefix: &str, opt_out: Option<&str>) -> Hello {
    Hello {
        instance: "a".into(),
        redis_url: url.into(),
        prefix: prefix.into(),
        opt_out: opt_out.map(str::to_string),
    }
}

async fn connect_with(
    server: &TestServer,
    url: &str,
    opt_out: Option<&str>,
) -> Result<Box<dyn StoreClient>, StoreError> {
    let factory = RedisStoreFactory::new(server.kept_db());
    let (info, client) = factory.connect(&hello(url, PREFIX, opt_out), CLOCK).await?;
    assert_eq!(info.name, "storeproof-redis");
    assert_eq!(factory.spec(), "builtin:redis");
    Ok(client)
}

async fn connect(server: &TestServer) -> Box<dyn StoreClient> {
    connect_with(server, &server.url(), None)
        .await
        .expect("connect to a durable server")
}

async fn call(client: &mut Box<dyn StoreClient>, op: &str, args: Value, clock_ms: i64) -> Reply {
    client
        .call(
            &Call {
                op: op.into(),
                args: args.clone(),
            },
            clock_ms,
        )
        .await
        .unwrap_or_else(|e| panic!("{op} {args}: {e}"))
}

async fn call_err(
    client: &mut Box<dyn StoreClient>,
    op: &str,
    args: Value,
    clock_ms: i64,
) -> StoreError {
    match client
        .call(
            &Call {
                op: op.into(),
                args: args.clone(),
            },
            clock_ms,
        )
        .await
    {
        Ok(reply) => panic!("{op} {args} answered {reply:?}, wanted an error"),
        Err(e) => e,
    }
}

async fn server_ms(admin: &mut MultiplexedConnection) -> i64 {
    let (sec, usec): (i64, i64) = redis::cmd("TIME").query_async(admin).await.expect("TIME");
    sec * 1000 + usec / 1000
}

async fn all_keys(admin: &mut MultiplexedConnection) -> Vec<Vec<u8>> {
    let mut cursor: u64 = 0;
    let mut keys = Vec::new();
    loop {
        let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .query_async(admin)
            .await
            .expect("SCAN");
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

async fn dbsize(admin: &mut MultiplexedConnection) -> i64 {
    redis::cmd("DBSIZE")
        .query_async(admin)
        .await
        .expect("DBSIZE")
}

fn sqlite_rows(path: &Path) -> Vec<(String, String, String)> {
    let conn = rusqlite::Connection::open(path).expect("open kept db");
    let mut stmt = conn
        .prepare("SELECT namespace, tree, execution FROM kept_execution ORDER BY seq")
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn granted(reply: &Reply) -> (i64, i64) {
    match reply {
        Reply::Granted {
            epoch,
            expires_at_ms,
        } => (*epoch, *expires_at_ms),
        other => panic!("wanted granted, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Lease.

#[tokio::test]
async fn lease_take_busy_renew_lost_release_not_held_read() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;

    // The instance clock is nonsense on purpose: leases run on server time.
    let before = server_ms(&mut admin).await;
    let take = call(
        &mut s,
        "lease.take",
        json!({"tree": "t", "holder": "a", "ttl_ms": 10_000}),
        0,
    )
    .await;
    let after = server_ms(&mut admin).await;
    let (epoch, exp) = granted(&take);
    assert_eq!(epoch, 1);
    assert!(
        (before + 10_000..=after + 10_000).contains(&exp),
        "{before} {exp} {after}"
    );

    let busy = Reply::Busy {
        holder: "a".into(),
        epoch: 1,
        expires_at_ms: exp,
    };
    for holder in ["b", "a"] {
        let r = call(
            &mut s,
            "lease.take",
            json!({"tree": "t", "holder": holder, "ttl_ms": 5}),
            i64::MAX / 2,
        )
        .await;
        assert_eq!(r, busy, "take by {holder}");
    }

    let renewed = call(
        &mut s,
        "lease.renew",
        json!({"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": 20_000}),
        0,
    )
    .await;
    let Reply::Renewed {
        expires_at_ms: exp2,
    } = renewed
    else {
        panic!("wanted renewed, got {renewed:?}");
    };
    assert!(exp2 >= before + 20_000 && exp2 > exp);

    let lost_to_a = Reply::Lost {
        holder: Some("a".into()),
        epoch: Some(1),
    };
    for (holder, epoch) in [("b", 1), ("a", 2), ("a", 0)] {
        let r = call(
            &mut s,
            "lease.renew",
            json!({"tree": "t", "holder": holder, "epoch": epoch, "ttl_ms": 100}),
            CLOCK,
        )
        .await;
        assert_eq!(r, lost_to_a, "renew by {holder}/{epoch}");
    }
    let r = call(
        &mut s,
        "lease.renew",
        json!({"tree": "nobody", "holder": "a", "epoch": 1, "ttl_ms": 100}),
        CLOCK,
    )
    .await;
    assert_eq!(
        r,
        Reply::Lost {
            holder: None,
            epoch: None
        }
    );

    for (holder, epoch) in [("b", 1), ("a", 2)] {
        let r = call(
            &mut s,
            "lease.release",
            json!({"tree": "t", "holder": holder, "epoch": epoch}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::NotHeld {}, "release by {holder}/{epoch}");
    }
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "t", "holder": "a", "epoch": 1}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::Released {});
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "t", "holder": "a", "epoch": 1}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::NotHeld {});
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "nobody", "holder": "a", "epoch": 1}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::NotHeld {});

    // Released: the record stays, not live; a released lease is never renewed.
    let r = call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert_eq!(
        r,
        Reply::Lease(Some(LeaseView {
            holder: Some("a".into()),
            epoch: 1,
            expires_at_ms: Some(exp2),
            live: false
        }))
    );
    let r = call(
        &mut s,
        "lease.renew",
        json!({"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": 100}),
        CLOCK,
    )
    .await;
    assert_eq!(
        r,
        Reply::Lost {
            holder: None,
            epoch: None
        }
    );
    assert_eq!(
        call(&mut s, "lease.read", json!({"tree": "nobody"}), CLOCK).await,
        Reply::Lease(None)
    );

    let (epoch, _) = granted(
        &call(
            &mut s,
            "lease.take",
            json!({"tree": "t", "holder": "b", "ttl_ms": 10_000}),
            CLOCK,
        )
        .await,
    );
    assert_eq!(epoch, 2);
    let r = call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert!(
        matches!(r, Reply::Lease(Some(LeaseView { ref holder, epoch: 2, live: true, .. })) if holder.as_deref() == Some("b")),
        "{r:?}"
    );
}

#[tokio::test]
async fn the_epoch_grows_across_release_and_expiry_and_the_record_never_expires() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let take = |holder: &str, ttl: i64| json!({"tree": "t", "holder": holder, "ttl_ms": ttl});

    assert_eq!(
        granted(&call(&mut s, "lease.take", take("a", 60), CLOCK).await).0,
        1
    );
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "t", "holder": "a", "epoch": 1}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::Released {});
    assert_eq!(
        granted(&call(&mut s, "lease.take", take("b", 60), CLOCK).await).0,
        2
    );

    tokio::time::sleep(Duration::from_millis(120)).await;
    let r = call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert!(
        matches!(
            r,
            Reply::Lease(Some(LeaseView {
                epoch: 2,
                live: false,
                ..
            }))
        ),
        "{r:?}"
    );
    // An expired lease is never renewed, even if nobody took it.
    let r = call(
        &mut s,
        "lease.renew",
        json!({"tree": "t", "holder": "b", "epoch": 2, "ttl_ms": 1000}),
        CLOCK,
    )
    .await;
    assert_eq!(
        r,
        Reply::Lost {
            holder: None,
            epoch: None
        }
    );
    assert_eq!(
        granted(&call(&mut s, "lease.take", take("c", 60), CLOCK).await).0,
        3
    );

    // A matching release of an expired lease is released, and the epoch stays.
    tokio::time::sleep(Duration::from_millis(120)).await;
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "t", "holder": "c", "epoch": 3}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::Released {});
    assert_eq!(
        granted(&call(&mut s, "lease.take", take("a", 60_000), CLOCK).await).0,
        4
    );

    let key = format!("{PREFIX}lease:t");
    let pttl: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(pttl, -1, "the lease record must never get a TTL");
}

#[tokio::test]
async fn kept_executions_live_in_sqlite_never_in_redis() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let mut a = connect(&server).await;
    let mut b = connect(&server).await;

    for e in ["e1", "e2", "e1"] {
        let r = call(
            &mut a,
            "lease.keep_execution",
            json!({"tree": "t", "execution": e}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Kept {});
    }
    let r = call(
        &mut b,
        "lease.keep_execution",
        json!({"tree": "t", "execution": "e3"}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::Kept {});
    let want = Reply::Executions(vec!["e1".into(), "e2".into(), "e3".into()]);
    assert_eq!(
        call(&mut a, "lease.kept_executions", json!({"tree": "t"}), CLOCK).await,
        want
    );
    assert_eq!(
        call(&mut b, "lease.kept_executions", json!({"tree": "t"}), CLOCK).await,
        want
    );
    assert_eq!(
        call(
            &mut a,
            "lease.kept_executions",
            json!({"tree": "other"}),
            CLOCK
        )
        .await,
        Reply::Executions(vec![])
    );

    assert_eq!(
        dbsize(&mut admin).await,
        0,
        "kept executions must not touch Redis"
    );
    let rows = sqlite_rows(&server.kept_db());
    let executions: Vec<_> = rows.iter().map(|(_, _, e)| e.as_str()).collect();
    assert_eq!(executions, ["e1", "e2", "e3"]);
    assert!(rows.iter().all(|(ns, tree, _)| ns == PREFIX && tree == "t"));
}

// ---------------------------------------------------------------------------
// Queue.

async fn save(s: &mut Box<dyn StoreClient>, child: &str, depth: i64) -> Reply {
    call(
        s,
        "queue.save",
        json!({"child": child, "depth": depth, "payload": format!("p-{child}")}),
        CLOCK,
    )
    .await
}

async fn claim(s: &mut Box<dyn StoreClient>, instance: &str, ttl: i64) -> Reply {
    call(
        s,
        "queue.claim",
        json!({"instance": instance, "claim_ttl_ms": ttl}),
        CLOCK,
    )
    .await
}

fn claimed(child: &str, depth: i64, attempt: i64) -> Reply {
    Reply::Claimed {
        child: child.into(),
        depth,
        payload: format!("p-{child}"),
        attempt,
    }
}

#[tokio::test]
async fn claims_come_deepest_first_then_in_save_order() {
    let server = TestServer::start(&[]);
    let mut s = connect(&server).await;
    let big = 1i64 << 53;
    let saves = [
        ("shallow", 1),
        ("deep-1", 3),
        ("deep-2", 3),
        ("middle", 2),
        ("deepest", i64::MAX),
        ("huge", big),
        ("huge+1", big + 1),
        ("deep-3", 3),
    ];
    for (child, depth) in saves {
        assert_eq!(save(&mut s, child, depth).await, Reply::Saved {});
        // Some saves share a millisecond, some do not: both orders must hold.
        if child == "deep-2" {
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
    assert_eq!(
        save(&mut s, "deep-1", 9).await,
        Reply::Exists {
            state: ChildState::Queued
        }
    );
    let order = [
        ("deepest", i64::MAX),
        ("huge+1", big + 1),
        ("huge", big),
        ("deep-1", 3),
        ("deep-2", 3),
        ("deep-3", 3),
        ("middle", 2),
        ("shallow", 1),
    ];
    for (child, depth) in order {
        assert_eq!(claim(&mut s, "i", 60_000).await, claimed(child, depth, 1));
    }
    assert_eq!(claim(&mut s, "i", 60_000).await, Reply::Empty {});
    assert_eq!(
        save(&mut s, "middle", 2).await,
        Reply::Exists {
            state: ChildState::Claimed
        }
    );
}

#[tokio::test]
async fn an_expired_claim_is_claimed_again_with_the_next_attempt() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let complete = |child: &str, instance: &str, attempt: i64| json!({"child": child, "instance": instance, "attempt": attempt});

    assert_eq!(save(&mut s, "c", 0).await, Reply::Saved {});
    assert_eq!(save(&mut s, "never", 0).await, Reply::Saved {});
    assert_eq!(claim(&mut s, "a", 400).await, claimed("c", 0, 1));
    assert_eq!(claim(&mut s, "a", 60_000).await, claimed("never", 0, 1));
    assert_eq!(claim(&mut s, "b", 80).await, Reply::Empty {});

    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(claim(&mut s, "b", 60_000).await, claimed("c", 0, 2));
    // The first claim ran out: its completion is refused, naming the current one.
    let r = call(&mut s, "queue.complete", complete("c", "a", 1), CLOCK).await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: Some("b".into()),
            attempt: Some(2)
        }
    );
    let r = call(&mut s, "queue.complete", complete("c", "b", 1), CLOCK).await;
    assert!(matches!(r, Reply::NotClaimer { .. }), "{r:?}");
    let r = call(&mut s, "queue.complete", complete("c", "b", 2), CLOCK).await;
    assert_eq!(r, Reply::Completed {});
    let r = call(&mut s, "queue.complete", complete("c", "b", 2), CLOCK).await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: Some("b".into()),
            attempt: Some(2)
        }
    );
    assert_eq!(
        call(&mut s, "queue.read", json!({"child": "c"}), CLOCK).await,
        Reply::Child(Some(ChildView {
            state: ChildState::Done,
            claimer: Some("b".into()),
            attempt: 2,
            depth: 0
        }))
    );
    assert_eq!(
        save(&mut s, "c", 0).await,
        Reply::Exists {
            state: ChildState::Done
        }
    );
    assert_eq!(claim(&mut s, "b", 100).await, Reply::Empty {});

    let r = call(&mut s, "queue.complete", complete("ghost", "a", 1), CLOCK).await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: None,
            attempt: None
        }
    );
    assert_eq!(
        call(&mut s, "queue.read", json!({"child": "ghost"}), CLOCK).await,
        Reply::Child(None)
    );

    // Never claimed: no claimer, attempt 0.
    assert_eq!(save(&mut s, "fresh", 5).await, Reply::Saved {});
    let r = call(&mut s, "queue.complete", complete("fresh", "a", 0), CLOCK).await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: None,
            attempt: Some(0)
        }
    );
    assert_eq!(
        call(&mut s, "queue.read", json!({"child": "fresh"}), CLOCK).await,
        Reply::Child(Some(ChildView {
            state: ChildState::Queued,
            claimer: None,
            attempt: 0,
            depth: 5
        }))
    );

    // Done children leave the index.
    let index: i64 = redis::cmd("ZCARD")
        .arg(format!("{PREFIX}q:index"))
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(index, 2, "never and fresh are not done");
}

// ---------------------------------------------------------------------------
// Rate limits (instance clock).

#[tokio::test]
async fn slots_fill_come_back_on_release_and_expire_on_clock_ms() {
    let server = TestServer::start(&[]);
    let mut s = connect(&server).await;
    let t = CLOCK;
    let acquire = json!({"provider": "p", "holder": "h", "limit": 2, "ttl_ms": 100});
    let slot = |r: Reply| match r {
        Reply::Acquired { slot } => slot,
        other => panic!("wanted acquired, got {other:?}"),
    };

    let s1 = slot(call(&mut s, "rate.acquire_slot", acquire.clone(), t).await);
    let s2 = slot(call(&mut s, "rate.acquire_slot", acquire.clone(), t + 10).await);
    assert_ne!(s1, s2);
    assert_eq!(
        call(&mut s, "rate.acquire_slot", acquire.clone(), t + 20).await,
        Reply::Full {
            retry_at_ms: t + 100
        }
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 20).await,
        Reply::RateState {
            slots_in_use: 2,
            paused_until_ms: None
        }
    );
    let release = |slot: &str| json!({"provider": "p", "slot": slot});
    assert_eq!(
        call(&mut s, "rate.release_slot", release(&s1), t + 30).await,
        Reply::Released {}
    );
    assert_eq!(
        call(&mut s, "rate.release_slot", release(&s1), t + 30).await,
        Reply::Unknown {}
    );
    assert_eq!(
        call(&mut s, "rate.release_slot", release("nope"), t + 30).await,
        Reply::Unknown {}
    );
    let s3 = slot(call(&mut s, "rate.acquire_slot", acquire.clone(), t + 40).await);
    assert!(s3 != s1 && s3 != s2);

    // At t+110 s2 (expires t+110) is over: a slot ends at its expiry.
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 110).await,
        Reply::RateState {
            slots_in_use: 1,
            paused_until_ms: None
        }
    );
    assert_eq!(
        call(&mut s, "rate.release_slot", release(&s2), t + 110).await,
        Reply::Unknown {}
    );
    // Going back on the instance clock, s3 is live again; at t+140 it is not.
    assert_eq!(
        call(&mut s, "rate.release_slot", release(&s3), t + 140).await,
        Reply::Unknown {}
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 50).await,
        Reply::RateState {
            slots_in_use: 0,
            paused_until_ms: None
        }
    );
    // Another provider is independent.
    let other = json!({"provider": "q", "holder": "h", "limit": 1, "ttl_ms": 100});
    slot(call(&mut s, "rate.acquire_slot", other, t).await);
}

#[tokio::test]
async fn hits_count_in_the_window_and_pauses_only_lengthen() {
    let server = TestServer::start(&[]);
    let mut s = connect(&server).await;
    let t = CLOCK;
    let hit = json!({"provider": "p", "limit": 2, "window_ms": 1000});

    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t).await,
        Reply::Allowed { remaining: 1 }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 500).await,
        Reply::Allowed { remaining: 0 }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 900).await,
        Reply::Limited {
            retry_at_ms: t + 1000
        }
    );
    // (now − window, now]: at t+1000 the hit at t has left.
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 1000).await,
        Reply::Allowed { remaining: 0 }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 1001).await,
        Reply::Limited {
            retry_at_ms: t + 1500
        }
    );
    // A skewed instance behind the others still counts what is in its window.
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 600).await,
        Reply::Limited {
            retry_at_ms: t + 1000
        }
    );

    let pause = |until: i64| json!({"provider": "p", "until_ms": until});
    assert_eq!(
        call(&mut s, "rate.pause", pause(t + 3000), t).await,
        Reply::Paused { until_ms: t + 3000 }
    );
    assert_eq!(
        call(&mut s, "rate.pause", pause(t + 2000), t).await,
        Reply::Paused { until_ms: t + 3000 }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 2999).await,
        Reply::Paused { until_ms: t + 3000 }
    );
    let acquire = json!({"provider": "p", "holder": "h", "limit": 5, "ttl_ms": 100});
    assert_eq!(
        call(&mut s, "rate.acquire_slot", acquire.clone(), t + 2999).await,
        Reply::Paused { until_ms: t + 3000 }
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 2999).await,
        Reply::RateState {
            slots_in_use: 0,
            paused_until_ms: Some(t + 3000)
        }
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 3000).await,
        Reply::RateState {
            slots_in_use: 0,
            paused_until_ms: None
        }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 3000).await,
        Reply::Allowed { remaining: 1 }
    );
    assert!(matches!(
        call(&mut s, "rate.acquire_slot", acquire, t + 3000).await,
        Reply::Acquired { .. }
    ));

    // Any whole number is a pause, compared exactly beyond 2^53.
    let far = i64::MAX - 1;
    assert_eq!(
        call(&mut s, "rate.pause", pause(far), t).await,
        Reply::Paused { until_ms: far }
    );
    assert_eq!(
        call(&mut s, "rate.pause", pause(far - 1), t).await,
        Reply::Paused { until_ms: far }
    );
    assert_eq!(
        call(&mut s, "rate.pause", pause(far + 1), t).await,
        Reply::Paused { until_ms: far + 1 }
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t).await,
        Reply::RateState {
            slots_in_use: 1,
            paused_until_ms: Some(i64::MAX)
        }
    );
}

// ---------------------------------------------------------------------------
// Ids, bad input, keys.

#[tokio::test]
async fn odd_ids_work_and_every_key_stays_under_the_prefix() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let long = "k".repeat(1024);
    let ids = [
        "ü→漢字",
        "a:{b}",
        "*",
        long.as_str(),
        "sp:test:",
        "line\nbreak [x]?",
    ];

    for id in ids {
        let (epoch, _) = granted(
            &call(
                &mut s,
                "lease.take",
                json!({"tree": id, "holder": id, "ttl_ms": 60_000}),
                CLOCK,
            )
            .await,
        );
        assert_eq!(epoch, 1, "{id}");
        let r = call(
            &mut s,
            "lease.renew",
            json!({"tree": id, "holder": id, "epoch": 1, "ttl_ms": 60_000}),
            CLOCK,
        )
        .await;
        assert!(matches!(r, Reply::Renewed { .. }), "{id}: {r:?}");
        let r = call(&mut s, "lease.read", json!({"tree": id}), CLOCK).await;
        assert!(
            matches!(r, Reply::Lease(Some(LeaseView { ref holder, live: true, .. })) if holder.as_deref() == Some(id)),
            "{id}: {r:?}"
        );
        let r = call(
            &mut s,
            "lease.release",
            json!({"tree": id, "holder": id, "epoch": 1}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Released {}, "{id}");
        let r = call(
            &mut s,
            "lease.keep_execution",
            json!({"tree": id, "execution": id}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Kept {});
        let r = call(&mut s, "lease.kept_executions", json!({"tree": id}), CLOCK).await;
        assert_eq!(r, Reply::Executions(vec![id.to_string()]));

        let r = call(
            &mut s,
            "queue.save",
            json!({"child": id, "depth": 1, "payload": id}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Saved {}, "{id}");
        let r = call(
            &mut s,
            "queue.claim",
            json!({"instance": id, "claim_ttl_ms": 60_000}),
            CLOCK,
        )
        .await;
        assert_eq!(
            r,
            Reply::Claimed {
                child: id.into(),
                depth: 1,
                payload: id.into(),
                attempt: 1
            }
        );
        let r = call(
            &mut s,
            "queue.complete",
            json!({"child": id, "instance": id, "attempt": 1}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Completed {}, "{id}");
        let r = call(&mut s, "queue.read", json!({"child": id}), CLOCK).await;
        assert!(
            matches!(
                r,
                Reply::Child(Some(ChildView {
                    state: ChildState::Done,
                    ..
                }))
            ),
            "{id}: {r:?}"
        );

        let r = call(
            &mut s,
            "rate.acquire_slot",
            json!({"provider": id, "holder": id, "limit": 1, "ttl_ms": 1000}),
            CLOCK,
        )
        .await;
        let Reply::Acquired { slot } = r else {
            panic!("{id}: {r:?}")
        };
        let r = call(
            &mut s,
            "rate.release_slot",
            json!({"provider": id, "slot": slot}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Released {});
        let r = call(
            &mut s,
            "rate.release_slot",
            json!({"provider": id, "slot": id}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Unknown {});
        let r = call(
            &mut s,
            "rate.hit",
            json!({"provider": id, "limit": 1, "window_ms": 1000}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Allowed { remaining: 0 });
        let r = call(
            &mut s,
            "rate.pause",
            json!({"provider": id, "until_ms": CLOCK + 1}),
            CLOCK,
        )
        .await;
        assert_eq!(
            r,
            Reply::Paused {
                until_ms: CLOCK + 1
            }
        );
        let r = call(&mut s, "rate.read", json!({"provider": id}), CLOCK).await;
        assert_eq!(
            r,
            Reply::RateState {
                slots_in_use: 0,
                paused_until_ms: Some(CLOCK + 1)
            }
        );
    }
    // Each child claimed in turn was the only one: ids never mixed up.
    assert_eq!(claim(&mut s, "x", 100).await, Reply::Empty {});

    let keys = all_keys(&mut admin).await;
    assert!(keys.len() > ids.len() * 4, "{} keys", keys.len());
    for key in &keys {
        assert!(
            key.starts_with(PREFIX.as_bytes()),
            "key outside the prefix: {:?}",
            String::from_utf8_lossy(key)
        );
    }
    for id in ids {
        assert!(
            keys.contains(&format!("{PREFIX}lease:{id}").into_bytes()),
            "{id}"
        );
        assert!(
            keys.contains(&format!("{PREFIX}q:child:{id}").into_bytes()),
            "{id}"
        );
    }
}

#[tokio::test]
async fn bad_input_is_bad_request_and_writes_nothing() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let cases = [
        (
            "lease.take",
            json!({"tree": "", "holder": "a", "ttl_ms": 1000}),
        ),
        (
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 0}),
        ),
        (
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": "1000"}),
        ),
        ("lease.take", json!({"tree": "t", "holder": "a"})),
        (
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 1000, "extra": 1}),
        ),
        (
            "lease.renew",
            json!({"tree": "t", "holder": "a", "epoch": -1, "ttl_ms": 1000}),
        ),
        (
            "lease.release",
            json!({"tree": "t", "holder": "a", "epoch": 1.5}),
        ),
        (
            "lease.keep_execution",
            json!({"tree": "t", "execution": ""}),
        ),
        ("lease.steal", json!({"tree": "t"})),
        (
            "queue.save",
            json!({"child": "c", "depth": -1, "payload": "x"}),
        ),
        (
            "queue.save",
            json!({"child": "c", "depth": 1, "payload": 7}),
        ),
        ("queue.claim", json!({"instance": "a", "claim_ttl_ms": -5})),
        (
            "queue.complete",
            json!({"child": "c", "instance": "", "attempt": 1}),
        ),
        (
            "rate.acquire_slot",
            json!({"provider": "p", "holder": "h", "limit": 0, "ttl_ms": 10}),
        ),
        (
            "rate.hit",
            json!({"provider": "p", "limit": 1, "window_ms": 0}),
        ),
        ("rate.pause", json!({"provider": "p", "until_ms": -1})),
        ("rate.release_slot", json!({"provider": "p", "slot": ""})),
        ("rate.read", json!(null)),
    ];
    for (op, args) in cases {
        let err = call_err(&mut s, op, args.clone(), CLOCK).await;
        assert_eq!(err.kind, ErrorKind::BadRequest, "{op} {args}: {err}");
    }
    assert_eq!(
        dbsize(&mut admin).await,
        0,
        "bad input must not write a key"
    );
    assert!(sqlite_rows(&server.kept_db()).is_empty());
}

#[tokio::test]
async fn every_script_is_loaded_on_connect() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let _s = connect(&server).await;
    let mut cmd = redis::cmd("SCRIPT");
    cmd.arg("EXISTS");
    for (_, source) in script_sources() {
        cmd.arg(redis::Script::new(source).get_hash());
    }
    let loaded: Vec<i64> = cmd.query_async(&mut admin).await.unwrap();
    assert_eq!(loaded, vec![1; script_sources().len()]);
}

// ---------------------------------------------------------------------------
// Server assumptions (docs/PROTOCOL.md §7).

#[tokio::test]
async fn short_durability_is_refused_naming_each_setting_unless_opted_out() {
    let server = TestServer::start(&[
        "--appendfsync",
        "everysec",
        "--maxmemory-policy",
        "allkeys-lru",
    ]);
    let err = connect_with(&server, &server.url(), None)
        .await
        .err()
        .expect("refused");
    assert_eq!(err.kind, ErrorKind::Durability, "{err}");
    assert_eq!(err.settings, vec!["appendfsync", "maxmemory-policy"]);
    for needle in [
        "appendfsync is everysec",
        "set appendfsync always",
        "maxmemory-policy is allkeys-lru",
        "set maxmemory-policy noeviction",
        "--opt-out acknowledged-writes-may-be-lost",
    ] {
        assert!(
            err.message.contains(needle),
            "{needle:?} in {}",
            err.message
        );
    }

    let err = connect_with(&server, &server.url(), Some("please"))
        .await
        .err()
        .expect("refused");
    assert_eq!(err.kind, ErrorKind::BadRequest, "{err}");

    let mut s = connect_with(&server, &server.url(), Some(OPT_OUT_WRITES_MAY_BE_LOST))
        .await
        .expect("accepted with the opt-out");
    let (epoch, _) = granted(
        &call(
            &mut s,
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
            CLOCK,
        )
        .await,
    );
    assert_eq!(epoch, 1);
}

#[tokio::test]
async fn a_replica_is_refused_even_with_the_opt_out() {
    let primary = TestServer::start(&[]);
    let replicaof = format!("127.0.0.1 {}", primary.port);
    let replica = TestServer::start(&["--replicaof", &replicaof]);
    for opt_out in [None, Some(OPT_OUT_WRITES_MAY_BE_LOST)] {
        let err = connect_with(&replica, &replica.url(), opt_out)
            .await
            .err()
            .expect("a replica is refused");
        assert_eq!(err.kind, ErrorKind::Deployment, "{err}");
        assert_eq!(err.settings, vec!["role"]);
        assert!(err.message.contains("role:slave"), "{}", err.message);
    }
    // The primary itself is fine.
    connect(&primary).await;
}

#[tokio::test]
async fn a_user_without_config_is_config_refused() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER", "limited", "on", ">secret", "~*", "&*", "+@all", "-config",
        ])
        .query_async(&mut admin)
        .await
        .unwrap();
    let url = format!("redis://limited:secret@127.0.0.1:{}/", server.port);
    let err = connect_with(&server, &url, Some(OPT_OUT_WRITES_MAY_BE_LOST))
        .await
        .err()
        .expect("refused");
    assert_eq!(err.kind, ErrorKind::ConfigRefused, "{err}");
    assert!(err.message.contains("CONFIG GET"), "{}", err.message);
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let factory = RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let url = format!("redis://127.0.0.1:{}/", free_port());
    let err = factory
        .connect(&hello(&url, PREFIX, None), CLOCK)
        .await
        .err()
        .expect("nothing listens there");
    assert_eq!(err.kind, ErrorKind::Unavailable, "{err}");
    let err = factory
        .connect(&hello("not a url", PREFIX, None), CLOCK)
        .await
        .err()
        .expect("not a url");
    assert_eq!(err.kind, ErrorKind::BadRequest, "{err}");
}

// ---------------------------------------------------------------------------
// Failures while running.

#[tokio::test]
async fn a_full_server_answers_store_full_and_changes_nothing() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    assert_eq!(save(&mut s, "queued", 1).await, Reply::Saved {});
    let one = json!({"provider": "p", "holder": "h", "limit": 1, "ttl_ms": 100});
    assert!(matches!(
        call(&mut s, "rate.acquire_slot", one.clone(), CLOCK).await,
        Reply::Acquired { .. }
    ));
    let keys_before = all_keys(&mut admin).await.len();

    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "1"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let writes = [
        (
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
        ),
        (
            "queue.save",
            json!({"child": "c", "depth": 1, "payload": "x"}),
        ),
        (
            "queue.claim",
            json!({"instance": "a", "claim_ttl_ms": 1000}),
        ),
        (
            "rate.hit",
            json!({"provider": "p", "limit": 5, "window_ms": 1000}),
        ),
        (
            "rate.pause",
            json!({"provider": "p", "until_ms": CLOCK + 5}),
        ),
        // The only slot expired at CLOCK+100: the grant path must still refuse.
        ("rate.acquire_slot", one.clone()),
    ];
    for (op, args) in writes {
        let clock = if op == "rate.acquire_slot" {
            CLOCK + 200
        } else {
            CLOCK
        };
        let err = call_err(&mut s, op, args.clone(), clock).await;
        assert_eq!(err.kind, ErrorKind::StoreFull, "{op}: {err}");
    }
    // Reads still answer.
    assert_eq!(
        call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await,
        Reply::Lease(None)
    );
    assert_eq!(
        all_keys(&mut admin).await.len(),
        keys_before,
        "nothing written"
    );

    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let (epoch, _) = granted(
        &call(
            &mut s,
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
            CLOCK,
        )
        .await,
    );
    assert_eq!(epoch, 1, "the refused take granted nothing");
    assert_eq!(claim(&mut s, "a", 1000).await, claimed("queued", 1, 1));
}

#[tokio::test]
async fn a_restarted_server_is_unavailable_then_reconnected_with_its_data() {
    let mut server = TestServer::start(&[]);
    let mut s = connect(&server).await;
    let take = |holder: &str| json!({"tree": "t", "holder": holder, "ttl_ms": 100});
    assert_eq!(
        granted(&call(&mut s, "lease.take", take("a"), CLOCK).await).0,
        1
    );

    server.kill();
    let err = call_err(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert_eq!(err.kind, ErrorKind::Unavailable, "{err}");

    server.restart();
    tokio::time::sleep(Duration::from_millis(150)).await;
    // The AOF kept epoch 1 (appendfsync always), so the next grant is 2.
    assert_eq!(
        granted(&call(&mut s, "lease.take", take("b"), CLOCK).await).0,
        2
    );
}

#[tokio::test]
async fn instances_keep_executions_concurrently_in_one_file() {
    let server = TestServer::start(&[]);
    let mut tasks = Vec::new();
    for i in 0..6 {
        let mut s = connect(&server).await;
        tasks.push(tokio::spawn(async move {
            for j in 0..5 {
                let e = format!("e{i}-{j}");
                let r = call(
                    &mut s,
                    "lease.keep_execution",
                    json!({"tree": "t", "execution": e}),
                    CLOCK,
                )
                .await;
                assert_eq!(r, Reply::Kept {});
                let r = call(
                    &mut s,
                    "lease.keep_execution",
                    json!({"tree": "t", "execution": "shared"}),
                    CLOCK,
                )
                .await;
                assert_eq!(r, Reply::Kept {});
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut s = connect(&server).await;
    let Reply::Executions(kept) =
        call(&mut s, "lease.kept_executions", json!({"tree": "t"}), CLOCK).await
    else {
        panic!("wanted executions");
    };
    assert_eq!(kept.len(), 31, "{kept:?}");
    assert_eq!(kept.iter().filter(|e| *e == "shared").count(), 1);
}

#[tokio::test]
async fn resp3_connections_read_nulls_and_config_the_same() {
    let server = TestServer::start(&[]);
    let url = format!("{}?protocol=resp3", server.url());
    let mut s = connect_with(&server, &url, None)
        .await
        .expect("resp3 connect");
    let r = call(
        &mut s,
        "lease.renew",
        json!({"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": 100}),
        CLOCK,
    )
    .await;
    assert_eq!(
        r,
        Reply::Lost {
            holder: None,
            epoch: None
        }
    );
    assert_eq!(
        call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await,
        Reply::Lease(None)
    );
    assert_eq!(
        granted(
            &call(
                &mut s,
                "lease.take",
                json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
                CLOCK
            )
            .await
        )
        .0,
        1
    );
    let r = call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert!(
        matches!(
            r,
            Reply::Lease(Some(LeaseView {
                live: true,
                epoch: 1,
                ..
            }))
        ),
        "{r:?}"
    );
    assert_eq!(save(&mut s, "c", 2).await, Reply::Saved {});
    let r = call(
        &mut s,
        "queue.complete",
        json!({"child": "c", "instance": "a", "attempt": 0}),
        CLOCK,
    )
    .await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: None,
            attempt: Some(0)
        }
    );
    let r = call(&mut s, "rate.read", json!({"provider": "p"}), CLOCK).await;
    assert_eq!(
        r,
        Reply::RateState {
            slots_in_use: 0,
            paused_until_ms: None
        }
    );

    let durable_but_lru = TestServer::start(&["--maxmemory-policy", "allkeys-lru"]);
    let url = format!("{}?protocol=resp3", durable_but_lru.url());
    let err = connect_with(&durable_but_lru, &url, None)
        .await
        .err()
        .expect("refused");
    assert_eq!(err.settings, vec!["maxmemory-policy"]);
}

/// A tiny deterministic generator, so a failing walk replays exactly.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[tokio::test]
async fn a_random_rate_walk_agrees_with_the_sequential_model() {
    use harness::contract::{Judgement, RateModel, Request};

    let server = TestServer::start(&[]);
    let mut s = connect(&server).await;
    let mut model = RateModel::default();
    let mut rng = XorShift(0x5eed_1234_abcd_0001);
    let mut clock = CLOCK;
    let mut slots: Vec<(String, String)> = Vec::new();
    let providers = ["p", "q:{x}"];
    let mut seen = std::collections::BTreeSet::new();
    for step in 0..1500 {
        // Mostly forward, sometimes back: instance clocks are skewed.
        clock += rng.below(12) as i64 - 2;
        let provider = providers[rng.below(2) as usize].to_string();
        let req = match rng.below(6) {
            0 | 1 => Request::RateAcquireSlot {
                provider,
                holder: "h".into(),
                limit: 1 + rng.below(3) as i64,
                ttl_ms: 1 + rng.below(40) as i64,
            },
            2 => {
                let slot = if slots.is_empty() || rng.below(5) == 0 {
                    (provider, "nope".to_string())
                } else {
                    slots[rng.below(slots.len() as u64) as usize].clone()
                };
                Request::RateReleaseSlot {
                    provider: slot.0,
                    slot: slot.1,
                }
            }
            3 => Request::RateHit {
                provider,
                limit: 1 + rng.below(3) as i64,
                window_ms: 1 + rng.below(40) as i64,
            },
            4 if rng.below(4) == 0 => Request::RatePause {
                provider,
                until_ms: clock + rng.below(30) as i64,
            },
            _ => Request::RateRead { provider },
        };
        let reply = s
            .call(&req.to_call(), clock)
            .await
            .unwrap_or_else(|e| panic!("step {step} {req:?}: {e}"));
        if let (Request::RateAcquireSlot { provider, .. }, Reply::Acquired { slot }) =
            (&req, &reply)
        {
            slots.push((provider.clone(), slot.clone()));
        }
        match model.judge(&req, clock, &reply) {
            Judgement::Agrees => {}
            other => panic!("step {step} at {clock}: {req:?} answered {reply:?}: {other:?}"),
        }
        seen.insert(reply.outcome());
    }
    // The walk must have reached every outcome, or it proves little.
    let every = [
        "acquired",
        "full",
        "paused",
        "released",
        "unknown",
        "allowed",
        "limited",
        "rate_state",
    ];
    for outcome in every {
        assert!(seen.contains(outcome), "{outcome} never seen: {seen:?}");
    }
}

#[tokio::test]
async fn a_random_queue_walk_without_expiry_agrees_with_the_sequential_model() {
    use harness::contract::{Judgement, QueueModel, Request, MAX_DURATION_MS};

    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let mut model = QueueModel::default();
    let mut rng = XorShift(0x0000_ddc0_ffee_0002);
    let mut seen = std::collections::BTreeSet::new();
    let instances = ["a", "b"];
    for step in 0..800 {
        let child = format!("c{}", rng.below(25));
        let instance = instances[rng.below(2) as usize].to_string();
        let req = match rng.below(5) {
            0 | 1 => Request::QueueSave {
                child,
                depth: rng.below(4) as i64,
                payload: format!("payload {step}"),
            },
            2 => Request::QueueClaim {
                instance,
                // Claims never run out here: the walk reads server time only
                // approximately, and the order of saves does not depend on it.
                claim_ttl_ms: MAX_DURATION_MS,
            },
            3 => Request::QueueComplete {
                child,
                instance,
                attempt: rng.below(3) as i64,
            },
            _ => Request::QueueRead { child },
        };
        let now = server_ms(&mut admin).await;
        let reply = s
            .call(&req.to_call(), CLOCK)
            .await
            .unwrap_or_else(|e| panic!("step {step} {req:?}: {e}"));
        match model.judge(&req, now, &reply) {
            Judgement::Agrees => {}
            other => panic!("step {step}: {req:?} answered {reply:?}: {other:?}"),
        }
        seen.insert(reply.outcome());
    }
    for outcome in [
        "saved",
        "exists",
        "claimed",
        "empty",
        "completed",
        "not_claimer",
        "child",
    ] {
        assert!(seen.contains(outcome), "{outcome} never seen: {seen:?}");
    }
}

#[tokio::test]
async fn a_random_lease_walk_without_expiry_agrees_with_the_sequential_model() {
    use harness::contract::{Judgement, LeaseModel, Request};

    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let mut model = LeaseModel::default();
    let mut rng = XorShift(0x0001_ea5e_0003);
    let mut seen = std::collections::BTreeSet::new();
    // Leases outlive the walk, so liveness never depends on the instant.
    let ttl = 3_600_000;
    for step in 0..800 {
        let tree = format!("t{}", rng.below(4));
        let holder = ["a", "b", "c"][rng.below(3) as usize].to_string();
        let epoch = rng.below(6) as i64;
        let req = match rng.below(7) {
            0 | 1 => Request::LeaseTake {
                tree,
                holder,
                ttl_ms: ttl,
            },
            2 => Request::LeaseRenew {
                tree,
                holder,
                epoch,
                ttl_ms: ttl,
            },
            3 => Request::LeaseRelease {
                tree,
                holder,
                epoch,
            },
            4 => Request::LeaseKeepExecution {
                tree,
                execution: format!("e{}", rng.below(5)),
            },
            5 => Request::LeaseKeptExecutions { tree },
            _ => Request::LeaseRead { tree },
        };
        let before = server_ms(&mut admin).await;
        let reply = s
            .call(&req.to_call(), CLOCK)
            .await
            .unwrap_or_else(|e| panic!("step {step} {req:?}: {e}"));
        // The script's own `now` is exact where a reply reveals it.
        let now = match reply {
            Reply::Granted { expires_at_ms, .. } | Reply::Renewed { expires_at_ms } => {
                assert!(
                    expires_at_ms - ttl >= before,
                    "step {step}: server time went back"
                );
                expires_at_ms - ttl
            }
            _ => before,
        };
        match model.judge(&req, now, &reply) {
            Judgement::Agrees => {}
            other => panic!("step {step}: {req:?} answered {reply:?}: {other:?}"),
        }
        seen.insert(reply.outcome());
    }
    for outcome in [
        "granted",
        "busy",
        "renewed",
        "lost",
        "released",
        "not_held",
        "lease",
        "kept",
        "executions",
    ] {
        assert!(seen.contains(outcome), "{outcome} never seen: {seen:?}");
    }
}

#[tokio::test]
async fn a_user_without_scripting_is_refused_on_connect() {
    let server = TestServer::start(&[]);
    let mut admin = server.admin().await;
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "noscript",
            "on",
            ">secret",
            "~*",
            "&*",
            "+@all",
            "-@scripting",
        ])
        .query_async(&mut admin)
        .await
        .unwrap();
    let url = format!("redis://noscript:secret@127.0.0.1:{}/", server.port);
    let err = connect_with(&server, &url, None)
        .await
        .err()
        .expect("refused");
    assert_eq!(err.kind, ErrorKind::ConfigRefused, "{err}");
    assert!(err.message.contains("SCRIPT LOAD"), "{}", err.message);
}
