//! `--suite faults` (docs/CONTRACTS.md §2.3): the fault workload in each supported layout
//! on a Redis server of the suite's own, while a seeded nemesis plays —
//! lost replies, dropped and reset connections, latency, partitions, paused
//! instances (zombies), crash and clean restarts, a full server — then the
//! recorded history judged by the pure checkers: linearizability of each
//! tree's lease, children-once, fencing, rate bounds; and the full-server
//! scenario on its own.
//!
//! **Who is judged.** Each role (lease with its fencing set, queue, rate) is
//! played by the store under test when it offers that contract and keeps
//! its state in Redis (or, for the fencing set, offers it at all), else by
//! storeproof's reference (the built-in Redis stores, the SQLite fencing
//! set). A check judges only histories where the store under test played
//! its role: the reference is there to make the workload whole, never to be
//! blamed.
//!
//! **When a check is decided** (a check is about faults meeting the store).
//! A violation the checker finds fails it, whatever else happened. A pass
//! needs more, else the check is `unknown` with a sentence saying what was
//! missing: at least one fault (of the nemesis plans or the targeted
//! episodes) met an operation of the store under test that the check is
//! about ([`crate::evidence`]); the store answered some of those operations
//! other than the drain (which runs after the faults, on a direct
//! connection); and once every fault healed, every instance's reads of the
//! store were answered — an instance whose every operation after the last
//! fault ended unknown, while storeproof's server answers `PING` directly
//! and through every gate, fails the check (the store did not recover);
//! when storeproof's route does not answer, that is `unknown`. An operation
//! the store declined (`unsupported`) settles the check's layout as
//! skipped with the store's message; a declined read or pause is only
//! named.
//!
//! **Where.** A server of the suite's own (restarts and a full server are
//! destructive), started from the local `redis-server`. A store that keeps
//! its state outside Redis (`builtin:sqlite`) follows the virtual clock of
//! the run's managed server, so that clock is moved in step with the own
//! server's.

use std::time::Instant;

use async_trait::async_trait;
use harness::contract::Contract;
use harness::evidence::{Evidence, ReplayedEvidence};
use harness::figures::{FaultsFigures, Figures};
use harness::{CheckResult, CheckSpec, Progress, Subject, Suite, SuiteError, SuiteRun, Verdict};

use self::roles::layouts;
use self::verdicts::{judge, judge_full_server, Judged};

mod checks;
mod roles;
mod run;
#[cfg(test)]
mod tests;
mod verdicts;

pub use checks::{
    FaultCheck, WorkloadCheck, CHILDREN_ONCE, FENCING, FULL_SERVER, LINEARIZABLE, RATE_BOUNDS,
};
pub use roles::{Player, Roles, WorkloadRun};
pub use run::workload_options;

pub use model::nemesis::FaultsConfig;

const SUITE: &str = "faults";

/// The fault suite.
#[derive(Debug, Clone, Default)]
pub struct FaultsSuite {
    config: FaultsConfig,
}

impl FaultsSuite {
    /// The suite with `config`'s sizes.
    pub fn new(config: FaultsConfig) -> Self {
        FaultsSuite { config }
    }
}

use harness::counterexample::Counterexample;
pub use harness::counterexample::FaultsCounterexample;

