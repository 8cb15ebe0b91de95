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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use harness::contract::Contract;
use harness::contract::Request;
use harness::figures::{CrashFigures, Figures, KillFigures, SeriesFigures};
use harness::store::redis::RedisStoreFactory;
use harness::store::{Hello, StoreFactory, OPT_OUT_WRITES_MAY_BE_LOST};
use harness::{CheckResult, Level, Verdict};
use harness::{CheckSpec, Needs, Progress, Subject, Suite, SuiteError, SuiteRun};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend::{CrashBackend, CrashError};
use crate::verify::{judge_round, observe, Kept, Round};
use crate::workload::{self, wall_ms, Acked};
use harness::History;

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
        }
    }
}

const LEASE: &[Contract] = &[Contract::Lease];
const QUEUE: &[Contract] = &[Contract::Queue];
const RATE: &[Contract] = &[Contract::Rate];
/// A check of the whole workload is judged on whichever contracts are claimed.
const WHOLE: &[Contract] = &Contract::COORDINATION;

const fn must(id: &'static str, contracts: &'static [Contract], about: &'static str) -> CheckSpec {
    CheckSpec {
        id,
        level: Level::Must,
        contracts,
        needs: Needs::OwnServers,
        about,
    }
}

/// Every acknowledged epoch is on the restarted server.
pub const EPOCHS: CheckSpec = must(
    "crash.acknowledged-epochs-survive",
    LEASE,
    "every epoch granted before a SIGKILL is on the restarted server",
);
/// The first take after a restart continues above every acknowledged epoch.
pub const NEXT_TAKE: CheckSpec = must(
    "crash.next-take-continues",
    LEASE,
    "the first take after a restart is granted above every acknowledged epoch of its tree",
);
/// Every acknowledged renew still runs to its expiry.
pub const RENEWS: CheckSpec = must(
    "crash.acknowledged-renews-survive",
    LEASE,
    "every acknowledged renew still runs to its expiry on the restarted server",
);
/// Every acknowledged child is on the restarted server.
pub const CHILDREN: CheckSpec = must(
    "crash.acknowledged-children-survive",
    QUEUE,
    "every child saved before a SIGKILL is on the restarted server",
);
/// Every acknowledged claim still holds, and no claimed child is handed out again.
pub const CLAIMS: CheckSpec = must(
    "crash.acknowledged-claims-survive",
    QUEUE,
    "every acknowledged claim still holds after a restart; no claimed child is handed out again",
);
/// Every completed child stays done.
pub const COMPLETED_ONCE: CheckSpec = must(
    "crash.children-completed-once",
    QUEUE,
    "every completed child stays done after a restart and is never handed out again",
);
/// Every acknowledged pause is in force on the restarted server.
pub const PAUSES: CheckSpec = must(
    "crash.acknowledged-pauses-survive",
    RATE,
    "every acknowledged provider pause is in force on the restarted server",
);
/// With the append-only file off, every kill loses writes of storeproof's
/// own reference store: the kills are real. A demonstration of the
/// harness, never the store's duty: the store's own figures are beside it.
pub const OPT_OUT: CheckSpec = must(
    "crash.opt-out-loses",
    WHOLE,
    "with appendonly no, every kill loses acknowledged writes of storeproof's reference store (the built-in Redis store) run beside the store: the kills are real",
);
/// Power cuts with appendfsync always lose nothing.
pub const POWER_ALWAYS: CheckSpec = must(
    "crash.power-loss-always-keeps",
    WHOLE,
    "with appendfsync always, a power cut (the AOF cut back to its last fsync) loses nothing",
);
/// Power cuts with appendfsync everysec (opted out) lose writes of the
/// reference store: why always is required. A demonstration, as [`OPT_OUT`].
pub const POWER_EVERYSEC: CheckSpec = CheckSpec {
    level: Level::Should,
    ..must(
        "crash.power-loss-everysec-loses",
        WHOLE,
        "with appendfsync everysec (opted out), a power cut loses acknowledged writes of storeproof's reference store run beside the store: why always is required",
    )
};
/// While the killed server is down, the store acknowledges nothing.
pub const DOWN_SERVER: CheckSpec = must(
    "crash.down-server-unavailable",
    WHOLE,
    "while the killed server is down, a new instance of the store acknowledges nothing: its hello or its write answers an error (PROTOCOL: unavailable when the server cannot be reached)",
);
/// The kills ran in a Docker container.
pub const DOCKER: CheckSpec = CheckSpec {
    level: Level::Should,
    ..must(
        "crash.docker-backend",
        WHOLE,
        "the kills ran on the server in a container built here (docker kill -s KILL)",
    )
};

/// Every check of the crash suite, typed: a new one is a variant the
/// verdict's match must judge (no chain of id comparisons to fall out of).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashCheck {
    /// What a kill must keep, judged on the required setting's kills.
    Kept(Kept),
    /// [`OPT_OUT`].
    OptOut,
    /// [`POWER_ALWAYS`].
    PowerAlways,
    /// [`POWER_EVERYSEC`].
    PowerEverysec,
    /// [`DOWN_SERVER`].
    DownServer,
    /// [`DOCKER`].
    Docker,
}

impl CrashCheck {
    /// Every one but the kept ones, with its declaration.
    const OTHERS: [(CrashCheck, &'static CheckSpec); 5] = [
        (CrashCheck::OptOut, &OPT_OUT),
        (CrashCheck::PowerAlways, &POWER_ALWAYS),
        (CrashCheck::PowerEverysec, &POWER_EVERYSEC),
        (CrashCheck::DownServer, &DOWN_SERVER),
        (CrashCheck::Docker, &DOCKER),
    ];

    /// The check declared with `id`, if the suite has one.
    pub fn of(id: &str) -> Option<CrashCheck> {
        Kept::ALL
            .into_iter()
            .find(|k| k.spec().id == id)
            .map(CrashCheck::Kept)
            .or_else(|| {
                CrashCheck::OTHERS
                    .into_iter()
                    .find(|(_, spec)| spec.id == id)
                    .map(|(check, _)| check)
            })
    }
}

/// Every crash check in report order, with the contracts it is about: a
/// check none of whose contracts the store claims is outside the claim.
pub const CHECKS: [CheckSpec; 12] = [
    EPOCHS,
    NEXT_TAKE,
    RENEWS,
    CHILDREN,
    CLAIMS,
    COMPLETED_ONCE,
    PAUSES,
    DOWN_SERVER,
    OPT_OUT,
    POWER_ALWAYS,
    POWER_EVERYSEC,
    DOCKER,
];

/// What re-runs a failed crash check (its counterexample): the same seed
/// (kill moments and writers), sizes and backend. Thread timing is not
/// replayed, so a re-run repeats the schedule, not every interleaving of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashRerun {
    /// Always `crash-run`.
    pub kind: String,
    /// The run's seed.
    pub seed: u64,
    /// Kills with the required settings.
    pub kills: usize,
    /// Kills opted out.
    pub opt_out_kills: usize,
    /// Power cuts per setting.
    pub power_losses: usize,
    /// Writers.
    #[serde(default = "four")]
    pub instances: usize,
    /// `docker` or `process` (what ran; an older file may say nothing: auto).
    #[serde(default)]
    pub backend: String,
    /// The contracts written (an older file names none: every contract).
    #[serde(default = "every_contract")]
    pub contracts: Vec<Contract>,
    /// The first findings, in words.
    #[serde(default)]
    pub found: Vec<String>,
}

fn four() -> usize {
    4
}

fn every_contract() -> Vec<Contract> {
    Contract::COORDINATION.to_vec()
}

