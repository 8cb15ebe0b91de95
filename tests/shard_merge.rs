//! `certify --shard K/N` and `storeproof merge`: three shards of a run,
//! merged, equal the unsharded run in checks, verdicts and explorer state
//! counts; shards that do not make one run are refused.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{read_report, storeproof};
use serde_json::Value;

/// The run every report here is of: small, seeded, every suite that is
/// sharded by parts (conformance checks, explorer skews and walks, crash
/// kill rounds). The explorer's checks of two contracts, lease and queue:
/// the rate limits' search, three times theirs in a debug build, shards
/// by skew as theirs do.
const RUN: &[&str] = &[
    "certify",
    "--suite",
    "conformance,explorer,crash",
    "--check",
    "conformance.lease.",
    "--check",
    "crash.",
    "--check",
    "explorer.queue.",
    "--depth",
    "4",
    // Deep enough for both of the queue's races.
    "--queue-depth",
    "5",
    "--rate-depth",
    "4",
    "--walks",
    "6",
    // Three skews: six searches (two contracts), two a shard.
    "--skews",
    "0,500,-1000",
    "--kills",
    "3",
    "--opt-out-kills",
    "1",
    "--power-losses",
    "1",
    "--cases",
    "2",
    "--crash-backend",
    "process",
    "--seed",
    "5",
    "--quiet",
];

/// The lease's explorer checks and the exploration's own, as `--check`s.
const LEASE_EXPLORER_CHECKS: &[&str] = &[
    "--check",
    "explorer.one-live-holder",
    "--check",
    "explorer.epoch-monotonic",
    "--check",
    "explorer.zombie-",
    "--check",
    "explorer.no-tree-stuck",
    "--check",
    "explorer.answered",
    "--check",
    "explorer.exploration-complete",
];

fn certify(out: &Path, shard: Option<&str>) -> Command {
    let mut cmd = common::command();
    cmd.args(RUN)
        .args(LEASE_EXPLORER_CHECKS)
        .arg("--out")
        .arg(out);
    if let Some(shard) = shard {
        cmd.args(["--shard", shard]);
    }
    cmd
}

