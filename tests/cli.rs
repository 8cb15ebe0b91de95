//! The `storeproof` binary end to end: exit codes, the one-line errors, the
//! report it writes, and that a server it did not start is left as it was.

use std::collections::BTreeMap;
mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{read_report, storeproof_in};

use harness::keyspace;
use harness::server::{ManagedServer, ServerOptions};
use serde_json::Value;

fn storeproof(args: &[&str], env: &[(&str, &str)]) -> Output {
    storeproof_in(None, args, env)
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Asserts exit 2, exactly one stderr line containing every `needle`, and no
/// report directory.
fn assert_setup_error(out: &Output, report_dir: &Path, needles: &[&str]) {
    assert_eq!(out.status.code(), Some(2));
    let lines = stderr_lines(out);
    assert_eq!(lines.len(), 1, "one line expected: {lines:?}");
    for n in needles {
        assert!(lines[0].contains(n), "{:?} does not say {n:?}", lines[0]);
    }
    assert!(
        !report_dir.exists(),
        "a report was written after a setup error"
    );
}

#[test]
fn wrong_flags_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let out_arg = out_dir.to_str().unwrap();
    for (args, needle) in [
        (vec!["certify", "--bogus"], "--bogus"),
        (vec!["certify", "--suite", "nope"], "possible values"),
        (
            vec!["certify", "--opt-out", "yes"],
            "acknowledged-writes-may-be-lost",
        ),
        (vec!["certify", "--store", "mystery"], "builtin:redis"),
        (
            vec!["certify", "--store", "sabotage:nope"],
            "the sabotages are read-then-write-take",
        ),
        // A suite this version does not have is not offered, nor accepted.
        (vec!["certify", "--suite", "mutate"], "possible values"),
        (
            vec!["certify", "--suite", "faults", "--faults", "0"],
            "--faults",
        ),
        (vec!["frobnicate"], "frobnicate"),
    ] {
        let mut full = args.clone();
        full.extend(["--out", out_arg]);
        if args[0] != "certify" {
            full.truncate(1);
        }
        let out = storeproof(&full, &[]);
        assert_setup_error(&out, &out_dir, &[needle]);
    }
}

#[test]
fn missing_redis_server_exits_2_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let out = storeproof(
        &["certify", "--out", out_dir.to_str().unwrap()],
        &[("STOREPROOF_REDIS_SERVER", "/nonexistent/redis-server")],
    );
    assert_setup_error(&out, &out_dir, &["redis-server", "STOREPROOF_REDIS_SERVER"]);
    let out = storeproof(
        &["certify", "--out", out_dir.to_str().unwrap()],
        &[("PATH", "/nonexistent")],
    );
    assert_setup_error(
        &out,
        &out_dir,
        &["redis-server not found", "apt-get install redis-server"],
    );
}

