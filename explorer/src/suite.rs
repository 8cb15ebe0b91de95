//! The explorer as a [`Suite`]: its checks declared once (one per
//! [`Property`], each about the lease contract and needing worlds it can
//! restore: a managed server for a store on Redis, a copy of itself for a
//! store with no Redis wire; `plan` settles them for other stores and runs), and a run that explores
//! on a blocking thread and reports what the run asked for.

use std::time::Instant;

use async_trait::async_trait;
use harness::figures::Figures;
use harness::{CheckResult, Verdict};
use harness::{CheckSpec, Progress, Subject, Suite, SuiteError, SuiteRun};

use crate::property::Property;
use crate::run::{
    explore_part, millis, replay_schedule_on, Counterexample, ExplorerConfig, ExplorerOutcome,
    ExplorerPart,
};

/// The suite's name, as `--suite` and the report write it.
const NAME: &str = "explorer";

/// The interleaving explorer, sized by its config; the seed and the store
/// come from the [`Subject`].
pub struct ExplorerSuite {
    config: ExplorerConfig,
    part: ExplorerPart,
}

impl ExplorerSuite {
    /// The explorer with `config`'s depth, walks, threads and skews (its
    /// `seed` is replaced by the subject's when it runs).
    pub fn new(config: ExplorerConfig) -> ExplorerSuite {
        Self::with_part(config, ExplorerPart::default())
    }

    /// The explorer on `part` of that work (a shard's: some skews'
    /// searches, a range of walks); every check is decided on the part.
    pub fn with_part(config: ExplorerConfig, part: ExplorerPart) -> ExplorerSuite {
        ExplorerSuite { config, part }
    }
}