fn finished(what: &str, out: Output) -> Output {
    eprintln!(
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// (id, verdict) of every check, in report order.
fn verdicts(report: &Value) -> Vec<(String, String)> {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// (skew, states, unique states) of every explorer search row.
fn states(report: &Value) -> Vec<(i64, u64, u64)> {
    report["stats"]["explorer"]["per_skew"]
        .as_array()
        .expect("per_skew")
        .iter()
        .map(|r| {
            (
                r["skew_ms"].as_i64().unwrap_or(i64::MIN),
                r["states"].as_u64().unwrap_or(0),
                r["unique_states"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

fn one_line_refusal(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{err:?} does not say {needle:?}");
}

#[test]
fn three_shards_merged_equal_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let whole_dir = tmp.path().join("whole");
    let shard_dirs: Vec<PathBuf> = (1..=3)
        .map(|k| tmp.path().join(format!("shard{k}")))
        .collect();
    // The whole run first, then the three shards side by side, as CI jobs
    // would run them.
    let whole = finished("whole", certify(&whole_dir, None).output().unwrap());
    assert_eq!(whole.status.code(), Some(0));
    let shards: Vec<_> = shard_dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            certify(dir, Some(&format!("{}/3", i + 1)))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start a shard")
        })
        .collect();
    for (i, child) in shards.into_iter().enumerate() {
        let out = finished(
            &format!("shard {}", i + 1),
            child.wait_with_output().unwrap(),
        );
        assert_eq!(out.status.code(), Some(0), "shard {} did not pass", i + 1);
    }

    let whole = read_report(&whole_dir);
    let parts: Vec<Value> = shard_dirs.iter().map(|d| read_report(d)).collect();
    // Each shard decided a part only, and every check is some shard's.
    for part in &parts {
        assert!(verdicts(part).len() < verdicts(&whole).len());
        assert!(!states(part).is_empty() || part["stats"]["explorer"].is_null());
    }
    let mut dealt: Vec<(i64, u64, u64)> = parts.iter().flat_map(states).collect();
    dealt.sort();
    let mut all = states(&whole);
    all.sort();
    assert_eq!(dealt, all, "each skew searched by exactly one shard");

    let merged_dir = tmp.path().join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend(shard_dirs.iter().rev().map(|d| d.display().to_string()));
    args.extend(["--out".to_string(), merged_dir.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = storeproof(&args);
    assert_eq!(out.status.code(), Some(0));
    let merged = read_report(&merged_dir);
    assert_eq!(verdicts(&merged), verdicts(&whole));
    assert_eq!(states(&merged), states(&whole));
    assert_eq!(merged["verdict"], whole["verdict"]);
    for figure in ["walks", "walk_steps", "depth"] {
        assert_eq!(
            merged["stats"]["explorer"][figure], whole["stats"]["explorer"][figure],
            "{figure}"
        );
    }
    assert_eq!(merged["stats"]["crash"]["kills"], 3);
    let kills: Vec<u64> = merged["stats"]["crash"]["per_kill"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kill"].as_u64().unwrap())
        .collect();
    assert_eq!(kills, vec![1, 2, 3]);
    assert_eq!(
        merged["stats"]["conformance"]["checks"],
        whole["stats"]["conformance"]["checks"]
    );
    assert!(!merged["run"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "--shard"));
    assert!(merged_dir.join("index.html").is_file() && merged_dir.join("junit.xml").is_file());

    // A missing shard, the same shard twice, and a shard of another seed.
    let dir = |k: usize| shard_dirs[k].display().to_string();
    let elsewhere = tmp.path().join("refused").display().to_string();
    let out = storeproof(&["merge", &dir(0), &dir(1), "--out", &elsewhere]);
    one_line_refusal(&out, "shard 3/3 is missing");
    let out = storeproof(&[
        "merge",
        &dir(0),
        &dir(0),
        &dir(1),
        &dir(2),
        "--out",
        &elsewhere,
    ]);
    one_line_refusal(&out, "shard 1/3 is given twice");
    let other_seed = tmp.path().join("other-seed");
    std::fs::create_dir(&other_seed).unwrap();
    let mut report = parts[2].clone();
    report["run"]["seed"] = 6.into();
    std::fs::write(
        other_seed.join("report.json"),
        serde_json::to_string(&report).unwrap(),
    )
    .unwrap();
    let out = storeproof(&[
        "merge",
        &dir(0),
        &dir(1),
        &other_seed.display().to_string(),
        "--out",
        &elsewhere,
    ]);
    one_line_refusal(&out, "different seeds");
    // A whole run's report is not a shard's.
    let out = storeproof(&[
        "merge",
        &whole_dir.display().to_string(),
        "--out",
        &elsewhere,
    ]);
    one_line_refusal(&out, "not a shard's report");
    assert!(
        !Path::new(&elsewhere).exists(),
        "a refused merge wrote a report"
    );
}

/// The CI recipe's shape: a matrix of servers × shards, each job one server
/// and one shard; merged, they equal the unsharded run on both servers, a
/// section per server.
#[test]
fn a_matrix_of_servers_and_shards_merges_into_the_run_on_both_servers() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &Path, servers: &[&str], shard: Option<&str>| {
        let mut cmd = common::command();
        cmd.args([
            "certify",
            "--suite",
            "conformance,explorer",
            "--check",
            "conformance.lease.",
        ]);
        cmd.args(LEASE_EXPLORER_CHECKS);
        cmd.args(["--depth", "4", "--walks", "4", "--seed", "3", "--quiet"]);
        for s in servers {
            cmd.args(["--server", s]);
        }
        if let Some(shard) = shard {
            cmd.args(["--shard", shard]);
        }
        cmd.arg("--out").arg(out);
        let out = finished("certify", cmd.output().unwrap());
        assert_eq!(out.status.code(), Some(0));
    };
    let whole = dir.path().join("whole");
    run(&whole, &["redis-6.2", "valkey-9"], None);
    let mut parts: Vec<PathBuf> = Vec::new();
    for server in ["redis-6.2", "valkey-9"] {
        for k in ["1/2", "2/2"] {
            let out = dir.path().join(format!("{server}-{}", &k[..1]));
            run(&out, &[server], Some(k));
            parts.push(out);
        }
    }
    let merged = dir.path().join("merged");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(parts.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap()]);
    assert_eq!(storeproof(&args).status.code(), Some(0));
    let (whole, merged) = (read_report(&whole), read_report(&merged));
    let runs = |r: &Value| r["per_server"].as_array().unwrap().clone();
    assert_eq!(runs(&merged).len(), 2);
    for (w, m) in runs(&whole).iter().zip(runs(&merged).iter()) {
        assert_eq!(w["server"]["name"], m["server"]["name"]);
        assert_eq!(verdicts(w), verdicts(m));
        assert_eq!(states(w), states(m));
    }
    // One server's shard missing: refused, naming it.
    let out = storeproof(&[
        "merge",
        parts[0].to_str().unwrap(),
        parts[2].to_str().unwrap(),
        parts[3].to_str().unwrap(),
        "--out",
        dir.path().join("x").to_str().unwrap(),
    ]);
    one_line_refusal(&out, "shard 2/2 of redis-6.2 is missing");
}
