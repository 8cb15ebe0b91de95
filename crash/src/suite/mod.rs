//! The crash suite: for each kill, run the workload on keys of its own,
//! SIGKILL the server at a seeded random moment (once every kind of write
//! the store is sent has been acknowledged), ask a new instance of the store
//! while the server is down, restart it on the same data and check that
//! every acknowledged write is there. Then the same with the append-only
//! file off and the opt-out given, and with simulated power cuts. In the
//! series meant to lose writes, storeproof's reference store (the built-in
//! Redis store) writes beside the store on the same server: its loss shows
//! the kills are real; the store is never failed for keeping more than its
//! server (PROTOCOL never asks a store to lose writes).
//!
//! Each kill round stands alone: its own key prefix and its own record of
//! what was sent and acknowledged, so a kill's figures and verdicts are its
//! own and a loss is never inherited from an earlier kill. The verdicts are
//! pure functions of those records and of what the restarted server showed
//! ([`crate::verify`]).

use async_trait::async_trait;
use harness::contract::Contract;
use harness::figures::Figures;
use harness::server::ServerKind;
use harness::{CheckResult, CheckSpec, Progress, Subject, Suite, SuiteError, SuiteRun, Verdict};

mod checks;
mod demonstrations;
mod round;
mod run;
mod series;
#[cfg(test)]
mod tests;
mod verdicts;

pub use checks::{CHECKS, CHILDREN, CLAIMS, COMPLETED_ONCE, EPOCHS, NEXT_TAKE, PAUSES, RENEWS};
use run::run_checks;
use series::Setting;
pub use verdicts::KillHistory;

/// Which backend runs the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// Docker when the engine answers, else the process backend (said in the report).
    Auto,
    /// Docker only: the server in a container storeproof builds, killed with
    /// `docker kill -s KILL`; no engine is a setup error, not a fallback.
    Docker,
    /// The process backend only: a local `redis-server` killed with `SIGKILL`, no Docker.
    Process,
}

/// How big a crash run is.
#[derive(Debug, Clone)]
pub struct CrashConfig {
    /// Kills with the required settings.
    pub kills: usize,
    /// Kills with the append-only file off and the opt-out given.
    pub opt_out_kills: usize,
    /// Simulated power cuts per setting (appendfsync always, then everysec
    /// opted out), on the process backend.
    pub power_losses: usize,
    /// Writers running when the server is killed.
    pub instances: usize,
    /// Seeds every kill moment and every writer. [`CrashSuite`] takes it
    /// from the [`Subject`].
    pub seed: u64,
    /// Which backend runs (and kills) the server.
    pub backend: BackendChoice,
    /// Replaces the required settings of the runs that must lose nothing
    /// (given with the opt-out). Only to prove that their checks can fail:
    /// `None` in every real run.
    pub sabotage_settings: Option<Vec<(String, String)>>,
    /// The contracts the store claims (its hello): the workload writes only
    /// to these. [`CrashSuite`] takes them from the [`Subject`].
    pub contracts: Vec<Contract>,
    /// The kind of server killed (the run's, `certify --server`; the default
    /// binary when `None`), on either backend. [`CrashSuite`] takes it from
    /// the [`Subject`].
    pub server: Option<ServerKind>,
}

impl CrashConfig {
    /// `kills` kills, `opt_out_kills` opted-out kills and `power_losses`
    /// power cuts per setting on `backend`, with 4 writers, the required
    /// settings; seed and contracts are the subject's when run as a suite.
    pub fn new(
        kills: usize,
        opt_out_kills: usize,
        power_losses: usize,
        backend: BackendChoice,
    ) -> CrashConfig {
        CrashConfig {
            kills,
            opt_out_kills,
            power_losses,
            instances: 4,
            seed: 0,
            backend,
            sabotage_settings: None,
            contracts: Contract::COORDINATION.to_vec(),
            server: None,
        }
    }
}

use harness::counterexample::Counterexample;
pub use harness::counterexample::CrashRerun;

/// The suite's name, as `--suite` and the report write it.
const NAME: &str = "crash";

/// The crash suite as `certify` drives it: [`CrashSuite::new`] with the
/// sizes and backend, then [`Suite::run`] on the subject.
pub struct CrashSuite {
    config: CrashConfig,
    /// The kill rounds to run (`--shard`): every round when `None`.
    rounds: Option<Rounds>,
}

