//! `--store builtin:sqlite` end to end: the SQLite fencing set's lease store
//! certified by the built binary, its server time the managed server's
//! virtual clock, and every check it cannot be judged by reported with the
//! reason, never passed.

mod common;

use std::path::Path;

use common::read_report;
use serde_json::Value;

fn storeproof_in(cwd: &Path, args: &[&str]) -> std::process::Output {
    common::storeproof_in(Some(cwd), args, &[])
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no check {id} in the report"))
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

#[test]
fn the_sqlite_store_passes_conformance_and_says_why_each_check_it_skips() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let out_dir = dir.path().join("report");
    let out = storeproof_in(
        &cwd,
        &[
            "certify",
            "--store",
            "builtin:sqlite",
            "--suite",
            "conformance",
            "--seed",
            "7",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let report = read_report(&out_dir);
    assert_eq!(report["verdict"], "pass");
    assert_eq!(report["store"]["spec"], "builtin:sqlite");
    assert_eq!(report["store"]["name"], "storeproof-sqlite");
    // The database was the run's own, in its workdir: nothing in the cwd.
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);

    // Every lease check that judges replies ran and passed, the expiry
    // instants among them (on the virtual clock, to the millisecond).
    for id in [
        "conformance.lease.take-free-tree",
        "conformance.lease.expiry-before-instant",
        "conformance.lease.expiry-after-instant",
        "conformance.lease.expiry-at-instant",
        "conformance.lease.server-clock-rules",
        "conformance.lease.renew-after-expiry",
    ] {
        assert_eq!(check(&report, id)["verdict"], "pass", "{id}");
    }
    // The take races ran as concurrent calls, and say so.
    let races = check(&report, "conformance.lease.take-races");
    assert_eq!(races["verdict"], "pass");
    assert!(
        text(&races["reason"]).contains("concurrent"),
        "{}",
        races["reason"]
    );

    // Checks of Redis state the store does not keep: skipped, outside its
    // claim, each with the reason; never passed.
    for (id, says) in [
        ("conformance.lease.kept-executions-not-in-redis", "keys"),
        ("conformance.lease.odd-ids-inside-prefix", "keys"),
        ("conformance.lease.bytes-per-tree", "keys"),
        (
            "conformance.server.appendonly-no-refused",
            "which Redis servers the store accepts",
        ),
        (
            "conformance.server.replica-refused",
            "which Redis servers the store accepts",
        ),
    ] {
        let c = check(&report, id);
        assert_eq!(c["verdict"], "skipped", "{id}");
        assert_eq!(c["outside_claim"], true, "{id}");
        let reason = text(&c["reason"]);
        assert!(reason.contains("outside Redis"), "{id}: {reason}");
        assert!(reason.contains(says), "{id}: {reason}");
    }
    // The queue and rate contracts are not claimed.
    let queue = check(&report, "conformance.queue.save-and-read");
    assert_eq!(queue["verdict"], "skipped");
    assert!(text(&queue["reason"]).contains("does not offer"));
    let passed = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "pass")
        .count();
    assert!(passed >= 20, "{passed} checks passed");
}

#[test]
fn the_explorer_explores_the_sqlite_store_an_operation_a_step_and_it_passes() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("report");
    let out = storeproof_in(
        dir.path(),
        &[
            "certify",
            "--store",
            "builtin:sqlite",
            "--suite",
            "explorer",
            "--depth",
            "5",
            "--walks",
            "20",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = read_report(&out_dir);
    assert_eq!(report["verdict"], "pass");
    let explorer: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["suite"] == "explorer")
        // The queue's and rate limits' checks: contracts this store does
        // not offer.
        .filter(|c| {
            let id = c["id"].as_str().unwrap();
            !id.starts_with("explorer.queue.") && !id.starts_with("explorer.rate.")
        })
        .collect();
    assert_eq!(explorer.len(), 8);
    for c in explorer {
        assert_eq!(c["verdict"], "pass", "{}: {}", c["id"], c["reason"]);
    }
    // Said where the scope is: no Redis command to interleave.
    assert!(
        text(&check(&report, "explorer.one-live-holder")["reason"])
            .contains("a step is one operation"),
        "{}",
        check(&report, "explorer.one-live-holder")["reason"]
    );
}
