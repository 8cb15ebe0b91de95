//! The server matrix: every named server (`redis-6.2`, `redis-7.0`,
//! `valkey-9`) starts from what `scripts/setup` installed, passes the clock
//! probe and expires keys exactly when the virtual clock says so, forwards
//! and backwards; a server whose clock the harness does not control is
//! refused. A named server that is not installed FAILS these tests with the
//! line that names `scripts/setup` (CI runs it first): never a silent skip.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use harness::server::{
    ManagedServer, ServerError, ServerKind, ServerOptions, SERVERS_DIR_ENV, VIRTUAL_EPOCH_MS,
};
use redis::aio::MultiplexedConnection;

/// Set in a child test process run by [`run_isolated`].
const ISOLATED_ENV: &str = "STOREPROOF_SERVER_MATRIX_ISOLATED";

/// Runs the test `name` of this binary alone in a child process with `envs`
/// (environment changes must not leak into tests running in parallel).
fn run_isolated(name: &str, envs: &[(&str, &Path)]) {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(ISOLATED_ENV, "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run isolated test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "isolated test {name} failed: {}\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    // A filter that matched nothing would pass without running anything.
    assert!(stdout.contains("1 passed"), "{name} did not run: {stdout}");
}

fn isolated() -> bool {
    std::env::var_os(ISOLATED_ENV).is_some()
}

/// Starts `kind` with the virtual clock, or fails with the harness's own
/// message (which names `scripts/setup` when the server is not installed).
async fn start(kind: ServerKind) -> ManagedServer {
    match ManagedServer::start(ServerOptions::default().with_server(kind.clone())).await {
        Ok(server) => server,
        Err(e) => panic!("{kind}: {e}"),
    }
}

async fn admin(server: &ManagedServer) -> MultiplexedConnection {
    server.admin().await.expect("admin connection")
}

async fn time_ms(conn: &mut MultiplexedConnection) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await.expect("TIME");
    s * 1000 + us / 1000
}

/// Whether `key` is alive, asked with plain commands (each reads the
/// server's clock itself); EXISTS and GET must agree.
async fn alive(conn: &mut MultiplexedConnection, key: &str) -> bool {
    let exists: i64 = redis::cmd("EXISTS")
        .arg(key)
        .query_async(conn)
        .await
        .expect("EXISTS");
    let got: Option<String> = redis::cmd("GET")
        .arg(key)
        .query_async(conn)
        .await
        .expect("GET");
    assert_eq!(
        exists != 0,
        got.is_some(),
        "EXISTS and GET disagree on {key}"
    );
    exists != 0
}

/// The proof for one server: it is the version its name says, its `TIME`
/// is the virtual clock, a key with a PX lives until the clock passes its
/// expiry and not a millisecond longer, many times in a row right after a
/// move (a server that caches wall-clock time misses moves made within its
/// cache's lifetime), and after the clock goes back (as the explorer's
/// restores do) new keys expire by the earlier time.
async fn follows_the_virtual_clock(kind: ServerKind) {
    let server = start(kind.clone()).await;
    assert_eq!(server.options().server.as_ref(), Some(&kind));
    let (field, wanted) = kind.expected_version().expect("a named server");
    let mut conn = admin(&server).await;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await
        .expect("INFO");
    assert!(
        info.lines()
            .any(|l| l.starts_with(&format!("{field}:{wanted}"))),
        "{kind} does not report {field}:{wanted}…: {info}"
    );
    let product = match kind {
        ServerKind::Valkey9 => "Valkey 9.",
        ServerKind::Redis62 => "Redis 6.2.",
        _ => "Redis 7.0.",
    };
    assert!(
        server.product().starts_with(product),
        "{}",
        server.product()
    );
    let clock = server.clock().expect("virtual clock").clone();
    assert_eq!(
        clock.now_ms(),
        VIRTUAL_EPOCH_MS,
        "the probe left the clock moved"
    );
    assert_eq!(time_ms(&mut conn).await, VIRTUAL_EPOCH_MS);

    for round in 0..40i64 {
        let key = format!("sp:matrix:{round}");
        let t = clock.now_ms();
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg("v")
            .arg("PX")
            .arg(5_000)
            .query_async(&mut conn)
            .await
            .expect("SET PX");
        clock.set_ms(t + 5_000);
        assert!(
            alive(&mut conn, &key).await,
            "{kind}: round {round}: key gone at its expiry instant"
        );
        assert_eq!(time_ms(&mut conn).await, t + 5_000, "{kind}: round {round}");
        clock.set_ms(t + 5_001);
        assert!(
            !alive(&mut conn, &key).await,
            "{kind}: round {round}: key alive 1 ms after its expiry"
        );
        // Back, then a little forward: time goes both ways.
        clock.set_ms(t + 3);
        assert_eq!(
            time_ms(&mut conn).await,
            t + 3,
            "{kind}: round {round}: back"
        );
    }

    // Far back (an earlier snapshot's time): a key set now expires by it.
    clock.set_ms(VIRTUAL_EPOCH_MS - 60_000);
    let _: () = redis::cmd("SET")
        .arg("sp:matrix:back")
        .arg("v")
        .arg("PX")
        .arg(1_000)
        .query_async(&mut conn)
        .await
        .expect("SET PX");
    let pttl: i64 = redis::cmd("PTTL")
        .arg("sp:matrix:back")
        .query_async(&mut conn)
        .await
        .expect("PTTL");
    assert_eq!(pttl, 1_000, "{kind}: PTTL after going back");
    clock.advance_ms(1_001);
    assert!(
        !alive(&mut conn, "sp:matrix:back").await,
        "{kind}: after going back"
    );
    server.stop().await.expect("stop");
}

