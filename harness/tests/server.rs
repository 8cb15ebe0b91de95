//! Integration tests of `harness::server` against the real `redis-server`.
//!
//! Tests that change process-wide state (an environment variable,
//! `cleanup_all`) run their body in a fresh copy of this test binary, so they
//! are safe under `cargo test` (one process, many threads) as well as under
//! nextest (one process per test).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use harness::server::{
    cleanup_all, mark_owned, probe_url, reap_dead_runs, server_settings, DataDir, ManagedServer,
    Preset, ServerError, ServerOptions, VirtualClock, OWNER_FILE, VIRTUAL_EPOCH_MS,
};
use redis::aio::MultiplexedConnection;

/// Set in the child process that runs an isolated test's body.
const ISOLATED_ENV: &str = "STOREPROOF_TEST_ISOLATED";

/// Runs the test `name` of this binary in a child process with `envs` and
/// the isolation marker set, and fails if it fails.
fn run_isolated(name: &str, envs: &[(&str, &str)]) {
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
    assert!(
        stdout.contains("1 passed"),
        "isolated test {name} did not run: {stdout}"
    );
}

fn isolated() -> bool {
    std::env::var_os(ISOLATED_ENV).is_some()
}

async fn start(opts: ServerOptions) -> ManagedServer {
    ManagedServer::start(opts).await.expect("server starts")
}

async fn admin(server: &ManagedServer) -> MultiplexedConnection {
    server.admin().await.expect("admin connection")
}

async fn config_get(conn: &mut MultiplexedConnection, name: &str) -> String {
    let (k, v): (String, String) = redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query_async(conn)
        .await
        .expect("CONFIG GET");
    assert_eq!(k, name);
    v
}

async fn time_ms(conn: &mut MultiplexedConnection) -> (i64, i64) {
    redis::cmd("TIME").query_async(conn).await.expect("TIME")
}

fn proc_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn virtual_clock_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<VirtualClock>();
    assert_send_sync::<ManagedServer>();
}

#[tokio::test]
async fn the_virtual_clock_rules_time() {
    let server = start(ServerOptions::default()).await;
    let clock = server.clock().expect("virtual clock is on by default");
    assert_eq!(clock.now_ms(), VIRTUAL_EPOCH_MS);
    let mut conn = admin(&server).await;

    let t0 = VIRTUAL_EPOCH_MS + 12_345;
    clock.set_ms(t0);
    let (secs, micros) = time_ms(&mut conn).await;
    assert_eq!((secs, micros), (t0 / 1000, (t0 % 1000) * 1000));

    // Frozen: real time passing changes nothing.
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(time_ms(&mut conn).await, (secs, micros));

    clock.advance_ms(1000);
    let (secs2, micros2) = time_ms(&mut conn).await;
    assert_eq!(
        (secs2 * 1_000_000 + micros2) - (secs * 1_000_000 + micros),
        1_000_000
    );
    assert_eq!(clock.now_ms(), t0 + 1000);
}

#[tokio::test]
async fn px_expiry_follows_the_virtual_clock_also_after_restore_abs_ttl() {
    let server = start(ServerOptions::default()).await;
    let clock = server.clock().expect("virtual clock").clone();
    let mut conn = admin(&server).await;
    let t0 = clock.now_ms();

    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PX")
        .arg(5000)
        .query_async(&mut conn)
        .await
        .expect("SET PX");
    let dump: Vec<u8> = redis::cmd("DUMP")
        .arg("k")
        .query_async(&mut conn)
        .await
        .expect("DUMP");
    let get = |conn: &mut MultiplexedConnection| {
        let mut conn = conn.clone();
        async move {
            redis::cmd("GET")
                .arg("k")
                .query_async::<Option<String>>(&mut conn)
                .await
                .expect("GET")
        }
    };

    clock.set_ms(t0 + 5000);
    assert_eq!(get(&mut conn).await.as_deref(), Some("v"), "at expiry ms");
    clock.set_ms(t0 + 5001);
    assert_eq!(get(&mut conn).await, None, "one ms after expiry");

    // Back in time, restore with the absolute expiry: it lives again and
    // expires on the virtual clock.
    clock.set_ms(t0 + 1000);
    let _: () = redis::cmd("RESTORE")
        .arg("k")
        .arg(t0 + 5000)
        .arg(dump)
        .arg("ABSTTL")
        .query_async(&mut conn)
        .await
        .expect("RESTORE ABSTTL");
    assert_eq!(get(&mut conn).await.as_deref(), Some("v"));
    let pttl: i64 = redis::cmd("PTTL")
        .arg("k")
        .query_async(&mut conn)
        .await
        .expect("PTTL");
    assert_eq!(pttl, 4000);
    clock.set_ms(t0 + 5000);
    assert_eq!(get(&mut conn).await.as_deref(), Some("v"));
    clock.advance_ms(1);
    assert_eq!(get(&mut conn).await, None);
}

