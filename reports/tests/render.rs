//! The renderings of a hand-made report, pinned: report.json keeps SPEC §5's
//! fields, junit.xml has a test case per check, index.html is self-contained
//! and shows each failure's steps; writing never leaves a half report.

use std::collections::BTreeMap;

use harness::check::{
    CheckResult, Level, Report, RunVerdict, ServerSection, StoreSection, Verdict,
};
use serde_json::json;

fn check(id: &str, level: Level, verdict: Verdict, reason: &str) -> CheckResult {
    CheckResult {
        outside_claim: false,
        id: id.into(),
        suite: id.split('.').next().unwrap_or("").into(),
        level,
        verdict,
        reason: reason.into(),
        evidence: json!({}),
        counterexample: None,
        seconds: 0.25,
    }
}

fn report() -> Report {
    let mut failing = check(
        "explorer.one-live-holder",
        Level::Must,
        Verdict::Fail,
        "two live holders at server time 2000000000500 <a & b>",
    );
    failing.counterexample = Some(json!({
        "kind": "explorer-schedule",
        "property": "one-live-holder",
        "schedule": {"skews": [0, 500], "actions": [{"start": [0, "take"]}]},
        "steps": [
            {"step": 0, "what": "start", "server_ms": 2000000000000i64},
            {"step": 1, "what": "a: take", "server_ms": 2000000000000i64,
             "commands": ["EVALSHA abc 1 sp:x:lease:t a 1000"],
             "answer": {"granted": {"epoch": 1, "expires_at_ms": 2000000001000i64}}},
        ],
    }));
    Report {
        storeproof: "0.1.0".into(),
        verdict: RunVerdict::Fail,
        store: StoreSection {
            spec: "builtin:redis".into(),
            name: "storeproof-redis".into(),
            version: "0.1.0".into(),
            contracts: vec!["lease".into(), "queue".into(), "rate".into()],
        },
        server: ServerSection {
            version: "7.0.15".into(),
            managed: true,
            settings: BTreeMap::from([("appendfsync".into(), "always".into())]),
        },
        checks: vec![
            check(
                "conformance.lease.take-busy",
                Level::Must,
                Verdict::Pass,
                "busy",
            ),
            check(
                "conformance.lease.expiry-at-instant",
                Level::Should,
                Verdict::Warn,
                "busy at the instant",
            ),
            check(
                "conformance.rate.window-slides",
                Level::Must,
                Verdict::Skipped,
                "needs a managed server",
            ),
            failing,
        ],
        stats: BTreeMap::from([
            ("conformance".into(), json!({"checks": 3, "seconds": 0.5})),
            (
                "explorer".into(),
                json!({
                    "depth": 8, "walks": 200, "walk_steps": 4000, "seed": 1, "wall_seconds": 40.0,
                    "per_skew": [{"skew_ms": 0, "states": 27016, "unique_states": 6677, "max_depth": 8,
                                  "seconds": 4.0, "transitions_per_second": 6754.0,
                                  "round_trips_per_transition": 2.43,
                                  "zombie_renew_reached": true, "zombie_release_reached": false}],
                }),
            ),
            (
                "crash".into(),
                json!({
                    "backend": "docker", "docker_unavailable": null, "kills": 2,
                    "acknowledged_writes": 500, "lost": 0, "worst_kill_lost": 0,
                    "per_kill": [{"acknowledged": 200, "lost": 0}, {"acknowledged": 300, "lost": 0}],
                    "opt_out": {"kills": 1, "acknowledged_writes": 100, "lost": 40,
                                "epochs_granted_again": 3, "kills_showing_loss": 1},
                }),
            ),
        ]),
        run: BTreeMap::from([
            ("seed".into(), json!(1)),
            ("store".into(), json!("builtin:redis")),
            ("opt_out".into(), json!(null)),
        ]),
    }
}

#[test]
fn report_json_keeps_the_spec_fields() {
    let text = reports::render_json(&report()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for field in [
        "storeproof",
        "verdict",
        "store",
        "server",
        "checks",
        "stats",
    ] {
        assert!(v.get(field).is_some(), "no {field}");
    }
    insta::assert_snapshot!("report_json", text);
}

#[test]
fn junit_has_a_case_per_check() {
    let xml = reports::render_junit(&report());
    assert_eq!(xml.matches("<testcase").count(), 4);
    insta::assert_snapshot!("junit_xml", xml);
}

#[test]
fn html_is_self_contained_and_shows_the_failing_steps() {
    let html = reports::render_html(&report());
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
    assert!(html.contains("FAIL"));
    assert!(html.contains("EVALSHA abc 1 sp:x:lease:t a 1000"));
    assert!(html.contains("&lt;a &amp; b&gt;"), "text is escaped");
    assert!(html.contains("Crash log") && html.contains("docker"));
    insta::assert_snapshot!("index_html", html);
}

#[test]
fn replay_files_come_with_every_counterexample() {
    let files = reports::replay_files(&report());
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, "replays/explorer.one-live-holder.json");
    let v: serde_json::Value = serde_json::from_str(&files[0].1).unwrap();
    assert_eq!(v["check"], "explorer.one-live-holder");
    assert_eq!(v["store"], "builtin:redis");
    assert_eq!(v["counterexample"]["schedule"]["skews"], json!([0, 500]));
}

#[test]
fn writing_replaces_the_old_report_whole_and_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("stale.txt"), "old").unwrap();
    reports::write_all(&report(), &out).unwrap();
    assert!(out.join("index.html").exists() && out.join("junit.xml").exists());
    assert!(out.join("replays/explorer.one-live-holder.json").exists());
    assert!(
        !out.join("stale.txt").exists(),
        "the old report was not replaced whole"
    );
    // A parent that is a file: an error, and nothing half-written beside it.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    assert!(reports::write_all(&report(), &blocker.join("r")).is_err());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}
