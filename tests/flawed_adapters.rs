//! Three deliberately flawed external adapters (Python fixtures, the example
//! adapter with one operation split into round trips, each the real-world
//! shape of a sabotage of `sabotage/src/queue_rate_races.rs`) keep their
//! contract one call at a time, and the race check of that contract catches
//! each: every other check of the contract passes, the race fails with the
//! adapter's own interleaved commands as evidence. The explorer, searching
//! every interleaving of the adapter's commands by itself, catches each too.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

const CLAIM_RACES: &str = "conformance.queue.claim-races";
const RATE_RACES: &str = "conformance.rate.races";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/adapters/python")
        .join(name)
}

/// `storeproof certify --suite conformance --check <contract> --seed 7` of
/// the fixture `adapter`: its exit code and report.
fn certify(adapter: &str, contract: &str, out: &Path) -> (Option<i32>, Value) {
    let store = store_of(adapter);
    let out_dir = out.to_string_lossy();
    let args = [
        "certify",
        "--suite",
        "conformance",
        "--check",
        contract,
        "--seed",
        "7",
        "--store",
        &store,
        "--out",
        &out_dir,
    ];
    let output = common::storeproof_in(None, &args, &[]);
    (output.status.code(), common::read_report(out))
}

/// `--store` of the Python fixture `adapter`, on the resolved interpreter.
fn store_of(adapter: &str) -> String {
    format!("cmd:{} {}", common::python(), fixture(adapter).display())
}

