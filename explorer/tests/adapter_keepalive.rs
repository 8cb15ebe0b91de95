//! External adapters kept alive across the explorer's transitions (issue 12,
//! "external stores at the same speed"): an operation the explorer abandons
//! between two of its commands no longer costs a new adapter process (start,
//! imports, hello with its server checks) when the adapter offers the
//! optional `reconnect` request, and nothing it judges changes — the same
//! state counts and verdicts as a new process per abandoned operation, and
//! as the built-in store of the same shape.
//!
//! Needs python3 with redis-py (scripts/setup) and redis-server, as the
//! other Python adapter tests do.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use explorer::{explore, ExplorerConfig, ExplorerOutcome, LEASE_MS};
use harness::contract::{Call, Reply, StoreError};
use harness::store::external::{adapters_started, ExternalStoreFactory};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::Verdict;
use sabotage::ReadThenWriteLease;
use stores::redis::RedisStoreFactory;

/// The tests count adapter processes started by this test binary: one at a
/// time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[path = "../../tests/common/python.rs"]
mod python;
use python::python;

fn adapter(file: &str, workdir: &tempfile::TempDir) -> ExternalStoreFactory {
    adapter_with("", file, workdir)
}

/// `file` started with the environment assignments `env` (`VAR=value …`).
fn adapter_with(env: &str, file: &str, workdir: &tempfile::TempDir) -> ExternalStoreFactory {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/adapters")
        .join(if file.contains('/') {
            file.to_string()
        } else {
            format!("python/{file}")
        });
    ExternalStoreFactory::new(
        format!("{env} exec {} {}", python(), script.display()),
        workdir.path().to_path_buf(),
    )
}

/// A store as it was explored before issue 12: the same adapter, but its
/// client never reconnects, so every abandoned operation drops the process
/// and the next operation of that instance starts a new one.
struct NoReconnect(ExternalStoreFactory);

struct NoReconnectClient(Box<dyn StoreClient>);

#[async_trait]
impl StoreClient for NoReconnectClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        self.0.call(call, clock_ms).await
    }
    // `reconnect` is the trait's default: false.

    fn remembers(&self) -> bool {
        self.0.remembers()
    }
}

#[async_trait]
impl StoreFactory for NoReconnect {
    fn spec(&self) -> String {
        self.0.spec()
    }

    fn adapter_failure(&self) -> Option<String> {
        self.0.adapter_failure()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, client) = self.0.connect(hello, clock_ms).await?;
        Ok((info, Box::new(NoReconnectClient(client))))
    }
}

/// Small enough for a test: two skews, a short search and a few walks.
fn small() -> ExplorerConfig {
    ExplorerConfig {
        depth: 5,
        walks: 3,
        walk_steps: 12,
        seed: 12,
        threads: 1,
        skews: vec![0, LEASE_MS],
        ..Default::default()
    }
}

/// An exploration's outcome, and how many adapter processes it started
/// to run operations on: besides those, one is started for each place an
/// operation first sends a command, to see whether a fresh process draws
/// something else there (`Savings::probe_processes`).
fn run(factory: Arc<dyn StoreFactory>, config: &ExplorerConfig) -> (ExplorerOutcome, u64) {
    let started = adapters_started();
    let outcome = explore(factory, None, "sp:keepalive:".into(), config, &mut |l| {
        eprintln!("{l}")
    });
    // A store of no process (the built-in) probes on a fresh client.
    let all = adapters_started() - started;
    let probes = outcome.savings.probe_processes;
    (outcome, all.saturating_sub(probes))
}

/// What the explorer judged: every check's verdict, every skew's state
/// counts, and what the walks saw.
fn judged(outcome: &ExplorerOutcome) -> Vec<String> {
    let mut out: Vec<String> = outcome
        .checks
        .iter()
        .map(|c| format!("{} {:?}", c.id, c.verdict))
        .collect();
    for s in &outcome.figures.per_skew {
        out.push(format!(
            "skew {}: {} states, {} unique, depth {}, renew race {}, release race {}",
            s.skew_ms,
            s.states,
            s.unique_states,
            s.max_depth,
            s.zombie_renew_reached,
            s.zombie_release_reached
        ));
    }
    out.push(format!("walks {}", outcome.figures.walk_digest));
    out
}

/// Deep enough for two takes' reads and writes, with a few short walks.
fn abandoning() -> ExplorerConfig {
    ExplorerConfig {
        depth: 4,
        walks: 2,
        walk_steps: 8,
        ..small()
    }
}

