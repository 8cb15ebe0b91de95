//! The rate limits under the explorer, against the real server: the
//! built-in store passes every property under skewed clocks and reaches both
//! races; each property fails on a store of the shape that breaks it.

use std::sync::Arc;

use explorer::{explore, ExplorerConfig, ExplorerOutcome, LEASE_MS};
use harness::contract::Contract;
use harness::store::StoreFactory;
use harness::Verdict;
use sabotage::{Lie, LuaPatch, Lying, SplitRoundTrips};
use stores::redis::RedisStoreFactory;

fn builtin(dir: &tempfile::TempDir) -> RedisStoreFactory {
    RedisStoreFactory::new(dir.path().join("kept.sqlite"))
}

/// The rate limits alone, `depth` steps deep, under `skews`.
fn config(skews: Vec<i64>, depth: usize) -> ExplorerConfig {
    ExplorerConfig {
        rate_depth: depth,
        walks: 0,
        seed: 3,
        threads: 1,
        skews,
        contracts: vec![Contract::Rate],
        ..Default::default()
    }
}

fn run(factory: Arc<dyn StoreFactory>, config: &ExplorerConfig) -> ExplorerOutcome {
    explore(factory, None, "sp:explore-rate:".into(), config, &mut |l| {
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
fn the_builtin_store_passes_on_skewed_clocks_and_reaches_both_races() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(
        Arc::new(builtin(&dir)),
        &config(vec![-LEASE_MS / 2, LEASE_MS], 4),
    );
    let rate: Vec<_> = outcome
        .checks
        .iter()
        .filter(|c| c.id.starts_with("explorer.rate."))
        .collect();
    assert_eq!(rate.len(), 8);
    for c in outcome.checks.iter() {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    for row in &outcome.figures.per_skew {
        assert_eq!(row.contract, "rate");
        assert!(
            row.rate_slot_race_reached && row.rate_hit_race_reached,
            "{row:?}"
        );
    }
}

/// The named sabotage `name`, one edit of one built-in script.
fn named(dir: &tempfile::TempDir, name: &str) -> Arc<dyn StoreFactory> {
    let patch = sabotage::find(name).and_then(|n| n.lua_patch()).unwrap();
    Arc::new(patch.patch(builtin(dir)).unwrap())
}

/// The built-in store with one edit of one rate script.
fn patched(
    dir: &tempfile::TempDir,
    script: &'static str,
    find: &'static str,
    replace: &'static str,
) -> Arc<dyn StoreFactory> {
    let patch = LuaPatch {
        script,
        find,
        replace,
    };
    Arc::new(patch.patch(builtin(dir)).unwrap())
}

/// A store, the skews and the depth to explore it at, and the check it fails.
type Case = (Arc<dyn StoreFactory>, Vec<i64>, usize, &'static str);

#[test]
fn every_rate_property_can_fail() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<Case> = vec![
        // Two acquires of the last slot, each a read and then a write.
        (
            Arc::new(SplitRoundTrips::acquire(builtin(&dir))),
            vec![0],
            4,
            "explorer.rate.slot-limit",
        ),
        // A slot counted as expired a millisecond early.
        (
            named(&dir, "slot-expires-early"),
            vec![0],
            3,
            "explorer.rate.slot-limit",
        ),
        // A hit forgotten a millisecond before it leaves the window.
        (
            named(&dir, "window-off-by-one"),
            vec![0],
            3,
            "explorer.rate.hit-limit",
        ),
        // A pause stored with a plain SET: the lagging clock's later, shorter
        // pause overwrites the longer one.
        (
            named(&dir, "pause-can-shorten"),
            vec![-LEASE_MS / 2],
            3,
            "explorer.rate.pause-only-lengthens",
        ),
        // An acquire that never looks at the pause.
        (
            patched(
                &dir,
                "rate_acquire_slot.lua",
                "if paused and cmp(paused, ARGV[1]) > 0 then",
                "if false then",
            ),
            vec![0],
            3,
            "explorer.rate.nothing-while-paused",
        ),
        // Two hits of the last place, each counted first and checked after:
        // both refused, though one place was free.
        (
            Arc::new(SplitRoundTrips::hit(builtin(&dir))),
            vec![0],
            4,
            "explorer.rate.refused-only-when-due",
        ),
        // A read that counts only slots acquired on the reader's own clock
        // or earlier (a live slot of a faster clock missed).
        (
            patched(
                &dir,
                "rate_read.lua",
                "redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf')",
                "redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '(' .. (tonumber(ARGV[1]) + 1000))",
            ),
            vec![LEASE_MS / 2],
            2,
            "explorer.rate.answered",
        ),
        (
            Arc::new(Lying::new(builtin(&dir), Lie::RateReadFails)),
            vec![0],
            2,
            "explorer.rate.answered",
        ),
    ];
    for (store, skews, depth, id) in cases {
        let outcome = run(store, &config(skews, depth));
        let (v, reason) = verdict(&outcome, id);
        assert_eq!(v, Verdict::Fail, "{id}: {reason}");
        // Only the property named broke, nothing the harness did.
        assert_eq!(
            verdict(&outcome, "explorer.exploration-complete").0,
            Verdict::Pass,
            "{id}"
        );
    }
    // Too shallow for either race: undecided, never the store's failure.
    let outcome = run(Arc::new(builtin(&dir)), &config(vec![0], 1));
    for id in [
        "explorer.rate.two-acquires-race-reached",
        "explorer.rate.two-hits-race-reached",
    ] {
        let (v, reason) = verdict(&outcome, id);
        assert_eq!(v, Verdict::Unknown, "{id}: {reason}");
        assert!(reason.contains("--rate-depth"), "{reason}");
    }
}
