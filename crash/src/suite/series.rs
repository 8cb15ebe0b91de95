//! A series of kills: the server settings each runs under, the backend it
//! runs on, and its kill rounds one after another on one server.

use std::sync::Arc;
use std::time::Duration;

use harness::figures::{KillFigures, SeriesFigures};
use harness::server::ServerKind;
use harness::store::{Hello, StoreFactory, OPT_OUT_WRITES_MAY_BE_LOST};
use harness::{CheckSpec, Progress};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use stores::redis::RedisStoreFactory;

use crate::backend::{CrashBackend, CrashError};
use crate::verify::{Kept, Round};

use super::checks::{
    CHILDREN, CLAIMS, COMPLETED_ONCE, DOCKER, DOWN_SERVER, EPOCHS, NEXT_TAKE, OPT_OUT, PAUSES,
    POWER_ALWAYS, POWER_EVERYSEC, RENEWS,
};
use super::round::{kill_round, Writers};
use super::{BackendChoice, CrashConfig, Rounds};

/// Acknowledged writes a round waits for before its kill may land.
pub(super) const MIN_ACKED_PER_ROUND: u64 = 20;

/// How long a round's workload may take to acknowledge [`MIN_ACKED_PER_ROUND`] writes.
pub(super) const WORKLOAD_TIMEOUT: Duration = Duration::from_secs(20);

/// How much longer, once [`MIN_ACKED_PER_ROUND`] writes are acknowledged, a
/// round waits for a write of every kind the store is sent (each crash check
/// judges only writes of its own kind); the kill then lands anyway.
pub(super) const KINDS_WAIT: Duration = Duration::from_secs(3);

/// How long a new instance may take, while the server is down, to answer
/// its hello and one write ([`DOWN_SERVER`]).
pub(super) const PROBE_WAIT: Duration = Duration::from_secs(3);

/// The settings a series of kills runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Setting {
    /// The required settings, SIGKILL: nothing may be lost.
    Required,
    /// The append-only file off and the opt-out, SIGKILL: the loss must show on the reference store.
    OptOut,
    /// The required settings, power cut: nothing may be lost.
    PowerAlways,
    /// appendfsync everysec and the opt-out, power cut: the loss should show on the reference store.
    PowerEverysec,
}

/// What a new instance of the store did while the killed server was down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Probe {
    /// Its hello or its write answered an error, in words: nothing acknowledged.
    Refused(String),
    /// No answer within [`PROBE_WAIT`]: nothing acknowledged.
    Silent,
    /// Its hello and its write were answered ok, in words: its state is
    /// not on the server it was given.
    Acknowledged(String),
    /// Its write was answered ok, but storeproof's own server answered
    /// `PING` then too (the kill did not hold): nothing to judge.
    ServerUp(String),
}

impl Setting {
    pub(super) const ALL: [Setting; 4] = [
        Setting::Required,
        Setting::OptOut,
        Setting::PowerAlways,
        Setting::PowerEverysec,
    ];

