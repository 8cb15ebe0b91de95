//! A durable lease + fenced adapter written as a new user would
//! (`fixtures/adapters/durable/durable_adapter.py`: Python, every record in
//! SQLite under `STOREPROOF_WORKDIR`, the Redis server only its clock, hello
//! declaring `"state": "durable"`) is judged on everything storeproof can
//! drive on such a store, passes all of it, and gets every other check
//! skipped with the reason: never a false FAIL, never a pass of something
//! that did not run (issue 19, item 3).

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn adapter() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/adapters/durable/durable_adapter.py");
    format!("cmd:{} {}", common::python(), path.display())
}

/// Runs certify on the adapter with `args`, seed 1, into `out`: the exit
/// code and the report.
fn certify(args: &[&str], out: &Path) -> (Option<i32>, Value) {
    let store = adapter();
    let mut all = vec!["certify", "--seed", "1", "--store", &store];
    all.extend_from_slice(args);
    let output = common::command()
        .args(&all)
        .arg("--out")
        .arg(out)
        .output()
        .expect("run storeproof");
    eprintln!(
        "$ storeproof {}\nexit: {:?}\n{}{}",
        all.join(" "),
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), common::read_report(out))
}

fn checks(report: &Value) -> &Vec<Value> {
    report["checks"].as_array().expect("report.checks")
}

fn check<'r>(report: &'r Value, id: &str) -> &'r Value {
    checks(report)
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in the report"))
}

fn reason(c: &Value) -> &str {
    c["reason"].as_str().unwrap_or("")
}

/// What every check skipped because the state is not in Redis says (the
/// lead's `NOT_IN_REDIS`, harness/src/suite.rs): it names the declaration.
fn says_durable(c: &Value) -> bool {
    let why = reason(c);
    why.contains("outside Redis") && why.contains("\"state\": \"durable\"")
}

/// No check failed or warned, and none is undecided.
fn nothing_failed(report: &Value) {
    for c in checks(report) {
        assert!(
            c["verdict"] == "pass" || c["verdict"] == "skipped",
            "{} is {}: {}",
            c["id"],
            c["verdict"],
            reason(c)
        );
    }
}

/// The conformance checks of the claimed contracts, every one but
/// `conformance.lease.take-races` (40 rounds of two fresh adapter processes
/// per race: 1½ minutes on a loaded machine; the seed runs of the fixture's
/// README run it), and the explorer and crash suites, which cannot drive a
/// durable store and must say so.
const JUDGED: &[&str] = &[
    "conformance.lease.take-free-tree",
    "conformance.lease.take-busy",
    "conformance.lease.expiry",
    "conformance.lease.renew",
    "conformance.lease.release",
    "conformance.lease.zombie",
    "conformance.lease.epoch",
    "conformance.lease.read",
    "conformance.lease.trees",
    "conformance.lease.kept",
    "conformance.lease.odd-ids",
    "conformance.lease.bad-input",
    "conformance.lease.server-clock",
    "conformance.lease.bytes",
    "conformance.fenced",
    "conformance.server",
    "conformance.generated",
    "explorer",
    "crash",
];

