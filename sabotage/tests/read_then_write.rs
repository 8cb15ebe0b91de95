//! A take made of a read and then a write keeps the contract one call at a
//! time — every other conformance check passes — but the take races catch it,
//! with the interleaved commands that make two holders as evidence.

use std::sync::Arc;

mod common;

use conformance::{all_checks, run_check, CheckKind};
use harness::contract::Contract;
use harness::server::{ManagedServer, ServerOptions};
use harness::Verdict;
use sabotage::ReadThenWriteLease;
use stores::redis::RedisStoreFactory;

#[tokio::test(flavor = "multi_thread")]
async fn the_take_races_catch_a_read_then_write_take_and_nothing_else_does() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = ReadThenWriteLease::new(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    let target = testkit::subject(Arc::new(store))
        .spec("test")
        .prefix("sp:rtw:")
        .on(&server);
    let mut race_result = None;
    for (n, def) in all_checks().iter().enumerate() {
        if matches!(def.kind, CheckKind::Server(_)) {
            continue; // they test connect-time refusals, the same for this store
        }
        if def.contract() == Some(Contract::Fenced) {
            continue; // a durable store's contract: outside this store's claim
        }
        let result = run_check(&target, n, def).await;
        if def.spec.id == "conformance.lease.take-races" {
            race_result = Some(result);
        } else {
            assert_eq!(
                result.verdict,
                Verdict::Pass,
                "{}: {}",
                def.spec.id,
                result.reason
            );
        }
    }
    let result = race_result.expect("the take-races check exists");
    assert_eq!(result.verdict, Verdict::Fail, "{}", result.reason);
    // The counterexample as report.json writes it.
    let cx = serde_json::to_value(result.counterexample.expect("a counterexample")).unwrap();
    let commands = cx["commands"].as_array().unwrap();
    eprintln!(
        "{}\n{}",
        result.reason,
        serde_json::to_string_pretty(&cx).unwrap()
    );
    assert!(commands.len() <= 4, "{} commands", commands.len());
    // The interleaving: both reads before either write.
    let kinds: Vec<(String, String)> = commands
        .iter()
        .map(|c| {
            let cmd = c["command"].as_str().unwrap();
            let kind = if cmd.starts_with("HSET") {
                "write"
            } else {
                "read"
            };
            (
                c["instance"].as_str().unwrap().to_string(),
                kind.to_string(),
            )
        })
        .collect();
    let reads_before_writes = kinds.iter().take(2).all(|(_, k)| k == "read")
        && kinds.iter().skip(2).all(|(_, k)| k == "write");
    assert!(reads_before_writes, "{kinds:?}");
    assert!(cx["a"]["answer"]["granted"].is_object() && cx["b"]["answer"]["granted"].is_object());
}

/// Runs `conformance.lease.take-races` alone against `store`.
async fn take_races(
    store: Arc<dyn harness::store::StoreFactory>,
    tag: &str,
) -> harness::CheckResult {
    common::run_alone(store, "conformance.lease.take-races", tag).await
}

/// Each race's verdict and schedule count, as the evidence reports them.
fn per_race(result: &harness::CheckResult) -> Vec<(String, String, u64)> {
    let harness::evidence::Evidence::Races(races) = &result.evidence else {
        panic!("one entry per race: {:?}", result.evidence)
    };
    races
        .races
        .iter()
        .map(|r| {
            (
                r.race.clone(),
                r.verdict.word().to_string(),
                r.schedules.expect("schedules counted") as u64,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_builtin_store_wins_every_race_in_every_interleaving() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let result = take_races(Arc::new(store), "builtin").await;
    let races = per_race(&result);
    eprintln!("{}\n{races:?}", result.reason);
    assert_eq!(result.verdict, Verdict::Pass, "{}", result.reason);
    assert_eq!(races.len(), 3);
    for (race, verdict, _) in &races {
        assert_eq!(verdict, "pass", "{race}");
    }
    // One script per operation: two orders, and in the third race the clock
    // move before, between or after them (six in all).
    let counts: Vec<u64> = races.iter().map(|r| r.2).collect();
    assert_eq!(counts, [2, 2, 6], "{races:?}");
    assert!(
        result.reason.contains("all 6 interleavings"),
        "{}",
        result.reason
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_take_races_catch_a_read_then_write_renew_across_the_expiry_instant() {
    let dir = tempfile::tempdir().unwrap();
    let store = ReadThenWriteLease::renew(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    let result = take_races(Arc::new(store), "rtwr").await;
    let races = per_race(&result);
    eprintln!("{}\n{races:?}", result.reason);
    assert_eq!(result.verdict, Verdict::Fail, "{}", result.reason);
    // Only the third race can see it; the two others are still judged.
    let verdicts: Vec<&str> = races.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(verdicts, ["pass", "pass", "fail"], "{races:?}");
    // The counterexample as report.json writes it.
    let cx = serde_json::to_value(result.counterexample.expect("a counterexample")).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&cx).unwrap());
    assert!(cx["race"].as_str().unwrap().contains("renew"), "{cx}");
    // The interleaving: the renew reads while the lease is live, the clock
    // reaches the expiry instant, the take grants b, then the renew writes.
    let steps: Vec<(String, String)> = cx["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let cmd = c["command"].as_str().unwrap();
            (
                c["instance"].as_str().unwrap().to_string(),
                cmd.split(' ').next().unwrap().to_string(),
            )
        })
        .collect();
    let order: Vec<&str> = steps.iter().map(|(i, _)| i.as_str()).collect();
    assert_eq!(order, ["a", "clock", "b", "a"], "{steps:?}");
    assert_eq!(steps[3].1, "HSET", "{steps:?}");
    assert!(cx["a"]["answer"]["renewed"].is_object(), "{cx}");
    assert!(cx["b"]["answer"]["granted"].is_object(), "{cx}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_race_of_a_read_then_write_take_is_judged_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let store = ReadThenWriteLease::new(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    let result = take_races(Arc::new(store), "rtwt").await;
    let races = per_race(&result);
    eprintln!("{}\n{races:?}", result.reason);
    assert_eq!(result.verdict, Verdict::Fail, "{}", result.reason);
    // The first race failing does not stop the others from being run.
    assert_eq!(races.len(), 3, "{races:?}");
    assert_eq!(races[0].1, "fail", "{races:?}");
    assert_eq!(races[1].1, "fail", "{races:?}");
}
