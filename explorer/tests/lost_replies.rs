//! A write whose reply is lost (issue 21): the server applied it, the
//! client's connection closed before the answer. The built-in store answers
//! `unavailable` (the outcome unknown), which ends the operation without an
//! answer and fails nothing; a store that retries blindly, as client
//! libraries do by default, answers its own retry's `busy` and is caught.

use std::sync::Arc;

use explorer::{
    explore, replay_schedule, Action, ExplorerConfig, ExplorerOutcome, Property, Schedule,
};
use harness::contract::Contract;
use harness::store::StoreFactory;
use harness::Verdict;
use stores::redis::RedisStoreFactory;

fn builtin(dir: &tempfile::TempDir) -> RedisStoreFactory {
    RedisStoreFactory::new(dir.path().join("kept.sqlite"))
}

fn config(contracts: Vec<Contract>, lost_replies: bool) -> ExplorerConfig {
    ExplorerConfig {
        depth: 5,
        queue_depth: 4,
        rate_depth: 3,
        walks: 0,
        seed: 8,
        skews: vec![0],
        contracts,
        lost_replies,
        ..Default::default()
    }
}

fn run(factory: Arc<dyn StoreFactory>, config: &ExplorerConfig) -> ExplorerOutcome {
    explore(factory, None, "sp:lost:".into(), config, &mut |l| {
        eprintln!("{l}")
    })
}

fn failed(o: &ExplorerOutcome) -> Vec<String> {
    o.checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .map(|c| format!("{}: {}", c.id, c.reason))
        .collect()
}

fn unique(o: &ExplorerOutcome) -> Vec<u64> {
    o.figures
        .per_skew
        .iter()
        .map(|r| r.unique_states as u64)
        .collect()
}

#[test]
fn a_lost_reply_of_the_builtin_stores_fails_nothing_and_is_searched() {
    let dir = tempfile::tempdir().unwrap();
    let all = vec![Contract::Lease, Contract::Queue, Contract::Rate];
    // The lease 4 deep: a lost reply's own states are there already.
    let config = |all, lost| ExplorerConfig {
        depth: 4,
        ..config(all, lost)
    };
    let with = run(Arc::new(builtin(&dir)), &config(all.clone(), true));
    assert!(failed(&with).is_empty(), "{:?}", failed(&with));
    let complete = with
        .checks
        .iter()
        .find(|c| c.id == "explorer.exploration-complete")
        .expect("the exploration's own check");
    assert_eq!(complete.verdict, Verdict::Pass, "{}", complete.reason);
    let without = run(Arc::new(builtin(&dir)), &config(all, false));
    let (with, without) = (unique(&with), unique(&without));
    eprintln!("unique states per contract, lost replies: {with:?}, none: {without:?}");
    assert_eq!(with.len(), 3);
    // Every contract's search reached states only a lost reply leads to.
    assert!(
        with.iter().zip(&without).all(|(w, n)| w > n),
        "{with:?} vs {without:?}"
    );
}

#[test]
fn a_store_that_retries_blindly_is_caught_only_once_a_reply_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let lease = vec![Contract::Lease];
    let store = || Arc::new(sabotage::BlindRetry::new(builtin(&dir)));
    let quiet = run(store(), &config(lease.clone(), false));
    assert!(failed(&quiet).is_empty(), "{:?}", failed(&quiet));
    let lost = run(store(), &config(lease, true));
    let failed = failed(&lost);
    eprintln!("blind retry with a lost reply: {failed:?}");
    assert!(
        !failed.is_empty(),
        "a blind retry's busy answer went unseen"
    );
    let stuck = lost
        .checks
        .iter()
        .find(|c| c.id == "explorer.no-tree-stuck")
        .expect("the stuck-tree check");
    assert_eq!(stuck.verdict, Verdict::Fail, "{}", stuck.reason);
    let cx = stuck.counterexample.as_ref().expect("a counterexample");
    assert!(
        serde_json::to_string(cx)
            .unwrap()
            .contains("its reply lost"),
        "the counterexample shows the lost reply: {cx:?}"
    );
    // The replay file's schedule loses the same reply and fails the same way.
    let schedule: Schedule = cx.explorer().unwrap().schedule.clone();
    assert!(
        schedule
            .actions
            .iter()
            .any(|a| matches!(a, Action::Lose(..))),
        "{:?}",
        schedule.actions
    );
    let (last, _) = replay_schedule(store(), None, "sp:lost-replay:".into(), &schedule);
    assert!(last.broke(Property::NoTreeStuck), "the replay did not fail");
    assert!(last.harness_error.is_none(), "{:?}", last.harness_error);
}
