//! The `storeproof` binary on servers it did not start: refused settings,
//! every foreign key and setting left as it was, its own keys removed (or
//! kept when asked), a password kept out of every output, and several
//! servers in one report.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use harness::keyspace;
use harness::{CheckResult, Level, RunVerdict, Verdict};
use serde_json::Value;
use testkit::{check, read_report, TestServer};

use crate::common::cli::{assert_setup_error, storeproof};

#[tokio::test(flavor = "multi_thread")]
async fn a_server_with_short_settings_is_refused_naming_each_unless_opted_out() {
    let server = TestServer::with(
        TestServer::options()
            .with_config("appendfsync", "everysec")
            .with_config("maxmemory-policy", "allkeys-lru"),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let url = server.url();
    let args = [
        "certify",
        "--suite",
        "conformance",
        "--redis-url",
        &url,
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let out = storeproof(&args, &[]);
    assert_setup_error(
        &out,
        &out_dir,
        &[
            "appendfsync",
            "maxmemory-policy",
            "--opt-out acknowledged-writes-may-be-lost",
        ],
    );
    let mut opted = args.to_vec();
    opted.extend(["--opt-out", "acknowledged-writes-may-be-lost"]);
    let out = storeproof(&opted, &[]);
    // Nothing failed; the clock checks need a managed server.
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(read_report(&out_dir).verdict, RunVerdict::Incomplete);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_is_refused_even_with_the_opt_out() {
    let primary = TestServer::start().await;
    let replica = TestServer::with(TestServer::options().with_replica_of(primary.port())).await;
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let url = replica.url();
    let out = storeproof(
        &[
            "certify",
            "--redis-url",
            &url,
            "--opt-out",
            "acknowledged-writes-may-be-lost",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_setup_error(&out, &out_dir, &["replica"]);
}

/// Every key not under `prefix`, dumped logically, plus the server's config.
async fn foreign_state(server: &TestServer, run_prefix: &str) -> (BTreeMap<String, Value>, Value) {
    let mut conn = server.admin().await;
    let mut keys = BTreeMap::new();
    for key in keyspace::all_keys(&mut conn).await.unwrap() {
        if key.starts_with(run_prefix.as_bytes()) {
            continue;
        }
        let v = keyspace::dump_key(&mut conn, &key).await.unwrap();
        keys.insert(
            String::from_utf8_lossy(&key).into_owned(),
            v.unwrap_or(Value::Null),
        );
    }
    let config: BTreeMap<String, String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("*")
        .query_async(&mut conn)
        .await
        .unwrap();
    (keys, serde_json::to_value(config).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_external_server_keeps_every_foreign_key_and_its_config() {
    // A durable server with the real clock, as a user would run it.
    let server = TestServer::start().await;
    let mut conn = server.admin().await;
    let _: () = redis::cmd("SET")
        .arg("canary")
        .arg("tweet")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg("app:lease:t1")
        .arg("holder")
        .arg("someone-else")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("ZADD")
        .arg("sp:other-run:q")
        .arg(1)
        .arg("x")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("session:42")
        .arg("v")
        .arg("EX")
        .arg(100_000)
        .query_async(&mut conn)
        .await
        .unwrap();

    let dbsize = |conn: &mut redis::aio::MultiplexedConnection| {
        let mut conn = conn.clone();
        async move {
            redis::cmd("DBSIZE")
                .query_async::<u64>(&mut conn)
                .await
                .unwrap()
        }
    };
    assert_eq!(dbsize(&mut conn).await, 4);

    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let url = server.url();
    let out = storeproof(
        // The crash suite starts servers of its own; it has its own tests.
        &[
            "certify",
            "--suite",
            "conformance,explorer",
            "--redis-url",
            &url,
            "--seed",
            "7",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    // Nothing failed, but what needs a managed server was not decided:
    // INCOMPLETE, and the summary says how many and why.
    assert_eq!(out.status.code(), Some(3));
    let report = read_report(&out_dir);
    assert_eq!(report.verdict, RunVerdict::Incomplete);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("verdict: INCOMPLETE"), "{stdout}");
    let undecided = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Skipped && c.level == Level::Must && !c.outside_claim)
        .count();
    assert!(
        stdout.contains(&format!("{undecided} MUST checks")),
        "{stdout}"
    );
    assert!(
        stdout.contains("skipped: needs a managed server"),
        "the summary names what needs a managed server: {stdout}"
    );
    // The run's own keys are gone; only the four foreign keys remain.
    assert_eq!(dbsize(&mut conn).await, 4, "the run left keys behind");
    let keys = &report.run.keys;
    assert!(
        keys.starts_with("removed (") && keys != "removed (0)",
        "{keys}"
    );
    assert!(!report.server.managed);
    let run_prefix = report.run.prefix.clone();
    assert!(run_prefix.starts_with("sp:") && run_prefix != "sp:");

    let (foreign, config) = foreign_state(&server, &run_prefix).await;
    let names: Vec<&str> = foreign.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["app:lease:t1", "canary", "session:42", "sp:other-run:q"],
        "foreign keys changed"
    );
    assert_eq!(foreign["canary"]["value"], "tweet");
    assert_eq!(foreign["app:lease:t1"]["value"]["holder"], "someone-else");
    assert!(foreign["session:42"]["pttl"].as_i64().unwrap() > 90_000_000);
    assert_eq!(config["appendfsync"], "always");
    assert_eq!(config["maxmemory-policy"], "noeviction");

    // What could run did, the rest says why it was skipped.
    let checks = &report.checks;
    let ran = checks.iter().filter(|c| c.verdict == Verdict::Pass).count();
    // (Checks outside the store's claim say so instead.)
    let skipped: Vec<&CheckResult> = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Skipped && !c.outside_claim)
        .collect();
    assert!(
        ran >= 20,
        "only {ran} checks ran against the external server"
    );
    assert!(!skipped.is_empty());
    for c in skipped {
        assert!(
            c.reason.contains("managed server"),
            "{}: {}",
            c.id,
            c.reason
        );
    }
    assert_eq!(
        check(&report, "conformance.rate.window-slides").verdict,
        Verdict::Pass
    );
}

/// A durable redis-server that wants a password, started by hand (a
/// managed server's admin connection has none).
struct PasswordServer {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl PasswordServer {
    fn start(password: &str) -> PasswordServer {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(harness::server::find_binary().unwrap())
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--requirepass", password, "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .args(["--dir", dir.path().to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        PasswordServer {
            child,
            port,
            _dir: dir,
        }
    }
}

impl Drop for PasswordServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every file under `dir`, as text.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut todo = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(path) = todo.pop() {
        if path.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            files.push((path, text));
        }
    }
    files
}

#[test]
fn a_password_in_the_url_is_in_no_report_file_no_output_and_no_error() {
    let secret = "Zq7-hunter2-pw";
    let server = PasswordServer::start(secret);
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let url = format!("redis://:{secret}@127.0.0.1:{}/", server.port);
    let out = storeproof(
        &[
            "certify",
            "--suite",
            "conformance",
            "--check",
            "conformance.lease.take",
            &format!("--redis-url={url}"),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        matches!(out.status.code(), Some(0) | Some(3)),
        "the run did not go through"
    );
    let files = files_under(&out_dir);
    assert!(files.len() >= 4, "{files:?}");
    for (path, text) in &files {
        assert!(
            !text.contains(secret),
            "{} holds the password",
            path.display()
        );
    }
    for stream in [&out.stdout, &out.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(secret));
    }
    let report = read_report(&out_dir);
    let command = report.run.command.join(" ");
    assert!(command.contains("redis://:***@127.0.0.1"), "{command}");

    // Errors: an adapter that quotes its hello (with the URL), a wrong
    // password, each as `--redis-url URL`.
    let other = dir.path().join("r2");
    for (url, store) in [
        (url.clone(), "cmd:echo not-json"),
        (
            format!("redis://default:{secret}-wrong@127.0.0.1:{}/", server.port),
            "builtin:redis",
        ),
    ] {
        let out = storeproof(
            &[
                "certify",
                "--suite",
                "conformance",
                "--redis-url",
                &url,
                "--store",
                store,
                "--out",
                other.to_str().unwrap(),
            ],
            &[],
        );
        assert_setup_error(&out, &other, &[":***@127.0.0.1"]);
        assert!(!String::from_utf8_lossy(&out.stderr).contains(secret));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn keep_keys_leaves_the_runs_keys_for_inspection() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let url = server.url();
    let out = storeproof(
        &[
            "certify",
            "--suite",
            "conformance",
            "--check",
            "conformance.lease.take",
            "--redis-url",
            &url,
            "--keep-keys",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert!(matches!(out.status.code(), Some(0) | Some(3)));
    let report = read_report(&out_dir);
    assert_eq!(report.run.keys, "kept");
    let prefix = report.run.prefix.clone();
    let mut conn = server.admin().await;
    let keys = keyspace::all_keys(&mut conn).await.unwrap();
    assert!(!keys.is_empty(), "no key of the run was kept");
    for key in keys {
        assert!(key.starts_with(prefix.as_bytes()));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_redis_url_run_removes_its_keys_too() {
    let server = TestServer::start().await;
    let mut conn = server.admin().await;
    let _: () = redis::cmd("SET")
        .arg("canary")
        .arg("tweet")
        .query_async(&mut conn)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let mut child = crate::common::command()
        .args(["certify", "--suite", "conformance", "--redis-url"])
        .arg(server.url())
        .arg("--out")
        .arg(&out_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The header's second line comes once the run is set up and checking.
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    for line in lines.by_ref() {
        if line.unwrap().contains("server Redis") {
            break;
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // SAFETY: sends SIGINT to our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(!out_dir.exists());
    let left: Vec<String> = keyspace::all_keys(&mut conn)
        .await
        .unwrap()
        .iter()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    assert_eq!(left, ["canary"], "keys of the interrupted run remain");
}

/// `--server` twice: one report with a section per server, each server's
/// own verdict and the verdict over both; a server that is not one is
/// refused before anything runs, as is `--server` beside `--redis-url`.
#[test]
fn several_servers_make_one_report_with_a_section_each() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let out = storeproof(
        &[
            "certify",
            "--server",
            "redis-6.2",
            "--server",
            "valkey-9",
            "--suite",
            "conformance",
            "--check",
            "conformance.lease.",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("redis-6.2: Redis 6.2.14 — PASS"),
        "{stdout}"
    );
    assert!(stdout.contains("valkey-9: Valkey 9.1.2 — PASS"), "{stdout}");
    let runs = read_report(&out_dir).per_server;
    assert_eq!(runs.len(), 2, "a section per server");
    assert_eq!(runs[1].server.product.as_deref(), Some("Valkey 9.1.2"));
    assert!(runs
        .iter()
        .all(|r| r.verdict == RunVerdict::Pass && !r.checks.is_empty()));
    let junit = std::fs::read_to_string(out_dir.join("junit.xml")).unwrap();
    assert!(junit.contains("valkey-9/conformance"), "{junit}");

    for (args, says) in [
        (
            vec!["--server", "redis-5"],
            "redis-7.0, redis-6.2, valkey-9",
        ),
        (
            vec![
                "--server",
                "valkey-9",
                "--redis-url",
                "redis://127.0.0.1:1/",
            ],
            "give one or the other",
        ),
    ] {
        let bad = dir.path().join("bad");
        let mut line = vec![
            "certify",
            "--suite",
            "conformance",
            "--out",
            bad.to_str().unwrap(),
        ];
        line.extend(args);
        let out = storeproof(&line, &[]);
        assert_setup_error(&out, &bad, &[says]);
    }
}
