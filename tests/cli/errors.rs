//! The `storeproof` binary's refusals: wrong flags, sizes, prefixes and
//! layouts, a missing server or engine, exit 2 with one line before
//! anything starts, and an adapter's words never reaching the terminal raw.

use std::path::Path;

use harness::Verdict;
use testkit::{check, read_report};

use crate::common::cli::{assert_setup_error, stderr_lines, storeproof};
use crate::common::storeproof_in;

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
    let crash = report
        .stats
        .crash
        .as_ref()
        .expect("the crash suite's figures");
    assert_eq!(crash.backend, "process");
    let docker = check(&report, "crash.docker-backend");
    assert_eq!(docker.verdict, Verdict::Warn);
    assert!(docker.reason.contains("Docker is not available"));
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