#[async_trait]
impl Suite for FaultsSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn checks(&self) -> Vec<CheckSpec> {
        vec![
            LINEARIZABLE,
            CHILDREN_ONCE,
            FENCING,
            RATE_BOUNDS,
            FULL_SERVER,
        ]
    }

    async fn run(
        &self,
        subject: &Subject<'_>,
        to_run: &[CheckSpec],
        progress: &dyn Progress,
    ) -> Result<SuiteRun, SuiteError> {
        let started = Instant::now();
        let wants_workload = to_run.iter().any(|c| c.id != FULL_SERVER.id);
        let mut runs = Vec::new();
        if wants_workload {
            let all = layouts(subject);
            progress.part("faults", all.len() as u64);
            // The layouts start side by side, each with an instance of every
            // name: an adapter's processes are started for all of them now.
            let names: Vec<&str> = (0..self.config.instances)
                .map(harness::gate::drive::instance_name)
                .collect();
            let wanted: Vec<&str> = all.iter().flat_map(|_| names.iter().copied()).collect();
            subject.factory.warm(&wanted);
            // The layouts run side by side: each has its own server, gates,
            // prefix and clocks, and most of a workload's time is spent
            // waiting out its fault plan, not computing.
            let ran = futures_util::future::join_all(all.into_iter().map(|layout| async move {
                let run = self.workload(subject, layout, progress).await;
                progress.step(layout.name());
                run
            }))
            .await;
            for run in ran {
                runs.push(run?);
            }
            SuiteError::unless_an_adapter_broke(subject.factory.as_ref())?;
        }
        let claimed: Vec<Contract> = Contract::COORDINATION
            .into_iter()
            .filter(|c| subject.claims(*c))
            .collect();
        let full = if to_run.iter().any(|c| c.id == FULL_SERVER.id) {
            Some(self.full_server(subject).await?)
        } else {
            None
        };
        SuiteError::unless_an_adapter_broke(subject.factory.as_ref())?;
        let mut checks = Vec::new();
        for spec in to_run {
            let check_started = Instant::now();
            let judged = match FaultCheck::of(spec.id) {
                Some(FaultCheck::FullServer) => match &full {
                    Some((h, room_from)) => judge_full_server(h, *room_from, &claimed),
                    None => continue,
                },
                Some(FaultCheck::Workload(check)) => judge(check, &runs),
                None => Judged {
                    verdict: Verdict::Unknown,
                    reason: "not a check of the faults suite".into(),
                    evidence: Evidence::None,
                    failing: None,
                    violations: Vec::new(),
                },
            };
            let mut result = spec.result(SUITE, judged.verdict, judged.reason);
            result.evidence = judged.evidence;
            result.violations = judged.violations;
            if let Some(i) = judged.failing {
                let run = &runs[i];
                result.counterexample =
                    Some(Counterexample::Faults(Box::new(FaultsCounterexample {
                        layout: run.options.layout,
                        seed: subject.seed,
                        config: self.config.clone(),
                        plans: run.plans.clone(),
                        history: run.history.clone(),
                    })));
            }
            result.seconds = check_started.elapsed().as_secs_f64();
            checks.push(result);
        }
        let figures = FaultsFigures {
            seed: subject.seed,
            workloads: runs.iter().map(|r| r.figures.clone()).collect(),
            seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        };
        Ok(SuiteRun {
            checks,
            figures: Figures::Faults(figures),
        })
    }

    async fn replay(
        &self,
        subject: &Subject<'_>,
        check: &CheckSpec,
        counterexample: Option<&Counterexample>,
        progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError> {
        // The saved history is judged again (the checkers are pure: this
        // always reproduces its verdict) and the same seeded workload runs
        // again on the store given now (its interleaving depends on real
        // timing, the targeted episodes do not); the result is the new run's.
        // Only a workload check saves a history (the full server's check
        // runs a server of its own).
        let saved = match counterexample {
            Some(Counterexample::Faults(f)) => Some((**f).clone()),
            _ => None,
        };
        if let (Some(saved), Some(FaultCheck::Workload(workload))) =
            (saved, FaultCheck::of(check.id))
        {
            progress.line(&format!(
                "faults: the saved {} history, judged again",
                saved.layout.name()
            ));
            let suite = FaultsSuite::new(saved.config.clone());
            let again = suite.workload(subject, saved.layout, progress).await?;
            let saved_run = WorkloadRun {
                history: saved.history.clone(),
                ..again.clone()
            };
            let first = judge(workload, std::slice::from_ref(&saved_run));
            let second = judge(workload, std::slice::from_ref(&again));
            // The verdict is the run's now (after a fix it passes); the
            // saved history's is shown beside it.
            let mut result = check.result(
                SUITE,
                second.verdict,
                format!(
                    "run again with seed {}: {} ({}); the saved history judged again: {} ({})",
                    saved.seed,
                    second.verdict.word(),
                    second.reason,
                    first.verdict.word(),
                    first.reason
                ),
            );
            result.evidence = Evidence::Replayed(Box::new(ReplayedEvidence {
                saved: first.evidence,
                again: second.evidence,
            }));
            return Ok(result);
        }
        let run = self
            .run(subject, std::slice::from_ref(check), progress)
            .await?;
        run.checks
            .into_iter()
            .next()
            .ok_or_else(|| SuiteError::Setup(format!("{} gave no verdict", check.id)))
    }
}
