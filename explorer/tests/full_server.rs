//! The full server under the explorer: between any two commands the server
//! may fill up (every write refused with `OOM`) and get its room back, on
//! every contract. The built-in store refuses cleanly and passes; a store
//! that swallows the refusal, and a save split in two commands that a full
//! server cuts in half, are caught.

use std::sync::Arc;

use explorer::{explore, ExplorerConfig, ExplorerOutcome};
use harness::contract::Contract;
use harness::store::StoreFactory;
use harness::Verdict;
use sabotage::{OomSwallowed, SplitRoundTrips};
use stores::redis::RedisStoreFactory;

fn builtin(dir: &tempfile::TempDir) -> RedisStoreFactory {
    RedisStoreFactory::new(dir.path().join("kept.sqlite"))
}

/// Every contract, shallow, under the second clock at 0 only.
fn config() -> ExplorerConfig {
    ExplorerConfig {
        depth: 5,
        // The queue's second race (a claim against a completion at the
        // claim's expiry) needs five steps.
        queue_depth: 5,
        rate_depth: 4,
        walks: 0,
        seed: 5,
        threads: 1,
        skews: vec![0],
        contracts: vec![Contract::Lease, Contract::Queue, Contract::Rate],
        ..Default::default()
    }
}

fn run(factory: Arc<dyn StoreFactory>, config: &ExplorerConfig) -> ExplorerOutcome {
    explore(factory, None, "sp:explore-full:".into(), config, &mut |l| {
        eprintln!("{l}")
    })
}

fn verdict(outcome: &ExplorerOutcome, id: &str) -> (Verdict, String) {
    outcome
        .checks
        .iter()
        .find(|c| c.id == id)
        .map(|c| (c.verdict, c.reason.clone()))
        .unwrap_or((Verdict::Skipped, "no such check".into()))
}

#[test]
fn the_builtin_store_refuses_cleanly_on_every_contract_and_the_refusals_were_met() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(Arc::new(builtin(&dir)), &config());
    for c in &outcome.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    assert_eq!(outcome.figures.per_skew.len(), 3);
    for row in &outcome.figures.per_skew {
        // The full server met writes of every contract, each refused.
        assert!(row.full_refusals > 0, "{row:?}");
    }
}

#[test]
fn a_store_that_swallows_the_refusal_breaks_every_contract() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(Arc::new(OomSwallowed::new(builtin(&dir))), &config());
    for id in [
        "explorer.one-live-holder",
        "explorer.queue.no-save-lost",
        "explorer.rate.slot-limit",
    ] {
        let (v, reason) = verdict(&outcome, id);
        assert_eq!(v, Verdict::Fail, "{id}: {reason}");
    }
    let (v, reason) = verdict(&outcome, "explorer.exploration-complete");
    assert_eq!(v, Verdict::Pass, "{reason}");
}

#[test]
fn a_save_cut_in_half_by_a_full_server_fails_answered_with_the_fill_in_its_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let config = ExplorerConfig {
        contracts: vec![Contract::Queue],
        ..config()
    };
    let outcome = run(Arc::new(SplitRoundTrips::save(builtin(&dir))), &config);
    let check = outcome
        .checks
        .iter()
        .find(|c| c.id == "explorer.queue.answered")
        .unwrap();
    assert_eq!(check.verdict, Verdict::Fail, "{}", check.reason);
    assert!(
        check.reason.contains("store_full") && check.reason.contains("changed the store's keys"),
        "{}",
        check.reason
    );
    let schedule = serde_json::to_string(&check.counterexample).unwrap();
    assert!(schedule.contains("fill"), "{schedule}");
}