#[tokio::test]
async fn every_preset_shows_its_settings_in_config_get() {
    for preset in Preset::ALL {
        let server = start(ServerOptions::with_preset(preset)).await;
        assert_eq!(server.preset(), preset);
        let mut conn = admin(&server).await;
        for (name, value) in preset.settings() {
            assert_eq!(
                config_get(&mut conn, name).await,
                *value,
                "preset {preset}: {name}"
            );
        }
        let settings = server_settings(&mut conn).await;
        assert_eq!(settings.get("role").map(String::as_str), Some("master"));
        for (name, value) in preset.settings() {
            assert_eq!(settings.get(*name).map(String::as_str), Some(*value));
        }
        assert!(settings.contains_key("maxmemory"));
        server.stop().await.expect("stop");
    }
    // The durable preset is the default and has all four durable settings.
    let durable = Preset::default().settings();
    assert!(durable.contains(&("appendonly", "yes")));
    assert!(durable.contains(&("appendfsync", "always")));
    assert!(durable.contains(&("no-appendfsync-on-rewrite", "no")));
    assert!(durable.contains(&("maxmemory-policy", "noeviction")));
}

#[tokio::test]
async fn extra_directives_win_over_the_preset() {
    let opts = ServerOptions::default()
        .with_config("appendfsync", "everysec")
        .with_config("maxmemory-policy", "allkeys-lru")
        .with_data_dir(DataDir::Disk);
    let server = start(opts).await;
    let mut conn = admin(&server).await;
    assert_eq!(config_get(&mut conn, "appendfsync").await, "everysec");
    assert_eq!(
        config_get(&mut conn, "maxmemory-policy").await,
        "allkeys-lru"
    );
    assert_eq!(config_get(&mut conn, "appendonly").await, "yes");
    assert!(!server.dir().starts_with("/dev/shm"));
}

#[tokio::test]
async fn renamed_config_leaves_settings_out_but_the_server_starts() {
    let opts = ServerOptions::default().with_config("rename-command", "CONFIG \"\"");
    let server = start(opts).await;
    let mut conn = admin(&server).await;
    let settings = server_settings(&mut conn).await;
    assert!(!settings.contains_key("appendonly"), "{settings:?}");
    assert_eq!(settings.get("role").map(String::as_str), Some("master"));
}

