//! The explorer against the real server: the built-in store passes and both
//! takeover races are reached; a lease decided on the caller's clock and a
//! take made of a read and a write are caught with short counterexamples that
//! replay; the same seed gives the same walks.

use std::sync::Arc;

use explorer::{
    explore, replay_schedule, ExplorerConfig, ExplorerOutcome, Property, Schedule, LEASE_MS,
};
use harness::contract::Reply;
use harness::store::StoreFactory;
use harness::Verdict;
use harness::{EventKind, Happened};
use sabotage::{ClientClockLease, ReadThenWriteLease};
use stores::redis::RedisStoreFactory;

fn builtin(dir: &tempfile::TempDir) -> RedisStoreFactory {
    RedisStoreFactory::new(dir.path().join("kept.sqlite"))
}

fn small(skews: Vec<i64>, seed: u64) -> ExplorerConfig {
    ExplorerConfig {
        depth: 5,
        walks: 10,
        walk_steps: 20,
        seed,
        threads: 1,
        skews,
        absolute_times: false,
        ..Default::default()
    }
}

fn run(factory: Arc<dyn StoreFactory>, config: &ExplorerConfig) -> ExplorerOutcome {
    explore(factory, None, "sp:explore:".into(), config, &mut |l| {
        eprintln!("{l}")
    })
}

fn verdict(outcome: &ExplorerOutcome, id: &str) -> Verdict {
    outcome
        .checks
        .iter()
        .find(|c| c.id == id)
        .map(|c| c.verdict)
        .unwrap_or(Verdict::Skipped)
}

#[test]
fn the_builtin_store_passes_and_both_takeover_races_are_reached() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(Arc::new(builtin(&dir)), &small(vec![0, LEASE_MS], 1));
    for c in &outcome.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    assert_eq!(outcome.figures.per_skew.len(), 2);
    for skew in &outcome.figures.per_skew {
        assert!(skew.zombie_renew_reached, "{skew:?}");
        assert!(skew.zombie_release_reached, "{skew:?}");
        assert!(skew.unique_states > 10, "{skew:?}");
    }
}

#[test]
fn a_lease_on_the_callers_clock_breaks_one_live_holder_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    for skew in [LEASE_MS, -LEASE_MS] {
        let store = Arc::new(ClientClockLease::new(builtin(&dir)));
        let mut config = small(vec![skew], 2);
        config.walks = 0;
        let outcome = run(store.clone(), &config);
        assert_eq!(verdict(&outcome, "explorer.one-live-holder"), Verdict::Fail);
        let check = outcome
            .checks
            .iter()
            .find(|c| c.id == "explorer.one-live-holder")
            .unwrap();
        eprintln!("{}", check.reason);
        let cx = check.counterexample.as_ref().unwrap();
        let schedule: Schedule = cx.explorer().unwrap().schedule.clone();
        assert!(
            schedule.actions.len() <= 6,
            "{} steps",
            schedule.actions.len()
        );
        let (last, _) = replay_schedule(store, None, "sp:replay:".into(), &schedule);
        assert!(
            last.broke(Property::OneLiveHolder),
            "the replay did not fail the same way"
        );
    }
}

#[test]
fn a_read_then_write_take_is_caught_by_command_interleaving() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(ReadThenWriteLease::new(builtin(&dir)));
    let mut config = small(vec![0], 3);
    config.walks = 0;
    let outcome = run(store, &config);
    let check = outcome
        .checks
        .iter()
        .find(|c| c.id == "explorer.one-live-holder")
        .unwrap();
    assert_eq!(check.verdict, Verdict::Fail, "{}", check.reason);
    // The counterexample interleaves the two takes between their commands.
    let cx = check.counterexample.as_ref().unwrap();
    let steps = serde_json::to_string(&cx.explorer().unwrap().steps).unwrap();
    assert!(steps.contains("next command"), "{steps}");
    // Its history shows the two takes overlapping: both invoked before
    // either answered, and both granted.
    let cx = cx.explorer().unwrap();
    let kinds: Vec<(&str, EventKind)> = cx
        .history
        .events
        .iter()
        .map(|e| (e.instance.as_str(), e.kind()))
        .collect();
    let first_answer = kinds.iter().position(|(_, k)| *k != EventKind::Invoke);
    assert_eq!(first_answer, Some(2), "{kinds:?}");
    let granted = cx
        .history
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.what,
                Happened::Ok {
                    reply: Reply::Granted { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(granted, 2, "{kinds:?}");
    assert!(cx.history.events.iter().all(|e| e.op() == "lease.take"));
}

#[test]
fn the_same_seed_gives_the_same_walks_and_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small(vec![0], 42);
    config.depth = 1;
    config.walks = 15;
    let a = run(Arc::new(builtin(&dir)), &config);
    let b = run(Arc::new(builtin(&dir)), &config);
    assert_eq!(a.figures.walk_digest, b.figures.walk_digest);
    assert_eq!(a.figures.walk_steps, b.figures.walk_steps);
    let verdicts = |o: &ExplorerOutcome| {
        o.checks
            .iter()
            .map(|c| (c.id.clone(), c.verdict))
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(&a), verdicts(&b));
    config.seed = 43;
    let c = run(Arc::new(builtin(&dir)), &config);
    assert_ne!(a.figures.walk_digest, c.figures.walk_digest);
}