#[test]
fn unreachable_url_exits_2_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    // Port 1 on loopback: nothing listens there.
    let out = storeproof(
        &[
            "certify",
            "--redis-url",
            "redis://127.0.0.1:1/",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_setup_error(&out, &out_dir, &["cannot reach Redis", "check the URL"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_with_short_settings_is_refused_naming_each_unless_opted_out() {
    let server = ManagedServer::start(
        ServerOptions::default()
            .with_virtual_clock(false)
            .with_config("appendfsync", "everysec")
            .with_config("maxmemory-policy", "allkeys-lru"),
    )
    .await
    .unwrap();
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
    assert_eq!(read_report(&out_dir)["verdict"], "incomplete");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_is_refused_even_with_the_opt_out() {
    let primary = ManagedServer::start(ServerOptions::default().with_virtual_clock(false))
        .await
        .unwrap();
    let replica = ManagedServer::start(
        ServerOptions::default()
            .with_virtual_clock(false)
            .with_replica_of(primary.port()),
    )
    .await
    .unwrap();
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
async fn foreign_state(
    server: &ManagedServer,
    run_prefix: &str,
) -> (BTreeMap<String, Value>, Value) {
    let mut conn = server.admin().await.unwrap();
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
    let server = ManagedServer::start(ServerOptions::default().with_virtual_clock(false))
        .await
        .unwrap();
    let mut conn = server.admin().await.unwrap();
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
    assert_eq!(report["verdict"], "incomplete");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("verdict: INCOMPLETE"), "{stdout}");
    let undecided = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "skipped" && c["level"] == "must" && c["outside_claim"] != true)
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
    let keys = report["run"]["keys"].as_str().unwrap();
    assert!(
        keys.starts_with("removed (") && keys != "removed (0)",
        "{keys}"
    );
    assert_eq!(report["server"]["managed"], false);
    let run_prefix = report["run"]["prefix"].as_str().unwrap().to_string();
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
    let checks = report["checks"].as_array().unwrap();
    let ran = checks.iter().filter(|c| c["verdict"] == "pass").count();
    // (Checks outside the store's claim say so instead.)
    let skipped: Vec<&Value> = checks
        .iter()
        .filter(|c| c["verdict"] == "skipped" && c["outside_claim"] != true)
        .collect();
    assert!(
        ran >= 20,
        "only {ran} checks ran against the external server"
    );
    assert!(!skipped.is_empty());
    for c in skipped {
        let reason = c["reason"].as_str().unwrap();
        assert!(reason.contains("managed server"), "{}: {reason}", c["id"]);
    }
    assert!(checks
        .iter()
        .any(|c| c["id"] == "conformance.rate.window-slides" && c["verdict"] == "pass"));
}

#[test]
fn certify_on_a_managed_server_passes_with_a_full_report() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("report");
    let out = storeproof(
        // Every suite this version has; the explorer sized down for a test.
        &[
            "certify",
            "--seed",
            "1",
            "--depth",
            "5",
            "--queue-depth",
            "5",
            "--rate-depth",
            "4",
            "--walks",
            "10",
            "--kills",
            "2",
            "--opt-out-kills",
            "2",
            "--crash-backend",
            "process",
            "--power-losses",
            "1",
            "--fault-rounds",
            "4",
            "--faults",
            "4",
            "--cases",
            "8",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let report = read_report(&out_dir);
    assert_eq!(report["verdict"], "pass");
    assert_eq!(report["storeproof"], env!("CARGO_PKG_VERSION"));
    assert_eq!(report["store"]["name"], "storeproof-redis");
    assert_eq!(report["server"]["managed"], true);
    assert_eq!(report["server"]["version"], "7.0.15");
    assert_eq!(report["server"]["settings"]["appendfsync"], "always");
    let checks = report["checks"].as_array().unwrap();
    let conformance: Vec<&Value> = checks
        .iter()
        .filter(|c| c["suite"] == "conformance")
        .collect();
    assert!(conformance.len() >= 40);
    for c in &conformance {
        // The fencing set is for durable stores: the Redis store offers none.
        let want = if c["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("conformance.fenced."))
        {
            "skipped"
        } else {
            "pass"
        };
        assert_eq!(c["verdict"], want, "{}: {}", c["id"], c["reason"]);
        for field in [
            "id",
            "suite",
            "level",
            "verdict",
            "reason",
            "evidence",
            "counterexample",
        ] {
            assert!(c.get(field).is_some(), "{} has no {field}", c["id"]);
        }
    }
    for area in ["lease", "queue", "rate", "server"] {
        let n = conformance
            .iter()
            .filter(|c| {
                c["id"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("conformance.{area}."))
            })
            .count();
        assert!(n >= 5, "{area}: only {n} checks");
    }
    let bytes = report["stats"]["conformance"]["bytes_per_tree"]
        .as_u64()
        .unwrap();
    assert!(bytes > 0 && bytes <= 1024, "{bytes} bytes per tree");
    assert!(out_dir.join("junit.xml").exists());
    let html = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    assert!(html.contains("PASS") && !html.contains("http://") && !html.contains("https://"));

    // The check list and the summary, with unstable figures redacted.
    let listing: Vec<String> = checks
        .iter()
        .map(|c| {
            format!(
                "{} {} {}",
                c["id"].as_str().unwrap(),
                c["level"].as_str().unwrap(),
                c["verdict"].as_str().unwrap()
            )
        })
        .collect();
    insta::assert_snapshot!("certify_checks", listing.join("\n"));
    let stdout = String::from_utf8_lossy(&out.stdout).replace(out_dir.to_str().unwrap(), "[OUT]");
    insta::assert_snapshot!("certify_stdout", stdout);
}

#[test]
fn the_explorer_benchmark_prints_its_figures() {
    let out = storeproof(
        &[
            "bench",
            "explorer",
            "--depth",
            "2",
            "--queue-depth",
            "2",
            "--rate-depth",
            "2",
            "--walks",
            "2",
            "--seconds",
            "0.2",
            "--three-depth",
            "2",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Folding renamed instances changes no verdict, on the built-in store
    // and on each sabotage.
    let reduced: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("folded") && l.contains("same verdicts"))
        .collect();
    assert_eq!(reduced.len(), 9, "{stdout}");
    for line in reduced {
        assert!(line.contains("same verdicts: yes"), "{line}");
    }
    for figure in [
        "three instances (clocks 0, 0, skew) at depth 2",
        "built-in (rate, skews +0, +500 ms)",
        "sabotage:hit-counted-before-check (rate",
        "PING",
        "EVALSHA",
        "transitions/s",
        "round trips per transition",
        "ratio",
        "unique states",
        "lease at depth  2, 7 skews",
        "queue at depth  2, 7 skews",
        "rate  at depth  2, 7 skews",
    ] {
        assert!(stdout.contains(figure), "no {figure} in {stdout}");
    }
}

#[test]
fn ctrl_c_mid_crash_suite_leaves_no_container_volume_server_or_report() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let seed = "424242";
    let tmp = tempfile::tempdir().unwrap();
    let mut child = common::command()
        .env("TMPDIR", tmp.path())
        .args([
            "certify",
            "--suite",
            "crash",
            "--crash-backend",
            "docker",
            "--seed",
            seed,
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first kill is done: the container certainly exists.
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push(line.clone());
        if line.contains("kill 1/") {
            break;
        }
    }
    // SAFETY: sends SIGINT to our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    eprintln!("{}\n{}", seen.join("\n"), rest.join("\n"));
    assert_eq!(status.code(), Some(130));
    assert!(rest.iter().any(|l| l.contains("interrupted")));
    assert!(!out_dir.exists(), "a report was written after Ctrl-C");
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with("storeproof-run-")
                || n.starts_with("storeproof-redis-") && !n.ends_with(".lock")
        })
        .collect();
    assert_eq!(
        left,
        Vec::<String>::new(),
        "working or server directories left"
    );
    let label = format!("label=storeproof.run={:08x}-durable", 424242u32);
    for args in [
        vec!["container", "ls", "-a", "-q", "--filter", label.as_str()],
        vec!["volume", "ls", "-q", "--filter", label.as_str()],
    ] {
        let out = Command::new("docker").args(&args).output().unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).trim().is_empty(),
            "docker {args:?} still lists something"
        );
    }
}

#[test]
fn a_lease_on_the_callers_clock_fails_the_explorer_and_its_replay_fails_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let out = storeproof(
        &[
            "certify",
            "--store",
            "sabotage:lease-on-caller-clock",
            "--suite",
            "explorer",
            "--depth",
            "4",
            "--queue-depth",
            "5",
            "--rate-depth",
            "4",
            "--walks",
            "0",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let report = read_report(&out_dir);
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "explorer.one-live-holder")
        .unwrap()
        .clone();
    assert_eq!(check["verdict"], "fail");
    let steps = check["counterexample"]["schedule"]["actions"]
        .as_array()
        .unwrap();
    assert!(steps.len() <= 6, "{} steps", steps.len());
    let file = out_dir.join("replays/explorer.one-live-holder.json");
    let again = storeproof(&["replay", file.to_str().unwrap()], &[]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stdout).contains("still fails"));
    let fixed = storeproof(
        &["replay", file.to_str().unwrap(), "--store", "builtin:redis"],
        &[],
    );
    assert_eq!(fixed.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&fixed.stdout).contains("no longer fails"));
}

#[test]
fn an_absent_docker_engine_is_one_line_when_asked_for_and_a_warning_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let no_docker = [("DOCKER_HOST", "unix:///nonexistent/docker.sock")];
    let base = [
        "certify",
        "--suite",
        "crash",
        "--kills",
        "1",
        "--opt-out-kills",
        "1",
        "--power-losses",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let mut asked = base.to_vec();
    asked.extend(["--crash-backend", "docker"]);
    let out = storeproof(&asked, &no_docker);
    assert_setup_error(
        &out,
        &out_dir,
        &["Docker is not available", "--crash-backend process"],
    );
    let out = storeproof(&base, &no_docker);
    assert_eq!(out.status.code(), Some(0));
    let report = read_report(&out_dir);
    assert_eq!(report["stats"]["crash"]["backend"], "process");
    let docker = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "crash.docker-backend")
        .unwrap()
        .clone();
    assert_eq!(docker["verdict"], "warn");
    assert!(docker["reason"]
        .as_str()
        .unwrap()
        .contains("Docker is not available"));
}

