//! The explorer on a store with no Redis wire (`builtin:sqlite`): a step is
//! one whole operation on the store's copy, its lease rows restored and
//! snapshotted per state. The store passes and both takeover races are
//! reached; a take granted on the caller's clock is caught and replays; the
//! checks are planned to run for it, and skipped for a store that keeps its
//! state outside Redis and offers no copy of itself.

use std::sync::Arc;

use async_trait::async_trait;
use explorer::{
    explore, replay_schedule, ExplorerConfig, ExplorerOutcome, ExplorerSuite, LEASE_MS,
};
use harness::contract::{Call, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::{plan, Suite, Verdict};
use stores::sqlite::{SqliteClock, SqliteStoreFactory};

fn sqlite(dir: &tempfile::TempDir) -> SqliteStoreFactory {
    // The subject's own clock is never read: each world runs a copy on a
    // file and a manual clock of its own.
    SqliteStoreFactory::new(dir.path().join("store.db"), SqliteClock::System)
}

fn small(skews: Vec<i64>, depth: usize, walks: usize) -> ExplorerConfig {
    ExplorerConfig {
        depth,
        walks,
        walk_steps: 20,
        seed: 7,
        threads: 1,
        skews,
        absolute_times: false,
        ..Default::default()
    }
}

fn run(factory: Arc<dyn StoreFactory>, config: &ExplorerConfig) -> ExplorerOutcome {
    explore(
        factory,
        None,
        "sp:explore-sqlite:".into(),
        config,
        &mut |l| eprintln!("{l}"),
    )
}

fn verdict(outcome: &ExplorerOutcome, id: &str) -> Verdict {
    outcome
        .checks
        .iter()
        .find(|c| c.id == id)
        .map_or(Verdict::Skipped, |c| c.verdict)
}

#[test]
fn the_sqlite_store_passes_and_both_takeover_races_are_reached() {
    let dir = tempfile::tempdir().unwrap();
    // Two threads: each world's copy is its own, so they cannot disturb
    // each other.
    let config = ExplorerConfig {
        threads: 2,
        ..small(vec![LEASE_MS], 6, 10)
    };
    let outcome = run(Arc::new(sqlite(&dir)), &config);
    for c in &outcome.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    let one = outcome
        .checks
        .iter()
        .find(|c| c.id == "explorer.one-live-holder")
        .unwrap();
    assert!(
        one.reason.contains("a step is one operation"),
        "{}",
        one.reason
    );
    let harness::evidence::Evidence::Explorer(e) = &one.evidence else {
        panic!("{:?}", one.evidence)
    };
    assert_eq!(e.step.as_deref(), Some(explorer_step()));
    let skew = &outcome.figures.per_skew[0];
    assert!(
        skew.zombie_renew_reached && skew.zombie_release_reached,
        "{skew:?}"
    );
    assert!(skew.unique_states > 10, "{skew:?}");
    // Restore, the operation (when there is one) and the snapshot.
    assert!(outcome.figures.round_trips >= 2 * outcome.figures.transitions);
    assert!(outcome.figures.walk_steps > 0);
}

fn explorer_step() -> &'static str {
    "a step is one operation: the store sends no Redis commands, each operation is one transaction"
}

/// A BROKEN store for this test: a take of a lease that has run out on the
/// CALLER's clock is answered `granted` (a newer epoch, never written),
/// whatever server time says.
struct CallersClockTake {
    inner: Arc<dyn StoreFactory>,
}

struct CallersClockClient {
    inner: Box<dyn StoreClient>,
}

#[async_trait]
impl StoreClient for CallersClockClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        if let Ok(Request::LeaseTake { tree, ttl_ms, .. }) = Request::parse(call) {
            let read = Request::LeaseRead { tree }.to_call();
            if let Reply::Lease(Some(view)) = self.inner.call(&read, clock_ms).await? {
                if view.live && view.expires_at_ms.is_some_and(|e| e <= clock_ms) {
                    return Ok(Reply::Granted {
                        epoch: view.epoch + 1,
                        expires_at_ms: clock_ms + ttl_ms,
                    });
                }
            }
        }
        self.inner.call(call, clock_ms).await
    }
}

