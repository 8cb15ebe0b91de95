//! `--suite faults` end to end on the built binary, small sizes (the real
//! sizes run in `certify`): the built-in Redis and SQLite stores pass every
//! fault check they are judged by, and each fault sabotage fails the check
//! named for the bug it stands for.

mod common;

use std::path::Path;

use common::{read_report, storeproof};

/// `certify --suite faults` of `store` at a small size; the exit code and
/// each check's verdict by id.
fn certify_faults(store: &str, dir: &Path) -> (Option<i32>, Vec<(String, String)>) {
    let out_dir = dir.join("report");
    let out = storeproof(&[
        "certify",
        "--suite",
        "faults",
        "--store",
        store,
        "--seed",
        "11",
        "--fault-rounds",
        "4",
        "--faults",
        "4",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let report = read_report(&out_dir);
    let verdicts = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    (out.status.code(), verdicts)
}

fn verdict<'a>(verdicts: &'a [(String, String)], id: &str) -> &'a str {
    verdicts
        .iter()
        .find(|(i, _)| i == id)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no check {id} in {verdicts:?}"))
}

#[test]
fn the_builtin_redis_stores_pass_every_fault_check() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = certify_faults("builtin:redis", dir.path());
    assert_eq!(code, Some(0), "{v:?}");
    for id in [
        "faults.lease-linearizable",
        "faults.children-once",
        "faults.rate-bounds",
        "faults.full-server-refuses",
    ] {
        assert_eq!(verdict(&v, id), "pass", "{id}: {v:?}");
    }
    // The Redis stores offer no fencing set: outside their claim.
    assert_eq!(verdict(&v, "faults.fencing"), "skipped");
}

#[test]
fn the_sqlite_fencing_set_passes_linearizability_and_fencing() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = certify_faults("builtin:sqlite", dir.path());
    assert_eq!(code, Some(0), "{v:?}");
    assert_eq!(verdict(&v, "faults.lease-linearizable"), "pass");
    assert_eq!(verdict(&v, "faults.fencing"), "pass");
    assert_eq!(verdict(&v, "faults.full-server-refuses"), "skipped");
}

/// Each fault sabotage fails its named check (exit 1).
fn caught(sabotage: &str, check: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = certify_faults(&format!("sabotage:{sabotage}"), dir.path());
    assert_eq!(code, Some(1), "{sabotage}: {v:?}");
    assert_eq!(
        verdict(&v, check),
        "fail",
        "{sabotage} must fail {check}: {v:?}"
    );
}

#[test]
fn a_blind_retry_after_a_lost_reply_fails_linearizability_and_its_replay_after_a_fix_passes() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = certify_faults("sabotage:blind-retry", dir.path());
    assert_eq!(code, Some(1), "{v:?}");
    assert_eq!(verdict(&v, "faults.lease-linearizable"), "fail", "{v:?}");
    // The failure explains itself: the answer no order explains, and what
    // it would have had to be after the longest order that explains the rest.
    let report = read_report(&dir.path().join("report"));
    let reason = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == "faults.lease-linearizable")
        .and_then(|c| c["reason"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.contains("answered") && reason.contains("it would have had to answer"),
        "{reason}"
    );
    let replay = dir
        .path()
        .join("report/replays/faults.lease-linearizable.json");
    let replay = replay.to_str().unwrap();
    // The same store fails again; the fixed store passes the seeded run now.
    let again = storeproof(&["replay", replay]);
    assert_eq!(again.status.code(), Some(1));
    let fixed = storeproof(&["replay", replay, "--store", "builtin:redis"]);
    assert_eq!(fixed.status.code(), Some(0));
}

#[test]
fn a_completion_that_ignores_the_attempt_fails_children_once() {
    caught("complete-any-attempt", "faults.children-once");
}

#[test]
fn a_store_that_swallows_oom_fails_the_full_server_check() {
    caught("oom-swallowed", "faults.full-server-refuses");
}

#[test]
fn a_fence_read_outside_the_write_transaction_fails_fencing() {
    caught("fence-outside-transaction", "faults.fencing");
}
