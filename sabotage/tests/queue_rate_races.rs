//! A claim, an acquire or a hit made of several round trips keeps the
//! contract one call at a time, but the queue and rate races catch each, with
//! the interleaved commands as evidence; the built-in store (one script per
//! operation) wins the same races in every interleaving.

use std::sync::Arc;

mod common;
use common::run_alone;

use harness::contract::Contract;
use harness::store::StoreFactory;
use harness::{CheckResult, Verdict};
use stores::redis::RedisStoreFactory;

const CLAIM_RACES: &str = "conformance.queue.claim-races";
const RATE_RACES: &str = "conformance.rate.races";

/// Each race's name and verdict, as the evidence reports them.
fn per_race(result: &CheckResult) -> Vec<(String, String)> {
    let harness::evidence::Evidence::Races(races) = &result.evidence else {
        panic!("one entry per race: {:?}", result.evidence)
    };
    races
        .races
        .iter()
        .map(|r| (r.race.clone(), r.verdict.word().to_string()))
        .collect()
}

/// The named sabotage `name` fails `its_check`, which names it: `verdicts`
/// are the races' verdicts in order, and both racing instances answered
/// `outcome` in the counterexample.
async fn caught(name: &str, its_check: &str, verdicts: &[&str], outcome: &str) {
    let named = sabotage::find(name).expect("a named sabotage");
    assert_eq!(named.caught_by, its_check);
    let dir = tempfile::tempdir().unwrap();
    let store = sabotage::by_name(name, dir.path()).expect("selectable by name");
    assert_eq!(store.spec(), format!("sabotage:{name}"));
    let result = run_alone(store, its_check, name).await;
    let races = per_race(&result);
    eprintln!("{name}: {}\n{races:?}", result.reason);
    assert_eq!(result.verdict, Verdict::Fail, "{}", result.reason);
    let got: Vec<&str> = races.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(got, verdicts, "{races:?}");
    // The counterexample as report.json writes it.
    let cx = serde_json::to_value(result.counterexample.expect("a counterexample")).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&cx).unwrap());
    let commands = cx["commands"].as_array().expect("the released commands");
    // Each instance sent more than one command, interleaved with the other's.
    let by: Vec<&str> = commands
        .iter()
        .map(|c| c["instance"].as_str().unwrap())
        .collect();
    assert!(by.iter().filter(|i| **i == "a").count() >= 2, "{by:?}");
    assert!(by.iter().filter(|i| **i == "b").count() >= 2, "{by:?}");
    let switches = by.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(switches >= 2, "not interleaved: {by:?}");
    for instance in ["a", "b"] {
        assert!(
            cx[instance]["answer"][outcome].is_object(),
            "{instance}: {cx}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_claim_races_catch_a_claim_of_two_round_trips() {
    // Two claims of the last ready child both get it; the claim against a
    // completion at the expiry instant cannot see it.
    caught(
        "two-round-trip-claim",
        CLAIM_RACES,
        &["fail", "pass"],
        "claimed",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rate_races_catch_an_acquire_that_reads_then_writes() {
    // Two acquires of the last slot both get one; the hits are the built-in's.
    caught(
        "read-then-write-acquire",
        RATE_RACES,
        &["fail", "pass"],
        "acquired",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rate_races_catch_a_hit_counted_before_it_is_checked() {
    // Two hits of the last place both see one hit too many and are both
    // refused, though one place was free.
    caught(
        "hit-counted-before-check",
        RATE_RACES,
        &["pass", "fail"],
        "limited",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_builtin_store_wins_the_queue_and_rate_races() {
    for (n, id) in [CLAIM_RACES, RATE_RACES].into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedisStoreFactory::new(dir.path().join("kept.sqlite"));
        let result = run_alone(Arc::new(store), id, &format!("builtin{n}")).await;
        let races = per_race(&result);
        eprintln!("{id}: {}\n{races:?}", result.reason);
        assert_eq!(result.verdict, Verdict::Pass, "{id}: {}", result.reason);
        assert_eq!(races.len(), 2, "{races:?}");
        assert!(races.iter().all(|r| r.1 == "pass"), "{races:?}");
    }
}

/// The explorer on the child queue (issue 21): the two-round-trip claim
/// breaks `explorer.queue.one-claim-holder` (two claims of one child, each
/// between the other's read and write), and the built-in store passes every
/// queue property with both races reached. One skew and a short search keep
/// it quick.
#[test]
fn the_queue_explorer_catches_a_two_round_trip_claim_and_passes_the_builtin_store() {
    use explorer::{explore, ExplorerConfig};
    let config = ExplorerConfig {
        queue_depth: 5,
        walks: 2,
        walk_steps: 10,
        seed: 3,
        skews: vec![0],
        contracts: vec![Contract::Queue],
        ..Default::default()
    };
    let run = |store: Arc<dyn StoreFactory>, prefix: &str| {
        explore(store, None, prefix.into(), &config, &mut |l| {
            eprintln!("{l}")
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let broken = sabotage::by_name("two-round-trip-claim", dir.path()).expect("named");
    let caught = run(broken, "sp:qx-bad:");
    let holder = caught
        .checks
        .iter()
        .find(|c| c.id == "explorer.queue.one-claim-holder")
        .expect("the queue's checks");
    assert_eq!(holder.verdict, Verdict::Fail, "{}", holder.reason);
    assert!(holder.counterexample.is_some());

    let builtin = Arc::new(RedisStoreFactory::new(dir.path().join("ok.sqlite")));
    let passed = run(builtin, "sp:qx-ok:");
    let queue: Vec<_> = passed
        .checks
        .iter()
        .filter(|c| c.id.starts_with("explorer.queue."))
        .collect();
    assert_eq!(queue.len(), 8);
    for c in queue {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
}
