//! Integration tests of `harness::gate` against a real `redis-server` (and,
//! for server behaviour Redis cannot be made to show on demand, a scripted
//! fake server).

use std::time::{Duration, Instant};

use harness::gate::resp::{frame_len, parse_request};
use harness::gate::{Command, Exchange, Fault, FaultRule, Frame, Gate, GateError, Mode};
use harness::server::{ManagedServer, ServerOptions};
use redis::aio::MultiplexedConnection;
use redis::{AsyncCommands, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const WAIT: Duration = Duration::from_secs(5);

async fn server() -> ManagedServer {
    ManagedServer::start(ServerOptions::default())
        .await
        .expect("server starts")
}

async fn gate(url: &str) -> Gate {
    Gate::start(url).await.expect("gate starts")
}

/// A multiplexed connection with a generous response timeout (commands may
/// be held for a while).
async fn connect(url: &str) -> MultiplexedConnection {
    connect_with_timeout(url, Duration::from_secs(30)).await
}

async fn connect_with_timeout(url: &str, response: Duration) -> MultiplexedConnection {
    let client = redis::Client::open(url).expect("client");
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(WAIT))
        .set_response_timeout(Some(response));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connect through the gate")
}

fn cmd(args: &[&str]) -> Command {
    Command::new(args)
}

fn exchange(args: &[&str], reply: &[u8]) -> Exchange {
    Exchange {
        command: cmd(args),
        reply: Frame::new(reply),
    }
}

