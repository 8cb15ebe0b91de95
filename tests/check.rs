//! `storeproof check`: the histories a certify run saved are judged again
//! without a server and reach the same verdicts; one corrupted answer makes
//! the check that holds it fail, named; unreadable input is one line, exit 2.

mod common;

use std::path::Path;

use common::storeproof;

use serde_json::Value;

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// The first granted epoch of `check`'s saved history, moved by 1000.
fn corrupt_a_grant(report: &mut Value, check: &str) {
    let checks = report["checks"].as_array_mut().expect("checks");
    let c = checks
        .iter_mut()
        .find(|c| c["id"] == check)
        .expect("the check is in the report");
    let events = c["evidence"]["history"]["events"]
        .as_array_mut()
        .expect("a saved history");
    let granted = events
        .iter_mut()
        .find_map(|e| e["value"].get_mut("granted"))
        .expect("a granted answer");
    let epoch = granted["epoch"].as_i64().expect("an epoch");
    granted["epoch"] = Value::from(epoch + 1000);
}

#[test]
fn saved_histories_judge_again_to_the_report_s_verdicts_and_a_corrupted_one_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("report");
    let out = storeproof(&[
        "certify",
        "--suite",
        "conformance",
        "--check",
        "conformance.lease",
        "--out",
        path(&out_dir),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "certify passes the built-in store"
    );
    let report_path = out_dir.join("report.json");

    let out = storeproof(&["check", path(&report_path)]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let judged: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(", re-judged "))
        .collect();
    assert!(
        judged.len() >= 10,
        "only {} checks judged again",
        judged.len()
    );
    assert!(
        stdout.contains("conformance.lease.take-free-tree: recorded pass, re-judged pass"),
        "{stdout}"
    );

    let mut report: Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    corrupt_a_grant(&mut report, "conformance.lease.take-free-tree");
    let corrupted = dir.path().join("corrupted.json");
    std::fs::write(&corrupted, report.to_string()).unwrap();
    let out = storeproof(&["check", path(&corrupted)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let named: Vec<&str> = stdout.lines().filter(|l| l.contains("DISAGREES")).collect();
    assert_eq!(named.len(), 1, "{stdout}");
    assert!(
        named[0].starts_with("conformance.lease.take-free-tree: recorded pass, re-judged fail"),
        "{stdout}"
    );
}

#[test]
fn input_that_is_no_report_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = dir.path().join("report.json");
    std::fs::write(&not_json, "not json").unwrap();
    let no_history = dir.path().join("other.json");
    std::fs::write(&no_history, r#"{"checks": []}"#).unwrap();
    let absent = dir.path().join("absent.json");
    for (file, says) in [
        (not_json.as_path(), "is not JSON"),
        (no_history.as_path(), "no check"),
        (absent.as_path(), "cannot read"),
    ] {
        let out = storeproof(&["check", path(file)]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(stderr.contains("storeproof certify"), "{stderr}");
    }
}

/// A generated check keeps the history of its shrunk failing sequence and
/// that sequence's steps: `check` judges it again to the same failure, and
/// says of a passing one that it kept nothing to judge.
#[test]
fn a_failing_generated_sequence_is_judged_again_and_a_passing_one_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("report");
    let out = storeproof(&[
        "certify",
        "--store",
        "sabotage:renew-at-expiry-instant",
        "--suite",
        "conformance",
        "--check",
        "conformance.generated",
        "--cases",
        "32",
        // 32 generated cases do not reach the expiry instant under every
        // seed (seed 6918271824229585550 misses it): the test pins one
        // that does, so it is deterministic.
        "--seed",
        "1",
        "--out",
        path(&out_dir),
    ]);
    assert_eq!(out.status.code(), Some(1), "the sabotage fails");
    let out = storeproof(&["check", path(&out_dir.join("report.json"))]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("conformance.generated.lease: recorded fail, re-judged fail"),
        "{stdout}"
    );
    assert!(
        stdout.contains("conformance.generated.queue: recorded pass, not judged again"),
        "{stdout}"
    );
    assert!(!stdout.contains("DISAGREES"), "{stdout}");
}