#[tokio::test]
async fn a_replica_reports_role_slave_and_replicates() {
    let primary = start(ServerOptions::default()).await;
    let replica = start(ServerOptions::default().with_replica_of(primary.port())).await;
    let mut conn = admin(&replica).await;
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut conn)
        .await
        .expect("INFO replication");
    assert!(info.contains("role:slave"), "{info}");

    let mut p = admin(&primary).await;
    let _: () = redis::cmd("SET")
        .arg("r")
        .arg("1")
        .query_async(&mut p)
        .await
        .expect("SET");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got: Option<String> = redis::cmd("GET")
            .arg("r")
            .query_async(&mut conn)
            .await
            .expect("GET");
        if got.as_deref() == Some("1") {
            break;
        }
        assert!(Instant::now() < deadline, "replica never caught up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_acl_user_without_config_gets_noperm() {
    let server = start(ServerOptions::default()).await;
    let url = server
        .add_acl_user("no-config", "p@ss word", &["~*", "&*", "+@all", "-config"])
        .await
        .expect("ACL SETUSER");
    assert!(url.starts_with("redis://no-config:"), "{url}");
    let client = redis::Client::open(url.as_str()).expect("url parses");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("user logs in");
    let err = redis::cmd("CONFIG")
        .arg("GET")
        .arg("appendonly")
        .query_async::<redis::Value>(&mut conn)
        .await
        .expect_err("CONFIG is denied");
    assert_eq!(err.code(), Some("NOPERM"), "{err}");
    let ok: String = redis::cmd("PING")
        .query_async(&mut conn)
        .await
        .expect("PING");
    assert_eq!(ok, "PONG");

    // server_settings leaves out what it may not read.
    let settings = server_settings(&mut conn).await;
    assert!(!settings.contains_key("appendonly"), "{settings:?}");

    // A user without INFO either: the probe still finds the version (HELLO).
    let url2 = server
        .add_acl_user("no-info", "pw", &["~*", "&*", "+@all", "-config", "-info"])
        .await
        .expect("ACL SETUSER");
    let facts = probe_url(&url2).await.expect("probe");
    assert_eq!(facts.version, server.version());
    assert!(facts.url.contains("no-info:***@"), "{}", facts.url);
}

#[tokio::test]
async fn start_reports_version_pid_and_url() {
    let server = start(ServerOptions::default().with_virtual_clock(false)).await;
    assert!(server.clock().is_none());
    assert_eq!(
        server.url(),
        format!("redis://127.0.0.1:{}/", server.port())
    );
    assert!(
        server.version().starts_with(|c: char| c.is_ascii_digit()),
        "{}",
        server.version()
    );
    let pid = server.pid().expect("running");
    assert!(proc_alive(pid));
    let facts = probe_url(&server.url()).await.expect("probe");
    assert_eq!(facts.version, server.version());
    assert!(server.dir().join("redis.conf").is_file());
    assert!(server.log_path().is_file());
}

#[tokio::test]
async fn drop_removes_the_process_and_the_directory() {
    let server = start(ServerOptions::default()).await;
    let pid = server.pid().expect("running");
    let dir = server.dir().to_path_buf();
    assert!(proc_alive(pid));
    assert!(dir.is_dir());
    drop(server);
    assert!(!proc_alive(pid), "process {pid} survived drop");
    assert!(!dir.exists(), "{} survived drop", dir.display());
}

#[tokio::test]
async fn stop_shuts_down_and_removes_the_directory() {
    let server = start(ServerOptions::default()).await;
    let pid = server.pid().expect("running");
    let dir = server.dir().to_path_buf();
    server.stop().await.expect("stop");
    assert!(!proc_alive(pid));
    assert!(!dir.exists());
}

#[tokio::test]
async fn kill_and_restart_keep_port_data_and_clock() {
    let mut server = start(ServerOptions::default()).await;
    let port = server.port();
    let clock = server.clock().expect("clock").clone();
    let mut conn = admin(&server).await;
    let _: () = redis::cmd("SET")
        .arg("durable")
        .arg("yes")
        .query_async(&mut conn)
        .await
        .expect("SET");
    clock.advance_ms(7_000);

    let old_pid = server.pid().expect("running");
    server.kill();
    assert!(!proc_alive(old_pid));
    assert!(server.pid().is_none());
    assert!(!server.is_running());
    assert!(matches!(
        server.ensure_running(),
        Err(ServerError::NotRunning { .. })
    ));

    server.restart().await.expect("restart");
    assert_eq!(server.port(), port);
    assert_ne!(server.pid(), Some(old_pid));
    let mut conn = admin(&server).await;
    let got: Option<String> = redis::cmd("GET")
        .arg("durable")
        .query_async(&mut conn)
        .await
        .expect("GET");
    assert_eq!(got.as_deref(), Some("yes"), "AOF replayed");
    let (secs, _) = time_ms(&mut conn).await;
    assert_eq!(secs, (VIRTUAL_EPOCH_MS + 7_000) / 1000);

    // Restart of a running server is a crash-restart.
    server.restart().await.expect("restart while running");
    assert_eq!(server.port(), port);
}