#[tokio::test]
async fn redis_6_2_follows_the_virtual_clock() {
    follows_the_virtual_clock(ServerKind::Redis62).await;
}

#[tokio::test]
async fn redis_7_0_follows_the_virtual_clock() {
    follows_the_virtual_clock(ServerKind::Redis70).await;
}

#[tokio::test]
async fn valkey_9_follows_the_virtual_clock() {
    follows_the_virtual_clock(ServerKind::Valkey9).await;
}

/// An executable shell script `name` in `dir` that runs `body`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write wrapper");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// Starts `binary` by path and returns why it was refused.
async fn refused(binary: &Path) -> ServerError {
    let kind = ServerKind::Path(binary.to_path_buf());
    match ManagedServer::start(ServerOptions::default().with_server(kind)).await {
        Ok(server) => panic!("{} was not refused: {server:?}", binary.display()),
        Err(e) => e,
    }
}

/// Valkey as it runs without the shim's help (reading the CPU's time stamp
/// counter and so caching wall-clock time for a millisecond at a time) is
/// refused by the clock probe: this is the failure that once let eight
/// expiry checks blame the store for the server's clock.
#[tokio::test]
async fn valkey_on_its_time_stamp_counter_is_refused() {
    let valkey = ServerKind::Valkey9
        .binary()
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().expect("temp dir");
    let wrapper = script(
        dir.path(),
        "valkey-keeping-tsc",
        &format!(
            "STOREPROOF_CLOCK_KEEP_TSC=1 exec '{}' \"$@\"",
            valkey.display()
        ),
    );
    let err = refused(&wrapper).await;
    let msg = err.to_string();
    assert!(
        matches!(err, ServerError::ClockNotControlled { .. }),
        "{msg}"
    );
    assert_eq!(msg.lines().count(), 1, "{msg}");
    for needle in [
        "valkey-keeping-tsc",
        "virtual clock",
        "monotonic clock is X86 TSC",
    ] {
        assert!(msg.contains(needle), "{msg:?} does not say {needle:?}");
    }
}

/// A server the shim is not loaded into (here: LD_PRELOAD dropped by a
/// wrapper named as `path:`) runs on the real clock and is refused.
#[tokio::test]
async fn a_path_server_without_the_shim_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let redis = ServerKind::Redis70
        .binary()
        .unwrap_or_else(|e| panic!("{e}"));
    let wrapper = script(
        dir.path(),
        "no-shim",
        &format!("exec env -u LD_PRELOAD '{}' \"$@\"", redis.display()),
    );
    let err = refused(&wrapper).await;
    let msg = err.to_string();
    assert!(
        matches!(err, ServerError::ClockNotControlled { .. }),
        "{msg}"
    );
    assert!(msg.contains("ms behind it"), "{msg}");
}