    /// The checks judged on its kills.
    pub(super) fn judged_by(self) -> &'static [CheckSpec] {
        match self {
            Setting::Required => &[
                EPOCHS,
                NEXT_TAKE,
                RENEWS,
                CHILDREN,
                CLAIMS,
                COMPLETED_ONCE,
                PAUSES,
                DOWN_SERVER,
                DOCKER,
            ],
            Setting::OptOut => &[OPT_OUT],
            Setting::PowerAlways => &[POWER_ALWAYS],
            Setting::PowerEverysec => &[POWER_EVERYSEC],
        }
    }

    pub(super) fn kills(self, config: &CrashConfig) -> usize {
        match self {
            Setting::Required => config.kills,
            Setting::OptOut => config.opt_out_kills,
            Setting::PowerAlways | Setting::PowerEverysec => config.power_losses,
        }
    }

    /// Whether kill `k` of this series runs: every kill, or those of `rounds`.
    pub(super) fn runs(self, rounds: Option<&Rounds>, k: usize) -> bool {
        rounds.is_none_or(|r| r.contains(&(self.label(), k)))
    }

    /// The kills of this series that run.
    pub(super) fn kills_run(self, config: &CrashConfig, rounds: Option<&Rounds>) -> usize {
        (0..self.kills(config))
            .filter(|k| self.runs(rounds, *k))
            .count()
    }

    /// Whether its kills demonstrate a loss: storeproof's reference store
    /// writes beside the store, and only its loss decides the check.
    pub(super) fn demonstrates(self) -> bool {
        matches!(self, Setting::OptOut | Setting::PowerEverysec)
    }

    /// A simulated power cut instead of a plain SIGKILL (process backend).
    pub(super) fn power(self) -> bool {
        matches!(self, Setting::PowerAlways | Setting::PowerEverysec)
    }

    /// Names the Docker objects and seeds the kill moments.
    pub(super) fn label(self) -> &'static str {
        match self {
            Setting::Required => "durable",
            Setting::OptOut => "optout",
            Setting::PowerAlways => "power-always",
            Setting::PowerEverysec => "power-everysec",
        }
    }

    /// Key prefix tag: each round writes under `<prefix><tag><kill>:`.
    pub(super) fn tag(self) -> &'static str {
        match self {
            Setting::Required => "",
            Setting::OptOut => "o",
            Setting::PowerAlways => "pa",
            Setting::PowerEverysec => "pe",
        }
    }

    /// The server settings and the opt-out given in the hello.
    pub(super) fn settings(self, config: &CrashConfig) -> (Vec<(String, String)>, Option<String>) {
        let opted = Some(OPT_OUT_WRITES_MAY_BE_LOST.to_string());
        match (self, &config.sabotage_settings) {
            (Setting::Required | Setting::PowerAlways, Some(s)) => (s.clone(), opted),
            (Setting::Required | Setting::PowerAlways, None) => (required_settings(), None),
            (Setting::OptOut, _) => (opt_out_settings(), opted),
            (Setting::PowerEverysec, _) => {
                let mut everysec = required_settings();
                everysec.retain(|(k, _)| k != "appendfsync");
                everysec.push(("appendfsync".into(), "everysec".into()));
                (everysec, opted)
            }
        }
    }
}

/// The kills of one setting on one server.
pub(super) struct Series {
    pub(super) rounds: Vec<Round>,
    /// The reference store's rounds, beside `rounds` (demonstrations only).
    pub(super) reference: Vec<Round>,
    /// What the store did while the server was down, per kill (required
    /// settings only, and only for a store whose state is in Redis).
    pub(super) probes: Vec<Probe>,
    /// Harness trouble that stopped the series early (a failed restart,
    /// reconnect, or a workload that did not start): its checks cannot be
    /// decided beyond the rounds done.
    pub(super) trouble: Option<String>,
    /// The kills asked for.
    pub(super) asked: usize,
    pub(super) backend: &'static str,
    pub(super) fallback: Option<String>,
}

impl Series {
    /// A series that did not run: none asked, or its server did not start.
    pub(super) fn not_run(asked: usize, trouble: Option<String>) -> Series {
        Series {
            rounds: Vec::new(),
            reference: Vec::new(),
            probes: Vec::new(),
            trouble,
            asked,
            backend: "process",
            fallback: None,
        }
    }

    pub(super) fn figures(&self) -> Vec<KillFigures> {
        self.rounds.iter().map(|r| r.figures.clone()).collect()
    }

    pub(super) fn reference_figures(&self) -> Vec<KillFigures> {
        self.reference.iter().map(|r| r.figures.clone()).collect()
    }

    pub(super) fn total(&self) -> KillFigures {
        KillFigures::total(&self.figures())
    }

    /// Every finding of `check`, prefixed with its kill.
    pub(super) fn findings(&self, check: Kept) -> Vec<String> {
        self.rounds
            .iter()
            .flat_map(|r| {
                r.of(check)
                    .iter()
                    .map(move |f| format!("kill {}, {f}", r.figures.kill))
            })
            .collect()
    }

    /// Every finding of every check, prefixed with its kill.
    pub(super) fn all_findings(&self) -> Vec<String> {
        self.rounds
            .iter()
            .flat_map(|r| {
                r.findings
                    .values()
                    .flatten()
                    .map(move |f| format!("kill {}, {f}", r.figures.kill))
            })
            .collect()
    }
}

/// The figures of one series for `stats.crash` and evidence.
pub(super) fn series_figures(s: &Series) -> SeriesFigures {
    SeriesFigures::of(s.figures(), s.asked, s.trouble.clone())
}

