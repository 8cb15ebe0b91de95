//! Issue 12's speed changes nothing but the work: the transition cache and
//! restore skipping give the very states, walks, verdicts and
//! counterexamples of the method before them (restore and snapshot every
//! transition), for a correct store and for broken ones; and fail-fast stops
//! at the first violation, names what it left out and passes nothing.

use std::sync::Arc;

use explorer::{explore, ExplorerConfig, ExplorerOutcome, LEASE_MS};
use harness::store::StoreFactory;
use harness::Verdict;
use sabotage::{ClientClockLease, ReadThenWriteLease};
use stores::redis::RedisStoreFactory;

fn builtin(dir: &tempfile::TempDir) -> RedisStoreFactory {
    RedisStoreFactory::new(dir.path().join("kept.sqlite"))
}

fn config(skews: Vec<i64>, depth: usize, walks: usize) -> ExplorerConfig {
    ExplorerConfig {
        depth,
        walks,
        walk_steps: 20,
        seed: 7,
        threads: 2,
        skews,
        ..Default::default()
    }
}

fn run(factory: Arc<dyn StoreFactory>, config: &ExplorerConfig) -> ExplorerOutcome {
    explore(factory, None, "sp:speed:".into(), config, &mut |l| {
        eprintln!("{l}")
    })
}

/// Everything an exploration decided, without its timings.
fn decided(o: &ExplorerOutcome) -> serde_json::Value {
    let rows: Vec<_> = o
        .figures
        .per_skew
        .iter()
        .map(|r| {
            (
                r.skew_ms,
                r.states,
                r.unique_states,
                r.max_depth,
                r.zombie_renew_reached,
                r.zombie_release_reached,
            )
        })
        .collect();
    let checks: Vec<_> = o
        .checks
        .iter()
        .map(|c| {
            (
                c.id.clone(),
                c.verdict,
                // exploration-complete says how the work was done (how
                // much the cache answered), which is what differs; so does
                // the reduction the recorded behaviour makes, named only
                // where it was used.
                if c.id == "explorer.exploration-complete" {
                    String::new()
                } else {
                    without_behaviour(&c.reason)
                },
                c.counterexample
                    .as_ref()
                    .and_then(|x| x.explorer())
                    .map(|x| x.schedule.clone()),
            )
        })
        .collect();
    serde_json::json!({
        "rows": rows,
        "walk_steps": o.figures.walk_steps,
        "walk_digest": o.figures.walk_digest,
        "checks": checks,
    })
}

/// `reason` without its sentence on steps taken from recorded behaviour.
fn without_behaviour(reason: &str) -> String {
    const START: &str = "; a step whose request, clock and replies";
    const END: &str = "every such step run)";
    match reason.find(START) {
        Some(i) => match reason[i..].find(END) {
            Some(j) => format!("{}{}", &reason[..i], &reason[i + j + END.len()..]),
            None => reason.to_string(),
        },
        None => reason.to_string(),
    }
}

#[test]
fn the_cache_and_restore_skipping_change_no_state_and_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let stores: Vec<(&str, Arc<dyn StoreFactory>)> = vec![
        ("builtin", Arc::new(builtin(&dir))),
        // Its commands carry the caller's clock: guesses across skews fail
        // and must fall back to the server.
        (
            "caller's clock",
            Arc::new(ClientClockLease::new(builtin(&dir))),
        ),
        // Two commands a take: cached answers mid-operation.
        (
            "read then write",
            Arc::new(ReadThenWriteLease::new(builtin(&dir))),
        ),
    ];
    for (name, store) in stores {
        let old = ExplorerConfig {
            cache: false,
            skip_restore: false,
            ..config(vec![0, LEASE_MS / 2, -LEASE_MS], 4, 10)
        };
        let fast = config(vec![0, LEASE_MS / 2, -LEASE_MS], 4, 10);
        let slow = run(store.clone(), &old);
        let quick = run(store.clone(), &fast);
        assert_eq!(decided(&slow), decided(&quick), "{name}");
        assert_eq!(slow.savings.cache_answers, 0, "{name}");
        assert_eq!(slow.savings.restores_skipped, 0, "{name}");
        assert!(
            quick.figures.round_trips < slow.figures.round_trips,
            "{name}: {} round trips with the cache, {} without",
            quick.figures.round_trips,
            slow.figures.round_trips
        );
        eprintln!(
            "{name}: {} round trips before, {} now ({:?})",
            slow.figures.round_trips, quick.figures.round_trips, quick.savings
        );
        if name == "builtin" {
            // It ignores its caller's clock: the skews after the first are
            // answered from the cache.
            assert!(quick.savings.cache_answers > 0, "{:?}", quick.savings);
            assert!(quick.savings.restores_skipped > 0, "{:?}", quick.savings);
        }
    }
}

#[test]
fn fail_fast_stops_at_the_first_violation_names_what_it_left_and_passes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn StoreFactory> = Arc::new(ClientClockLease::new(builtin(&dir)));
    let skews = vec![0, LEASE_MS / 2, LEASE_MS, -LEASE_MS];
    let whole = run(store.clone(), &config(skews.clone(), 5, 10));
    assert!(whole.not_explored.is_none());
    let fast = ExplorerConfig {
        fail_fast: true,
        ..config(skews, 5, 10)
    };
    let cut = run(store, &fast);
    let left = cut.not_explored.clone().expect("fail-fast left something");
    assert!(
        left.contains("+1000 ms, -1000 ms") && left.contains("walks 0..10 of seed 7"),
        "{left}"
    );
    // Skew 0 passes, +500 ms breaks: only those two were searched.
    assert_eq!(
        cut.figures
            .per_skew
            .iter()
            .map(|r| r.skew_ms)
            .collect::<Vec<_>>(),
        vec![0, LEASE_MS / 2]
    );
    assert_eq!(cut.figures.walks, 0);
    let of = |o: &ExplorerOutcome, id: &str| {
        o.checks
            .iter()
            .find(|c| c.id == id)
            .cloned()
            .unwrap_or_else(|| panic!("no {id}"))
    };
    // The first violation: a grant's expiry on the caller's clock (one step).
    let failed = of(&cut, "explorer.answered");
    assert_eq!(failed.verdict, Verdict::Fail, "{}", failed.reason);
    // The same counterexample as the whole exploration's: the search of
    // the skew that broke it ran its level whole.
    assert_eq!(
        failed
            .counterexample
            .as_ref()
            .and_then(|c| c.explorer())
            .map(|c| &c.schedule),
        of(&whole, "explorer.answered")
            .counterexample
            .as_ref()
            .and_then(|c| c.explorer())
            .map(|c| &c.schedule)
    );
    for c in &cut.checks {
        assert_ne!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
        if c.verdict == Verdict::Skipped {
            assert!(
                c.reason.contains("--fail-fast") || c.reason.contains("stopped"),
                "{}: {}",
                c.id,
                c.reason
            );
        }
    }
    // The whole run passes checks the cut one only skips.
    assert!(whole.checks.iter().any(|c| c.verdict == Verdict::Pass));
    // And fail-fast is off by default.
    assert!(!ExplorerConfig::default().fail_fast);
}
