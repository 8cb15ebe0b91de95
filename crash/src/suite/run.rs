//! A whole crash run: the series its checks need, their figures, and the
//! verdict of each check.

use std::sync::Arc;
use std::time::Instant;

use harness::figures::{CrashFigures, KillFigures, SeriesFigures};
use harness::store::StoreFactory;
use harness::{CheckResult, CheckSpec, Progress, SuiteError};

use super::series::{series, Probe, Series, Setting};
use super::verdicts::Findings;
use super::{BackendChoice, CrashConfig, Rounds, NAME};

/// Runs the series `to_run` needs and judges each check of `to_run`.
/// `Err(SuiteError::Setup)` when the first server cannot start (nothing ran
/// yet; later, its series' checks are unknown); `Err(SuiteError::AdapterFailed)` when an adapter broke.
pub(super) async fn run_checks(
    factory: Arc<dyn StoreFactory>,
    prefix: String,
    config: &CrashConfig,
    rounds: Option<&Rounds>,
    to_run: &[CheckSpec],
    progress: &dyn Progress,
) -> Result<(Vec<CheckResult>, CrashFigures), SuiteError> {
    let started = Instant::now();
    let wanted = |setting: Setting| {
        to_run
            .iter()
            .any(|c| setting.judged_by().iter().any(|j| j.id == c.id))
    };
    let steps: usize = Setting::ALL
        .into_iter()
        .filter(|s| wanted(*s))
        .map(|s| s.kills_run(config, rounds))
        .sum();
    progress.part(NAME, steps as u64);
    let docker_wanted = config.backend != BackendChoice::Process
        && (wanted(Setting::Required) || wanted(Setting::OptOut));
    if docker_wanted {
        // What runs killed with SIGKILL left behind goes first (no engine:
        // nothing to reap, and the backend choice says the rest).
        if let Ok(docker) = crate::docker::docker_available().await {
            match crate::docker::reap_dead_runs(&docker).await {
                Ok(r) if r.containers.is_empty() && r.volumes.is_empty() => {}
                Ok(r) => progress.line(&format!(
                    "crash: removed what dead runs left behind: containers {}; volumes {}",
                    r.containers.join(", "),
                    r.volumes.join(", ")
                )),
                Err(e) => progress.line(&format!(
                    "crash: could not remove what dead runs left behind: {e}"
                )),
            }
        }
    }
    let mut runs = Vec::new();
    for setting in Setting::ALL {
        let asked = setting.kills_run(config, rounds);
        // A part of the run with no kill of this series starts no server.
        let s = if !wanted(setting) || (rounds.is_some() && asked == 0) {
            Series::not_run(0, None)
        } else {
            match series(&factory, &prefix, config, rounds, setting, progress).await {
                Ok(s) => s,
                // The first server that cannot start (Docker asked for and
                // absent, no redis-server): nothing ran, a setup error.
                Err(e) if runs.iter().all(|s: &Series| s.rounds.is_empty()) => {
                    return Err(SuiteError::Setup(e))
                }
                Err(e) => Series::not_run(asked, Some(format!("its server could not start: {e}"))),
            }
        };
        SuiteError::unless_an_adapter_broke(factory.as_ref())?;
        runs.push(s);
    }
    let [required, opted, always, everysec] = <[Series; 4]>::try_from(runs)
        .map_err(|_| SuiteError::Setup("the crash suite lost a series".into()))?;
    let backend = [&required, &opted]
        .into_iter()
        .find(|s| !s.rounds.is_empty() || s.trouble.is_some())
        .map_or("process", |s| s.backend);
    let mut figures = CrashFigures {
        backend: backend.to_string(),
        contracts: config.contracts.clone(),
        docker_unavailable: required.fallback.clone(),
        kills: required.rounds.len(),
        per_kill: required.figures(),
        trouble: required.trouble.clone(),
        seed: config.seed,
        seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        ..CrashFigures::default()
    };
    *figures.total = KillFigures::total(&figures.per_kill);
    figures.acknowledged = figures.total.acknowledged();
    figures.lost = figures.total.lost();
    *figures.opt_out = SeriesFigures::of(opted.figures(), opted.asked, opted.trouble.clone());
    figures.power_loss.backend = "process".into();
    figures.power_loss.always =
        SeriesFigures::of(always.figures(), always.asked, always.trouble.clone());
    figures.power_loss.everysec_opted_out =
        SeriesFigures::of(everysec.figures(), everysec.asked, everysec.trouble.clone());
    let probes = &required.probes;
    let count = |f: fn(&Probe) -> bool| probes.iter().filter(|p| f(p)).count();
    figures.down_server.probes = probes.len();
    figures.down_server.acknowledged = count(|p| matches!(p, Probe::Acknowledged(_)));
    figures.down_server.refused = count(|p| matches!(p, Probe::Refused(_)));
    figures.down_server.silent = count(|p| *p == Probe::Silent);
    figures.down_server.server_up = count(|p| matches!(p, Probe::ServerUp(_)));
    *figures.opt_out_reference = SeriesFigures::of(
        opted.reference_figures(),
        opted.asked,
        opted.trouble.clone(),
    );
    figures.power_loss.everysec_reference = SeriesFigures::of(
        everysec.reference_figures(),
        everysec.asked,
        everysec.trouble.clone(),
    );
    let findings = Findings {
        config,
        spec: factory.spec(),
        required: &required,
        opted: &opted,
        always: &always,
        everysec: &everysec,
        figures: &figures,
    };
    let checks = to_run.iter().map(|spec| findings.check(spec)).collect();
    Ok((checks, figures))
}
