//! Whole runs of the `storeproof` binary: certify's report, the benchmarks,
//! Ctrl-C in the middle of the crash suite, and replays.

use std::process::Command;

use harness::{RunVerdict, Verdict};
use serde_json::Value;
use testkit::{check, read_report};

use crate::common::cli::storeproof;

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
            // Two skews: the others search the same operations again.
            "--skews",
            "0,-500",
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
    let typed = read_report(&out_dir);
    assert_eq!(typed.verdict, RunVerdict::Pass);
    assert_eq!(typed.storeproof, env!("CARGO_PKG_VERSION"));
    assert_eq!(typed.store.name, "storeproof-redis");
    assert!(typed.server.managed);
    assert_eq!(typed.server.version, "7.0.15");
    assert_eq!(typed.server.settings["appendfsync"], "always");
    // The checks as written: every field present (a missing optional one
    // would read back typed as `None`), and the words the listing shows.
    let report = crate::common::read_report(&out_dir);
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
    let bytes = typed
        .stats
        .conformance
        .as_ref()
        .and_then(|c| c.bytes_per_tree.as_ref())
        .and_then(|b| b.as_u64())
        .expect("bytes per tree");
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

/// `bench explorer --store`: a store's lease search beside the built-in
/// store's, each with its wall time, states and failures, and the ratio;
/// a sabotage's failure shows in its row.
#[test]
fn the_explorer_benchmark_sets_a_store_beside_the_builtin_one() {
    let out = storeproof(
        &[
            "bench",
            "explorer",
            "--depth",
            "4",
            "--threads",
            "1",
            "--store",
            "sabotage:read-then-write-take",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains(" states (")).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(
        rows[0].contains("builtin:redis") && rows[0].contains("failed: nothing"),
        "{stdout}"
    );
    assert!(
        rows[1].contains("sabotage:read-then-write-take")
            && rows[1].contains("explorer.one-live-holder"),
        "{stdout}"
    );
    assert!(
        stdout.contains("x the built-in store's wall time"),
        "{stdout}"
    );
    let bad = storeproof(&["bench", "explorer", "--store", "nonsense"], &[]);
    assert_eq!(bad.status.code(), Some(2));
    // An adapter that does not start has no speed: one line naming it and
    // the fix, no figures (a row timing the harness giving up would be a
    // lie), and the searches stop at its failure.
    let broken = storeproof(
        &[
            "bench",
            "explorer",
            "--depth",
            "2",
            "--threads",
            "1",
            "--store",
            "cmd:python3 /nonexistent/adapter.py",
        ],
        &[],
    );
    assert_eq!(broken.status.code(), Some(2));
    let err = String::from_utf8_lossy(&broken.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("storeproof: error:") && last.contains("fix the adapter"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&broken.stdout);
    assert!(!stdout.contains("/nonexistent/adapter.py "), "{stdout}");
    // The built-in store's seven searches, then the broken store's first.
    let searches = err
        .lines()
        .filter(|l| l.contains(" unique), depth "))
        .count();
    assert_eq!(searches, 7 + 1, "{err}");
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
    let mut child = crate::common::command()
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
            // The lease alone (the check's contract). Its first violation
            // is its grant's expiry on the caller's clock (explorer.answered,
            // not asked for): --fail-fast stops only at the check asked
            // for, the two live holders replayed here.
            "--check",
            "explorer.one-live-holder",
            "--fail-fast",
            "--depth",
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
    let check = check(&report, "explorer.one-live-holder");
    assert_eq!(check.verdict, Verdict::Fail);
    let counterexample = check
        .counterexample
        .as_ref()
        .and_then(|c| c.explorer())
        .expect("an explorer counterexample");
    let steps = &counterexample.schedule.actions;
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