/// The read-then-write take adapter declared `stateless` (no `reconnect`),
/// explored with `config`, and how many processes it started.
fn stateless_read_then_write(
    dir: &tempfile::TempDir,
    config: &ExplorerConfig,
) -> (ExplorerOutcome, u64) {
    let stateless = adapter_with(
        "STOREPROOF_ADAPTER_CAPABILITIES=stateless",
        "read_then_write_take.py",
        dir,
    );
    run(Arc::new(stateless), config)
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
fn a_kept_read_then_write_adapter_is_judged_as_the_builtin_store_of_its_shape_and_starts_once_per_slot(
) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Two takes' reads, then their writes: the race is four steps deep.
    let config = ExplorerConfig {
        depth: 4,
        ..small()
    };
    let (kept, started) = run(Arc::new(adapter("read_then_write_take.py", &dir)), &config);
    let builtin = RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let (same_shape, _) = run(Arc::new(ReadThenWriteLease::new(builtin)), &config);
    // The race is there, and caught the same way by both.
    assert_eq!(verdict(&kept, "explorer.one-live-holder"), Verdict::Fail);
    assert_eq!(judged(&kept), judged(&same_shape));
    // One process per instance slot of each world: for each skew the
    // search's world and the world its counterexample replays on, two
    // instances each; the walks' world of three (no adapter failed here).
    let slots = 4 * config.skews.len() as u64 + 3;
    eprintln!("adapter processes: {started} for {slots} slots");
    assert!(started <= slots, "{started} processes for {slots} slots");
}

#[test]
fn kept_adapters_are_judged_as_a_new_process_per_abandoned_operation_was() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // The old way starts a process per abandoned operation: kept tiny (a
    // take stopped after its read, and everything around it).
    let config = ExplorerConfig {
        depth: 4,
        walks: 0,
        skews: vec![0],
        ..small()
    };
    let old_way = ExplorerConfig {
        keep_after_abandon: false,
        ..config.clone()
    };
    let store = adapter("read_then_write_take.py", &dir);
    let (kept, kept_started) = run(Arc::new(store.clone()), &config);
    let (fresh, fresh_started) = run(Arc::new(NoReconnect(store)), &old_way);
    eprintln!(
        "adapter processes: kept {kept_started}, a new one per abandoned operation {fresh_started}"
    );
    assert_eq!(judged(&kept), judged(&fresh));
    // The search's world, two instances, and the world the counterexample
    // replays on (the race is within depth 4 once its operations drain).
    assert!(kept_started <= 4, "{kept_started}");
    assert!(
        fresh_started > 4 * kept_started,
        "only {fresh_started} operations were abandoned: the test lost its point"
    );
}

#[test]
fn the_example_adapter_is_judged_as_the_builtin_store() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let config = small();
    let (python, started) = run(Arc::new(adapter("storeproof_adapter.py", &dir)), &config);
    let builtin = RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let (rust, _) = run(Arc::new(builtin), &config);
    for c in &python.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    assert_eq!(judged(&python), judged(&rust));
    assert!(started <= 2 * config.skews.len() as u64 + 3, "{started}");
}

/// Issue 19, item 10: a correct adapter with a client-side cache (what it
/// sends depends on what its process remembers from earlier operations) is
/// never called "not deterministic". The explorer's states are the server's
/// keys: an instance kept from one branch to an unrelated one carried that
/// branch's memory into it, so an operation re-run on a fresh process sent
/// other commands than the one it replays. Each operation of an adapter not
/// declared `stateless` now starts on a process as `reconnect` (or a new
/// process) leaves it.
#[test]
fn an_adapter_with_a_client_side_cache_is_never_called_not_deterministic() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Four steps reach a zombie renew and show the trial the cache's
    // memory (the search after it runs a fresh process per operation: the
    // test's cost, 35 s at depth 5, 8 s at 4).
    let config = ExplorerConfig {
        depth: 4,
        walks: 0,
        skews: vec![LEASE_MS],
        ..small()
    };
    let (outcome, _) = run(
        Arc::new(adapter("client_cache/client_cache_adapter.py", &dir)),
        &config,
    );
    for c in &outcome.checks {
        eprintln!("{} {}: {}", c.id, c.verdict.word(), c.reason);
    }
    for c in &outcome.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    // Kept on trial, its cache from another branch changed what it sent:
    // the trial saw it and the search ran again on fresh processes.
    let given_up = outcome
        .figures
        .per_skew
        .iter()
        .find_map(|r| r.memory_failure.clone());
    assert!(given_up.is_some(), "{:?}", outcome.figures.per_skew);
}