#[tokio::test]
async fn a_bad_directive_fails_with_the_log_tail() {
    let opts = ServerOptions::default().with_config("no-such-directive", "1");
    let err = ManagedServer::start(opts).await.expect_err("bad config");
    let msg = err.to_string();
    assert!(matches!(err, ServerError::Exited { .. }), "{msg}");
    assert!(msg.contains("no-such-directive"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn a_managed_directive_is_refused() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let err = rt
        .block_on(ManagedServer::start(
            ServerOptions::default().with_config("port", "6379"),
        ))
        .expect_err("port is managed");
    assert!(matches!(err, ServerError::InvalidOption { .. }), "{err}");
}

#[test]
fn a_missing_binary_gives_the_missing_binary_error() {
    run_isolated(
        "missing_binary_body",
        &[("STOREPROOF_REDIS_SERVER", "/nonexistent")],
    );
}

/// Body of `a_missing_binary_gives_the_missing_binary_error`; does nothing
/// unless run by `run_isolated`.
#[tokio::test]
async fn missing_binary_body() {
    if !isolated() {
        return;
    }
    let err = ManagedServer::start(ServerOptions::default())
        .await
        .expect_err("no binary");
    let msg = err.to_string();
    assert!(
        matches!(err, ServerError::BinaryNotFound { from_env: Some(_) }),
        "{msg}"
    );
    assert!(msg.contains("STOREPROOF_REDIS_SERVER"), "{msg}");
    assert!(msg.contains("/nonexistent"), "{msg}");
}

#[test]
fn cleanup_all_kills_every_server() {
    run_isolated("cleanup_all_body", &[]);
}

/// Body of `cleanup_all_kills_every_server`; does nothing unless run by
/// `run_isolated` (it kills every server of its process).
#[tokio::test]
async fn cleanup_all_body() {
    if !isolated() {
        return;
    }
    let a = start(ServerOptions::default()).await;
    let b = start(ServerOptions::default().with_data_dir(DataDir::Disk)).await;
    let pids = [a.pid().expect("a runs"), b.pid().expect("b runs")];
    let dirs = [a.dir().to_path_buf(), b.dir().to_path_buf()];
    cleanup_all();
    for pid in pids {
        assert!(!proc_alive(pid), "{pid} survived cleanup_all");
    }
    for dir in &dirs {
        assert!(!dir.exists(), "{} survived cleanup_all", dir.display());
    }
    assert!(!a.is_running());
    // Dropping afterwards is harmless.
    drop(a);
    drop(b);
    cleanup_all();
}

#[tokio::test]
async fn probe_url_on_a_closed_port_is_unreachable_quickly() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let started = Instant::now();
    let err = probe_url(&format!("redis://127.0.0.1:{port}/"))
        .await
        .expect_err("nothing listens");
    assert!(started.elapsed() < Duration::from_secs(3));
    let msg = err.to_string();
    assert!(matches!(err, ServerError::Unreachable { .. }), "{msg}");
    assert!(
        msg.starts_with(&format!(
            "cannot reach Redis at redis://127.0.0.1:{port}/: "
        )),
        "{msg}"
    );
    assert!(
        msg.ends_with("; check the URL and that the server is running"),
        "{msg}"
    );
}

#[tokio::test]
async fn probe_url_refuses_a_non_redis_url() {
    let err = probe_url("http://example.invalid/")
        .await
        .expect_err("not redis");
    assert!(matches!(err, ServerError::InvalidUrl { .. }), "{err}");
}

#[tokio::test]
async fn a_server_whose_process_dies_is_noticed() {
    let mut server = start(ServerOptions::default()).await;
    let pid = server.pid().expect("running");
    // SAFETY: sending a signal to our own child has no memory-safety effect.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.is_running() {
        assert!(Instant::now() < deadline, "death not noticed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.restart().await.expect("restart after external kill");
    assert!(server.is_running());
}

#[test]
fn the_server_dies_when_its_owner_is_sigkilled() {
    use std::io::{BufRead, BufReader};
    let exe = std::env::current_exe().expect("test binary path");
    let mut owner = Command::new(exe)
        .args(["--exact", "owner_body", "--nocapture", "--test-threads=1"])
        .env(ISOLATED_ENV, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn owner");
    let stdout = owner.stdout.take().expect("piped stdout");
    // Read on a thread so that a silent owner fails the test instead of
    // hanging it. libtest prints `test owner_body ... ` before the body's
    // output on the same line, hence `find`.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(at) = line.find("SERVER ") {
                let _ = tx.send(line[at + "SERVER ".len()..].to_string());
                return;
            }
        }
    });
    let reported = rx.recv_timeout(Duration::from_secs(30));
    let pid_and_dir = reported.ok().and_then(|rest| {
        let (pid, dir) = rest.split_once(' ')?;
        Some((pid.parse::<u32>().ok()?, dir.to_string()))
    });
    if pid_and_dir.is_none() {
        let _ = owner.kill();
        let _ = owner.wait();
    }
    let (pid, dir) = pid_and_dir.expect("owner started a server");
    assert!(proc_alive(pid));
    owner.kill().expect("SIGKILL the owner");
    owner.wait().expect("reap the owner");
    let deadline = Instant::now() + Duration::from_secs(5);
    // The server is not our child, so it cannot become our zombie: once the
    // kernel delivered PDEATHSIG it is reaped by init and /proc/<pid> goes.
    while proc_alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let alive = proc_alive(pid);
    // Nothing ran on SIGKILL, so the directory is still there, marked with
    // its dead owner: the next run's reaper removes it.
    let dir = std::path::PathBuf::from(dir);
    assert!(dir.exists(), "{} vanished on its own", dir.display());
    let reaped = reap_dead_runs();
    assert!(!dir.exists(), "{} not reaped", dir.display());
    assert!(reaped.contains(&dir), "{reaped:?}");
    assert!(!alive, "redis-server {pid} outlived its SIGKILLed owner");
}