#[test]
fn a_crash_replay_file_reruns_the_crash_run_with_its_seed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("crash.opt-out-loses.json");
    let replay = serde_json::json!({
        "storeproof": env!("CARGO_PKG_VERSION"),
        "kind": "check",
        "check": "crash.opt-out-loses",
        "store": "builtin:redis",
        "opt_out": null,
        "seed": 3,
        "verdict": "fail",
        "reason": "the opted-out server did not show the loss",
        "counterexample": {
            "kind": "crash-run", "seed": 3, "kills": 1, "opt_out_kills": 1,
            "power_losses": 1, "instances": 2, "backend": "process", "found": []
        }
    });
    std::fs::write(&file, replay.to_string()).unwrap();
    let out = storeproof(&["replay", file.to_str().unwrap()], &[]);
    // The built-in store on an opted-out server does lose writes: the
    // demonstration holds, so the recorded failure no longer reproduces.
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("seed 3") && stdout.contains("no longer fails"),
        "{stdout}"
    );
}

#[test]
fn vacuous_or_unbounded_sizes_are_usage_errors_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let out_arg = out_dir.to_str().unwrap();
    // Were a server started, the error would be about redis-server.
    let no_server = [("STOREPROOF_REDIS_SERVER", "/nonexistent/redis-server")];
    let started = std::time::Instant::now();
    for (args, needles) in [
        (vec!["--kills", "0"], vec!["--kills", "at least 1"]),
        (
            vec!["--kills", "0", "--power-losses", "0"],
            vec!["--kills", "at least 1"],
        ),
        (vec!["--power-losses", "0"], vec!["--power-losses"]),
        (vec!["--opt-out-kills", "0"], vec!["--opt-out-kills"]),
        (
            vec!["--depth", "0", "--walks", "0"],
            vec!["--depth", "at least 4", "takeover races"],
        ),
        (vec!["--depth", "3"], vec!["--depth", "at least 4"]),
        (vec!["--depth", "1000"], vec!["--depth", "at most 40"]),
        (vec!["--walk-steps", "0"], vec!["--walk-steps"]),
        (vec!["--threads", "0"], vec!["--threads", "at least 1"]),
        (vec!["--threads", "100000"], vec!["--threads", "at most 64"]),
        (
            vec!["--kills", "99999999999999999999999"],
            vec!["--kills", "not a whole number"],
        ),
        (vec!["--adapter-timeout", "0"], vec!["--adapter-timeout"]),
        (vec!["--adapter-timeout", "NaN"], vec!["--adapter-timeout"]),
        (vec!["--adapter-timeout=-1"], vec!["--adapter-timeout"]),
        (vec!["--keep-keys"], vec!["--redis-url"]),
    ] {
        let mut full = vec!["certify"];
        full.extend(args);
        full.extend(["--out", out_arg]);
        let out = storeproof(&full, &no_server);
        assert_setup_error(&out, &out_dir, &needles);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
    for args in [
        vec!["bench", "explorer", "--threads", "100000"],
        vec!["bench", "explorer", "--seconds", "0"],
        vec!["replay", "x.json", "--adapter-timeout", "0"],
    ] {
        let out = storeproof(&args, &no_server);
        assert_setup_error(&out, &out_dir, &[args[args.len() - 2]]);
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "refusals took {:?}",
        started.elapsed()
    );
}