/// Polls `cond` until it holds or 5 s pass.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A raw RESP client, to see the bytes the gate sends back.
struct Raw {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    async fn connect(gate: &Gate) -> Raw {
        Raw {
            stream: TcpStream::connect(gate.local_addr()).await.unwrap(),
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    async fn send_cmd(&mut self, args: &[&str]) {
        let bytes = harness::gate::resp::encode_request(
            &args
                .iter()
                .map(|a| a.as_bytes().to_vec())
                .collect::<Vec<_>>(),
        );
        self.send(&bytes).await;
    }

    /// The next whole frame, or `None` on end of stream.
    async fn frame(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(n) = frame_len(&self.buf).unwrap() {
                return Some(self.buf.drain(..n).collect());
            }
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout(WAIT, self.stream.read(&mut chunk))
                .await
                .expect("a frame within 5 s")
                .ok()?;
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Whether nothing arrives within `d`.
    async fn silent_for(&mut self, d: Duration) -> bool {
        let mut chunk = [0u8; 64];
        tokio::time::timeout(d, self.stream.read(&mut chunk))
            .await
            .is_err()
    }
}

// ---------------------------------------------------------------- pass-through

#[tokio::test]
async fn pass_through_resp2() {
    let server = server().await;
    let gate = gate(&server.url()).await;
    assert!(gate.url().starts_with("redis://127.0.0.1:"));
    assert_ne!(gate.url(), server.url());
    let mut c = connect(&gate.url()).await;

    let () = c.set("k", "v").await.unwrap();
    let v: String = c.get("k").await.unwrap();
    assert_eq!(v, "v");
    let () = c
        .hset_multiple("h", &[("f1", "1"), ("f2", "2")])
        .await
        .unwrap();
    let h: std::collections::HashMap<String, String> = c.hgetall("h").await.unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h["f2"], "2");
    let missing: Option<String> = c.get("nope").await.unwrap();
    assert_eq!(missing, None);
    let eval: (i64, String, String) = redis::cmd("EVAL")
        .arg("return {1, 'two', redis.call('GET', KEYS[1])}")
        .arg(1)
        .arg("k")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(eval, (1, "two".into(), "v".into()));

    // The script cache dance: EVALSHA -> NOSCRIPT -> SCRIPT LOAD -> EVALSHA.
    let script = redis::Script::new("return redis.call('INCR', KEYS[1])");
    let n: i64 = script.key("counter").invoke_async(&mut c).await.unwrap();
    assert_eq!(n, 1);

    let names: Vec<String> = gate.recording().iter().map(|e| e.command.name()).collect();
    assert_eq!(
        names,
        ["SET", "GET", "HMSET", "HGETALL", "GET", "EVAL", "EVALSHA", "EVALSHA"],
        "scheduled commands only; SCRIPT LOAD and the client's set-up are not recorded"
    );
    let rec = gate.recording();
    assert_eq!(rec[0].reply.as_bytes(), b"+OK\r\n");
    assert_eq!(rec[1].reply.as_bytes(), b"$1\r\nv\r\n");
    assert_eq!(rec[4].reply.as_bytes(), b"$-1\r\n");
    assert!(rec[6].reply.is_error());
    assert!(rec[6].reply.as_bytes().starts_with(b"-NOSCRIPT"));
    assert_eq!(rec[7].reply.as_bytes(), b":1\r\n");
    gate.shutdown().await;
}

#[tokio::test]
async fn pass_through_resp3() {
    let server = server().await;
    let upstream = format!("{}?protocol=resp3", server.url());
    let gate = gate(&upstream).await;
    assert!(gate.url().ends_with("/?protocol=resp3"), "{}", gate.url());
    // The client opens with HELLO 3, which must pass through.
    let mut c = connect(&gate.url()).await;

    let () = c
        .hset_multiple("h", &[("a", "1"), ("b", "2")])
        .await
        .unwrap();
    let h: Value = c.hgetall("h").await.unwrap();
    match &h {
        Value::Map(pairs) => assert_eq!(pairs.len(), 2),
        other => panic!("HGETALL over RESP3 should be a map, got {other:?}"),
    }
    let () = c.sadd("s", &["x", "y"]).await.unwrap();
    let s: Value = c.smembers("s").await.unwrap();
    assert!(matches!(s, Value::Set(ref m) if m.len() == 2), "{s:?}");
    let d: Value = redis::cmd("EVAL")
        .arg("return redis.setresp(3) or {double=3.5}")
        .arg(0)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(d, Value::Double(3.5));
    let null: Value = c.get("nope").await.unwrap();
    assert_eq!(null, Value::Nil);

    let rec = gate.recording();
    let hgetall = rec.iter().find(|e| e.command.is("HGETALL")).unwrap();
    assert!(
        hgetall.reply.as_bytes().starts_with(b"%2\r\n"),
        "{}",
        hgetall.reply
    );
    let get = rec.iter().find(|e| e.command.is("GET")).unwrap();
    assert_eq!(get.reply.as_bytes(), b"_\r\n");
    let smembers = rec.iter().find(|e| e.command.is("SMEMBERS")).unwrap();
    assert!(smembers.reply.as_bytes().starts_with(b"~2\r\n"));

    // HELLO's own reply is a map, framed like any other.
    let mut raw = Raw::connect(&gate).await;
    raw.send_cmd(&["HELLO", "3"]).await;
    let hello = raw.frame().await.unwrap();
    assert!(hello.starts_with(b"%"), "{}", hello.escape_ascii());
    assert!(hello.windows(5).any(|w| w == b"proto"));
    raw.send_cmd(&["HGETALL", "h"]).await;
    assert!(raw.frame().await.unwrap().starts_with(b"%2\r\n"));
    gate.shutdown().await;
}

// ------------------------------------------------------------------- ordering

/// Two instances, each on its own gate, each pushing two entries; the test
/// releases their commands in `order` and the server's list must show
/// exactly that order.
async fn run_interleaving(order: &[&str]) {
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate_a = gate(&server.url()).await;
    let gate_b = gate(&server.url()).await;
    gate_a.set_mode(Mode::Hold);
    gate_b.set_mode(Mode::Hold);
    let mut ca = connect(&gate_a.url()).await;
    let mut cb = connect(&gate_b.url()).await;
    let ta = tokio::spawn(async move {
        let first: i64 = ca.rpush("log", "a1").await.unwrap();
        let second: i64 = ca.rpush("log", "a2").await.unwrap();
        (first, second)
    });
    let tb = tokio::spawn(async move {
        let first: i64 = cb.rpush("log", "b1").await.unwrap();
        let second: i64 = cb.rpush("log", "b2").await.unwrap();
        (first, second)
    });

    let mut replies = std::collections::HashMap::new();
    for (position, step) in order.iter().enumerate() {
        let (gate, done) = if step.starts_with('a') {
            (&gate_a, gate_a.recording().len())
        } else {
            (&gate_b, gate_b.recording().len())
        };
        let held = gate.next_held(WAIT).await.expect("a held command");
        assert_eq!(held.command, cmd(&["RPUSH", "log", step]));
        gate.release(held.id).unwrap();
        assert!(gate.wait_recorded(done + 1, WAIT).await);
        replies.insert(*step, position as i64 + 1);
    }
    let (a1, a2) = ta.await.unwrap();
    let (b1, b2) = tb.await.unwrap();
    assert_eq!(
        (a1, a2, b1, b2),
        (replies["a1"], replies["a2"], replies["b1"], replies["b2"])
    );
    let log: Vec<String> = admin.lrange("log", 0, -1).await.unwrap();
    assert_eq!(log, order);
    assert!(gate_a.held().is_empty() && gate_b.held().is_empty());
}

#[tokio::test]
async fn hold_forces_interleaving_b1_a1_a2_b2() {
    run_interleaving(&["b1", "a1", "a2", "b2"]).await;
}

#[tokio::test]
async fn hold_forces_interleaving_a1_b1_b2_a2() {
    run_interleaving(&["a1", "b1", "b2", "a2"]).await;
}

#[tokio::test]
async fn hold_forces_a_lost_update_between_two_read_then_writes() {
    // Two read-then-write increments, interleaved r_a, r_b, w_a, w_b: both
    // read 0 and both write 1 — the race a non-atomic take would have.
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let () = admin.set("n", 0).await.unwrap();
    let gate_a = gate(&server.url()).await;
    let gate_b = gate(&server.url()).await;
    for g in [&gate_a, &gate_b] {
        g.set_mode(Mode::Hold);
    }
    let spawn_increment = |mut c: MultiplexedConnection| {
        tokio::spawn(async move {
            let n: i64 = c.get("n").await.unwrap();
            let () = c.set("n", n + 1).await.unwrap();
            n
        })
    };
    let ta = spawn_increment(connect(&gate_a.url()).await);
    let tb = spawn_increment(connect(&gate_b.url()).await);
    for (g, name) in [
        (&gate_a, "GET"),
        (&gate_b, "GET"),
        (&gate_a, "SET"),
        (&gate_b, "SET"),
    ] {
        let held = g.next_held(WAIT).await.unwrap();
        assert!(held.command.is(name), "{}", held.command);
        let done = g.recording().len();
        g.release(held.id).unwrap();
        assert!(g.wait_recorded(done + 1, WAIT).await);
    }
    assert_eq!((ta.await.unwrap(), tb.await.unwrap()), (0, 0));
    let n: i64 = admin.get("n").await.unwrap();
    assert_eq!(n, 1, "the lost update is visible");
}

#[tokio::test]
async fn pipelined_commands_are_held_one_at_a_time_in_order() {
    let server = server().await;
    let gate = gate(&server.url()).await;
    gate.set_mode(Mode::Hold);
    let mut raw = Raw::connect(&gate).await;
    // Three requests in one write: two scheduled, then an inline PING.
    raw.send(b"*3\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n$1\r\nx\r\n*3\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n$1\r\ny\r\nPING\r\n")
        .await;
    let first = gate.next_held(WAIT).await.unwrap();
    assert_eq!(first.command, cmd(&["RPUSH", "l", "x"]));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(gate.held().len(), 1, "the second waits behind the first");
    assert!(raw.silent_for(Duration::from_millis(50)).await);
    gate.release(first.id).unwrap();
    assert_eq!(raw.frame().await.unwrap(), b":1\r\n");
    let second = gate.next_held(WAIT).await.unwrap();
    assert_eq!(second.command, cmd(&["RPUSH", "l", "y"]));
    assert_eq!(second.connection, first.connection);
    gate.release(second.id).unwrap();
    assert_eq!(raw.frame().await.unwrap(), b":2\r\n");
    // PING is set-up: answered without a release.
    assert_eq!(raw.frame().await.unwrap(), b"+PONG\r\n");
    assert_eq!(gate.recording().len(), 2);
}

#[tokio::test]
async fn setup_commands_are_not_held_in_hold_mode() {
    let server = server().await;
    let gate = gate(&format!("{}?protocol=resp3", server.url())).await;
    gate.set_mode(Mode::Hold);
    // HELLO 3 and CLIENT SETINFO are sent while connecting.
    let mut c = connect(&gate.url()).await;
    let () = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg("instance-a")
        .query_async(&mut c)
        .await
        .unwrap();
    let () = redis::cmd("SELECT")
        .arg(0)
        .query_async(&mut c)
        .await
        .unwrap();
    let pong: String = redis::cmd("PING").query_async(&mut c).await.unwrap();
    assert_eq!(pong, "PONG");
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(sha.len(), 40);
    let _: Value = redis::cmd("HELLO")
        .arg(3)
        .query_async(&mut c)
        .await
        .unwrap();
    let name: String = redis::cmd("client")
        .arg("getname")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(name, "instance-a");
    assert!(gate.held().is_empty());
    assert!(gate.recording().is_empty());

    // A scheduled command is held though.
    let get = tokio::spawn(async move {
        let v: Option<String> = c.get("k").await.unwrap();
        v
    });
    let held = gate.next_held(WAIT).await.expect("GET is held");
    assert_eq!(held.command, cmd(&["GET", "k"]));
    gate.release(held.id).unwrap();
    assert_eq!(get.await.unwrap(), None);
}

#[tokio::test]
async fn next_held_times_out_and_release_of_unknown_id_fails() {
    let server = server().await;
    let gate = gate(&server.url()).await;
    gate.set_mode(Mode::Hold);
    let started = Instant::now();
    assert!(gate.next_held(Duration::from_millis(100)).await.is_none());
    assert!(started.elapsed() >= Duration::from_millis(100));
    let err = gate.release(harness::gate::HeldId(42)).unwrap_err();
    assert!(matches!(err, GateError::NotHeld { .. }));
    assert!(err.to_string().contains("call held()"), "{err}");
}

#[tokio::test]
async fn switching_to_pass_through_releases_everything_held() {
    let server = server().await;
    let gate = gate(&server.url()).await;
    gate.set_mode(Mode::Hold);
    let mut c = connect(&gate.url()).await;
    let t = tokio::spawn(async move {
        let n: i64 = c.incr("n", 1).await.unwrap();
        let m: i64 = c.incr("n", 1).await.unwrap();
        (n, m)
    });
    gate.next_held(WAIT).await.unwrap();
    gate.set_mode(Mode::PassThrough);
    assert_eq!(t.await.unwrap(), (1, 2));
}

#[tokio::test]
async fn held_commands_of_a_closed_connection_disappear() {
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = gate(&server.url()).await;
    gate.set_mode(Mode::Hold);
    let mut raw = Raw::connect(&gate).await;
    raw.send_cmd(&["SET", "k", "v"]).await;
    let held = gate.next_held(WAIT).await.unwrap();
    assert_eq!(gate.connections(), 1);
    drop(raw);
    eventually("the held command to go", || gate.held().is_empty()).await;
    eventually("the connection to close", || gate.connections() == 0).await;
    assert!(matches!(
        gate.release(held.id),
        Err(GateError::NotHeld { .. })
    ));
    let v: Option<String> = admin.get("k").await.unwrap();
    assert_eq!(v, None, "a held command of a closed connection never ran");
}

// ------------------------------------------------------------------ recording

#[tokio::test]
async fn recording_lists_exactly_the_scheduled_commands_in_order() {
    let server = server().await;
    let gate = gate(&server.url()).await;
    let mut raw = Raw::connect(&gate).await;
    for (args, reply) in [
        (&["CLIENT", "SETNAME", "x"][..], &b"+OK\r\n"[..]),
        (&["SET", "k1", "v1"], b"+OK\r\n"),
        (&["PING"], b"+PONG\r\n"),
        (&["INCR", "k2"], b":1\r\n"),
        (&["ECHO", "hi"], b"$2\r\nhi\r\n"),
        (&["GET", "k1"], b"$2\r\nv1\r\n"),
        (
            &["HGET", "k1", "f"],
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
    ] {
        raw.send_cmd(args).await;
        assert_eq!(raw.frame().await.unwrap(), reply, "{args:?}");
    }
    assert_eq!(
        gate.recording(),
        vec![
            exchange(&["SET", "k1", "v1"], b"+OK\r\n"),
            exchange(&["INCR", "k2"], b":1\r\n"),
            exchange(&["GET", "k1"], b"$2\r\nv1\r\n"),
            exchange(
                &["HGET", "k1", "f"],
                b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
            ),
        ]
    );
    gate.clear_recording();
    assert!(gate.recording().is_empty());
}

// --------------------------------------------------------------------- replay

#[tokio::test]
async fn replay_answers_recorded_commands_without_the_server_then_holds() {
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = gate(&server.url()).await;

    // Record one operation of three scheduled commands.
    let mut c = connect(&gate.url()).await;
    let operation = |mut c: MultiplexedConnection| async move {
        let ok: String = redis::cmd("SET")
            .arg("k1")
            .arg("v1")
            .query_async(&mut c)
            .await
            .unwrap();
        let n: i64 = c.incr("k2", 1).await.unwrap();
        let v: String = c.get("k1").await.unwrap();
        (ok, n, v)
    };
    let first = operation(c.clone()).await;
    assert_eq!(first, ("OK".into(), 1, "v1".into()));
    let recording = gate.recording();
    assert_eq!(recording.len(), 3);
    drop(c);

    // The server moves on; the replay must not touch it.
    let () = admin.set("k1", "other").await.unwrap();
    gate.clear_recording();
    gate.replay(recording[..2].to_vec());
    assert_eq!(gate.mode(), Mode::Hold);
    assert_eq!(gate.replay_remaining(), 2);

    c = connect(&gate.url()).await;
    let rerun = tokio::spawn(operation(c));
    let held = gate
        .next_held(WAIT)
        .await
        .expect("the third command is held");
    assert_eq!(held.command, cmd(&["GET", "k1"]));
    assert_eq!(gate.replay_remaining(), 0);
    let k1: String = admin.get("k1").await.unwrap();
    assert_eq!(k1, "other", "the replayed SET never reached the server");
    let k2: i64 = admin.get("k2").await.unwrap();
    assert_eq!(k2, 1, "the replayed INCR never reached the server");

    gate.release(held.id).unwrap();
    let (ok, n, v) = rerun.await.unwrap();
    assert_eq!((ok.as_str(), n), ("OK", 1), "recorded replies were given");
    assert_eq!(v, "other", "the third command went to the server");
    let rec = gate.recording();
    assert_eq!(rec[..2], recording[..2]);
    assert_eq!(rec[2], exchange(&["GET", "k1"], b"$5\r\nother\r\n"));
    assert_eq!(gate.divergence(), None);
}

#[tokio::test]
async fn replay_divergence_is_reported_and_the_connection_reset() {
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = gate(&server.url()).await;
    gate.replay(vec![
        exchange(&["SET", "k1", "v1"], b"+OK\r\n"),
        exchange(&["INCR", "k2"], b":1\r\n"),
    ]);
    let mut c = connect(&gate.url()).await;
    let ok: String = redis::cmd("SET")
        .arg("k1")
        .arg("v1")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let err = c.incr::<_, _, i64>("k3", 1).await.unwrap_err();
    assert!(err.is_io_error() || err.is_connection_dropped(), "{err:?}");

    let divergence = gate.divergence().expect("a divergence");
    assert_eq!(divergence.index, 1);
    assert_eq!(divergence.expected, cmd(&["INCR", "k2"]));
    assert_eq!(divergence.got, cmd(&["INCRBY", "k3", "1"]));
    assert!(divergence
        .to_string()
        .contains("the store sends different commands on re-run"));
    eventually("the reset connection to go", || gate.connections() == 0).await;
    let keys: Vec<String> = admin.keys("*").await.unwrap();
    assert!(keys.is_empty(), "nothing reached the server: {keys:?}");
    assert_eq!(gate.replay_remaining(), 0);
}

// --------------------------------------------------------------------- faults

#[tokio::test]
async fn drop_reply_after_apply_loses_the_reply_not_the_write() {
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = gate(&server.url()).await;
    gate.inject(Fault::DropReplyAfterApply);
    let mut c = connect(&gate.url()).await;
    let err = c.set::<_, _, ()>("k", "v").await.unwrap_err();
    assert!(err.is_io_error() || err.is_connection_dropped(), "{err:?}");
    let v: String = admin.get("k").await.unwrap();
    assert_eq!(v, "v", "the server applied the write");
    assert_eq!(
        gate.recording(),
        vec![exchange(&["SET", "k", "v"], b"+OK\r\n")]
    );
    assert!(gate.faults().is_empty(), "a bare fault applies once");
    eventually("the connection to close", || gate.connections() == 0).await;
    // The next connection works normally.
    let mut c = connect(&gate.url()).await;
    let v: String = c.get("k").await.unwrap();
    assert_eq!(v, "v");
}

#[tokio::test]
async fn black_hole_makes_the_client_time_out() {
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = gate(&server.url()).await;
    gate.inject(Fault::BlackHole);
    let mut c = connect_with_timeout(&gate.url(), Duration::from_millis(300)).await;
    let err = c.set::<_, _, ()>("k", "v").await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert_eq!(gate.connections(), 1, "the connection stays open");
    let v: Option<String> = admin.get("k").await.unwrap();
    assert_eq!(v, None, "nothing was forwarded");
    assert!(gate.recording().is_empty());
}

#[tokio::test]
async fn reset_before_send_leaves_the_server_untouched() {
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = gate(&server.url()).await;
    // Only INCR is hit; SET passes.
    gate.inject(FaultRule::once(Fault::ResetBeforeSend).on_command("incrby"));
    let mut c = connect(&gate.url()).await;
    let () = c.set("k", "v").await.unwrap();
    let err = c.incr::<_, _, i64>("n", 1).await.unwrap_err();
    assert!(err.is_io_error() || err.is_connection_dropped(), "{err:?}");
    let n: Option<i64> = admin.get("n").await.unwrap();
    assert_eq!(n, None);
    assert_eq!(
        gate.recording(),
        vec![exchange(&["SET", "k", "v"], b"+OK\r\n")]
    );
    eventually("the connection to close", || gate.connections() == 0).await;
}

#[tokio::test]
async fn refuse_answers_an_error_and_keeps_the_connection_in_step() {
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = gate(&server.url()).await;
    gate.inject(FaultRule::once(Fault::RefuseBeforeSend).on_command("incrby"));
    let mut c = connect(&gate.url()).await;
    let err = c.incr::<_, _, i64>("n", 1).await.unwrap_err();
    assert!(
        !err.is_io_error() && !err.is_connection_dropped(),
        "{err:?}"
    );
    assert!(err.to_string().contains("command not sent"), "{err}");
    let n: Option<i64> = admin.get("n").await.unwrap();
    assert_eq!(n, None, "nothing was forwarded");
    assert!(gate.recording().is_empty());
    // The same connection goes on: the next reply is its own command's.
    let () = c.set("k", "v").await.unwrap();
    let v: String = c.get("k").await.unwrap();
    assert_eq!(v, "v");
    assert_eq!(gate.connections(), 1);
}

#[tokio::test]
async fn delay_holds_back_forwarding() {
    let server = server().await;
    let gate = gate(&server.url()).await;
    gate.inject(FaultRule::always(Fault::Delay(Duration::from_millis(200))).on_command("GET"));
    let mut c = connect(&gate.url()).await;
    let started = Instant::now();
    let () = c.set("k", "v").await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(200));
    for _ in 0..2 {
        let started = Instant::now();
        let v: String = c.get("k").await.unwrap();
        assert_eq!(v, "v");
        assert!(started.elapsed() >= Duration::from_millis(200));
    }
    assert_eq!(gate.faults().len(), 1, "an `always` rule stays");
    gate.clear_faults();
    let started = Instant::now();
    let _: String = c.get("k").await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(200));
}

// ---------------------------------------------------------- connection ends

#[tokio::test]
async fn upstream_close_closes_the_client() {
    let server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = gate(&server.url()).await;
    let mut raw = Raw::connect(&gate).await;
    raw.send_cmd(&["PING"]).await;
    assert_eq!(raw.frame().await.unwrap(), b"+PONG\r\n");
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query_async(&mut admin)
        .await
        .unwrap();
    assert!(killed >= 1);
    assert_eq!(raw.frame().await, None, "the client sees the end");
    eventually("the connection to close", || gate.connections() == 0).await;
}

#[tokio::test]
async fn shutdown_closes_everything() {
    let server = server().await;
    let gate = gate(&server.url()).await;
    gate.set_mode(Mode::Hold);
    let mut held_client = Raw::connect(&gate).await;
    held_client.send_cmd(&["SET", "k", "v"]).await;
    let held = gate.next_held(WAIT).await.unwrap();
    let mut idle_client = Raw::connect(&gate).await;
    idle_client.send_cmd(&["PING"]).await;
    assert_eq!(idle_client.frame().await.unwrap(), b"+PONG\r\n");
    assert_eq!(gate.connections(), 2);

    let probe = gate.clone();
    let addr = gate.local_addr();
    tokio::time::timeout(WAIT, gate.shutdown())
        .await
        .expect("shutdown finishes");
    assert_eq!(probe.connections(), 0);
    assert!(probe.held().is_empty());
    assert!(matches!(probe.release(held.id), Err(GateError::ShutDown)));
    assert!(
        probe.next_held(WAIT).await.is_none(),
        "no waiting on a stopped gate"
    );
    assert_eq!(held_client.frame().await, None);
    assert_eq!(idle_client.frame().await, None);
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the listener is closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_no_task_behind() {
    let server = server().await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let gate = gate(&server.url()).await;
    gate.set_mode(Mode::Hold);
    let mut clients = Vec::new();
    for i in 0..3 {
        let mut raw = Raw::connect(&gate).await;
        raw.send_cmd(&["SET", &format!("k{i}"), "v"]).await;
        clients.push(raw);
    }
    eventually("three held commands", || gate.held().len() == 3).await;
    // The accept loop and three connection tasks (the driver task of a
    // dropped redis connection, alive in `before`, may end meanwhile).
    let during = metrics.num_alive_tasks();
    assert!(during >= 4, "{before} -> {during}");
    gate.shutdown().await;
    // A finished task leaves the count a moment after its join completes.
    eventually("every gate task to end", || {
        let after = metrics.num_alive_tasks();
        after <= before && after + 4 <= during
    })
    .await;
}

#[tokio::test]
async fn dropping_every_handle_stops_the_gate() {
    let server = server().await;
    let gate = gate(&server.url()).await;
    let addr = gate.local_addr();
    let mut raw = Raw::connect(&gate).await;
    raw.send_cmd(&["PING"]).await;
    assert_eq!(raw.frame().await.unwrap(), b"+PONG\r\n");
    drop(gate);
    assert_eq!(raw.frame().await, None);
    let deadline = Instant::now() + WAIT;
    while TcpStream::connect(addr).await.is_ok() {
        assert!(Instant::now() < deadline, "listener still open");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn start_fails_clearly_without_a_server() {
    // A port nobody listens on: bind, learn it, close.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let err = Gate::start(&format!("redis://u:secret@127.0.0.1:{port}/"))
        .await
        .unwrap_err();
    assert!(matches!(err, GateError::Upstream { .. }), "{err:?}");
    assert!(err.to_string().contains("start the server"), "{err}");
    let err = Gate::start("rediss://u:secret@127.0.0.1:1/")
        .await
        .unwrap_err();
    assert!(matches!(err, GateError::InvalidUrl { .. }), "{err:?}");
    assert!(!err.to_string().contains("secret"), "{err}");
}

#[tokio::test]
async fn url_keeps_user_password_and_db() {
    let server = server().await;
    let url = server
        .add_acl_user("gated", "pw", &["~*", "&*", "+@all"])
        .await
        .unwrap();
    assert!(url.ends_with('/'), "{url}");
    let url = format!("{url}2");
    let gate = gate(&url).await;
    let gated = gate.url();
    assert!(gated.starts_with("redis://gated:pw@127.0.0.1:"), "{gated}");
    assert!(gated.ends_with("/2"), "{gated}");
    // AUTH and SELECT pass through: the key lands in db 2 as user `gated`.
    let mut c = connect(&gated).await;
    let () = c.set("k", "v").await.unwrap();
    let who: String = redis::cmd("ACL")
        .arg("WHOAMI")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(who, "gated");
    let mut admin = server.admin().await.unwrap();
    let () = redis::cmd("SELECT")
        .arg(2)
        .query_async(&mut admin)
        .await
        .unwrap();
    let v: String = admin.get("k").await.unwrap();
    assert_eq!(v, "v");
    let names: Vec<String> = gate.recording().iter().map(|e| e.command.name()).collect();
    assert_eq!(names, ["SET", "ACL"]);
}

// ------------------------------------------------------ scripted fake server

/// A fake server that answers `PUSHY` with a push frame and then an
/// attribute-prefixed reply, `SLOW` with a map written one byte at a time,
/// `KICK` with `+OK` followed later by an unsolicited push, and anything
/// else with `+OK`.
async fn fake_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                loop {
                    while let Some(req) = parse_request(&buf).unwrap() {
                        buf.drain(..req.len);
                        let name = String::from_utf8_lossy(&req.args[0]).to_uppercase();
                        let result =
                            match name.as_str() {
                                "PUSHY" => socket
                                    .write_all(
                                        b">2\r\n+hello\r\n+world\r\n|1\r\n+ttl\r\n:3\r\n+OK\r\n",
                                    )
                                    .await,
                                "SLOW" => {
                                    let mut r = Ok(());
                                    for b in b"%1\r\n+k\r\n$3\r\nabc\r\n" {
                                        r = r.and(socket.write_all(&[*b]).await);
                                        tokio::time::sleep(Duration::from_millis(2)).await;
                                    }
                                    r
                                }
                                "KICK" => {
                                    let r = socket.write_all(b"+OK\r\n").await;
                                    tokio::time::sleep(Duration::from_millis(50)).await;
                                    r.and(socket.write_all(b">1\r\n+late\r\n").await)
                                }
                                _ => socket.write_all(b"+OK\r\n").await,
                            };
                        if result.is_err() {
                            return;
                        }
                    }
                    match socket.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    format!("redis://{addr}/")
}

#[tokio::test]
async fn push_frames_are_forwarded_and_never_taken_for_replies() {
    let gate = gate(&fake_server().await).await;
    let mut raw = Raw::connect(&gate).await;
    raw.send_cmd(&["PUSHY"]).await;
    assert_eq!(raw.frame().await.unwrap(), b">2\r\n+hello\r\n+world\r\n");
    assert_eq!(raw.frame().await.unwrap(), b"|1\r\n+ttl\r\n:3\r\n+OK\r\n");
    assert_eq!(
        gate.recording(),
        vec![exchange(&["PUSHY"], b"|1\r\n+ttl\r\n:3\r\n+OK\r\n")],
        "the reply with its attribute, without the push"
    );

    raw.send_cmd(&["SLOW"]).await;
    assert_eq!(raw.frame().await.unwrap(), b"%1\r\n+k\r\n$3\r\nabc\r\n");

    raw.send_cmd(&["KICK"]).await;
    assert_eq!(raw.frame().await.unwrap(), b"+OK\r\n");
    // A push arriving while nothing is outstanding is passed on too.
    assert_eq!(raw.frame().await.unwrap(), b">1\r\n+late\r\n");
    raw.send_cmd(&["OTHER"]).await;
    assert_eq!(raw.frame().await.unwrap(), b"+OK\r\n");
    let names: Vec<String> = gate.recording().iter().map(|e| e.command.name()).collect();
    assert_eq!(names, ["PUSHY", "SLOW", "KICK", "OTHER"]);
}

#[tokio::test]
async fn a_protocol_error_from_the_client_is_answered_and_closed() {
    let server = server().await;
    let gate = gate(&server.url()).await;
    let mut raw = Raw::connect(&gate).await;
    raw.send(b"*1\r\n:5\r\n").await;
    let reply = raw.frame().await.unwrap();
    assert!(reply.starts_with(b"-ERR"), "{}", reply.escape_ascii());
    assert_eq!(raw.frame().await, None);
    eventually("the connection to close", || gate.connections() == 0).await;
}

/// A store operation of two commands (SET, then GET), answered `released`.
struct TwoCommands(MultiplexedConnection);

#[async_trait::async_trait]
impl harness::store::StoreClient for TwoCommands {
    async fn call(
        &mut self,
        _: &harness::contract::Call,
        _: i64,
    ) -> Result<harness::contract::Reply, harness::contract::StoreError> {
        let _: () = self.0.set("drive:k", "1").await.unwrap();
        let _: Option<String> = self.0.get("drive:k").await.unwrap();
        Ok(harness::contract::Reply::Released {})
    }
}

#[tokio::test]
async fn the_driver_steps_an_operation_through_its_commands_then_its_answer() {
    use harness::gate::drive::{instance_name, next_step, start_operation, Step};
    let server = server().await;
    let gate = gate(&server.url()).await;
    let client = TwoCommands(connect(&gate.url()).await);
    gate.set_mode(Mode::Hold);
    let call = harness::contract::Request::LeaseRead { tree: "t".into() }.to_call();
    let mut op = start_operation(Box::new(client), call, 0);
    for expected in ["SET", "GET"] {
        let Ok(Step::Held(held)) = next_step(&gate, &mut op).await else {
            panic!("{expected} was not held");
        };
        assert!(held.command.is(expected), "{:?}", held.command);
        // Held until released: asking again gives the same command.
        let Ok(Step::Held(again)) = next_step(&gate, &mut op).await else {
            panic!("{expected} is no longer held");
        };
        assert_eq!(again.id, held.id);
        gate.release(held.id).unwrap();
    }
    let Ok(Step::Answered(_, out)) = next_step(&gate, &mut op).await else {
        panic!("the operation did not answer");
    };
    assert_eq!(out.unwrap(), harness::contract::Reply::Released {});
    assert_eq!(gate.recording().len(), 2);
    assert_eq!([0, 1, 2].map(instance_name), ["a", "b", "c"]);
}