/// Body of `a_named_server_is_found_only_where_setup_puts_it`; does nothing
/// unless run by `run_isolated` with `STOREPROOF_SERVERS_DIR` set to a
/// directory where `valkey-9` is Redis 7.0 and `redis-6.2` is missing.
#[tokio::test]
async fn servers_dir_body() {
    if !isolated() {
        return;
    }
    let dir = PathBuf::from(std::env::var_os(SERVERS_DIR_ENV).expect("servers dir set"));
    let err = ServerKind::Redis62
        .binary()
        .expect_err("redis-6.2 is missing");
    let msg = err.to_string();
    assert!(
        matches!(err, ServerError::ServerNotInstalled { .. })
            && msg.contains("redis-6.2 is not installed")
            && msg.contains(
                &dir.join("redis-6.2")
                    .join("redis-server")
                    .display()
                    .to_string()
            )
            && msg.contains("run scripts/setup"),
        "{msg}"
    );
    let err = ManagedServer::start(ServerOptions::default().with_server(ServerKind::Valkey9))
        .await
        .expect_err("Redis 7.0 posing as valkey-9 is refused");
    let msg = err.to_string();
    assert!(
        matches!(err, ServerError::WrongVersion { .. })
            && msg.contains("is not valkey-9")
            && msg.contains("valkey_version:none"),
        "{msg}"
    );
}

#[test]
fn a_named_server_is_found_only_where_setup_puts_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let redis = ServerKind::Redis70
        .binary()
        .unwrap_or_else(|e| panic!("{e}"));
    let valkey_dir = dir.path().join("valkey-9");
    std::fs::create_dir(&valkey_dir).expect("mkdir");
    std::os::unix::fs::symlink(&redis, valkey_dir.join("valkey-server")).expect("symlink");
    run_isolated("servers_dir_body", &[(SERVERS_DIR_ENV, dir.path())]);
}

/// Whether hash field `f` of `k`, expiring at the clock's very instant, is
/// still there half a second of wall time later on Valkey 9 started with
/// `lazy` expiry only.
async fn field_at_its_expiry_instant_survives(lazy: bool) -> bool {
    let server = ManagedServer::start(
        ServerOptions::default()
            .with_server(ServerKind::Valkey9)
            .with_lazy_expiry(lazy),
    )
    .await
    .unwrap_or_else(|e| panic!("valkey-9: {e}"));
    let clock = server.clock().expect("virtual clock").clone();
    let mut conn = admin(&server).await;
    let t0 = time_ms(&mut conn).await;
    let _: () = redis::cmd("HSET")
        .arg("k")
        .arg("f")
        .arg("1")
        .arg("g")
        .arg("2")
        .query_async(&mut conn)
        .await
        .expect("HSET");
    let _: Vec<i64> = redis::cmd("HPEXPIREAT")
        .arg("k")
        .arg(t0 + 1000)
        .arg("FIELDS")
        .arg(1)
        .arg("f")
        .query_async(&mut conn)
        .await
        .expect("HPEXPIREAT");
    clock.set_ms(t0 + 1000);
    // Several runs of the background cycle (10 a second).
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let len: i64 = redis::cmd("HLEN")
        .arg("k")
        .query_async(&mut conn)
        .await
        .expect("HLEN");
    len == 2
}

/// Valkey 9's background expiry deletes a hash field at its expiry instant,
/// which a read at that instant still sees: with the clock held there, what
/// the server holds depended on whether the cycle ran. With lazy expiry
/// only (as the explorer starts its servers) the field stays until a
/// command finds it passed.
#[tokio::test]
async fn lazy_expiry_keeps_what_every_read_at_the_instant_sees() {
    assert!(
        !field_at_its_expiry_instant_survives(false).await,
        "valkey-9 no longer deletes a field at its expiry instant in the background"
    );
    assert!(field_at_its_expiry_instant_survives(true).await);
    // Redis 6.2 (DEBUG always allowed) and 7.0 (behind
    // enable-debug-command) start with it too.
    for kind in [ServerKind::Redis62, ServerKind::Redis70] {
        ManagedServer::start(
            ServerOptions::default()
                .with_server(kind.clone())
                .with_lazy_expiry(true),
        )
        .await
        .unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
}