#[test]
fn the_reaper_removes_only_marked_directories_of_dead_owners() {
    let tmp = tempfile::tempdir().expect("private TMPDIR");
    let base = tmp.path();
    let make = |name: &str, marker: Option<String>| {
        let dir = base.join(name);
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("data"), "x").expect("write");
        if let Some(m) = marker {
            std::fs::write(dir.join(OWNER_FILE), m).expect("marker");
        }
        dir
    };
    // A pid above the kernel's limit never runs.
    let dead = Some("4194305 1\n".to_string());
    let dead_run = make("storeproof-run-dead", dead.clone());
    let unmarked = make("storeproof-run-unmarked", None);
    let half_written = make("storeproof-run-half", Some("4194305".into()));
    let not_ours = make("someone-else-dead", dead.clone());
    let target = make("elsewhere", dead);
    let link = base.join("storeproof-link");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    run_isolated(
        "live_owner_body",
        &[("TMPDIR", base.to_str().expect("utf-8"))],
    );
    assert!(!dead_run.exists(), "a dead run's directory was kept");
    for kept in [&unmarked, &half_written, &not_ours, &target] {
        assert!(kept.join("data").exists(), "{} was touched", kept.display());
    }
    assert!(link.exists(), "a link was followed or removed");
}

/// Body of `the_reaper_removes_only_marked_directories_of_dead_owners`: a
/// directory marked by a live process (this one) is kept; then reaps.
#[test]
fn live_owner_body() {
    if !isolated() {
        return;
    }
    let live = std::env::temp_dir().join("storeproof-run-live");
    std::fs::create_dir(&live).expect("mkdir");
    mark_owned(&live).expect("mark");
    let reaped = reap_dead_runs();
    assert!(live.exists(), "a live owner's directory was reaped");
    assert_eq!(
        reaped
            .iter()
            .filter(|p| p.starts_with(std::env::temp_dir()))
            .count(),
        1,
        "{reaped:?}"
    );
    std::fs::remove_dir_all(&live).expect("cleanup");
}

