//! The sequential conformance suite (SPEC 3.1): every operation and edge case
//! of the three contracts on a server whose clock storeproof controls, bad
//! input, odd ids, the server's own clock ruling, the server assumptions,
//! kept execution ids never in Redis, and bytes per tree.
//!
//! `certify` drives it as [`ConformanceSuite`]; `replay` and the sabotage
//! tests run single checks with [`all_checks`] and [`run_check`];
//! `storeproof check` judges a saved [`CheckHistory`] again with [`judge`].
//!
//! The private modules:
//! - `lease`, `queue`, `rate`: each contract's checks, a new check goes into
//!   its contract's list with a stable id named for what it checks;
//! - `scenario`: the [`Step`]s a scenario check is written in;
//! - `runner`: plays a check against the store and records its history;
//! - `judge`: the pure judge of a recorded scenario history;
//! - `special`: checks that look at the server itself (kept ids, odd ids,
//!   bytes per tree, and the take `races`);
//! - `server_checks`: the server-assumption cases, each on servers of its own.

mod judge;
mod lease;
mod queue;
mod races;
mod rate;
mod runner;
mod scenario;
mod server_checks;
mod special;

use std::sync::Arc;

use async_trait::async_trait;

pub use judge::{judge, CheckHistory, Judged, NotJudgeable};
pub use runner::run_check;
pub use scenario::Step;
pub use server_checks::ServerCase;
pub use special::Special;

use harness::contract::Contract;
use harness::figures::{ConformanceFigures, Figures};
use harness::{CheckResult, Level};
use harness::{CheckSpec, Needs, Progress, Subject, Suite, SuiteError, SuiteRun};
use scenario::needs_server_clock;
use special::BytesPerTreeEvidence;

/// The suite's name, as `--suite` and the report write it.
const SUITE: &str = "conformance";

/// The check whose evidence carries the suite's `bytes_per_tree` figure.
const BYTES_PER_TREE: &str = "conformance.lease.bytes-per-tree";

/// How a check runs.
#[derive(Clone)]
pub enum CheckKind {
    /// A scenario judged by the sequential model.
    Scenario(fn() -> Vec<Step>),
    /// A check that inspects the server itself.
    Special(Special),
    /// A server-assumption case on a server started for it.
    Server(ServerCase),
}

/// One conformance check: its declaration (id, level, contracts, needs,
/// what it proves) and how it runs.
#[derive(Clone)]
pub struct CheckDef {
    /// The check as the suite declares it; the only place its id is written.
    pub spec: CheckSpec,
    /// How it runs.
    pub kind: CheckKind,
}

impl CheckDef {
    /// The contract the check needs the store to offer (none: server checks).
    pub fn contract(&self) -> Option<Contract> {
        self.spec.contracts.first().copied()
    }
}

/// Every conformance check, in report order.
pub fn all_checks() -> Vec<Arc<CheckDef>> {
    let mut checks = Vec::new();
    checks.extend(lease::checks());
    checks.extend(queue::checks());
    checks.extend(rate::checks());
    checks.extend(server_checks::checks());
    checks.into_iter().map(Arc::new).collect()
}

/// The steps of scenario check `id`; `None` when `id` is no scenario check.
fn scenario_steps(id: &str) -> Option<Vec<Step>> {
    all_checks().iter().find_map(|d| match d.kind {
        CheckKind::Scenario(steps) if d.spec.id == id => Some(steps()),
        _ => None,
    })
}

/// The one contract slice of `c`, for a [`CheckSpec`].
fn contracts_of(c: Contract) -> &'static [Contract] {
    match c {
        Contract::Lease => &[Contract::Lease],
        Contract::Queue => &[Contract::Queue],
        Contract::Rate => &[Contract::Rate],
        Contract::Fenced => &[Contract::Fenced],
    }
}

pub(crate) fn scenario_check(
    id: &'static str,
    level: Level,
    contract: Contract,
    about: &'static str,
    steps: fn() -> Vec<Step>,
) -> CheckDef {
    // Exact expiry instants need a server clock storeproof moves.
    let needs = if needs_server_clock(&steps()) {
        Needs::ManagedServer
    } else {
        Needs::AnyServer
    };
    CheckDef {
        spec: CheckSpec {
            id,
            level,
            contracts: contracts_of(contract),
            needs,
            about,
        },
        kind: CheckKind::Scenario(steps),
    }
}

pub(crate) fn special_check(
    id: &'static str,
    level: Level,
    contract: Contract,
    about: &'static str,
    special: Special,
) -> CheckDef {
    let needs = match special {
        // Whole-keyspace reads: about every key the store writes.
        Special::OddIdsInsidePrefix => Needs::AllKeys,
        // Clock moves (and the gate, for a store with Redis commands; a
        // store without is raced with concurrent calls).
        Special::TakeRaces => Needs::ManagedServer,
        // These read the store's keys, only under the run's prefix, on any
        // server; a store keeping nothing in Redis would pass them vacuously.
        Special::KeptNotInRedis | Special::BytesPerTree => Needs::StoreKeys,
    };
    CheckDef {
        spec: CheckSpec {
            id,
            level,
            contracts: contracts_of(contract),
            needs,
            about,
        },
        kind: CheckKind::Special(special),
    }
}

/// The sequential conformance suite as `certify` drives it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConformanceSuite;

impl ConformanceSuite {
    /// The suite.
    pub fn new() -> Self {
        ConformanceSuite
    }
}

/// The suite's own figures over `results`: the bytes a tree costs. The
/// tally of verdicts and the seconds are every suite's
/// ([`Figures::tallied`], over the checks settled before the run too).
fn figures(results: &[CheckResult]) -> ConformanceFigures {
    ConformanceFigures {
        bytes_per_tree: results
            .iter()
            .find(|r| r.id == BYTES_PER_TREE)
            .and_then(|r| serde_json::from_value::<BytesPerTreeEvidence>(r.evidence.clone()).ok())
            .map(|e| e.bytes_per_tree.into()),
        ..ConformanceFigures::default()
    }
}