/// Issue 21: an adapter that declares nothing (no `reconnect`, not
/// `stateless`), whose take is a read then a write, has its processes kept
/// on trial: judged exactly as the same adapter declared `stateless`, with
/// no process per operation. Its trial was checked on every search (steps
/// computed again on processes kept with another history, one on a fresh
/// process) and never given up: it remembers nothing that matters.
#[test]
fn an_adapter_declaring_nothing_is_kept_on_trial_and_judged_as_the_stateless_one() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let config = abandoning();
    let (alone, _) = stateless_read_then_write(&dir, &config);
    let nothing = adapter_with(
        "STOREPROOF_ADAPTER_CAPABILITIES=",
        "read_then_write_take.py",
        &dir,
    );
    let (trial, started) = run(Arc::new(nothing), &config);
    eprintln!("adapter processes: {started}; {:?}", trial.savings);
    assert_eq!(verdict(&trial, "explorer.one-live-holder"), Verdict::Fail);
    assert_eq!(judged(&trial), judged(&alone));
    for row in &trial.figures.per_skew {
        assert!(row.memory_checked > 0, "{row:?}");
        assert_eq!(row.memory_failure, None, "{row:?}");
    }
    // The search's slots, the walks' and replays' worlds, and a fresh
    // process per operation of the trial's fresh step and of each
    // confirmation of a counterexample (a few operations each): not one
    // per operation explored.
    let slots = 4 * config.skews.len() as u64 + 3;
    assert!(started <= slots + 12, "{started} processes");
}

/// Issue 19, item 10: a read-then-write take in an adapter without
/// `reconnect` (a new process per abandoned operation) is caught, its
/// counterexample replays on a world of its own, and nothing is called "not
/// deterministic" once something failed: every re-run of a schedule gives
/// each instance the clock it had.
#[test]
fn a_read_then_write_adapter_without_reconnect_fails_one_live_holder_and_nothing_else() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Two takes' reads, then their writes: four steps. One skew far from 0
    // (the walks of three draw their clocks from it and 0).
    let config = ExplorerConfig {
        depth: 4,
        walks: 2,
        walk_steps: 8,
        skews: vec![10 * LEASE_MS],
        ..small()
    };
    let store = NoReconnect(adapter("read_then_write_take.py", &dir));
    let (outcome, _) = run(Arc::new(store), &config);
    for c in &outcome.checks {
        eprintln!("{} {}: {}", c.id, c.verdict.word(), c.reason);
    }
    let broken = outcome
        .checks
        .iter()
        .find(|c| c.id == "explorer.one-live-holder")
        .unwrap();
    assert_eq!(broken.verdict, Verdict::Fail, "{}", broken.reason);
    assert!(broken.counterexample.is_some());
    for c in &outcome.checks {
        assert!(
            !c.reason.contains("not deterministic"),
            "{}: {}",
            c.id,
            c.reason
        );
        assert_ne!(c.verdict, Verdict::Unknown, "{}: {}", c.id, c.reason);
    }
}

/// Issue 21: an adapter declared `stateless` that does not offer
/// `reconnect` is kept after an operation abandoned between its read and
/// its write (the held command is refused with an error reply, its
/// connection stays in step), as a `reconnect` would keep it: judged as the
/// kept adapter is, with as few processes. So is one whose client never
/// opens a connection again by itself (jedis-like): it needs none.
#[test]
fn a_stateless_adapter_without_reconnect_is_kept_after_an_abandoned_operation_and_judged_the_same()
{
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let config = abandoning();
    let (alone, alone_started) = stateless_read_then_write(&dir, &config);
    let (kept, _) = run(Arc::new(adapter("read_then_write_take.py", &dir)), &config);
    eprintln!(
        "adapter processes: {alone_started}; abandoned operations not kept: {}",
        alone.savings.abandoned_processes
    );
    assert_eq!(verdict(&alone, "explorer.one-live-holder"), Verdict::Fail);
    assert_eq!(judged(&alone), judged(&kept));
    assert_eq!(alone.savings.abandoned_processes, 0);
    let slots = 4 * config.skews.len() as u64 + 3;
    assert!(
        alone_started <= slots,
        "{alone_started} processes for {slots} slots"
    );

    // A client of one connection that never connects again by itself.
    let lock = "explorer-tests/jedis_like_lock.py";
    let single = adapter_with("JEDIS_LIKE_CAPABILITIES=stateless", lock, &dir);
    let config = ExplorerConfig {
        walks: 0,
        skews: vec![LEASE_MS],
        ..config
    };
    let (single, single_started) = run(Arc::new(single), &config);
    let (kept, _) = run(Arc::new(adapter(lock, &dir)), &config);
    assert_eq!(
        single.savings.abandoned_processes, 0,
        "{:?}",
        single.savings
    );
    // The search's world, two instances, and a counterexample's replay: a
    // fresh process per operation of its schedule (up to three).
    let replays = single
        .checks
        .iter()
        .filter(|c| c.counterexample.is_some())
        .count() as u64;
    assert!(
        single_started <= 2 + 3 * replays,
        "{single_started} processes, {replays} replays: {:?}",
        single.savings
    );
    assert_eq!(verdict(&single, "explorer.one-live-holder"), Verdict::Fail);
    assert_eq!(judged(&single), judged(&kept));
}