#[test]
fn out_never_replaces_a_directory_of_someone_elses_files() {
    let dir = tempfile::tempdir().unwrap();
    let no_server = [("STOREPROOF_REDIS_SERVER", "/nonexistent/redis-server")];
    // A folder of the user's files: refused at once, before any server.
    let mine = dir.path().join("photos");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("cat.jpg"), "meow").unwrap();
    let started = std::time::Instant::now();
    let out = storeproof(&["certify", "--out", mine.to_str().unwrap()], &no_server);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(2));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("--out") && lines[0].contains("holds no storeproof report"));
    assert_eq!(
        std::fs::read_to_string(mine.join("cat.jpg")).unwrap(),
        "meow"
    );
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 1);
    // A file.
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    let out = storeproof(&["certify", "--out", file.to_str().unwrap()], &no_server);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_lines(&out)[0].contains("is a file"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    // `.` in a directory with the user's files.
    let cwd = dir.path().join("project");
    std::fs::create_dir(&cwd).unwrap();
    std::fs::write(cwd.join("Cargo.toml"), "[package]").unwrap();
    let out = storeproof_in(Some(&cwd), &["certify", "--out", "."], &no_server);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_lines(&out)[0].contains("current directory"));
    assert!(cwd.join("Cargo.toml").exists());
    // A previous report is replaced whole.
    let report = dir.path().join("report");
    let run = |report: &Path| {
        storeproof(
            &[
                "certify",
                "--suite",
                "conformance",
                "--check",
                "conformance.server.",
                "--out",
                report.to_str().unwrap(),
            ],
            &[],
        )
    };
    assert_eq!(run(&report).status.code(), Some(0));
    assert!(report.join(".storeproof-report").exists());
    // A replay of an older run, which this run does not have.
    std::fs::create_dir_all(report.join("replays")).unwrap();
    std::fs::write(report.join("replays/conformance.old.json"), "{}").unwrap();
    assert_eq!(run(&report).status.code(), Some(0));
    assert!(report.join("report.json").exists());
    assert!(!report.join("replays/conformance.old.json").exists());
}

