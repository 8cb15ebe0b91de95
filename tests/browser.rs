//! The report page of a real failing run, made by the binary: the run the
//! browser test (reports/tests/browser.rs) opens in chromium is a saved copy
//! of this one (reports/tests/fixtures/read-then-write-take.report.json), so
//! this test keeps that copy honest. It runs `storeproof certify --store
//! sabotage:read-then-write-take --suite conformance --seed 7` and checks
//! that its page puts the verdict, then the failing check with its timeline
//! of the two overlapping grants and its replay command, before anything
//! else, and that the saved copy has the same checks, verdicts and failing
//! counterexample (its commands and answers, key prefix aside).

mod common;

use serde_json::Value;

fn fixture() -> Value {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("reports/tests/fixtures/read-then-write-take.report.json"),
    )
    .expect("the saved report of the read-then-write sabotage");
    serde_json::from_str(&text).expect("the saved report is JSON")
}

/// The take race's counterexample with the run's key prefix named instead.
fn race(report: &Value) -> String {
    let c = report["checks"]
        .as_array()
        .and_then(|cs| {
            cs.iter()
                .find(|c| c["id"] == "conformance.lease.take-races")
        })
        .expect("the take-races check");
    let prefix = report["run"]["prefix"].as_str().unwrap_or("");
    c["counterexample"].to_string().replace(prefix, "sp:RUN:")
}

fn verdicts(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| format!("{} {}", c["id"].as_str().unwrap_or(""), c["verdict"]))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_real_failing_run_shows_its_failure_first_and_matches_the_browser_tests_copy() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let run = common::command()
        .args([
            "certify",
            "--store",
            "sabotage:read-then-write-take",
            "--suite",
            "conformance",
            "--seed",
            "7",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let order: Vec<Option<usize>> = [
        "class=\"verdict fail\"",
        "id=\"attention\"",
        "id=\"conformance.lease.take-races\"",
        "id=\"timeline-conformance.lease.take-races\"",
        "class=\"overlap\"",
        "storeproof replay ",
        "id=\"certificate\"",
        "id=\"checks\"",
    ]
    .iter()
    .map(|m| html.find(m))
    .collect();
    assert!(order.iter().all(Option::is_some), "{order:?}");
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    // The replay command names this run's folder, ready to paste.
    let replay = format!(
        "storeproof replay {}/replays/conformance.lease.take-races.json",
        out.display()
    );
    assert!(html.contains(&replay), "no `{replay}`");
    assert!(out.join("badge.svg").is_file());
    let timeline = &html[order[3].unwrap()..order[5].unwrap()];
    assert_eq!(timeline.matches("class=\"grant\"").count(), 2, "{timeline}");

    // The browser test's copy is this run.
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let saved = fixture();
    assert_eq!(
        verdicts(&report),
        verdicts(&saved),
        "the checks changed: regenerate reports/tests/fixtures/read-then-write-take.report.json with this test's command (its run.command as storeproof certify … --seed 7)"
    );
    assert_eq!(
        race(&report),
        race(&saved),
        "the race's counterexample changed: regenerate reports/tests/fixtures/read-then-write-take.report.json"
    );
}
