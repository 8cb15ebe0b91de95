//! The Node adapter kit's example store (adapters/node/example, node-redis,
//! one Lua script per operation) certifies through the kit with every
//! check passing, and its twin whose take is a read then a write
//! (fixtures/adapters/node/read_then_write_take.js) fails the take race and
//! the explorer's one-live-holder (issue 22, item 1).

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where Debian's node packages (node-redis) live: Node does not search it.
const NODE_PATH: &str = "/usr/share/nodejs";

fn store(script: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(script);
    format!("cmd:NODE_PATH={NODE_PATH} node {}", path.display())
}

/// `storeproof certify` of `script` with `args`: its exit code and report.
fn certify(script: &str, args: &[&str], out: &Path) -> (Option<i32>, Value) {
    certify_with(script, args, &[], out)
}

/// [`certify`] with `env` set for storeproof and the adapters it starts.
fn certify_with(
    script: &str,
    args: &[&str],
    env: &[(&str, &str)],
    out: &Path,
) -> (Option<i32>, Value) {
    assert!(
        Path::new(NODE_PATH).join("redis/package.json").is_file(),
        "node-redis is not under {NODE_PATH}: run scripts/setup"
    );
    let store = store(script);
    let out_dir = out.to_string_lossy();
    let mut all = vec![
        "certify", "--seed", "7", "--store", &store, "--out", &out_dir,
    ];
    all.extend_from_slice(args);
    let output = common::storeproof_in(None, &all, env);
    (output.status.code(), common::read_report(out))
}

fn verdict_of<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == id))
        .map_or(&Value::Null, |c| &c["verdict"])
}

#[test]
fn the_node_example_passes_every_conformance_check() {
    let dir = tempfile::tempdir().unwrap();
    let (code, report) = certify(
        "adapters/node/example/adapter.js",
        &["--suite", "conformance", "--cases", "2"],
        &dir.path().join("r"),
    );
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["store"]["name"], "storeproof-node-example");
    let checks = report["checks"].as_array().expect("the checks");
    assert!(checks.len() > 40, "{}", checks.len());
    for c in checks {
        if c["outside_claim"] == true {
            continue;
        }
        assert_eq!(c["verdict"], "pass", "{}: {}", c["id"], c["reason"]);
    }
    assert_eq!(verdict_of(&report, "conformance.lease.take-races"), "pass");
}

#[test]
fn the_node_example_passes_the_lease_explorer() {
    let dir = tempfile::tempdir().unwrap();
    let (code, report) = certify(
        "adapters/node/example/adapter.js",
        // The lease alone: the check's contract is all that is explored.
        &[
            "--suite",
            "explorer",
            "--check",
            "explorer.one-live-holder",
            "--depth",
            "5",
            "--walks",
            "5",
            // Two skews: the others search the same operations again.
            "--skews",
            "0,-500",
        ],
        &dir.path().join("r"),
    );
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(verdict_of(&report, "explorer.one-live-holder"), "pass");
}

#[test]
fn a_take_split_into_a_read_and_a_write_fails_the_race_and_the_explorer() {
    let dir = tempfile::tempdir().unwrap();
    let script = "fixtures/adapters/node/read_then_write_take.js";
    let (code, report) = certify(
        script,
        &[
            "--suite",
            "conformance",
            "--check",
            "conformance.lease.take",
        ],
        &dir.path().join("conformance"),
    );
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(verdict_of(&report, "conformance.lease.take-races"), "fail");
    // One call at a time it keeps the contract.
    assert_eq!(
        verdict_of(&report, "conformance.lease.take-free-tree"),
        "pass"
    );
    let (code, report) = certify(
        script,
        &[
            "--suite",
            "explorer",
            "--check",
            "explorer.one-live-holder",
            "--depth",
            "6",
            "--walks",
            "0",
            "--fail-fast",
        ],
        &dir.path().join("explorer"),
    );
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(verdict_of(&report, "explorer.one-live-holder"), "fail");
}

/// Issue 40, item 3: a take that draws a uuid per operation (an argument of
/// its script, written into the record, then read back) is explored like
/// any other store: every lease search passes, none gives up a reduction,
/// and the uuids are what was learnt as drawn.
#[test]
fn a_take_that_draws_a_uuid_per_operation_passes_the_lease_explorer() {
    let dir = tempfile::tempdir().unwrap();
    let (code, report) = certify(
        "fixtures/adapters/node/uuid_take.js",
        &[
            "--suite",
            "explorer",
            "--check",
            "explorer.one-live-holder",
            "--depth",
            "4",
            "--walks",
            "0",
            "--skews",
            "0,-500",
        ],
        &dir.path().join("r"),
    );
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(verdict_of(&report, "explorer.one-live-holder"), "pass");
    let rows = report["stats"]["explorer"]["per_skew"]
        .as_array()
        .expect("the searches");
    assert!(!rows.is_empty());
    for row in rows {
        assert!(row["drawn_values"].as_u64() > Some(0), "{row}");
        assert!(row.get("drawn_failure").is_none(), "{row}");
        assert!(row.get("shift_failure").is_none(), "{row}");
    }
}

/// A take written as an optimistic transaction on node-redis (WATCH, TIME
/// and the record read, MULTI, HSET, EXEC, retried when aborted: six
/// commands, fixtures/adapters/designs/watch_take.js) passes the lease
/// explorer, its takeover race reached in the search of whole operations
/// (the PASS says so), and its twin that forgets the WATCH is caught
/// granting a second live holder.
#[test]
fn a_take_in_a_watch_transaction_passes_and_its_twin_without_the_watch_fails() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--suite",
        "explorer",
        "--check",
        "explorer.one-live-holder",
        "--check",
        "explorer.zombie-renew-race-reached",
        // Four commands deep: the takeover race is reached in the search
        // of whole operations, and the twin's second holder found.
        "--depth",
        "4",
        "--walks",
        "0",
        // One skew: the race and the twin's second holder do not depend
        // on the second clock (each search is long on Node).
        "--skews",
        "0",
    ];
    let script = "fixtures/adapters/designs/watch_take.js";
    let (code, report) = certify(script, &args, &dir.path().join("ok"));
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(
        verdict_of(&report, "explorer.zombie-renew-race-reached"),
        "pass"
    );
    let holder = report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "explorer.one-live-holder"))
        .expect("the check");
    assert_eq!(holder["verdict"], "pass", "{holder}");
    let reason = holder["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("every schedule of whole operations"),
        "{reason}"
    );
    let flawed = [&args[..], &["--fail-fast"]].concat();
    let (code, report) = certify_with(
        script,
        &flawed,
        &[("FLAW", "1")],
        &dir.path().join("flawed"),
    );
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(verdict_of(&report, "explorer.one-live-holder"), "fail");
}