#[test]
fn a_store_that_sends_other_commands_on_a_rerun_is_reported_not_guessed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(ReadThenWriteLease::nondeterministic(builtin(&dir)));
    let mut config = small(vec![0], 4);
    config.depth = 3;
    config.walks = 0;
    let outcome = run(store, &config);
    let check = outcome
        .checks
        .iter()
        .find(|c| c.id == "explorer.exploration-complete")
        .unwrap();
    // The explorer cannot decide such a store: undecided, not unsafe.
    assert_eq!(check.verdict, Verdict::Unknown, "{}", check.reason);
    assert!(
        check.reason.contains("not deterministic"),
        "{}",
        check.reason
    );
    for c in &outcome.checks {
        assert_ne!(c.verdict, Verdict::Fail, "{}: {}", c.id, c.reason);
    }
}

#[test]
fn every_property_can_fail() {
    // zombie-refused: a release that always answers released, even a zombie's.
    // answered: a read that never answers. no-tree-stuck: a lease on the
    // caller's clock. The race checks: a search too shallow to reach them,
    // which leaves them undecided (the harness's depth, never the store's
    // failure).
    use sabotage::{Lie, Lying};
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(Arc<dyn StoreFactory>, usize, &str)> = vec![
        (
            Arc::new(Lying::new(builtin(&dir), Lie::ReleaseAlwaysSucceeds)),
            4,
            "explorer.zombie-refused",
        ),
        (
            Arc::new(Lying::new(builtin(&dir), Lie::ReadFails)),
            2,
            "explorer.answered",
        ),
        (
            Arc::new(ClientClockLease::new(builtin(&dir))),
            4,
            "explorer.no-tree-stuck",
        ),
        (
            Arc::new(builtin(&dir)),
            3,
            "explorer.zombie-renew-race-reached",
        ),
        (
            Arc::new(builtin(&dir)),
            3,
            "explorer.zombie-release-race-reached",
        ),
    ];
    for (store, depth, id) in cases {
        let mut config = small(vec![LEASE_MS / 2], 5);
        config.depth = depth;
        config.walks = 0;
        let outcome = run(store, &config);
        let check = outcome.checks.iter().find(|c| c.id == id).unwrap();
        let want = if id.ends_with("-race-reached") {
            Verdict::Unknown
        } else {
            Verdict::Fail
        };
        assert_eq!(check.verdict, want, "{id}: {}", check.reason);
        // Every failure says what happened in words; a stuck tree says when
        // the last lease ran out (not "the last ran out at never").
        assert!(!check.reason.is_empty(), "{id}");
        if id == "explorer.no-tree-stuck" {
            assert!(
                check.reason.contains("the last at server time")
                    && !check.reason.contains("at never"),
                "{}",
                check.reason
            );
        }
    }
}

/// The suite runs what it is asked for, in declaration order, with its
/// figures (the wall time included) and the subject's seed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_reports_only_the_checks_it_was_asked_for() {
    use harness::figures::Figures;
    use harness::server::{ManagedServer, ServerOptions};
    use harness::{Silent, Suite};

    let dir = tempfile::tempdir().unwrap();
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .unwrap();
    let subject = testkit::subject(Arc::new(builtin(&dir)))
        .spec("builtin:redis")
        .prefix("sp:suite:")
        .contracts(&[harness::contract::Contract::Lease])
        .seed(7)
        .on(&server);
    let mut config = small(vec![0], 1);
    config.depth = 2;
    config.walks = 2;
    let suite = explorer::ExplorerSuite::new(config);
    let all = suite.checks();
    let to_run = [all[4], all[0]];
    let run = suite.run(&subject, &to_run, &Silent).await.unwrap();
    let ids: Vec<&str> = run.checks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, vec![to_run[0].id, to_run[1].id]);
    for c in &run.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
        assert_eq!(c.suite, "explorer");
    }
    let Figures::Explorer(figures) = run.figures else {
        panic!("not the explorer's figures");
    };
    assert_eq!(figures.seed, 7);
    assert_eq!(figures.per_skew.len(), 1);
    assert!(figures.wall_seconds.is_some());
}
