//! The test command of `scripts/mutate-sqlite` (cargo-mutants over the
//! SQLite fencing set): storeproof's own checks that judge `builtin:sqlite`
//! (the conformance suite's lease checks, the explorer, and the fault
//! suite's `faults.lease-linearizable` and `faults.fencing`), run by the
//! built binary at fixed seeds. A mutant is killed when one of them says
//! `fail` (or `warn`, a broken SHOULD, as `storeproof mutate` counts it); nothing else here judges the store (the store's own unit tests
//! are deliberately not part of the measure).
//!
//! Ignored in the normal suite: on the unmutated store it certifies what
//! `tests/sqlite_store.rs` and `tests/faults.rs` already do. The mutation
//! run passes `--ignored`.

mod common;

use common::{read_report, storeproof};
use serde_json::Value;

/// The runs of the measure, each one `certify` (suites, sizes): apart, so a
/// setup error of one (exit 2, no report) leaves the others' verdicts. The
/// explorer is smaller than `certify`'s default (depth 8, 200 walks: ~20 s
/// of CPU here), the conformance and fault suites at their defaults: one
/// mutant costs its rebuild plus ~15 s.
const RUNS: [(&str, &[&str]); 2] = [
    ("conformance,explorer", &["--depth", "6", "--walks", "40"]),
    ("faults", &[]),
];

#[test]
#[ignore = "the mutation run's measure (scripts/mutate-sqlite); the normal suite certifies builtin:sqlite in sqlite_store.rs and faults.rs"]
fn storeproofs_checks_of_builtin_sqlite_all_pass() {
    let dir = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    let mut undecided = Vec::new();
    for (suites, sizes) in RUNS {
        let out_dir = dir.path().join(suites);
        let mut args = vec![
            "certify",
            "--store",
            "builtin:sqlite",
            "--suite",
            suites,
            "--seed",
            "7",
            "-q",
            "--out",
            out_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(sizes);
        let out = storeproof(&args);
        // Exit 2 is a setup error: no report, no check of these suites
        // judged anything (undecided unless another run fails).
        if out.status.code() == Some(2) {
            undecided.push(format!("SETUP-ERROR {suites}"));
            continue;
        }
        let report = read_report(&out_dir);
        for c in report["checks"].as_array().unwrap() {
            let id = text(&c["id"]).to_string();
            match text(&c["verdict"]) {
                // As `storeproof mutate` judges the Lua: a broken MUST
                // (`fail`) or SHOULD (`warn`) check kills.
                "fail" | "warn" => failed.push(id),
                // Every check that runs passes on the unmutated store, so
                // an `unknown` is the mutant's doing; it is not a kill (no
                // check blamed the store), and the script counts it apart.
                "unknown" => undecided.push(id),
                _ => continue,
            }
            eprintln!("{}: {}: {}", c["id"], c["verdict"], text(&c["reason"]));
        }
    }
    // The markers the script reads in cargo-mutants' logs.
    assert!(failed.is_empty(), "KILLED-BY {failed:?}");
    assert!(undecided.is_empty(), "UNDECIDED {undecided:?}");
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}