/// Runs the contract's checks on `adapter` and asserts that exactly
/// `race_check` fails, with `verdicts` its races' verdicts in order, and
/// returns its counterexample.
fn only_the_race_fails(
    adapter: &str,
    contract: &str,
    race_check: &str,
    verdicts: &[&str],
) -> Value {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (code, report) = certify(adapter, contract, &dir.path().join("r"));
    assert_eq!(code, Some(1), "the race check fails the run");
    assert_eq!(report["verdict"], "fail");
    // The example, or the store on the built-in store's scripts.
    let name = report["store"]["name"].as_str().unwrap_or_default();
    assert!(name.starts_with("storeproof-python-"), "{name}");
    let checks = report["checks"].as_array().expect("the checks");
    // The whole contract ran, one call at a time and the race.
    assert!(checks.len() > 10, "{checks:?}");
    let mut race = None;
    for c in checks {
        let id = c["id"].as_str().expect("an id");
        assert!(id.starts_with(&format!("{contract}.")), "{id}");
        if id == race_check {
            race = Some(c);
        } else {
            // One at a time the adapter keeps the contract.
            assert_eq!(c["verdict"], "pass", "{id}: {}", c["reason"]);
        }
    }
    let race = race.expect("the race check ran");
    eprintln!("{race_check}: {}", race["reason"]);
    assert_eq!(race["verdict"], "fail", "{}", race["reason"]);
    let got: Vec<&str> = race["evidence"]["races"]
        .as_array()
        .expect("one entry per race")
        .iter()
        .map(|r| r["verdict"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(got, verdicts, "{}", race["evidence"]);
    let cx = race["counterexample"].clone();
    // Each instance sent more than one command, interleaved with the other's.
    let by: Vec<&str> = commands(&cx).iter().map(|c| c.0).collect();
    assert!(by.iter().filter(|i| **i == "a").count() >= 2, "{by:?}");
    assert!(by.iter().filter(|i| **i == "b").count() >= 2, "{by:?}");
    let switches = by.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(switches >= 2, "not interleaved: {by:?}");
    cx
}

/// `storeproof certify --suite explorer` of the fixture `adapter`, offering
/// `contract` alone, searched to `depth` (`depth_flag`), no walks, stopping
/// at the first violation: asserts the run fails on `property` with a
/// schedule of both instances, and returns that check.
fn the_explorer_catches(
    adapter: &str,
    contract: &str,
    depth_flag: &str,
    depth: &str,
    property: &str,
) -> Value {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("r");
    let store = store_of(adapter);
    let out_dir = out.to_string_lossy();
    let args = [
        "certify",
        "--suite",
        "explorer",
        depth_flag,
        depth,
        "--walks",
        "0",
        "--fail-fast",
        "--seed",
        "7",
        "--store",
        &store,
        "--out",
        &out_dir,
    ];
    let output = common::storeproof_in(None, &args, &[("STOREPROOF_ADAPTER_CONTRACTS", contract)]);
    assert_eq!(output.status.code(), Some(1), "the explorer fails the run");
    let report = common::read_report(&out);
    let checks = report["checks"].as_array().expect("the checks");
    let found = checks
        .iter()
        .find(|c| c["id"] == property)
        .unwrap_or_else(|| panic!("{property} was reported: {checks:?}"))
        .clone();
    assert_eq!(found["verdict"], "fail", "{}", found["reason"]);
    // Nothing of another contract was judged, or blamed.
    for c in checks {
        let id = c["id"].as_str().unwrap_or("");
        if c["verdict"] == "fail" {
            assert!(
                id.starts_with(&format!("explorer.{contract}.")),
                "{id}: {}",
                c["reason"]
            );
        }
    }
    // A schedule of both instances' operations.
    let cx = &found["counterexample"];
    assert_eq!(cx["kind"], "explorer-schedule", "{cx}");
    let by: Vec<&str> = cx["history"]["events"]
        .as_array()
        .expect("the schedule's history")
        .iter()
        .map(|e| e["instance"].as_str().unwrap_or(""))
        .collect();
    assert!(by.contains(&"a") && by.contains(&"b"), "{cx}");
    found
}

/// The counterexample's released commands: (instance, command line).
fn commands(cx: &Value) -> Vec<(&str, &str)> {
    cx["commands"]
        .as_array()
        .expect("the released commands")
        .iter()
        .map(|c| {
            (
                c["instance"].as_str().unwrap_or(""),
                c["command"].as_str().unwrap_or(""),
            )
        })
        .collect()
}

/// Both racing instances answered `outcome`.
fn both_answered(cx: &Value, outcome: &str) {
    for instance in ["a", "b"] {
        assert!(
            cx[instance]["answer"][outcome].is_object(),
            "{instance}: {cx}"
        );
    }
}

#[test]
fn a_claim_of_two_round_trips_keeps_the_queue_contract_alone_but_loses_the_claim_race() {
    // Two claims of the last ready child both get it; the claim against a
    // completion at the expiry instant cannot see it.
    let cx = only_the_race_fails(
        "two_round_trip_claim.py",
        "conformance.queue",
        CLAIM_RACES,
        &["fail", "pass"],
    );
    assert_eq!(cx["race"], "two claims of the last ready child");
    both_answered(&cx, "claimed");
    assert_eq!(cx["a"]["answer"]["claimed"]["child"], "c1");
    assert_eq!(cx["b"]["answer"]["claimed"]["child"], "c1");
    // Each claim: the read (EVALSHA), then the plain write.
    for instance in ["a", "b"] {
        let own: Vec<&str> = commands(&cx)
            .into_iter()
            .filter(|c| c.0 == instance)
            .map(|c| c.1.split(' ').next().unwrap_or(""))
            .collect();
        assert_eq!(own, ["EVALSHA", "HSET"], "{instance}: {cx}");
    }
    // The explorer finds the two holders of one child by itself.
    the_explorer_catches(
        "two_round_trip_claim.py",
        "queue",
        "--queue-depth",
        "5",
        "explorer.queue.one-claim-holder",
    );
}

#[test]
fn an_acquire_that_reads_then_writes_keeps_the_rate_contract_alone_but_loses_the_race() {
    // Two acquires of the last slot both get one; the hits are the example's.
    let cx = only_the_race_fails(
        "read_then_write_acquire.py",
        "conformance.rate",
        RATE_RACES,
        &["fail", "pass"],
    );
    assert_eq!(cx["race"], "two acquires of the last slot");
    both_answered(&cx, "acquired");
    assert_ne!(
        cx["a"]["answer"]["acquired"]["slot"],
        cx["b"]["answer"]["acquired"]["slot"]
    );
    // Each acquire: two scripts, the read and then the write.
    for instance in ["a", "b"] {
        let own: Vec<&str> = commands(&cx)
            .into_iter()
            .filter(|c| c.0 == instance)
            .map(|c| c.1)
            .collect();
        assert_eq!(own.len(), 2, "{instance}: {own:?}");
        assert!(own.iter().all(|c| c.starts_with("EVALSHA ")), "{own:?}");
        assert_ne!(own[0].split(' ').nth(1), own[1].split(' ').nth(1));
    }
    // The explorer finds the second slot by itself.
    the_explorer_catches(
        "read_then_write_acquire.py",
        "rate",
        "--rate-depth",
        "4",
        "explorer.rate.slot-limit",
    );
}

#[test]
fn a_hit_counted_before_its_check_keeps_the_rate_contract_alone_but_loses_the_race() {
    // Two hits of the last place both see one hit too many and are both
    // refused, though one place was free; the acquires are the example's.
    let cx = only_the_race_fails(
        "hit_counted_before_check.py",
        "conformance.rate",
        RATE_RACES,
        &["pass", "fail"],
    );
    assert_eq!(cx["race"], "two hits of the last place in a window");
    both_answered(&cx, "limited");
    // Each hit: counted, checked, then taken back.
    for instance in ["a", "b"] {
        let own: Vec<&str> = commands(&cx)
            .into_iter()
            .filter(|c| c.0 == instance)
            .map(|c| c.1.split(' ').next().unwrap_or(""))
            .collect();
        assert_eq!(own, ["EVALSHA", "EVALSHA", "ZREM"], "{instance}: {cx}");
    }
    // The explorer finds both hits refused for each other by itself.
    the_explorer_catches(
        "hit_counted_before_check.py",
        "rate",
        "--rate-depth",
        "4",
        "explorer.rate.refused-only-when-due",
    );
}

/// Reusing processes between cases (docs/PROTOCOL.md §3.3) hides nothing:
/// an adapter that offers `cases` but answers `lease.read` from its
/// process's memory, and keeps that memory across cases, still fails the
/// checks it fails on a new process per case (`renew-after-expiry` and
/// `epoch-grows`, measured with `STOREPROOF_ADAPTER_CAPABILITIES=reconnect`)
/// — and more, since a later case meets the earlier one's memory.
#[test]
fn a_store_that_remembers_across_cases_is_still_failed_in_conformance() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (code, report) = certify(
        "read_from_memory.py",
        "conformance.lease",
        &dir.path().join("r"),
    );
    assert_eq!(code, Some(1), "{report}");
    let failed: Vec<&str> = report["checks"]
        .as_array()
        .expect("the checks")
        .iter()
        .filter(|c| c["verdict"] == "fail")
        .filter_map(|c| c["id"].as_str())
        .collect();
    for fresh_fails in [
        "conformance.lease.renew-after-expiry",
        "conformance.lease.epoch-grows",
    ] {
        assert!(
            failed.contains(&fresh_fails),
            "{fresh_fails} not failed: {failed:?}"
        );
    }
    assert!(
        failed.contains(&"conformance.lease.release-frees"),
        "the memory carried into a later case is judged too: {failed:?}"
    );
}