/// A set of kill rounds, each named by its series' label (see
/// [`CrashSuite::series`]) and its index in the series, from 0.
pub type Rounds = std::collections::BTreeSet<(&'static str, usize)>;

/// One series of kills as [`CrashSuite::series`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesPlan {
    /// Its label (`durable`, `optout`, `power-always`, `power-everysec`).
    pub label: &'static str,
    /// The kills it is asked for at this size.
    pub kills: usize,
    /// The ids of the checks judged on its kills.
    pub checks: Vec<&'static str>,
}

impl CrashSuite {
    /// A crash suite of this size; its seed and contracts are the subject's.
    pub fn new(config: CrashConfig) -> CrashSuite {
        CrashSuite {
            config,
            rounds: None,
        }
    }

    /// The same suite running only `rounds` (a shard's part). Each round
    /// keeps its number and its seeded moment and writers, so the rounds of
    /// all parts together are exactly the rounds of the whole run; a
    /// series judges only the rounds it ran.
    pub fn only_rounds(self, rounds: Rounds) -> CrashSuite {
        CrashSuite {
            rounds: Some(rounds),
            ..self
        }
    }

    /// The series of kills this suite runs, in run order, with the checks
    /// judged on each.
    pub fn series(&self) -> Vec<SeriesPlan> {
        Setting::ALL
            .into_iter()
            .map(|s| SeriesPlan {
                label: s.label(),
                kills: s.kills(&self.config),
                checks: s.judged_by().iter().map(|c| c.id).collect(),
            })
            .collect()
    }
}

#[async_trait]
impl Suite for CrashSuite {
    fn name(&self) -> &'static str {
        NAME
    }

    fn checks(&self) -> Vec<CheckSpec> {
        CHECKS.to_vec()
    }

    async fn run(
        &self,
        subject: &Subject<'_>,
        to_run: &[CheckSpec],
        progress: &dyn Progress,
    ) -> Result<SuiteRun, SuiteError> {
        let config = CrashConfig {
            seed: subject.seed,
            contracts: subject.contracts.clone(),
            server: subject.server_kind().cloned(),
            ..self.config.clone()
        };
        let prefix = format!("{}k:", subject.run_prefix);
        let (checks, figures) = run_checks(
            subject.factory.clone(),
            prefix,
            &config,
            self.rounds.as_ref(),
            to_run,
            progress,
        )
        .await
        .map_err(|e| match e {
            SuiteError::Setup(e) => {
                SuiteError::Setup(format!("the crash suite could not run: {e}"))
            }
            other => other,
        })?;
        Ok(SuiteRun {
            checks,
            figures: Figures::Crash(figures),
        })
    }

    /// Repeats the saved crash run (its seed, sizes, backend and contracts)
    /// and reads the check's verdict from it.
    async fn replay(
        &self,
        subject: &Subject<'_>,
        check: &CheckSpec,
        counterexample: Option<&Counterexample>,
        progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError> {
        let rerun: CrashRerun = match counterexample {
            Some(Counterexample::Crash(rerun)) => Ok(rerun.clone()),
            _ => Err(()),
        }
        .map_err(|()| {
                SuiteError::Setup(format!(
                    "the replay file holds no crash run to repeat for {} (counterexample.seed, kills, opt_out_kills, power_losses)",
                    check.id
                ))
            })?;
        let config = CrashConfig {
            kills: rerun.kills,
            opt_out_kills: rerun.opt_out_kills,
            power_losses: rerun.power_losses,
            instances: rerun.instances,
            seed: rerun.seed,
            backend: match rerun.backend.as_str() {
                "process" => BackendChoice::Process,
                "docker" => BackendChoice::Docker,
                _ => BackendChoice::Auto,
            },
            sabotage_settings: None,
            contracts: rerun.contracts,
            server: subject.server_kind().cloned(),
        };
        progress.line(&format!(
            "seed {}, {} kills, {} opted-out kills, {} power cuts per setting",
            config.seed, config.kills, config.opt_out_kills, config.power_losses
        ));
        let prefix = format!("{}k:", subject.run_prefix);
        let (checks, _) = run_checks(
            subject.factory.clone(),
            prefix,
            &config,
            None,
            &[*check],
            progress,
        )
        .await
        .map_err(|e| match e {
            SuiteError::Setup(e) => {
                SuiteError::Setup(format!("the crash suite could not run: {e}"))
            }
            other => other,
        })?;
        Ok(checks
            .into_iter()
            .find(|c| c.id == check.id)
            .unwrap_or_else(|| {
                check.result(NAME, Verdict::Unknown, "the crash run left no verdict")
            }))
    }
}