#[async_trait]
impl StoreFactory for CallersClockTake {
    fn spec(&self) -> String {
        "test:callers-clock-take".into()
    }

    fn keeps_state_in_redis(&self) -> bool {
        self.inner.keeps_state_in_redis()
    }

    fn sqlite_copy(
        &self,
        path: &std::path::Path,
        clock: SqliteClock,
    ) -> Option<Arc<dyn StoreFactory>> {
        let inner = self.inner.sqlite_copy(path, clock)?;
        Some(Arc::new(CallersClockTake { inner }))
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        Ok((info, Box::new(CallersClockClient { inner })))
    }
}

#[test]
fn a_take_granted_on_the_callers_clock_breaks_one_live_holder_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn StoreFactory> = Arc::new(CallersClockTake {
        inner: Arc::new(sqlite(&dir)),
    });
    let outcome = run(store.clone(), &small(vec![LEASE_MS], 4, 0));
    assert_eq!(verdict(&outcome, "explorer.one-live-holder"), Verdict::Fail);
    let check = outcome
        .checks
        .iter()
        .find(|c| c.id == "explorer.one-live-holder")
        .unwrap();
    eprintln!("{}", check.reason);
    let cx = check
        .counterexample
        .as_ref()
        .and_then(|c| c.explorer())
        .unwrap();
    // a takes, b (a lease ahead) takes at once: two steps.
    assert_eq!(cx.schedule.actions.len(), 2, "{:?}", cx.schedule);
    let (last, _) = replay_schedule(
        store,
        None,
        "sp:explore-sqlite-replay:".into(),
        &cx.schedule,
    );
    assert!(last.broke(explorer::Property::OneLiveHolder));
    // The honest store on the same schedule holds.
    let (honest, _) = replay_schedule(
        Arc::new(sqlite(&dir)),
        None,
        "sp:explore-sqlite-honest:".into(),
        &cx.schedule,
    );
    for p in explorer::Property::ALL {
        assert!(!honest.broke(p), "{p}: {:?}", honest.violation(p));
    }
    assert!(honest.harness_error.is_none(), "{:?}", honest.harness_error);
}

/// A store that keeps its state outside Redis and offers no copy.
struct NoCopy;

#[async_trait]
impl StoreFactory for NoCopy {
    fn spec(&self) -> String {
        "test:no-copy".into()
    }

    fn keeps_state_in_redis(&self) -> bool {
        false
    }

    async fn connect(
        &self,
        _: &Hello,
        _: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        Err(StoreError::new(
            harness::contract::ErrorKind::Unavailable,
            "never connected",
        ))
    }
}

#[test]
fn the_checks_run_for_the_sqlite_store_and_are_skipped_for_one_without_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let suite = ExplorerSuite::new(ExplorerConfig::default());
    let subject = |factory: Arc<dyn StoreFactory>| {
        testkit::subject(factory)
            .prefix("sp:plan-sqlite:")
            .contracts(&[harness::contract::Contract::Lease])
            // No managed server: a copy on a file of its own needs none.
            .unreachable()
    };
    let (settled, to_run) = plan("explorer", suite.checks(), &subject(Arc::new(sqlite(&dir))));
    // Only the queue's and the rate limits' checks are settled: outside the
    // claim (lease).
    assert!(
        settled.iter().all(|r| r.outside_claim
            && (r.id.starts_with("explorer.queue.") || r.id.starts_with("explorer.rate."))),
        "{settled:?}"
    );
    let lease: Vec<_> = suite
        .checks()
        .into_iter()
        .filter(|c| !c.id.starts_with("explorer.queue.") && !c.id.starts_with("explorer.rate."))
        .collect();
    assert_eq!(to_run, lease);
    let (settled, to_run) = plan("explorer", suite.checks(), &subject(Arc::new(NoCopy)));
    assert!(to_run.is_empty(), "{to_run:?}");
    for r in settled {
        assert_eq!(r.verdict, Verdict::Skipped, "{}", r.id);
        // The queue's and rate limits' checks: contracts the store does not
        // offer.
        let outside = (r.id.starts_with("explorer.queue.") || r.id.starts_with("explorer.rate."))
            && r.outside_claim;
        assert!(outside || r.reason.contains("no copy"), "{}", r.reason);
    }
}