#[test]
fn a_check_prefix_that_names_nothing_is_refused_before_any_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let no_server = [("STOREPROOF_REDIS_SERVER", "/nonexistent/redis-server")];
    let out = storeproof(
        &[
            "certify",
            "--check",
            "nope.",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &no_server,
    );
    assert_setup_error(&out, &out_dir, &["no check id starts with \"nope.\""]);
    // One good prefix does not hide a typo in another.
    let out = storeproof(
        &[
            "certify",
            "--check",
            "conformance.lease.",
            "--check",
            "conformance.leese.",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &no_server,
    );
    assert_setup_error(&out, &out_dir, &["conformance.leese."]);
    // A check of a suite left out would run nothing and pass.
    let out = storeproof(
        &[
            "certify",
            "--suite",
            "conformance",
            "--check",
            "explorer.",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &no_server,
    );
    assert_setup_error(&out, &out_dir, &["--suite explorer"]);
}

#[test]
fn an_adapters_control_characters_never_reach_the_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let out = storeproof(
        &[
            "certify",
            "--suite",
            "conformance",
            "--store",
            r#"cmd:printf '\033[2J\033[31mboom\007' >&2; exit 1"#,
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_setup_error(&out, &out_dir, &["boom"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "raw control characters: {stderr:?}"
    );
    assert!(stderr.contains(r"\u{1b}[31mboom\u{7}"), "{stderr:?}");
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
    let command = report["run"]["command"].to_string();
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
    let server = ManagedServer::start(ServerOptions::default().with_virtual_clock(false))
        .await
        .unwrap();
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
    assert_eq!(report["run"]["keys"], "kept");
    let prefix = report["run"]["prefix"].as_str().unwrap().to_string();
    let mut conn = server.admin().await.unwrap();
    let keys = keyspace::all_keys(&mut conn).await.unwrap();
    assert!(!keys.is_empty(), "no key of the run was kept");
    for key in keys {
        assert!(key.starts_with(prefix.as_bytes()));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_redis_url_run_removes_its_keys_too() {
    let server = ManagedServer::start(ServerOptions::default().with_virtual_clock(false))
        .await
        .unwrap();
    let mut conn = server.admin().await.unwrap();
    let _: () = redis::cmd("SET")
        .arg("canary")
        .arg("tweet")
        .query_async(&mut conn)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let mut child = common::command()
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

#[test]
fn a_layout_file_assembles_or_is_refused_naming_each_store() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("layout/layouts");
    let good = root.join("coordination-set.toml");
    let out = storeproof(&["layout", "check", good.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("assembles"));
    let bad = root.join("refused-redis-lease-sqlite-fenced-effect.toml");
    let out = storeproof(&["layout", "check", bad.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    for needle in [
        "[application.store-backend-mismatch]",
        "fenced_effect on sqlite",
        "outbound_call on sqlite",
        "lease on redis",
    ] {
        assert!(lines[0].contains(needle), "{needle}: {}", lines[0]);
    }
    // A layout given to a run without the layout suite would be ignored:
    // refused before anything starts.
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let out = storeproof(
        &[
            "certify",
            "--suite",
            "conformance",
            "--layout",
            good.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_setup_error(&out, &out_dir, &["--suite layout"]);
}

#[test]
fn the_linearizability_benchmark_prints_its_figures() {
    let out = storeproof(
        &[
            "bench",
            "linearizability",
            "--ops",
            "60",
            "--histories",
            "2",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.matches("operations on one tree").count(),
        4,
        "{stdout}"
    );
    assert_eq!(stdout.matches(": linearizable in").count(), 2, "{stdout}");
    assert_eq!(
        stdout.matches(": not_linearizable in").count(),
        2,
        "{stdout}"
    );
    assert!(
        stdout.contains("slowest of 4 histories of 60 operations"),
        "{stdout}"
    );
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
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    let runs = report["per_server"]
        .as_array()
        .expect("a section per server");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["server"]["product"], "Valkey 9.1.2");
    assert!(runs
        .iter()
        .all(|r| r["verdict"] == "pass" && !r["checks"].as_array().unwrap().is_empty()));
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