#[test]
fn the_durable_adapter_passes_what_it_is_judged_on_and_the_rest_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["--suite", "conformance,explorer,crash", "--cases", "4"];
    for prefix in JUDGED {
        args.extend(["--check", prefix]);
    }
    let (code, report) = certify(&args, &dir.path().join("r"));

    // Nothing failed; the run is INCOMPLETE (exit 3), not PASS: the
    // explorer's and crash suite's checks of the claimed lease contract
    // could not be driven (and --check left checks out).
    assert_eq!(code, Some(3));
    assert_eq!(report["verdict"], "incomplete");
    assert_eq!(report["store"]["name"], "storeproof-durable-example");
    assert_eq!(
        report["store"]["contracts"],
        serde_json::json!(["lease", "fenced"])
    );
    nothing_failed(&report);

    // Every conformance check of lease and fenced that reads only replies
    // ran and passed: the lease rules on server time (the expiry instant
    // granted, not busy), the fencing set, bad input, the generated
    // sequences.
    //
    // In flight elsewhere (issue 19), expectations that may move:
    // - item 15: `conformance.lease.bad-input` judges "changes nothing" by
    //   the Redis keyspace (empty for this store) and by the lease read at
    //   its end (real). If the keyspace half becomes "cannot compare the
    //   durable state" for a `cmd:` adapter, the check must still not fail;
    //   this test then wants whatever the lead rules (pass on the read, or
    //   skipped with the reason), never a FAIL.
    // - item 1: `conformance.generated.lease` follows the store's legitimate
    //   choices; this store grants at the expiry instant, as the model.
    let must_pass = [
        "conformance.lease.take-free-tree",
        "conformance.lease.take-busy",
        "conformance.lease.take-busy-for-own-holder",
        "conformance.lease.expiry-before-instant",
        "conformance.lease.expiry-after-instant",
        "conformance.lease.expiry-at-instant",
        "conformance.lease.renew-extends",
        "conformance.lease.renew-wrong-holder",
        "conformance.lease.renew-wrong-epoch",
        "conformance.lease.renew-after-expiry",
        "conformance.lease.renew-after-release",
        "conformance.lease.release-frees",
        "conformance.lease.release-not-held",
        "conformance.lease.zombie-renew-refused",
        "conformance.lease.zombie-release-refused",
        "conformance.lease.epoch-grows",
        "conformance.lease.epoch-survives-idle",
        "conformance.lease.read-unknown-tree",
        "conformance.lease.trees-independent",
        "conformance.lease.kept-executions",
        "conformance.lease.odd-ids",
        "conformance.lease.bad-input",
        "conformance.lease.server-clock-rules",
        "conformance.fenced.apply-by-holder",
        "conformance.fenced.apply-not-holder",
        "conformance.fenced.apply-after-expiry",
        "conformance.fenced.apply-after-release",
        "conformance.fenced.call-once",
        "conformance.fenced.call-fenced",
        "conformance.fenced.bad-input",
        "conformance.generated.lease",
    ];
    for id in must_pass {
        let c = check(&report, id);
        assert_eq!(c["verdict"], "pass", "{id}: {}", reason(c));
    }
    // The instant rule in full: at expires_at the lease has ended (a pass,
    // not the warning a busy answer there would get).
    assert_eq!(
        check(&report, "conformance.lease.expiry-at-instant")["level"],
        "should"
    );

    // Every check of the claimed contracts that did not pass is skipped,
    // and says it is because the state is durable; none passed on nothing.
    let about_keys_or_servers = [
        "conformance.lease.kept-executions-not-in-redis",
        "conformance.lease.odd-ids-inside-prefix",
        "conformance.lease.bytes-per-tree",
    ];
    for id in about_keys_or_servers {
        let c = check(&report, id);
        assert_eq!(c["verdict"], "skipped", "{id}: {}", reason(c));
        assert!(says_durable(c), "{id}: {}", reason(c));
        assert!(reason(c).contains("keys"), "{id}: {}", reason(c));
    }
    let mut skipped_durable = 0;
    for c in checks(&report) {
        let id = c["id"].as_str().unwrap();
        if id.starts_with("conformance.server.") {
            // About which Redis servers the store accepts: outside the claim.
            assert_eq!(c["verdict"], "skipped", "{id}");
            assert!(says_durable(c), "{id}: {}", reason(c));
        }
        if id.starts_with("explorer.queue.") || id.starts_with("explorer.rate.") {
            // The queue's and rate limits' explorations: contracts the store
            // does not offer.
            assert_eq!(c["verdict"], "skipped", "{id}");
            assert!(reason(c).contains("does not offer"), "{id}: {}", reason(c));
        } else if id.starts_with("explorer.") {
            assert_eq!(c["verdict"], "skipped", "{id}");
            assert!(says_durable(c), "{id}: {}", reason(c));
            assert!(reason(c).contains("copy of itself"), "{id}: {}", reason(c));
        }
        if id.starts_with("crash.") {
            assert_eq!(c["verdict"], "skipped", "{id}");
            let other_contract = reason(c).contains("does not offer");
            assert!(other_contract || says_durable(c), "{id}: {}", reason(c));
        }
        if c["verdict"] == "skipped" && says_durable(c) {
            skipped_durable += 1;
        }
        // A queue or rate check is outside the claim, never run.
        if id.contains(".queue") || id.contains(".rate") || id.contains("-pauses-") {
            assert_eq!(c["verdict"], "skipped", "{id}");
            assert!(reason(c).contains("does not offer"), "{id}: {}", reason(c));
        }
    }
    // At least: 3 key checks, 12 server checks, 8 explorer checks, 7 crash checks
    // (kills of Redis servers, the power cuts, the Docker backend).
    assert!(skipped_durable >= 3 + 12 + 8 + 7, "{skipped_durable}");
    for id in [
        "crash.acknowledged-epochs-survive",
        "crash.next-take-continues",
        "crash.acknowledged-renews-survive",
        "crash.opt-out-loses",
        "crash.power-loss-always-keeps",
        "crash.power-loss-everysec-loses",
    ] {
        let c = check(&report, id);
        assert_eq!(c["verdict"], "skipped", "{id}");
        assert!(says_durable(c), "{id}: {}", reason(c));
    }
}

/// The fault suite runs the adapter as the lease store of the durable
/// layout (beside storeproof's Redis queue and rate limits), its clock the
/// fault server it is handed as `redis_url`.
#[test]
fn the_durable_adapter_passes_the_fault_suite() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--suite", "faults", "--fault-rounds", "8", "--faults", "8"];
    let (code, report) = certify(&args, &dir.path().join("r"));
    nothing_failed(&report);
    for id in ["faults.lease-linearizable", "faults.fencing"] {
        let c = check(&report, id);
        assert_eq!(c["verdict"], "pass", "{id}: {}", reason(c));
    }
    let full = check(&report, "faults.full-server-refuses");
    assert_eq!(full["verdict"], "skipped");
    assert!(says_durable(full), "{}", reason(full));
    for id in ["faults.children-once", "faults.rate-bounds"] {
        let c = check(&report, id);
        assert_eq!(c["verdict"], "skipped", "{id}");
        assert!(reason(c).contains("does not offer"), "{id}: {}", reason(c));
    }
    // Every fault check of the claimed contracts was decided: PASS.
    assert_eq!(code, Some(0), "{}", report["verdict"]);
}