impl CrashRerun {
    /// The kind every crash counterexample names.
    pub const KIND: &'static str = "crash-run";
}

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
        counterexample: Option<&Value>,
        progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError> {
        let rerun: CrashRerun = counterexample
            .cloned()
            .and_then(|c| serde_json::from_value(c).ok())
            .ok_or_else(|| {
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

/// Acknowledged writes a round waits for before its kill may land.
const MIN_ACKED_PER_ROUND: u64 = 20;

/// How long a round's workload may take to acknowledge [`MIN_ACKED_PER_ROUND`] writes.
const WORKLOAD_TIMEOUT: Duration = Duration::from_secs(20);

/// How much longer, once [`MIN_ACKED_PER_ROUND`] writes are acknowledged, a
/// round waits for a write of every kind the store is sent (each crash check
/// judges only writes of its own kind); the kill then lands anyway.
const KINDS_WAIT: Duration = Duration::from_secs(3);

/// How long a new instance may take, while the server is down, to answer
/// its hello and one write ([`DOWN_SERVER`]).
const PROBE_WAIT: Duration = Duration::from_secs(3);

/// The settings a series of kills runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
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
enum Probe {
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
    const ALL: [Setting; 4] = [
        Setting::Required,
        Setting::OptOut,
        Setting::PowerAlways,
        Setting::PowerEverysec,
    ];

    /// The checks judged on its kills.
    fn judged_by(self) -> &'static [CheckSpec] {
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

    fn kills(self, config: &CrashConfig) -> usize {
        match self {
            Setting::Required => config.kills,
            Setting::OptOut => config.opt_out_kills,
            Setting::PowerAlways | Setting::PowerEverysec => config.power_losses,
        }
    }

    /// Whether kill `k` of this series runs: every kill, or those of `rounds`.
    fn runs(self, rounds: Option<&Rounds>, k: usize) -> bool {
        rounds.is_none_or(|r| r.contains(&(self.label(), k)))
    }

    /// The kills of this series that run.
    fn kills_run(self, config: &CrashConfig, rounds: Option<&Rounds>) -> usize {
        (0..self.kills(config))
            .filter(|k| self.runs(rounds, *k))
            .count()
    }

    /// Whether its kills demonstrate a loss: storeproof's reference store
    /// writes beside the store, and only its loss decides the check.
    fn demonstrates(self) -> bool {
        matches!(self, Setting::OptOut | Setting::PowerEverysec)
    }

    /// A simulated power cut instead of a plain SIGKILL (process backend).
    fn power(self) -> bool {
        matches!(self, Setting::PowerAlways | Setting::PowerEverysec)
    }

    /// Names the Docker objects and seeds the kill moments.
    fn label(self) -> &'static str {
        match self {
            Setting::Required => "durable",
            Setting::OptOut => "optout",
            Setting::PowerAlways => "power-always",
            Setting::PowerEverysec => "power-everysec",
        }
    }

    /// Key prefix tag: each round writes under `<prefix><tag><kill>:`.
    fn tag(self) -> &'static str {
        match self {
            Setting::Required => "",
            Setting::OptOut => "o",
            Setting::PowerAlways => "pa",
            Setting::PowerEverysec => "pe",
        }
    }

    /// The server settings and the opt-out given in the hello.
    fn settings(self, config: &CrashConfig) -> (Vec<(String, String)>, Option<String>) {
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
struct Series {
    rounds: Vec<Round>,
    /// The reference store's rounds, beside `rounds` (demonstrations only).
    reference: Vec<Round>,
    /// What the store did while the server was down, per kill (required
    /// settings only, and only for a store whose state is in Redis).
    probes: Vec<Probe>,
    /// Harness trouble that stopped the series early (a failed restart,
    /// reconnect, or a workload that did not start): its checks cannot be
    /// decided beyond the rounds done.
    trouble: Option<String>,
    /// The kills asked for.
    asked: usize,
    backend: &'static str,
    fallback: Option<String>,
}

impl Series {
    /// A series that did not run: none asked, or its server did not start.
    fn not_run(asked: usize, trouble: Option<String>) -> Series {
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

    fn figures(&self) -> Vec<KillFigures> {
        self.rounds.iter().map(|r| r.figures.clone()).collect()
    }

    fn reference_figures(&self) -> Vec<KillFigures> {
        self.reference.iter().map(|r| r.figures.clone()).collect()
    }

    fn total(&self) -> KillFigures {
        KillFigures::total(&self.figures())
    }

    /// Every finding of `check`, prefixed with its kill.
    fn findings(&self, check: Kept) -> Vec<String> {
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
    fn all_findings(&self) -> Vec<String> {
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

fn required_settings() -> Vec<(String, String)> {
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

fn opt_out_settings() -> Vec<(String, String)> {
    vec![("appendonly".into(), "no".into())]
}

/// Starts a server on the chosen backend; the second value explains a fallback.
async fn backend(
    choice: BackendChoice,
    settings: &[(String, String)],
    label: &str,
) -> Result<(Box<dyn CrashBackend>, Option<String>), CrashError> {
    let docker = match choice {
        BackendChoice::Process => None,
        _ => Some(crate::docker::docker_available().await),
    };
    match (choice, docker) {
        (BackendChoice::Process, _) => Ok((
            Box::new(crate::process::ProcessBackend::start(settings).await?),
            None,
        )),
        (_, Some(Ok(_))) => Ok((
            Box::new(crate::docker::DockerBackend::start(settings, label).await?),
            None,
        )),
        (BackendChoice::Docker, Some(Err(e))) => Err(e),
        (_, Some(Err(e))) => Ok((
            Box::new(crate::process::ProcessBackend::start(settings).await?),
            Some(e.to_string()),
        )),
        (_, None) => Err(CrashError("no backend".into())),
    }
}

/// Runs the kills of `setting` on one server. `Err` only when its server
/// cannot start; trouble later ends the series with `trouble` set.
async fn series(
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
    let (mut server, fallback) = backend(choice, &settings, &label)
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

/// Who writes in a kill round: the store, storeproof's reference store
/// beside it (demonstrations), and whether the store is probed while the
/// server is down.
struct Writers<'a> {
    store: &'a Arc<dyn StoreFactory>,
    reference: Option<&'a Arc<dyn StoreFactory>>,
    probe: bool,
}

/// What one kill showed: the store's round, the reference store's, and
/// what the store did while the server was down.
struct KillRound {
    store: Round,
    reference: Option<Round>,
    probe: Option<Probe>,
}

/// The reference store's key prefix in a round: beside the store's, never
/// under it (`…o0:` → `…o0r:`), so no scan of the store's prefix meets it.
fn reference_prefix(prefix: &str) -> String {
    format!("{}r:", prefix.strip_suffix(':').unwrap_or(prefix))
}

/// One store's workload in a round: its history and its instances.
struct Workload {
    history: Arc<Mutex<History>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Workload {
    async fn start(
        factory: &Arc<dyn StoreFactory>,
        hello: impl Fn(usize) -> Hello,
        config: &CrashConfig,
        seed: u64,
        contracts: &[Contract],
        stop: &Arc<AtomicBool>,
    ) -> Result<Workload, String> {
        let history = Arc::new(Mutex::new(History::default()));
        let tasks = workload::start(
            factory,
            hello,
            config.instances,
            seed,
            contracts,
            &history,
            stop,
        )
        .await?;
        Ok(Workload { history, tasks })
    }

    /// What it acknowledged so far (the history is short until the kill
    /// may land: reading it whole is cheap).
    fn acked(&self) -> Acked {
        self.history
            .lock()
            .map(|h| Acked::from_history(&h))
            .unwrap_or_default()
    }

    /// Waits for its instances (they stop on their errors) and returns its history.
    async fn end(self) -> Result<History, String> {
        for t in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
        }
        let history = self
            .history
            .lock()
            .map_err(|_| "the history of the workload is unreadable".to_string())?
            .clone();
        Ok(history)
    }
}

/// One kill: workload (the store's, and the reference store's beside it in
/// a demonstration), kill, the probe of the down server, restart,
/// read-back, judgement. `Err` is harness trouble.
#[allow(clippy::too_many_arguments)]
async fn kill_round(
    writers: Writers<'_>,
    hello: &(dyn Fn(String) -> Hello + Sync),
    config: &CrashConfig,
    seed: u64,
    delay_ms: u64,
    power: bool,
    server: &mut dyn CrashBackend,
    k: usize,
) -> Result<KillRound, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let store = Workload::start(
        writers.store,
        |i| hello(format!("w{i}")),
        config,
        seed,
        &config.contracts,
        &stop,
    )
    .await?;
    let reference_hello = |instance: String| {
        let h = hello(instance);
        Hello {
            prefix: reference_prefix(&h.prefix),
            ..h
        }
    };
    let reference = match writers.reference {
        Some(f) => Some(
            Workload::start(
                f,
                |i| reference_hello(format!("ref{i}")),
                config,
                seed.rotate_left(17),
                &Contract::COORDINATION,
                &stop,
            )
            .await
            .map_err(|e| format!("the reference store: {e}"))?,
        ),
        None => None,
    };
    // The kill lands at a seeded moment once the workload is going: enough
    // writes, and one of each kind the store is sent (or a few seconds more).
    let deadline = Instant::now() + WORKLOAD_TIMEOUT;
    let mut kinds_deadline = None;
    loop {
        let acked = store.acked();
        let enough = acked.writes >= MIN_ACKED_PER_ROUND
            && reference
                .as_ref()
                .is_none_or(|r| r.acked().writes >= MIN_ACKED_PER_ROUND);
        if enough {
            let until = *kinds_deadline.get_or_insert_with(|| Instant::now() + KINDS_WAIT);
            if acked.kinds_missing(&config.contracts).is_empty() || Instant::now() > until {
                break;
            }
        } else if Instant::now() > deadline {
            stop.store(true, Ordering::Relaxed);
            let why = store
                .history
                .lock()
                .map(|h| workload::stopped(&h).join("; "))
                .unwrap_or_default();
            return Err(format!(
                "the workload acknowledged {} writes in {} s, too few to crash it{}",
                acked.writes,
                WORKLOAD_TIMEOUT.as_secs(),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({why})")
                }
            ));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    // The kill lands while the instances write; they stop on their errors.
    let killed = if power {
        server.power_loss().await
    } else {
        server.kill().await
    };
    stop.store(true, Ordering::Relaxed);
    let history = store.end().await?;
    let reference_history = match reference {
        Some(r) => Some(r.end().await?),
        None => None,
    };
    killed.map_err(|e| format!("could not kill the server: {e}"))?;
    let probe = if writers.probe {
        Some(
            probe_down_server(
                writers.store,
                hello(format!("prober{k}")),
                &config.contracts,
                &server.url(),
            )
            .await,
        )
    } else {
        None
    };
    server
        .restart()
        .await
        .map_err(|e| format!("could not restart the server: {e}"))?;
    let store = verify(
        writers.store,
        hello(format!("verifier{k}")),
        &config.contracts,
        k,
        &history,
    )
    .await?;
    let reference = match (writers.reference, reference_history) {
        (Some(f), Some(h)) => Some(
            verify(
                f,
                reference_hello(format!("verifier-ref{k}")),
                &Contract::COORDINATION,
                k,
                &h,
            )
            .await
            .map_err(|e| format!("the reference store: {e}"))?,
        ),
        _ => None,
    };
    Ok(KillRound {
        store,
        reference,
        probe,
    })
}

/// Reads back after the restart, as a new instance `h`, what `history`
/// acknowledged, and judges it (kill `k`, from 0).
async fn verify(
    factory: &Arc<dyn StoreFactory>,
    h: Hello,
    contracts: &[Contract],
    k: usize,
    history: &History,
) -> Result<Round, String> {
    let acked = Acked::from_history(history);
    let (_, mut client) = factory
        .connect(&h, wall_ms())
        .await
        .map_err(|e| format!("the store could not connect after the restart: {e}"))?;
    let queue = contracts.contains(&Contract::Queue);
    let seen = observe(&mut client, &acked, queue, &h.instance).await?;
    Ok(judge_round(k + 1, history, &seen))
}

/// A new instance of the store, while the server is down: its hello, then
/// one write of a contract it claims (names no workload request uses, so
/// nothing judged depends on it even if it lands after the restart). A write
/// acknowledged is held against the store only once storeproof's own `PING`
/// of `server_url` confirms the server was down ([`Probe::ServerUp`] else).
async fn probe_down_server(
    factory: &Arc<dyn StoreFactory>,
    hello: Hello,
    contracts: &[Contract],
    server_url: &str,
) -> Probe {
    let write = if contracts.contains(&Contract::Lease) {
        Request::LeaseTake {
            tree: "tree-probe".into(),
            holder: hello.instance.clone(),
            ttl_ms: LEASE_MS_PROBE,
        }
    } else if contracts.contains(&Contract::Queue) {
        Request::QueueSave {
            child: "child-probe".into(),
            depth: 0,
            payload: "probe".into(),
        }
    } else {
        Request::RatePause {
            provider: "provider-probe".into(),
            until_ms: wall_ms() + 1_000,
        }
    };
    let asked = async {
        let (_, mut client) = match factory.connect(&hello, wall_ms()).await {
            Ok(c) => c,
            Err(e) => return Probe::Refused(format!("hello answered {e}")),
        };
        match client.call(&write.to_call(), wall_ms()).await {
            Ok(reply) => Probe::Acknowledged(format!(
                "hello was answered ok, and {} answered {}",
                write.op(),
                crate::verify::words(&reply)
            )),
            Err(e) => Probe::Refused(format!("{} answered {e}", write.op())),
        }
    };
    match tokio::time::timeout(PROBE_WAIT, asked).await {
        Ok(Probe::Acknowledged(what)) if harness::server::answers_ping(server_url).await => {
            Probe::ServerUp(what)
        }
        Ok(probe) => probe,
        Err(_) => Probe::Silent,
    }
}

/// The lease of the probe's take: short, as the workload's.
const LEASE_MS_PROBE: i64 = workload::LEASE_MS;

/// What a crash check saw, as its evidence: the figures of the kills it
/// judged, and what it found (or the example of a loss shown).
#[derive(Serialize)]
#[serde(untagged)]
enum Evidence<F: Serialize> {
    /// A check that lists what broke, with the history of the first kill
    /// where it broke (only about what was lost there).
    Found {
        figures: F,
        found: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        history: Option<KillHistory>,
    },
    /// A demonstration of loss: the reference store's figures (which decide
    /// it), the store's beside them, and the reference's loss shown first.
    Demonstration {
        reference: F,
        store: F,
        example: Option<String>,
    },
    /// Figures alone.
    Figures { figures: F },
}

/// A part of one kill's history in a failed check's evidence: `kill` and
/// the `events` (the [`History`] shape) of the requests about the first
/// trees, children or providers the check found lost in that kill, each
/// event keeping its index in the kill's whole history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KillHistory {
    /// The kill, from 1.
    pub kill: usize,
    /// Its events about what was lost.
    #[serde(flatten)]
    pub history: History,
}

impl KillHistory {
    /// The events of the first kill of `s` with a finding of `check` (of
    /// any check: `None`) about what it found; `None` when there are none.
    fn first(s: &Series, check: Option<Kept>) -> Option<KillHistory> {
        let round = s.rounds.iter().find(|r| match check {
            Some(k) => !r.of(k).is_empty(),
            None => !r.findings.is_empty(),
        })?;
        let history = round.history_of(check);
        (!history.events.is_empty()).then_some(KillHistory {
            kill: round.figures.kill,
            history,
        })
    }
}

impl<F: Serialize> Evidence<F> {
    fn value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// How a check over one series words its verdict.
struct Judgement<'a> {
    spec: &'a CheckSpec,
    series: &'a Series,
    found: Vec<String>,
    /// The reason when nothing was found and every kill ran.
    pass: String,
    /// The first words of the reason when something was found.
    fail: String,
    /// Why no kill ran, when none was asked for.
    none_asked: &'a str,
    evidence: Value,
    /// The re-run attached to a failure.
    rerun: Option<Value>,
    /// The verdict and reason when every kill ran and found nothing, but
    /// nothing the check is about happened (no write of its kind judged).
    nothing_judged: Option<(Verdict, String)>,
}

/// The verdict of a check over one series: a finding fails it (warns, for a
/// SHOULD check); harness trouble leaves it unknown; no kill asked, skipped.
fn judge(j: Judgement<'_>) -> CheckResult {
    let (verdict, reason) = if !j.found.is_empty() {
        let more = j.found.len().saturating_sub(3);
        (
            Verdict::Fail,
            format!(
                "{}: {}{}",
                j.fail,
                j.found
                    .iter()
                    .take(3)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            ),
        )
    } else if let Some(trouble) = &j.series.trouble {
        (
            Verdict::Unknown,
            format!(
                "could not be decided, the harness failed at {trouble}{}",
                match j.series.rounds.len() {
                    0 => String::new(),
                    n => format!(" (the {n} kill(s) before it showed nothing wrong)"),
                }
            ),
        )
    } else if j.series.rounds.is_empty() {
        (Verdict::Skipped, j.none_asked.to_string())
    } else if let Some(undecided) = j.nothing_judged {
        undecided
    } else {
        (Verdict::Pass, j.pass)
    };
    let mut result = j.spec.result(NAME, verdict, reason);
    result.evidence = j.evidence;
    if verdict == Verdict::Fail {
        result.counterexample = j.rerun;
    }
    result
}

/// The verdict of `crash.docker-backend`: pass when the kills ran in a
/// container, warn when Docker was wanted (auto) but not there, skipped when
/// the process backend was asked for.
pub fn docker_backend_check(
    fallback: Option<&str>,
    choice: BackendChoice,
    evidence: Value,
) -> CheckResult {
    let (verdict, reason) = match (fallback, choice) {
        (Some(e), _) => (
            Verdict::Fail,
            format!("the kills ran on the process backend (kill -9) because {e}"),
        ),
        (None, BackendChoice::Process) => (
            Verdict::Skipped,
            "--crash-backend process was asked for: the kills ran on a managed redis-server (kill -9)"
                .to_string(),
        ),
        (None, _) => (
            Verdict::Pass,
            "the kills ran on the server in a Docker container built here (docker kill -s KILL)"
                .to_string(),
        ),
    };
    let mut result = DOCKER.result(NAME, verdict, reason);
    result.evidence = evidence;
    result
}

/// How a demonstration words its verdict.
struct Demonstrated {
    /// The setting, as the reason opens with it.
    setting: &'static str,
    /// What its kills are called, and one of them.
    kills: &'static str,
    kill: &'static str,
    /// Why no kill ran, when none was asked for.
    none_asked: &'static str,
}

/// The four series of a run and what judging them needs.
struct Findings<'a> {
    config: &'a CrashConfig,
    /// The store's spec (`builtin:redis`, `cmd:…`).
    spec: String,
    required: &'a Series,
    opted: &'a Series,
    always: &'a Series,
    everysec: &'a Series,
    figures: &'a CrashFigures,
}

impl Findings<'_> {
    /// What re-runs this run, with the first of what was `found`.
    fn rerun(&self, found: &[String]) -> Option<Value> {
        let rerun = CrashRerun {
            kind: CrashRerun::KIND.into(),
            seed: self.config.seed,
            kills: self.config.kills,
            opt_out_kills: self.config.opt_out_kills,
            power_losses: self.config.power_losses,
            instances: self.config.instances,
            backend: self.figures.backend.clone(),
            contracts: self.config.contracts.clone(),
            found: found.iter().take(5).cloned().collect(),
        };
        serde_json::to_value(rerun).ok()
    }

    /// A check that every acknowledged write of one kind survived each
    /// SIGKILL. It is decided only on writes of its own kind that were
    /// judged: with none in any kill it is unknown (skipped, with the
    /// store's message, when the store does not offer them).
    fn kept(&self, spec: &CheckSpec, kept: Kept) -> CheckResult {
        let s = self.required;
        let total = s.total();
        let kills = s.rounds.len();
        let sigkills = format!(
            "{kills} SIGKILL{} ({} backend)",
            if kills == 1 { "" } else { "s" },
            self.figures.backend
        );
        let found = s.findings(kept);
        let judged: usize = s.rounds.iter().map(|r| r.judged_of(kept)).sum();
        let kills_judged = s.rounds.iter().filter(|r| r.judged_of(kept) > 0).count();
        let unsupported = s.rounds.iter().find_map(|r| r.unsupported.get(&kept));
        let (unit, what, acked, lost, not_judged) = match kept {
            Kept::Epochs => (
                "epochs",
                "every acknowledged epoch was on the restarted server",
                total.epochs_acknowledged,
                total.epochs_lost,
                total.epochs_not_judged,
            ),
            Kept::NextTake => (
                "epochs",
                "the first take after each restart was granted above every acknowledged epoch of its tree",
                total.epochs_acknowledged,
                total.epochs_lost,
                total.epochs_acknowledged.saturating_sub(judged),
            ),
            Kept::Renews => (
                "renews",
                "every acknowledged renew still ran to its acknowledged expiry on the restarted server",
                total.renews_acknowledged,
                total.renews_lost,
                total.renews_not_judged,
            ),
            Kept::Children => (
                "children",
                "every acknowledged child was on the restarted server",
                total.children_acknowledged,
                total.children_lost,
                total.children_not_judged,
            ),
            Kept::Claims => (
                "claims",
                "every acknowledged claim was still held on the restarted server and no claimed child was handed out again",
                total.claims_acknowledged,
                total.claims_lost,
                total.claims_not_judged,
            ),
            Kept::CompletedOnce => (
                "completions",
                "every completed child stayed done on the restarted server and none was handed out again",
                total.completions_acknowledged,
                total.completions_lost,
                total.completions_not_judged,
            ),
            Kept::Pauses => (
                "pauses",
                "every acknowledged provider pause was in force on the restarted server",
                total.pauses_acknowledged,
                total.pauses_lost,
                total.pauses_not_judged,
            ),
        };
        let unjudged = match (not_judged, kept) {
            (0, _) => String::new(),
            (n, Kept::Renews) => format!(
                ", not judged {n} (released afterwards, ended before the read, or not readable)"
            ),
            (n, _) => format!(", not judged {n}"),
        };
        let figures =
            format!("{unit} acknowledged {acked}, judged {judged}, lost {lost}{unjudged}");
        let in_kills = if kills_judged < kills {
            format!(
                " (judged in {kills_judged} of the {kills} kills: the others had none of its kind to judge)"
            )
        } else {
            String::new()
        };
        let fail = if kept == Kept::NextTake {
            format!(
                "{} take(s) after a restart were not granted above the acknowledged epochs ({sigkills})",
                found.len()
            )
        } else {
            format!("{lost} of {acked} acknowledged {unit} lost across {sigkills}")
        };
        let nothing_judged = (judged == 0).then(|| match unsupported {
            Some(why) => (
                Verdict::Skipped,
                format!("the store does not offer what this check needs: {why} ({figures})"),
            ),
            None => (
                Verdict::Unknown,
                format!(
                    "not decided: no acknowledged write of its kind could be judged in {sigkills} ({})",
                    total.sentence_of(&self.config.contracts)
                ),
            ),
        });
        judge(Judgement {
            spec,
            series: s,
            pass: format!("{what} after each of {sigkills}: {figures}{in_kills}"),
            fail,
            none_asked: "not run: no kill was asked for (--kills 0)",
            evidence: Evidence::Found {
                figures: series_figures(s),
                found: found.clone(),
                history: KillHistory::first(s, Some(kept)),
            }
            .value(),
            rerun: self.rerun(&found),
            found,
            nothing_judged,
        })
    }

    /// While the killed server was down, a new instance of the store
    /// acknowledged nothing (a store whose state is not in Redis: outside it).
    fn down_server(&self, spec: &CheckSpec) -> CheckResult {
        let s = self.required;
        if !s.rounds.is_empty() && s.probes.is_empty() && s.trouble.is_none() {
            let mut r = spec.result(
                NAME,
                Verdict::Skipped,
                "the store keeps its state outside the Redis server it is given: whether it answers while that server is down says nothing",
            );
            r.outside_claim = true;
            return r;
        }
        let found: Vec<String> = s
            .rounds
            .iter()
            .zip(&s.probes)
            .filter_map(|(r, p)| match p {
                Probe::Acknowledged(what) => Some(format!(
                    "kill {}, while the server was down: {what}",
                    r.figures.kill
                )),
                _ => None,
            })
            .collect();
        let refused = s
            .probes
            .iter()
            .filter(|p| matches!(p, Probe::Refused(_)))
            .count();
        let silent = s.probes.iter().filter(|p| **p == Probe::Silent).count();
        let server_up = s
            .probes
            .iter()
            .filter(|p| matches!(p, Probe::ServerUp(_)))
            .count();
        // A probe is decided only if the server was down while it was asked.
        let nothing_judged = (!s.probes.is_empty() && server_up == s.probes.len()).then(|| {
            (
                Verdict::Unknown,
                format!(
                    "not decided: in each of the {server_up} kills the store acknowledged a write while storeproof's own server still answered PING (the kill had not held), so its answer says nothing"
                ),
            )
        });
        let example = s.probes.iter().find_map(|p| match p {
            Probe::Refused(e) => Some(e.clone()),
            _ => None,
        });
        judge(Judgement {
            spec,
            series: s,
            pass: format!(
                "while the server was down after each of {} SIGKILLs, a new instance of the store acknowledged nothing: \
                 {refused} answered an error{}, {silent} gave no answer within {} s{}",
                s.probes.len() - server_up,
                example.map_or(String::new(), |e| format!(" (first: {e})")),
                PROBE_WAIT.as_secs(),
                match server_up {
                    0 => String::new(),
                    n => format!(
                        "; {n} more kill(s) not judged: storeproof's server still answered PING"
                    ),
                }
            ),
            fail: format!(
                "the store acknowledged writes while the server it was given was down ({} of {} kills): its state is not on that server",
                found.len(),
                s.probes.len()
            ),
            none_asked: "not run: no kill was asked for (--kills 0)",
            evidence: serde_json::json!({
                "probes": s.probes.len(),
                "refused": refused,
                "silent": silent,
                "acknowledged": found.len(),
                "server_up": server_up,
            }),
            rerun: self.rerun(&found),
            found,
            nothing_judged,
        })
    }
}

impl Findings<'_> {
    /// With the append-only file off, every kill loses writes of the
    /// reference store: the kills are real. The store's own figures are
    /// reported beside it and never judged (PROTOCOL never asks a store to
    /// lose writes: it may keep more than its server).
    fn opt_out_loses(&self, spec: &CheckSpec) -> CheckResult {
        self.demonstration(
            spec,
            self.opted,
            Demonstrated {
                setting: "with appendonly no",
                kills: "kills",
                kill: "kill",
                none_asked: "not run: no opted-out kill was asked for (--opt-out-kills 0)",
            },
        )
    }

    /// A demonstration over series `s`: decided by the reference store's
    /// rounds alone; a kill where it lost nothing leaves it unknown (the
    /// demonstration did not happen), never the store's failure.
    fn demonstration(&self, spec: &CheckSpec, s: &Series, d: Demonstrated) -> CheckResult {
        let claimed = &self.config.contracts;
        let reference = SeriesFigures::of(s.reference_figures(), s.asked, s.trouble.clone());
        let store = series_figures(s);
        let every = &Contract::COORDINATION;
        let quiet: Vec<String> = s
            .reference
            .iter()
            .filter(|r| r.figures.lost() == 0)
            .map(|r| {
                format!(
                    "{} {}: the reference store lost nothing ({})",
                    d.kill,
                    r.figures.kill,
                    r.figures.sentence_of(every)
                )
            })
            .collect();
        let beside = format!(
            "beside it, the store ({}) lost {} of {} acknowledged writes, in {} of {} {} ({}); reported, not judged: \
             a store may keep more than its server",
            self.spec_name(),
            store.lost,
            store.acknowledged,
            store.kills_showing_loss,
            store.kills,
            d.kills,
            store.total.sentence_of(claimed)
        );
        let (verdict, reason) = if let Some(trouble) = &s.trouble {
            (
                Verdict::Unknown,
                format!("could not be decided, the harness failed at {trouble}"),
            )
        } else if s.rounds.is_empty() {
            (Verdict::Skipped, d.none_asked.to_string())
        } else if s.reference.len() < s.rounds.len() {
            (
                Verdict::Unknown,
                format!(
                    "not decided: the reference store wrote in {} of {} {}",
                    s.reference.len(),
                    s.rounds.len(),
                    d.kills
                ),
            )
        } else if !quiet.is_empty() {
            (
                Verdict::Unknown,
                format!(
                    "the demonstration did not happen {}: {}; {beside}",
                    d.setting,
                    quiet.join("; ")
                ),
            )
        } else {
            (
                Verdict::Pass,
                format!(
                    "{}, every one of {} {} lost acknowledged writes of storeproof's reference store (the built-in Redis store, \
                     run beside the store on the same server): {} of {} in all ({}); {beside}",
                    d.setting,
                    s.reference.len(),
                    d.kills,
                    reference.lost,
                    reference.acknowledged,
                    s.reference
                        .iter()
                        .map(|r| format!(
                            "{} {}: {} of {} lost",
                            d.kill,
                            r.figures.kill,
                            r.figures.lost(),
                            r.figures.acknowledged()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        };
        let example = s
            .reference
            .iter()
            .flat_map(|r| r.findings.values().flatten())
            .next()
            .cloned();
        let mut result = spec.result(NAME, verdict, reason);
        result.evidence = Evidence::Demonstration {
            reference,
            store,
            example,
        }
        .value();
        result
    }

    /// The store's spec as the report names it.
    fn spec_name(&self) -> &str {
        &self.spec
    }

    /// Power cuts with appendfsync always lose nothing.
    fn power_always_keeps(&self, spec: &CheckSpec) -> CheckResult {
        let s = self.always;
        let claimed = &self.config.contracts;
        let found = s.all_findings();
        let total = s.total();
        judge(Judgement {
            spec,
            series: s,
            pass: format!(
                "with appendfsync always, {} simulated power cuts (SIGKILL, then the append-only file cut back \
                 to its last fsync) lost nothing: {}",
                s.rounds.len(),
                total.sentence_of(claimed)
            ),
            fail: format!(
                "{} of {} acknowledged writes lost in power cuts with appendfsync always ({})",
                total.lost(),
                total.acknowledged(),
                total.sentence_of(claimed)
            ),
            none_asked: "not run: no power cut was asked for (--power-losses 0)",
            evidence: Evidence::Found {
                figures: series_figures(s),
                found: found.clone(),
                history: KillHistory::first(s, None),
            }
            .value(),
            rerun: self.rerun(&found),
            found,
            nothing_judged: (total.acknowledged() == 0).then(|| {
                (
                    Verdict::Unknown,
                    format!(
                        "not decided: the {} power cuts had no acknowledged write to judge",
                        s.rounds.len()
                    ),
                )
            }),
        })
    }

    /// Power cuts with appendfsync everysec (opted out) lose writes of the
    /// reference store: why always is required. As [`Self::opt_out_loses`].
    fn power_everysec_loses(&self, spec: &CheckSpec) -> CheckResult {
        self.demonstration(
            spec,
            self.everysec,
            Demonstrated {
                setting: "with appendfsync everysec (opted out), why the store requires appendfsync always",
                kills: "power cuts",
                kill: "cut",
                none_asked: "not run: no power cut was asked for (--power-losses 0)",
            },
        )
    }

    /// The verdict of check `spec` of this run.
    fn check(&self, spec: &CheckSpec) -> CheckResult {
        let Some(check) = CrashCheck::of(spec.id) else {
            return spec.result(NAME, Verdict::Unknown, "not a check of the crash suite");
        };
        match check {
            CrashCheck::Kept(kept) => self.kept(spec, kept),
            CrashCheck::OptOut => self.opt_out_loses(spec),
            CrashCheck::PowerAlways => self.power_always_keeps(spec),
            CrashCheck::PowerEverysec => self.power_everysec_loses(spec),
            CrashCheck::DownServer => self.down_server(spec),
            CrashCheck::Docker => docker_backend_check(
                self.required.fallback.as_deref(),
                self.config.backend,
                Evidence::Figures {
                    figures: self.figures,
                }
                .value(),
            ),
        }
    }
}

/// The figures of one series for `stats.crash` and evidence.
fn series_figures(s: &Series) -> SeriesFigures {
    SeriesFigures::of(s.figures(), s.asked, s.trouble.clone())
}

/// Runs the series `to_run` needs and judges each check of `to_run`.
/// `Err(SuiteError::Setup)` when the first server cannot start (nothing ran
/// yet; later, its series' checks are unknown); `Err(SuiteError::AdapterFailed)` when an adapter broke.
async fn run_checks(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Round;

    /// Every check the suite declares has its typed identity, each its
    /// own, and an id it does not declare has none (judged `unknown`).
    #[test]
    fn every_declared_crash_check_is_one_variant_and_no_other_id_is() {
        let typed: Vec<CrashCheck> = CHECKS
            .iter()
            .map(|c| CrashCheck::of(c.id).unwrap_or_else(|| panic!("{}", c.id)))
            .collect();
        for (i, a) in typed.iter().enumerate() {
            assert!(!typed[i + 1..].contains(a), "{a:?} twice");
        }
        assert_eq!(CrashCheck::of("crash.epochs-2"), None);
        assert_eq!(CrashCheck::of(DOCKER.id), Some(CrashCheck::Docker));
    }
    use std::collections::BTreeMap;

    fn round(kill: usize, lost: usize, finding: Option<(Kept, &str)>) -> Round {
        Round {
            figures: KillFigures {
                kill,
                epochs_acknowledged: 10,
                epochs_lost: lost,
                ..KillFigures::default()
            },
            findings: finding
                .map(|(k, f)| BTreeMap::from([(k, vec![f.to_string()])]))
                .unwrap_or_default(),
            // Ten writes of every kind judged.
            judged: Kept::ALL.iter().map(|k| (*k, 10)).collect(),
            ..Round::default()
        }
    }

    /// A series whose reference store fared as the store did, and whose
    /// store answered every probe of the down server `unavailable`.
    fn series(rounds: Vec<Round>, trouble: Option<&str>) -> Series {
        Series {
            asked: rounds.len(),
            reference: rounds.clone(),
            probes: vec![Probe::Refused("hello answered unavailable".into()); rounds.len()],
            rounds,
            trouble: trouble.map(str::to_string),
            backend: "process",
            fallback: None,
        }
    }

    fn verdicts(
        required: &Series,
        opted: &Series,
        always: &Series,
        everysec: &Series,
    ) -> BTreeMap<&'static str, CheckResult> {
        let config = CrashConfig {
            seed: 7,
            ..CrashConfig::new(1, 1, 1, BackendChoice::Process)
        };
        let figures = CrashFigures {
            backend: "process".into(),
            ..CrashFigures::default()
        };
        let f = Findings {
            config: &config,
            spec: "test:store".into(),
            required,
            opted,
            always,
            everysec,
            figures: &figures,
        };
        CHECKS.iter().map(|c| (c.id, f.check(c))).collect()
    }

    #[test]
    fn every_check_is_declared_once_with_its_contracts_and_own_servers() {
        let ids = CHECKS.map(|c| c.id);
        let unique: std::collections::BTreeSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        for c in CHECKS {
            assert!(
                c.id.starts_with("crash.") && !c.contracts.is_empty(),
                "{}",
                c.id
            );
            assert_eq!(c.needs, Needs::OwnServers, "{}", c.id);
        }
        assert_eq!(PAUSES.contracts, &[Contract::Rate]);
        // Each series is judged by checks of the suite, each check by one series.
        let judged: Vec<&str> = Setting::ALL
            .iter()
            .flat_map(|s| s.judged_by().iter().map(|c| c.id))
            .collect();
        assert_eq!(judged.len(), CHECKS.len());
        for id in ids {
            assert!(judged.contains(&id), "{id} is judged by no series");
        }
    }

    #[test]
    fn a_kept_write_lost_fails_its_check_with_a_rerun_and_the_rest_pass() {
        let lost = series(
            vec![round(1, 1, Some((Kept::Epochs, "tree-1: gone")))],
            None,
        );
        let shown = series(vec![round(1, 3, None)], None);
        let quiet = series(vec![round(1, 0, None)], None);
        let v = verdicts(&lost, &shown, &quiet, &shown);
        let epochs = &v[EPOCHS.id];
        assert_eq!(epochs.verdict, Verdict::Fail, "{}", epochs.reason);
        assert!(
            epochs.reason.contains("kill 1, tree-1: gone"),
            "{}",
            epochs.reason
        );
        let rerun: CrashRerun =
            serde_json::from_value(epochs.counterexample.clone().unwrap()).expect("a crash re-run");
        assert_eq!(rerun.kind, CrashRerun::KIND);
        assert_eq!((rerun.seed, rerun.backend.as_str()), (7, "process"));
        assert_eq!(epochs.evidence["figures"]["total"]["epochs_lost"], 1);
        assert_eq!(epochs.evidence["found"][0], "kill 1, tree-1: gone");
        for c in [
            NEXT_TAKE,
            CHILDREN,
            PAUSES,
            OPT_OUT,
            POWER_ALWAYS,
            POWER_EVERYSEC,
        ] {
            assert_eq!(
                v[c.id].verdict,
                Verdict::Pass,
                "{}: {}",
                c.id,
                v[c.id].reason
            );
        }
        assert_eq!(v[DOCKER.id].verdict, Verdict::Skipped);
    }

    #[test]
    fn a_failed_check_s_evidence_holds_the_events_of_what_it_lost() {
        use crate::verify::Item;
        use harness::contract::{Reply, Request};
        let mut lost = round(2, 1, Some((Kept::Epochs, "tree-1: gone")));
        lost.items = BTreeMap::from([(Kept::Epochs, vec![Item::Tree("tree-1".into())])]);
        let take = Request::LeaseTake {
            tree: "tree-1".into(),
            holder: "w0".into(),
            ttl_ms: 100,
        };
        lost.shown.invoke("w0", &take.to_call(), None, 5);
        lost.shown.complete(
            "w0",
            take.op(),
            &Ok(Reply::Granted {
                epoch: 4,
                expires_at_ms: 105,
            }),
            None,
            5,
        );
        let lost = series(vec![round(1, 0, None), lost], None);
        let quiet = series(vec![round(1, 0, None)], None);
        let shown = series(vec![round(1, 3, None)], None);
        let v = verdicts(&lost, &shown, &lost, &shown);
        for id in [EPOCHS.id, POWER_ALWAYS.id] {
            let c = &v[id];
            assert_eq!(c.verdict, Verdict::Fail, "{id}: {}", c.reason);
            let h: KillHistory = serde_json::from_value(c.evidence["history"].clone())
                .unwrap_or_else(|e| panic!("{id}: {e}: {}", c.evidence));
            assert_eq!(h.kill, 2, "{id}");
            assert_eq!(h.history, lost.rounds[1].shown, "{id}");
            // The shape a timeline reads: history.events, each flat.
            assert_eq!(
                c.evidence["history"]["events"][1]["value"]["granted"]["epoch"],
                4
            );
            // The re-run keeps its shape.
            assert_eq!(c.counterexample.as_ref().unwrap()["kind"], "crash-run");
        }
        // A check that passed, or failed about nothing a request names, has
        // no history.
        assert_eq!(v[NEXT_TAKE.id].verdict, Verdict::Pass);
        assert!(v[NEXT_TAKE.id].evidence.get("history").is_none());
        let v = verdicts(&quiet, &shown, &quiet, &shown);
        assert!(v[EPOCHS.id].evidence.get("history").is_none());
        let bare = series(
            vec![round(1, 1, Some((Kept::Claims, "the queue: no")))],
            None,
        );
        let v = verdicts(&bare, &shown, &quiet, &shown);
        assert_eq!(v[CLAIMS.id].verdict, Verdict::Fail);
        assert!(v[CLAIMS.id].evidence.get("history").is_none());
    }

    #[test]
    fn a_store_that_lost_nothing_beside_a_reference_that_lost_passes_the_demonstrations() {
        // Issue 19, item 2: the store kept everything with the append-only
        // file off (it keeps more than its server); the reference store lost.
        let kept = series(vec![round(1, 0, None)], None);
        let mut more_durable = series(vec![round(1, 0, None), round(2, 0, None)], None);
        more_durable.reference = vec![round(1, 4, None), round(2, 2, None)];
        let v = verdicts(&kept, &more_durable, &kept, &more_durable);
        for id in [OPT_OUT.id, POWER_EVERYSEC.id] {
            let c = &v[id];
            assert_eq!(c.verdict, Verdict::Pass, "{id}: {}", c.reason);
            assert!(c.reason.contains("6 of 20 in all"), "{id}: {}", c.reason);
            assert!(
                c.reason
                    .contains("lost 0 of 20 acknowledged writes, in 0 of 2")
                    && c.reason.contains("not judged"),
                "{id}: {}",
                c.reason
            );
            assert_eq!(c.evidence["reference"]["lost"], 6, "{id}");
            assert_eq!(c.evidence["store"]["lost"], 0, "{id}");
        }
    }

    #[test]
    fn a_reference_store_that_lost_nothing_leaves_the_demonstrations_unknown_never_failed() {
        let kept = series(vec![round(1, 0, None)], None);
        // The store lost in both kills; the reference store not in kill 2.
        let mut one_quiet = series(vec![round(1, 2, None), round(2, 3, None)], None);
        one_quiet.reference = vec![round(1, 2, None), round(2, 0, None)];
        let v = verdicts(&kept, &one_quiet, &kept, &one_quiet);
        let opted = &v[OPT_OUT.id];
        assert_eq!(opted.verdict, Verdict::Unknown, "{}", opted.reason);
        assert!(
            opted
                .reason
                .contains("kill 2: the reference store lost nothing"),
            "{}",
            opted.reason
        );
        assert!(opted.counterexample.is_none());
        // A MUST demonstration that did not happen leaves the run incomplete.
        assert!(opted.leaves_incomplete());
        let everysec = &v[POWER_EVERYSEC.id];
        assert_eq!(everysec.verdict, Verdict::Unknown, "{}", everysec.reason);
        assert!(everysec
            .reason
            .contains("cut 2: the reference store lost nothing"));
        assert!(!everysec.leaves_incomplete());
        // A reference store that wrote in fewer kills than the store decides nothing.
        let mut missing = series(vec![round(1, 2, None), round(2, 3, None)], None);
        missing.reference.pop();
        let v = verdicts(&kept, &missing, &kept, &missing);
        assert_eq!(v[OPT_OUT.id].verdict, Verdict::Unknown);
    }

    #[test]
    fn a_check_with_no_write_of_its_kind_judged_is_unknown_or_skipped_when_unsupported() {
        // Issue 19, item 14: a kill with plenty of epochs and no renew judged.
        let mut no_renew = round(1, 0, None);
        no_renew.judged.remove(&Kept::Renews);
        no_renew.figures.renews_acknowledged = 3;
        no_renew.figures.renews_not_judged = 3;
        let quiet = series(vec![round(1, 0, None)], None);
        let v = verdicts(
            &series(vec![no_renew.clone()], None),
            &quiet,
            &quiet,
            &quiet,
        );
        let renews = &v[RENEWS.id];
        assert_eq!(renews.verdict, Verdict::Unknown, "{}", renews.reason);
        assert!(
            renews
                .reason
                .contains("renews acknowledged 3, lost 0, not judged 3"),
            "{}",
            renews.reason
        );
        assert_eq!(v[EPOCHS.id].verdict, Verdict::Pass);
        assert!(
            v[EPOCHS.id]
                .reason
                .contains("epochs acknowledged 10, judged 10, lost 0"),
            "{}",
            v[EPOCHS.id].reason
        );
        // Judged in one kill of two: decided, and the sentence says so.
        let v = verdicts(
            &series(vec![no_renew.clone(), round(2, 0, None)], None),
            &quiet,
            &quiet,
            &quiet,
        );
        let renews = &v[RENEWS.id];
        assert_eq!(renews.verdict, Verdict::Pass, "{}", renews.reason);
        assert!(
            renews.reason.contains("judged in 1 of the 2 kills")
                && renews.reason.contains("not judged 3"),
            "{}",
            renews.reason
        );
        // Not offered (item 5): skipped with the store's message.
        let mut unsupported = no_renew;
        unsupported.unsupported.insert(
            Kept::Renews,
            "lease.renew answered unsupported: no renews here".into(),
        );
        let v = verdicts(&series(vec![unsupported], None), &quiet, &quiet, &quiet);
        let renews = &v[RENEWS.id];
        assert_eq!(renews.verdict, Verdict::Skipped, "{}", renews.reason);
        assert!(
            renews.reason.contains("no renews here"),
            "{}",
            renews.reason
        );
    }

    #[test]
    fn a_store_answering_while_its_server_is_down_fails_the_down_server_check() {
        let quiet = series(vec![round(1, 0, None)], None);
        let v = verdicts(&quiet, &quiet, &quiet, &quiet);
        assert_eq!(
            v[DOWN_SERVER.id].verdict,
            Verdict::Pass,
            "{}",
            v[DOWN_SERVER.id].reason
        );
        let mut answering = series(vec![round(1, 0, None), round(2, 0, None)], None);
        answering.probes = vec![
            Probe::Silent,
            Probe::Acknowledged("hello was answered ok, and lease.take answered granted".into()),
        ];
        let v = verdicts(&answering, &quiet, &quiet, &quiet);
        let c = &v[DOWN_SERVER.id];
        assert_eq!(c.verdict, Verdict::Fail, "{}", c.reason);
        assert!(
            c.reason.contains("kill 2, while the server was down"),
            "{}",
            c.reason
        );
        // A store whose state is not in Redis is not probed: outside the claim.
        let mut elsewhere = quiet;
        elsewhere.probes.clear();
        let v = verdicts(&elsewhere, &elsewhere, &elsewhere, &elsewhere);
        let c = &v[DOWN_SERVER.id];
        assert_eq!(c.verdict, Verdict::Skipped, "{}", c.reason);
        assert!(c.outside_claim && !c.leaves_incomplete());
    }

    /// A store is blamed for answering "while the server was down" only if
    /// storeproof's own PING confirmed it was: a kill that did not hold
    /// decides nothing.
    #[test]
    fn a_probe_answered_while_the_server_still_answers_ping_decides_nothing() {
        let mut up = series(vec![round(1, 0, None), round(2, 0, None)], None);
        up.probes = vec![Probe::ServerUp("lease.take answered granted".into()); 2];
        let quiet = series(vec![round(1, 0, None)], None);
        let v = verdicts(&up, &quiet, &quiet, &quiet);
        let c = &v[DOWN_SERVER.id];
        assert_eq!(c.verdict, Verdict::Unknown, "{}", c.reason);
        assert!(c.reason.contains("still answered PING"), "{}", c.reason);
        // One kill judged: decided on it, the other said.
        up.probes[0] = Probe::Silent;
        let v = verdicts(&up, &quiet, &quiet, &quiet);
        let c = &v[DOWN_SERVER.id];
        assert_eq!(c.verdict, Verdict::Pass, "{}", c.reason);
        assert!(
            c.reason.contains("1 more kill(s) not judged"),
            "{}",
            c.reason
        );
    }

    /// The probe itself, on a real server that is up: the built-in store
    /// acknowledges its write, and the PING after it says the server
    /// answered, so the probe is not held against the store.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_probe_pings_the_server_before_blaming_the_store() {
        let server = harness::server::ManagedServer::start(Default::default())
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let factory: Arc<dyn StoreFactory> =
            Arc::new(RedisStoreFactory::new(dir.path().join("s.sqlite")));
        let hello = Hello {
            instance: "prober".into(),
            redis_url: server.url(),
            prefix: "sp:probe-up:".into(),
            opt_out: None,
        };
        let probe = probe_down_server(&factory, hello, &[Contract::Lease], &server.url()).await;
        assert!(matches!(probe, Probe::ServerUp(_)), "{probe:?}");
    }

    #[test]
    fn a_power_cut_losing_with_appendfsync_always_fails() {
        let kept = series(vec![round(1, 0, None)], None);
        let lost = series(
            vec![round(1, 1, Some((Kept::Children, "child-1: gone")))],
            None,
        );
        let v = verdicts(&kept, &lost, &lost, &lost);
        assert_eq!(v[POWER_ALWAYS.id].verdict, Verdict::Fail);
        assert!(v[POWER_ALWAYS.id].reason.contains("child-1: gone"));
    }

    #[test]
    fn harness_trouble_leaves_a_check_unknown_and_a_finding_still_fails() {
        let troubled = series(
            vec![round(1, 0, None)],
            Some("kill 2 of 3: could not restart the server: gone"),
        );
        let empty = series(vec![], None);
        let v = verdicts(&troubled, &empty, &empty, &empty);
        let unknown = &v[EPOCHS.id];
        assert_eq!(unknown.verdict, Verdict::Unknown);
        assert!(
            unknown.reason.contains("could not restart"),
            "{}",
            unknown.reason
        );
        assert!(unknown.leaves_incomplete());
        // No kill asked: skipped with the flag that asks for them.
        assert_eq!(v[OPT_OUT.id].verdict, Verdict::Skipped);
        assert!(v[OPT_OUT.id].reason.contains("--opt-out-kills 0"));
        let both = series(
            vec![round(1, 1, Some((Kept::Epochs, "tree-1: gone")))],
            Some("kill 2 of 3: gone"),
        );
        let v = verdicts(&both, &empty, &empty, &empty);
        assert_eq!(v[EPOCHS.id].verdict, Verdict::Fail);
    }

    #[test]
    fn the_docker_backend_check_has_a_verdict_for_each_way_the_kills_ran() {
        let warn = docker_backend_check(
            Some("Docker is not available (cannot connect)"),
            BackendChoice::Auto,
            Value::Null,
        );
        assert_eq!(warn.verdict, Verdict::Warn);
        assert!(
            warn.reason.contains("Docker is not available"),
            "{}",
            warn.reason
        );
        assert_eq!(
            docker_backend_check(None, BackendChoice::Process, Value::Null).verdict,
            Verdict::Skipped
        );
        assert_eq!(
            docker_backend_check(None, BackendChoice::Docker, Value::Null).verdict,
            Verdict::Pass
        );
    }

    #[test]
    fn a_rerun_keeps_its_contracts_and_an_older_one_means_all() {
        let narrowed = serde_json::json!({
            "kind": "crash-run", "seed": 3, "kills": 1, "opt_out_kills": 1, "power_losses": 0,
            "contracts": ["lease"]
        });
        let rerun: CrashRerun = serde_json::from_value(narrowed).expect("a re-run reads");
        assert_eq!(rerun.contracts, vec![Contract::Lease]);
        let old = serde_json::json!({
            "kind": "crash-run", "seed": 3, "kills": 1, "opt_out_kills": 1, "power_losses": 0
        });
        let rerun: CrashRerun = serde_json::from_value(old).expect("an older re-run reads");
        assert_eq!(
            (rerun.instances, rerun.backend.as_str(), rerun.contracts),
            (4, "", Contract::COORDINATION.to_vec())
        );
    }

    #[tokio::test]
    async fn a_store_claiming_nothing_has_every_check_outside_the_claim_and_no_server() {
        struct Unreachable;
        #[async_trait::async_trait]
        impl StoreFactory for Unreachable {
            fn spec(&self) -> String {
                "test:unreachable".into()
            }
            async fn connect(
                &self,
                _: &Hello,
                _: i64,
            ) -> Result<
                (
                    harness::store::StoreInfo,
                    Box<dyn harness::store::StoreClient>,
                ),
                harness::contract::StoreError,
            > {
                panic!("nothing is written to a store that claims nothing")
            }
        }
        let subject = Subject {
            spec: "test:unreachable".into(),
            factory: Arc::new(Unreachable),
            opt_out: None,
            run_prefix: "sp:none:".into(),
            contracts: vec![],
            server: harness::ServerRef::External {
                url: "redis://127.0.0.1:1/".into(),
            },
            seed: 1,
            may_start_servers: true,
        };
        let suite = CrashSuite::new(CrashConfig::new(1, 1, 1, BackendChoice::Process));
        let (settled, to_run) = harness::plan(NAME, suite.checks(), &subject);
        assert!(to_run.is_empty(), "{to_run:?}");
        assert_eq!(settled.len(), CHECKS.len());
        for c in &settled {
            assert!(c.outside_claim && !c.leaves_incomplete(), "{}", c.id);
        }
        // Nothing to run: the suite starts no server and connects nothing.
        let run = suite
            .run(&subject, &to_run, &harness::Silent)
            .await
            .unwrap();
        assert!(run.checks.is_empty());
        match run.figures {
            Figures::Crash(f) => assert_eq!(f.kills, 0),
            other => panic!("{other:?}"),
        }
    }
}