#[async_trait]
impl Suite for ExplorerSuite {
    fn name(&self) -> &'static str {
        NAME
    }

    fn checks(&self) -> Vec<CheckSpec> {
        Property::ALL.map(Property::check).to_vec()
    }

    /// Explores every skew and the walks of its part, whatever `to_run`
    /// holds (one exploration decides every check), and returns the results
    /// of `to_run` only. Nothing to run: nothing is explored.
    async fn run(
        &self,
        subject: &Subject<'_>,
        to_run: &[CheckSpec],
        progress: &dyn Progress,
    ) -> Result<SuiteRun, SuiteError> {
        // The contracts the store claims and the run asks checks of: each
        // is explored with searches and walks of its own. A store with no
        // Redis wire is explored on a copy of its lease rows alone.
        let contracts: Vec<_> = crate::property::EXPLORED
            .into_iter()
            .filter(|c| subject.claims(*c))
            .filter(|c| {
                to_run
                    .iter()
                    .any(|spec| spec.id != Property::HarnessOk.id() && spec.contracts.contains(c))
            })
            .filter(|c| {
                *c == harness::contract::Contract::Lease || subject.factory.keeps_state_in_redis()
            })
            .collect();
        // --fail-fast stops only at a violation of a check asked for.
        let stop_on = Property::ALL
            .into_iter()
            .filter(|p| to_run.iter().any(|spec| spec.id == p.id()))
            .collect();
        let config = ExplorerConfig {
            seed: subject.seed,
            contracts,
            stop_on,
            server: subject.server_kind().cloned(),
            ..self.config.clone()
        };
        if to_run.is_empty() {
            return Ok(SuiteRun {
                checks: Vec::new(),
                figures: Figures::Explorer(Default::default()),
            });
        }
        let started = Instant::now();
        let factory = subject.factory.clone();
        let opt_out = subject.opt_out.clone();
        let prefix = format!("{}x:", subject.run_prefix);
        let part = self.part.clone();
        let searches =
            part.search.as_ref().map_or(config.skews.len(), Vec::len) * config.contracts.len();
        progress.part(NAME, searches as u64 + 1);
        // The exploration blocks (each world drives its own runtime): its
        // progress lines come back over a channel while it runs.
        let (lines, mut said) = tokio::sync::mpsc::unbounded_channel::<String>();
        let mut task = tokio::task::spawn_blocking(move || {
            explore_part(factory, opt_out, prefix, &config, &part, &mut |line| {
                let _ = lines.send(line.to_string());
            })
        });
        let outcome: ExplorerOutcome = loop {
            tokio::select! {
                Some(line) = said.recv() => {
                    progress.step("");
                    progress.line(&line);
                }
                joined = &mut task => {
                    // Lines sent just before it returned.
                    while let Ok(line) = said.try_recv() {
                        progress.step("");
                        progress.line(&line);
                    }
                    break joined.map_err(|e| {
                        SuiteError::Setup(format!("the explorer stopped unexpectedly: {e}"))
                    })?;
                }
            }
        };
        SuiteError::unless_an_adapter_broke(subject.factory.as_ref())?;
        let ExplorerOutcome {
            checks,
            mut figures,
            ..
        } = outcome;
        figures.wall_seconds = Some(millis(started.elapsed().as_secs_f64()));
        // A check of a contract that was not explored (a store with no
        // Redis wire is explored on its lease rows alone) says so.
        let checks: Vec<_> = to_run
            .iter()
            .map(|spec| {
                checks.iter().find(|c| c.id == spec.id).cloned().unwrap_or_else(|| {
                    spec.result(
                        NAME,
                        Verdict::Skipped,
                        "not explored: a store with no Redis wire is explored on a copy of its lease rows alone",
                    )
                })
            })
            .collect();
        for line in checks.iter().filter_map(|r| r.progress_line()) {
            progress.line(&line);
        }
        Ok(SuiteRun {
            checks,
            figures: Figures::Explorer(figures),
        })
    }

    /// Plays the saved schedule again on a fresh world (the same clocks,
    /// the same actions) and asks whether its property broke again; each
    /// step goes to `progress` as a line.
    async fn replay(
        &self,
        subject: &Subject<'_>,
        check: &CheckSpec,
        counterexample: Option<&harness::counterexample::Counterexample>,
        progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError> {
        let saved: Counterexample = match counterexample {
            Some(harness::counterexample::Counterexample::Explorer(x)) => Ok((**x).clone()),
            _ => Err(()),
        }
        .map_err(|()| {
                SuiteError::Setup(format!(
                    "the replay file holds no explorer schedule for {} (counterexample.property, .schedule)",
                    check.id
                ))
            })?;
        let property = saved.property;
        let schedule = saved.schedule;
        progress.line(&format!(
            "{} steps, clocks {:?}",
            schedule.actions.len(),
            schedule.skews
        ));
        let factory = subject.factory.clone();
        let opt_out = subject.opt_out.clone();
        let prefix = format!("{}x:", subject.run_prefix);
        let server = subject.server_kind().cloned();
        let (last, steps) = tokio::task::spawn_blocking(move || {
            replay_schedule_on(server, factory, opt_out, prefix, &schedule)
        })
        .await
        .map_err(|e| SuiteError::Setup(format!("the replay stopped unexpectedly: {e}")))?;
        for step in &steps {
            progress.line(&format!(
                "{:>2}. {:<40} {}",
                step.step,
                step.what,
                step.answer
                    .as_ref()
                    .unwrap_or(&harness::counterexample::Answer::Nothing)
            ));
        }
        SuiteError::unless_an_adapter_broke(subject.factory.as_ref())?;
        Ok(if let Some(e) = &last.harness_error {
            check.result(
                NAME,
                Verdict::Unknown,
                format!("the replay could not run: {e}"),
            )
        } else if last.broke(property) {
            check.result(
                NAME,
                Verdict::Fail,
                last.violation(property).unwrap_or_default().to_string(),
            )
        } else {
            check.result(NAME, Verdict::Pass, format!("{property} holds"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::contract::Contract;
    use harness::Level;
    use harness::Needs;

    #[test]
    fn every_check_is_a_must_about_its_contract_on_worlds_of_its_own() {
        let suite = ExplorerSuite::new(ExplorerConfig::default());
        let checks = suite.checks();
        assert_eq!(
            checks.iter().map(|c| c.id).collect::<Vec<_>>(),
            Property::ALL.map(Property::id).to_vec()
        );
        for c in checks {
            assert_eq!(c.level, Level::Must, "{}", c.id);
            let explored = match c.id {
                "explorer.exploration-complete" => {
                    &[Contract::Lease, Contract::Queue, Contract::Rate][..]
                }
                id if id.starts_with("explorer.queue.") => &[Contract::Queue][..],
                id if id.starts_with("explorer.rate.") => &[Contract::Rate][..],
                _ => &[Contract::Lease][..],
            };
            assert_eq!(c.contracts, explored, "{}", c.id);
            assert_eq!(c.needs, Needs::Interleavings, "{}", c.id);
            assert!(!c.about.is_empty(), "{}", c.id);
        }
    }
}