/// Body of `the_server_dies_when_its_owner_is_sigkilled`: starts a server
/// from a short-lived thread's runtime (PDEATHSIG must not fire when that
/// thread ends), reports it and waits to be killed.
#[test]
fn owner_body() {
    if !isolated() {
        return;
    }
    let server = std::thread::spawn(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(ManagedServer::start(ServerOptions::default()))
            .expect("server starts")
    })
    .join()
    .expect("starter thread");
    // The thread that asked for the server is gone; the server must live.
    std::thread::sleep(Duration::from_millis(200));
    let pid = server.pid().expect("running");
    assert!(
        proc_alive(pid),
        "server died with the thread that started it"
    );
    println!("SERVER {pid} {}", server.dir().display());
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// A `redis-server` wrapper that drops `LD_PRELOAD`: it runs, but the clock
/// shim is never loaded, so the virtual clock does not move it. Returns the
/// directory holding it (keep it alive) and its path.
fn server_without_shim() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("redis-server-without-shim");
    std::fs::write(
        &path,
        "#!/bin/sh\nexec env -u LD_PRELOAD redis-server \"$@\"\n",
    )
    .expect("write wrapper");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (dir, path)
}

#[test]
fn a_server_that_ignores_the_virtual_clock_is_refused() {
    let (_wrapper_dir, wrapper) = server_without_shim();
    let tmp = tempfile::tempdir().expect("private TMPDIR");
    run_isolated(
        "clock_not_controlled_body",
        &[
            ("STOREPROOF_REDIS_SERVER", wrapper.to_str().expect("utf-8")),
            ("TMPDIR", tmp.path().to_str().expect("utf-8")),
        ],
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("read TMPDIR")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Redis-server processes whose parent is this process.
fn our_redis_children() -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // pid (comm) state ppid ...
            let Some((comm, rest)) = stat.split_once(") ") else {
                return false;
            };
            let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            comm.contains("redis-server") && ppid == Some(me)
        })
        .collect()
}

/// Body of `a_server_that_ignores_the_virtual_clock_is_refused`; does nothing
/// unless run by `run_isolated` (it needs `STOREPROOF_REDIS_SERVER` set).
#[tokio::test]
async fn clock_not_controlled_body() {
    if !isolated() {
        return;
    }
    let err = ManagedServer::start(ServerOptions::default().with_data_dir(DataDir::Disk))
        .await
        .expect_err("a server the clock does not move is refused");
    let msg = err.to_string();
    assert!(
        matches!(err, ServerError::ClockNotControlled { .. }),
        "{msg}"
    );
    assert_eq!(msg.lines().count(), 1, "{msg}");
    for needle in [
        "redis-server-without-shim",
        "virtual clock",
        "ms behind it",
        "ms left instead of 52223",
        "STOREPROOF_REDIS_SERVER",
    ] {
        assert!(msg.contains(needle), "{msg:?} does not say {needle:?}");
    }
    assert_eq!(
        our_redis_children(),
        Vec::<u32>::new(),
        "server left running"
    );
    // Without the virtual clock nothing is judged on its clock: it starts.
    let plain = start(
        ServerOptions::default()
            .with_virtual_clock(false)
            .with_data_dir(DataDir::Disk),
    )
    .await;
    drop(plain);
}

#[tokio::test]
async fn the_clock_probe_leaves_the_keyspace_and_the_clock_as_found() {
    let server = start(ServerOptions::default()).await;
    let clock = server.clock().expect("virtual clock");
    assert_eq!(clock.now_ms(), VIRTUAL_EPOCH_MS);
    let mut conn = admin(&server).await;
    let size: i64 = redis::cmd("DBSIZE")
        .query_async(&mut conn)
        .await
        .expect("DBSIZE");
    assert_eq!(size, 0, "the probe key is left");
    assert_eq!(time_ms(&mut conn).await.0, VIRTUAL_EPOCH_MS / 1000);
}