#[async_trait]
impl Suite for ConformanceSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn checks(&self) -> Vec<CheckSpec> {
        all_checks().iter().map(|d| d.spec).collect()
    }

    async fn run(
        &self,
        subject: &Subject<'_>,
        to_run: &[CheckSpec],
        progress: &dyn Progress,
    ) -> Result<SuiteRun, SuiteError> {
        let defs = all_checks();
        let mut results = Vec::with_capacity(to_run.len());
        for (n, spec) in to_run.iter().enumerate() {
            let result = match defs.iter().find(|d| d.spec.id == spec.id) {
                Some(def) => run_check(subject, n, def).await,
                None => spec.result(
                    SUITE,
                    harness::Verdict::Unknown,
                    "not a check of the conformance suite",
                ),
            };
            progress.step(spec.id);
            if let Some(line) = result.progress_line() {
                progress.line(&line);
            }
            results.push(result);
        }
        SuiteError::unless_an_adapter_broke()?;
        let figures = figures(&results);
        Ok(SuiteRun {
            checks: results,
            figures: Figures::Conformance(figures),
        })
    }

    /// A scenario is deterministic: it is played again from its first step
    /// (the counterexample only shows where it broke).
    async fn replay(
        &self,
        subject: &Subject<'_>,
        check: &CheckSpec,
        _counterexample: Option<&serde_json::Value>,
        _progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError> {
        let defs = all_checks();
        let def = defs
            .iter()
            .find(|d| d.spec.id == check.id)
            .ok_or_else(|| SuiteError::Setup(format!("{} is not a conformance check", check.id)))?;
        let result = run_check(subject, 0, def).await;
        SuiteError::unless_an_adapter_broke()?;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::time::Duration;

    #[test]
    fn ids_are_unique_stable_and_named_for_their_suite() {
        let checks = all_checks();
        let ids: BTreeSet<_> = checks.iter().map(|c| c.spec.id).collect();
        assert_eq!(ids.len(), checks.len(), "duplicate check id");
        for id in ids {
            assert!(id.starts_with("conformance."), "{id}");
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-'),
                "{id}"
            );
        }
        assert!(checks.len() >= 40, "only {} checks", checks.len());
    }

    #[test]
    fn every_scenario_is_consistent_with_the_model() {
        // The model must agree with itself on every scenario: a scenario that
        // the model cannot follow (say, a release of a grant that never
        // happened) would fail every store.
        for c in all_checks() {
            if let CheckKind::Scenario(steps) = c.kind {
                let steps = steps();
                assert!(!steps.is_empty(), "{}", c.spec.id);
                runner::dry_run(&steps).unwrap_or_else(|e| panic!("{}: {e}", c.spec.id));
            }
        }
    }
    #[test]
    fn needs_follow_what_each_check_does() {
        let specs = ConformanceSuite.checks();
        assert_eq!(specs.len(), all_checks().len());
        let spec = |id: &str| *specs.iter().find(|s| s.id == id).expect(id);
        // Exact expiry instants: the server's clock is moved.
        assert_eq!(
            spec("conformance.lease.expiry-at-instant").needs,
            Needs::ManagedServer
        );
        assert_eq!(
            spec("conformance.lease.take-free-tree").needs,
            Needs::AnyServer
        );
        assert_eq!(
            spec("conformance.lease.take-races").needs,
            Needs::ManagedServer
        );
        // The whole keyspace read.
        assert_eq!(
            spec("conformance.lease.odd-ids-inside-prefix").needs,
            Needs::AllKeys
        );
        // The store's keys under the prefix, on any server.
        assert_eq!(spec(BYTES_PER_TREE).needs, Needs::StoreKeys);
        assert_eq!(
            spec("conformance.lease.kept-executions-not-in-redis").needs,
            Needs::StoreKeys
        );
        assert_eq!(
            spec("conformance.server.replica-refused").needs,
            Needs::OwnServers
        );
        assert!(spec("conformance.server.replica-refused")
            .contracts
            .is_empty());
        assert_eq!(
            spec("conformance.queue.save-and-read").contracts,
            &[Contract::Queue]
        );
    }

    #[test]
    fn figures_count_each_verdict_and_read_bytes_per_tree_from_its_evidence() {
        use harness::Verdict;
        let spec = ConformanceSuite
            .checks()
            .into_iter()
            .find(|s| s.id == BYTES_PER_TREE)
            .unwrap();
        let mut bytes = spec.result(SUITE, Verdict::Pass, "");
        bytes.evidence = serde_json::to_value(BytesPerTreeEvidence {
            trees: 200,
            keys: 200,
            bytes: 40_000,
            bytes_per_tree: 200,
            limit_bytes_per_tree: 1024,
        })
        .unwrap();
        let failed = CheckResult::undecided("conformance.x", SUITE, Verdict::Fail, "");
        let results = [bytes, failed];
        let f = figures(&results);
        assert_eq!(f.bytes_per_tree, Some(serde_json::json!(200)));
        // The tally is every suite's, over every result.
        let tallied = Figures::Conformance(f).tallied(&results, Duration::from_micros(1_234_560));
        let Figures::Conformance(f) = tallied else {
            panic!("not conformance figures")
        };
        assert_eq!((f.checks, f.pass, f.fail, f.warn), (2, 1, 1, 0));
        assert_eq!(f.seconds, 1.235);
        assert_eq!(f.bytes_per_tree, Some(serde_json::json!(200)));
    }
}
