//! A real run of a few mutants on a managed server: a flipped expiry
//! comparison in lease_take.lua is killed, a known-equivalent mutant of
//! lease_release.lua survives, the report says so, and a rerun in the same
//! directory decides nothing again.

use std::time::Duration;

use mutate::{all_mutants, run, write_reports, MutantKind, Options, Status};

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_and_an_equivalent_mutant_and_a_resumed_run() {
    let all = all_mutants().expect("the built-in scripts tokenize");
    let expiry = all
        .iter()
        .find(|m| {
            m.script == "lease_take.lua"
                && m.kind == MutantKind::Comparison
                && m.after.contains("now <= tonumber(rec[3])")
        })
        .expect("the loosened expiry comparison of lease_take.lua")
        .clone();
    // docs/MUTANTS.md: a missing record has no epoch, and `rec[2] == ARGV[2]`
    // is false then anyway (ARGV is a string), so the dropped operand never
    // decides.
    let equivalent = all
        .iter()
        .find(|m| {
            m.script == "lease_release.lua"
                && m.kind == MutantKind::Condition
                && m.after
                    .starts_with("if rec[1] == ARGV[1] and rec[2] == ARGV[2]")
        })
        .expect("lease_release.lua without its `rec[2] and`")
        .clone();
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        out: dir.path().to_path_buf(),
        jobs: 2,
        seed: 1,
        cases: 4,
        check_timeout: Duration::from_secs(60),
    };
    let mutants = vec![expiry.clone(), equivalent.clone()];
    let mut seen = 0;
    let outcome = run(mutants.clone(), &opts, |_, _, _| seen += 1)
        .await
        .expect("run");
    assert_eq!(seen, 2);
    let by_id = |id: &str| {
        outcome
            .results
            .iter()
            .find(|r| r.id == id)
            .cloned()
            .expect("a result per mutant")
    };
    let killed = by_id(&expiry.id);
    assert_eq!(killed.status, Status::Killed, "{killed:?}");
    assert!(killed.killed_by.is_some());
    let survived = by_id(&equivalent.id);
    assert_eq!(survived.status, Status::Survived, "{survived:?}");
    assert!(survived.checks_run > 10, "{survived:?}");

    let report = write_reports(&outcome, &opts).expect("reports");
    assert_eq!((report.total, report.killed, report.survived), (2, 1, 1));
    assert_eq!(report.score, 0.5);
    let md = std::fs::read_to_string(dir.path().join("mutate-report.md")).expect("markdown");
    assert!(md.contains("50.0 %"), "{md}");
    assert!(md.contains(&format!("- {}", equivalent.before)), "{md}");
    assert!(md.contains(&format!("+ {}", equivalent.after)), "{md}");
    assert!(dir.path().join("mutate-report.json").exists());

    // Resumed: nothing runs again, the same verdicts come back.
    let again = run(mutants, &opts, |r, _, _| panic!("{} ran again", r.id))
        .await
        .expect("rerun");
    assert_eq!(again.resumed, 2);
    let verdicts = |rs: &[mutate::MutantResult]| {
        rs.iter()
            .map(|r| (r.id.clone(), r.status, r.killed_by.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(&again.results), verdicts(&outcome.results));
}

#[test]
fn the_shared_decimal_prefix_is_never_mutated_and_every_script_is() {
    let all = all_mutants().expect("the built-in scripts tokenize");
    let scripts: std::collections::BTreeSet<&str> = all.iter().map(|m| m.script.as_str()).collect();
    // Every script but the read-only ones without a decision has mutants.
    assert!(scripts.len() >= 12, "{scripts:?}");
    assert!(!scripts.contains("decimal.lua"));
    for m in &all {
        assert!(!m.body.contains("local function cmp"), "{m:?}");
    }
}

/// A check cut short by the timeout decides nothing: the mutant is
/// undecided, never killed (a slow machine is not a broken store).
#[tokio::test(flavor = "multi_thread")]
async fn a_check_that_times_out_leaves_the_mutant_undecided() {
    let all = all_mutants().expect("the built-in scripts tokenize");
    let expiry = all
        .iter()
        .find(|m| {
            m.script == "lease_take.lua"
                && m.kind == MutantKind::Comparison
                && m.after.contains("now <= tonumber(rec[3])")
        })
        .expect("the loosened expiry comparison of lease_take.lua")
        .clone();
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        out: dir.path().to_path_buf(),
        jobs: 1,
        seed: 1,
        cases: 4,
        check_timeout: Duration::from_millis(1),
    };
    let outcome = run(vec![expiry], &opts, |_, _, _| {}).await.expect("run");
    let result = &outcome.results[0];
    assert_eq!(result.status, Status::Unknown, "{result:?}");
    assert_eq!(result.killed_by, None, "{result:?}");
    assert!(result.reason.contains("not decided"), "{result:?}");
}
