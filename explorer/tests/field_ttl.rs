//! Issue 40, item 3: a hash field's own expiry (`HPEXPIRE`, on Valkey 9 and
//! Redis 7.4+) is part of a key's content. A take that also keeps a field
//! alive for the lease's length holds keys whose fields expire on their
//! own: two states with the same fields but other field expiries are not
//! one state, and the server, restored and moved in time, repeats every
//! cached outcome.

use std::sync::Arc;

use explorer::{explore, ExplorerConfig};
use harness::server::ServerKind;
use harness::Verdict;
use stores::redis::RedisStoreFactory;

#[test]
fn a_field_that_expires_on_its_own_is_part_of_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let store = sabotage::LuaSabotage::with_patches(
        "field-ttl",
        &[sabotage::LuaPatch {
            script: "lease_take.lua",
            find: "return {'granted', epoch, expires}",
            // Expiring at the lease's very end, an instant the search
            // stands at: Valkey 9's background cycle deleted such a field
            // there while reads still saw it, so the server did not repeat
            // itself until the explorer's servers expired lazily only.
            replace: "redis.call('HSET', key, 'live', '1')\nredis.call('HPEXPIRE', key, ttl, 'FIELDS', 1, 'live')\nreturn {'granted', epoch, expires}",
        }],
        RedisStoreFactory::new(dir.path().join("kept.sqlite")),
    );
    assert!(store.error().is_none(), "{:?}", store.error());
    let config = ExplorerConfig {
        depth: 5,
        walks: 0,
        seed: 8,
        threads: 1,
        skews: vec![0],
        cache_check_one_in: 1,
        server: Some(ServerKind::Valkey9),
        ..Default::default()
    };
    let outcome = explore(
        Arc::new(store),
        None,
        "sp:fttl:".into(),
        &config,
        &mut |l| eprintln!("{l}"),
    );
    for c in &outcome.checks {
        eprintln!("{} {}: {}", c.id, c.verdict.word(), c.reason);
        if let Some(x) = &c.counterexample {
            eprintln!(
                "COUNTEREXAMPLE {}",
                serde_json::to_string(x).unwrap_or_default()
            );
        }
    }
    let cache = &outcome.figures.cache;
    assert!(cache.verified > 0, "{cache:?}");
    assert_eq!(cache.differed, 0, "{cache:?}");
    for c in &outcome.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
}