pub(super) fn required_settings() -> Vec<(String, String)> {
    [
        ("appendonly", "yes"),
        ("appendfsync", "always"),
        ("no-appendfsync-on-rewrite", "no"),
        ("maxmemory-policy", "noeviction"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

pub(super) fn opt_out_settings() -> Vec<(String, String)> {
    vec![("appendonly".into(), "no".into())]
}

/// Starts a server on the chosen backend; the second value explains a fallback.
pub(super) async fn backend(
    choice: BackendChoice,
    settings: &[(String, String)],
    label: &str,
    server: Option<&ServerKind>,
) -> Result<(Box<dyn CrashBackend>, Option<String>), CrashError> {
    let docker = match choice {
        BackendChoice::Process => None,
        _ => Some(crate::docker::docker_available().await),
    };
    match (choice, docker) {
        (BackendChoice::Process, _) => Ok((
            Box::new(crate::process::ProcessBackend::start(server, settings).await?),
            None,
        )),
        (_, Some(Ok(_))) => Ok((
            Box::new(crate::docker::DockerBackend::start(server, settings, label).await?),
            None,
        )),
        (BackendChoice::Docker, Some(Err(e))) => Err(e),
        (_, Some(Err(e))) => Ok((
            Box::new(crate::process::ProcessBackend::start(server, settings).await?),
            Some(e.to_string()),
        )),
        (_, None) => Err(CrashError("no backend".into())),
    }
}

/// Runs the kills of `setting` on one server. `Err` only when its server
/// cannot start; trouble later ends the series with `trouble` set.
pub(super) async fn series(
    factory: &Arc<dyn StoreFactory>,
    prefix: &str,
    config: &CrashConfig,
    rounds: Option<&Rounds>,
    setting: Setting,
    progress: &dyn Progress,
) -> Result<Series, String> {
    // Only the process backend sees the server's fsyncs.
    let choice = if setting.power() {
        BackendChoice::Process
    } else {
        config.backend
    };
    let kills = setting.kills(config);
    let asked = setting.kills_run(config, rounds);
    let (settings, opt_out) = setting.settings(config);
    let label = format!("{:08x}-{}", config.seed as u32, setting.label());
    let (mut server, fallback) = backend(choice, &settings, &label, config.server.as_ref())
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Series {
        rounds: Vec::new(),
        reference: Vec::new(),
        probes: Vec::new(),
        trouble: None,
        asked,
        backend: server.name(),
        fallback,
    };
    let url = server.url();
    // storeproof's own store, on a file of its own for the run of the series.
    let workdir = tempfile::tempdir().map_err(|e| format!("no work directory: {e}"))?;
    let reference: Option<Arc<dyn StoreFactory>> = setting.demonstrates().then(|| {
        Arc::new(RedisStoreFactory::new(
            workdir.path().join("reference.sqlite"),
        )) as Arc<dyn StoreFactory>
    });
    let probe = setting == Setting::Required && factory.keeps_state_in_redis();
    let mut rng = StdRng::seed_from_u64(config.seed ^ label.len() as u64);
    for k in 0..kills {
        let round_prefix = format!("{prefix}{}{k}:", setting.tag());
        let hello = |instance: String| Hello {
            instance,
            redis_url: url.clone(),
            prefix: round_prefix.clone(),
            opt_out: opt_out.clone(),
        };
        // Every kill's draws are made, run or not, so a kill keeps its
        // moment and writers whichever part of the run it falls in.
        let (round_seed, delay_ms) = (rng.random::<u64>(), rng.random_range(0..150));
        if !setting.runs(rounds, k) {
            continue;
        }
        let round = kill_round(
            Writers {
                store: factory,
                reference: reference.as_ref(),
                probe,
            },
            &hello,
            config,
            round_seed,
            delay_ms,
            setting.power(),
            &mut *server,
            k,
        )
        .await;
        progress.step("");
        match round {
            Ok(round) => {
                progress.line(&format!(
                    "crash ({}{}{}): kill {}/{kills}: {}{}",
                    out.backend,
                    if setting.power() { ", power cut" } else { "" },
                    if opt_out.is_some() { ", opted out" } else { "" },
                    k + 1,
                    round.store.figures.sentence_of(&config.contracts),
                    round.reference.as_ref().map_or(String::new(), |r| format!(
                        "; the reference store: {} of {} lost",
                        r.figures.lost(),
                        r.figures.acknowledged()
                    ))
                ));
                out.rounds.push(round.store);
                out.reference.extend(round.reference);
                out.probes.extend(round.probe);
            }
            Err(trouble) => {
                let trouble = format!("kill {} of {kills}: {trouble}", k + 1);
                progress.line(&format!("crash ({}): {trouble}", out.backend));
                out.trouble = Some(trouble);
                break;
            }
        }
    }
    if let Err(e) = server.destroy().await {
        // The verdicts stand; what is left is said, with how to remove it.
        progress.line(&format!("crash: could not remove the server: {e}"));
    }
    Ok(out)
}
