//! The crash suite: for each kill, run the workload, SIGKILL the server at a
//! seeded random moment, restart it on the same data and check that every
//! acknowledged write is there. Then the same with the append-only file off
//! and the opt-out given, where the loss must show.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::check::{CheckResult, Level, Verdict};
use harness::contract::{ChildState, Reply, Request};
use harness::store::{Hello, StoreClient, StoreFactory, OPT_OUT_WRITES_MAY_BE_LOST};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};

use crate::backend::{CrashBackend, CrashError};
use crate::workload::{self, wall_ms, Acked, CLAIM_MS, LEASE_MS};

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
    /// Seeds every kill moment and every writer.
    pub seed: u64,
    /// Which backend runs (and kills) the server.
    pub backend: BackendChoice,
    /// Replaces the required settings of the runs that must lose nothing
    /// (given with the opt-out). Only to prove that their checks can fail:
    /// `None` in every real run.
    pub sabotage_settings: Option<Vec<(String, String)>>,
}

/// What a crash run found.
pub struct CrashOutcome {
    /// One result per id of [`check_ids`], in report order.
    pub checks: Vec<CheckResult>,
    /// The crash figures for the report's `stats`: backend, kills, acknowledged
    /// vs lost writes, per kill and with the opt-out.
    pub stats: Value,
}

/// The ids of the checks a crash run reports, in report order.
pub fn check_ids() -> [&'static str; 9] {
    [
        "crash.acknowledged-epochs-survive",
        "crash.next-take-continues",
        "crash.acknowledged-children-survive",
        "crash.children-completed-once",
        "crash.acknowledged-pauses-survive",
        "crash.opt-out-loses",
        "crash.power-loss-always-keeps",
        "crash.power-loss-everysec-loses",
        "crash.docker-backend",
    ]
}

/// Acknowledged writes a round waits for before its kill may land.
const MIN_ACKED_PER_ROUND: u64 = 20;

/// What one kill showed.
#[derive(Debug, Default)]
struct Round {
    acked: u64,
    /// Acknowledged epochs whose record came back lower or not at all.
    epochs_lost: Vec<String>,
    /// Takes after the restart granted at or below an acknowledged epoch.
    granted_again: Vec<String>,
    children_lost: Vec<String>,
    completed_again: Vec<String>,
    pauses_lost: Vec<String>,
}

impl Round {
    fn lost(&self) -> usize {
        self.epochs_lost.len()
            + self.granted_again.len()
            + self.children_lost.len()
            + self.completed_again.len()
            + self.pauses_lost.len()
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

async fn call(client: &mut Box<dyn StoreClient>, req: Request) -> Result<Reply, String> {
    client
        .call(&req.to_call(), wall_ms())
        .await
        .map_err(|e| format!("{} failed after the restart: {e}", req.op()))
}

/// Checks every acknowledged write after a restart, then drains the queue.
async fn verify(
    client: &mut Box<dyn StoreClient>,
    acked: &Arc<Mutex<Acked>>,
    round: &mut Round,
    verifier: &str,
) -> Result<(), String> {
    let snapshot = acked.lock().map_err(|e| e.to_string())?.clone();
    for (tree, epoch) in &snapshot.epochs {
        match call(client, Request::LeaseRead { tree: tree.clone() }).await? {
            Reply::Lease(Some(v)) if v.epoch >= *epoch => {}
            other => round.epochs_lost.push(format!(
                "{tree}: epoch {epoch} was acknowledged, the record reads {}",
                serde_json::to_string(&other).unwrap_or_default()
            )),
        }
    }
    // Every workload lease has run out; the next take must continue above.
    tokio::time::sleep(Duration::from_millis(LEASE_MS as u64 + 20)).await;
    for (tree, epoch) in &snapshot.epochs {
        let mut answer = Reply::Empty {};
        for _ in 0..5 {
            answer = call(
                client,
                Request::LeaseTake {
                    tree: tree.clone(),
                    holder: verifier.into(),
                    ttl_ms: LEASE_MS,
                },
            )
            .await?;
            if !matches!(answer, Reply::Busy { .. }) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(LEASE_MS as u64)).await;
        }
        match answer {
            Reply::Granted { epoch: got, .. } => {
                if got <= *epoch {
                    round.granted_again.push(format!(
                        "{tree}: epoch {epoch} was acknowledged before the crash, the next take was granted epoch {got}"
                    ));
                }
                let req = Request::LeaseTake {
                    tree: tree.clone(),
                    holder: verifier.into(),
                    ttl_ms: LEASE_MS,
                };
                if let Ok(mut a) = acked.lock() {
                    a.record(
                        &req,
                        &Reply::Granted {
                            epoch: got,
                            expires_at_ms: 0,
                        },
                    );
                }
                call(
                    client,
                    Request::LeaseRelease {
                        tree: tree.clone(),
                        holder: verifier.into(),
                        epoch: got,
                    },
                )
                .await?;
            }
            other => round.granted_again.push(format!(
                "{tree}: the take after the restart answered {}",
                serde_json::to_string(&other).unwrap_or_default()
            )),
        }
    }
    for child in &snapshot.saved {
        if let Reply::Child(None) = call(
            client,
            Request::QueueRead {
                child: child.clone(),
            },
        )
        .await?
        {
            round.children_lost.push(format!(
                "{child}: saved and acknowledged, gone after the restart"
            ));
        }
    }
    for child in snapshot.completed.keys() {
        match call(
            client,
            Request::QueueRead {
                child: child.clone(),
            },
        )
        .await?
        {
            Reply::Child(Some(v)) if v.state == ChildState::Done => {}
            other => round.completed_again.push(format!(
                "{child}: completed and acknowledged, reads {} after the restart",
                serde_json::to_string(&other).unwrap_or_default()
            )),
        }
    }
    for (provider, until) in &snapshot.pauses {
        match call(
            client,
            Request::RateRead {
                provider: provider.clone(),
            },
        )
        .await?
        {
            Reply::RateState {
                paused_until_ms: Some(p),
                ..
            } if p >= *until => {}
            other => round.pauses_lost.push(format!(
                "{provider}: paused until {until} (acknowledged), reads {}",
                serde_json::to_string(&other).unwrap_or_default()
            )),
        }
    }
    // Drain what is queued: no completed child may be handed out again.
    for _ in 0..100_000 {
        let claim = Request::QueueClaim {
            instance: verifier.into(),
            claim_ttl_ms: CLAIM_MS,
        };
        let Reply::Claimed { child, attempt, .. } = call(client, claim).await? else {
            break;
        };
        if snapshot.completed.contains_key(&child) {
            round.completed_again.push(format!(
                "{child}: completed before the crash, claimed again after it"
            ));
        }
        let done = Request::QueueComplete {
            child,
            instance: verifier.into(),
            attempt,
        };
        let reply = call(client, done.clone()).await?;
        if let Ok(mut a) = acked.lock() {
            a.record(&done, &reply);
        }
    }
    Ok(())
}

/// Runs `kills` rounds on one server; returns the rounds and the backend used.
#[allow(clippy::too_many_arguments)]
async fn rounds(
    factory: &Arc<dyn StoreFactory>,
    prefix: &str,
    config: &CrashConfig,
    settings: &[(String, String)],
    opt_out: Option<String>,
    kills: usize,
    label: &str,
    power: bool,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<(Vec<Round>, &'static str, Option<String>, u64), String> {
    // Only the process backend sees the server's fsyncs.
    let choice = if power {
        BackendChoice::Process
    } else {
        config.backend
    };
    let (mut server, fallback) = backend(choice, settings, label)
        .await
        .map_err(|e| e.to_string())?;
    let name = server.name();
    let url = server.url();
    let acked = Arc::new(Mutex::new(Acked::default()));
    let mut rng = StdRng::seed_from_u64(config.seed ^ label.len() as u64);
    let mut out = Vec::new();
    let result: Result<(), String> = async {
        for k in 0..kills {
            let before = acked.lock().map_err(|e| e.to_string())?.writes;
            let stop = Arc::new(AtomicBool::new(false));
            let hello = |i: usize| Hello {
                instance: format!("w{i}"),
                redis_url: url.clone(),
                prefix: prefix.to_string(),
                opt_out: opt_out.clone(),
            };
            let tasks = workload::start(
                factory,
                hello,
                config.instances,
                rng.random::<u64>(),
                k,
                &acked,
                &stop,
            )
            .await?;
            // The kill lands at a seeded moment once the workload is going.
            let deadline = Instant::now() + Duration::from_secs(20);
            while acked.lock().map_err(|e| e.to_string())?.writes < before + MIN_ACKED_PER_ROUND {
                if Instant::now() > deadline {
                    return Err("the workload acknowledged too few writes to crash it".into());
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..150))).await;
            if power {
                server.power_loss().await.map_err(|e| e.to_string())?;
            } else {
                server.kill().await.map_err(|e| e.to_string())?;
            }
            stop.store(true, Ordering::Relaxed);
            for t in tasks {
                let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
            }
            let acked_round = acked.lock().map_err(|e| e.to_string())?.writes - before;
            server.restart().await.map_err(|e| e.to_string())?;
            let mut round = Round {
                acked: acked_round,
                ..Round::default()
            };
            let h = Hello {
                instance: format!("verifier{k}"),
                redis_url: url.clone(),
                prefix: prefix.to_string(),
                opt_out: opt_out.clone(),
            };
            let (_, mut client) = factory
                .connect(&h, wall_ms())
                .await
                .map_err(|e| format!("the store could not connect after the restart: {e}"))?;
            verify(&mut client, &acked, &mut round, &h.instance).await?;
            let violations =
                std::mem::take(&mut acked.lock().map_err(|e| e.to_string())?.violations);
            round.completed_again.extend(violations);
            progress(&format!(
                "crash ({name}{}{}): kill {}/{kills}: {} writes acknowledged, {} lost",
                if power { ", power cut" } else { "" },
                if opt_out.is_some() { ", opted out" } else { "" },
                k + 1,
                round.acked,
                round.lost()
            ));
            out.push(round);
        }
        Ok(())
    }
    .await;
    let destroyed = server.destroy().await;
    result?;
    destroyed.map_err(|e| e.to_string())?;
    let total = acked.lock().map_err(|e| e.to_string())?.writes;
    Ok((out, name, fallback, total))
}

/// Runs the crash suite against `factory`.
pub async fn run(
    factory: Arc<dyn StoreFactory>,
    prefix: String,
    config: &CrashConfig,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<CrashOutcome, String> {
    let started = Instant::now();
    let label = format!("{:08x}", config.seed as u32);
    let (required, required_opt_out) = match &config.sabotage_settings {
        Some(s) => (s.clone(), Some(OPT_OUT_WRITES_MAY_BE_LOST.to_string())),
        None => (required_settings(), None),
    };
    let (durable, backend, fallback, durable_writes) = rounds(
        &factory,
        &prefix,
        config,
        &required,
        required_opt_out.clone(),
        config.kills,
        &format!("{label}-durable"),
        false,
        progress,
    )
    .await?;
    let (opted, _, _, opted_writes) = rounds(
        &factory,
        &format!("{prefix}o:"),
        config,
        &opt_out_settings(),
        Some(OPT_OUT_WRITES_MAY_BE_LOST.to_string()),
        config.opt_out_kills,
        &format!("{label}-optout"),
        false,
        progress,
    )
    .await?;
    // Power cuts: appendfsync always keeps everything; everysec (opted out)
    // loses the last second of acknowledged writes.
    let (power_always, _, _, power_always_writes) = rounds(
        &factory,
        &format!("{prefix}pa:"),
        config,
        &required,
        required_opt_out,
        config.power_losses,
        &format!("{label}-power-always"),
        true,
        progress,
    )
    .await?;
    let mut everysec = required_settings();
    everysec.retain(|(k, _)| k != "appendfsync");
    everysec.push(("appendfsync".into(), "everysec".into()));
    let (power_everysec, _, _, power_everysec_writes) = rounds(
        &factory,
        &format!("{prefix}pe:"),
        config,
        &everysec,
        Some(OPT_OUT_WRITES_MAY_BE_LOST.to_string()),
        config.power_losses,
        &format!("{label}-power-everysec"),
        true,
        progress,
    )
    .await?;
    let sum = |rs: &[Round], f: fn(&Round) -> usize| rs.iter().map(f).sum::<usize>();
    let worst = |rs: &[Round]| rs.iter().map(Round::lost).max().unwrap_or(0);
    let per_kill = |rs: &[Round]| {
        rs.iter()
            .map(|r| json!({"acknowledged": r.acked, "lost": r.lost()}))
            .collect::<Vec<_>>()
    };
    let stats = json!({
        "backend": backend,
        "docker_unavailable": fallback,
        "kills": durable.len(),
        "acknowledged_writes": durable_writes,
        "lost": sum(&durable, Round::lost),
        "worst_kill_lost": worst(&durable),
        "per_kill": per_kill(&durable),
        "opt_out": {
            "kills": opted.len(),
            "acknowledged_writes": opted_writes,
            "lost": sum(&opted, Round::lost),
            "epochs_granted_again": sum(&opted, |r| r.granted_again.len()),
            "kills_showing_loss": opted.iter().filter(|r| !r.granted_again.is_empty()).count(),
            "per_kill": per_kill(&opted),
        },
        "power_loss": {
            "backend": "process",
            "always": {
                "cuts": power_always.len(),
                "acknowledged_writes": power_always_writes,
                "lost": sum(&power_always, Round::lost),
            },
            "everysec_opted_out": {
                "cuts": power_everysec.len(),
                "acknowledged_writes": power_everysec_writes,
                "lost": sum(&power_everysec, Round::lost),
                "cuts_showing_loss": power_everysec.iter().filter(|r| r.lost() > 0).count(),
            },
        },
        "seed": config.seed,
        "seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    });
    let evidence = json!({"figures": stats});
    // What re-runs a failed crash check: the same seed (kill moments and
    // writers), sizes and backend. Thread timing is not replayed, so a
    // re-run repeats the schedule, not every interleaving of it.
    let rerun = |found: &[&String]| {
        json!({
            "kind": "crash-run",
            "seed": config.seed,
            "kills": config.kills,
            "opt_out_kills": config.opt_out_kills,
            "power_losses": config.power_losses,
            "instances": config.instances,
            "backend": backend,
            "found": found.iter().take(5).collect::<Vec<_>>(),
        })
    };
    let check = |id: &str, what: &str, found: Vec<&String>| {
        let verdict = if found.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        CheckResult {
            outside_claim: false,
            id: id.into(),
            suite: "crash".into(),
            level: Level::Must,
            verdict,
            reason: if found.is_empty() {
                format!(
                    "{what}: held across {} SIGKILLs ({backend} backend, {durable_writes} acknowledged writes)",
                    durable.len()
                )
            } else {
                format!(
                    "{} of {}: {}",
                    found.len(),
                    what,
                    found
                        .iter()
                        .take(3)
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            },
            counterexample: (!found.is_empty()).then(|| rerun(&found)),
            evidence: json!({"figures": stats, "found": found}),
            seconds: 0.0,
        }
    };
    let all = |f: fn(&Round) -> &Vec<String>| durable.iter().flat_map(f).collect::<Vec<_>>();
    let mut checks = vec![
        check(
            "crash.acknowledged-epochs-survive",
            "every acknowledged epoch is on the server after the restart",
            all(|r| &r.epochs_lost),
        ),
        check(
            "crash.next-take-continues",
            "the first take after the restart is granted above every acknowledged epoch",
            all(|r| &r.granted_again),
        ),
        check(
            "crash.acknowledged-children-survive",
            "every acknowledged child is on the server after the restart",
            all(|r| &r.children_lost),
        ),
        check(
            "crash.children-completed-once",
            "no child is completed twice or handed out again after it was completed",
            all(|r| &r.completed_again),
        ),
        check(
            "crash.acknowledged-pauses-survive",
            "every acknowledged provider pause is in force after the restart",
            all(|r| &r.pauses_lost),
        ),
    ];
    let quiet_kills: Vec<usize> = opted
        .iter()
        .enumerate()
        .filter(|(_, r)| r.granted_again.is_empty())
        .map(|(i, _)| i + 1)
        .collect();
    checks.push(CheckResult {
        outside_claim: false,
        id: "crash.opt-out-loses".into(),
        suite: "crash".into(),
        level: Level::Must,
        verdict: if quiet_kills.is_empty() && !opted.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        reason: if quiet_kills.is_empty() && !opted.is_empty() {
            format!(
                "as expected with appendonly no and the opt-out: every one of {} kills lost acknowledged writes and the next take granted an epoch again ({} epochs granted twice)",
                opted.len(),
                sum(&opted, |r| r.granted_again.len())
            )
        } else {
            format!(
                "the opted-out server did not show the loss in kill(s) {quiet_kills:?}: the demonstration did not demonstrate"
            )
        },
        evidence: json!({"figures": stats, "example": opted.first().and_then(|r| r.granted_again.first())}),
        counterexample: (!quiet_kills.is_empty() || opted.is_empty()).then(|| rerun(&[])),
        seconds: 0.0,
    });
    let always_lost: Vec<String> = power_always
        .iter()
        .flat_map(|r| {
            r.epochs_lost
                .iter()
                .chain(&r.granted_again)
                .chain(&r.children_lost)
                .chain(&r.completed_again)
                .chain(&r.pauses_lost)
                .cloned()
                .collect::<Vec<_>>()
        })
        .collect();
    checks.push(CheckResult {
        outside_claim: false,
        id: "crash.power-loss-always-keeps".into(),
        suite: "crash".into(),
        level: Level::Must,
        verdict: if always_lost.is_empty() { Verdict::Pass } else { Verdict::Fail },
        reason: if always_lost.is_empty() {
            format!(
                "with appendfsync always, {} simulated power cuts (SIGKILL, then the append-only file cut back to its last fsync) lost none of {power_always_writes} acknowledged writes",
                power_always.len()
            )
        } else {
            format!(
                "{} acknowledged writes lost in a power cut with appendfsync always: {}",
                always_lost.len(),
                always_lost.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
            )
        },
        counterexample: (!always_lost.is_empty())
            .then(|| rerun(&always_lost.iter().collect::<Vec<_>>())),
        evidence: json!({"figures": stats["power_loss"], "found": always_lost}),
        seconds: 0.0,
    });
    let quiet_cuts: Vec<usize> = power_everysec
        .iter()
        .enumerate()
        .filter(|(_, r)| r.lost() == 0)
        .map(|(i, _)| i + 1)
        .collect();
    let everysec_shown = quiet_cuts.is_empty() && !power_everysec.is_empty();
    checks.push(CheckResult {
        outside_claim: false,
        id: "crash.power-loss-everysec-loses".into(),
        suite: "crash".into(),
        level: Level::Should,
        verdict: if everysec_shown { Verdict::Pass } else { Verdict::Warn },
        reason: if everysec_shown {
            format!(
                "as expected with appendfsync everysec (opted out): every one of {} power cuts lost acknowledged writes ({} in all) — why the store requires appendfsync always",
                power_everysec.len(),
                sum(&power_everysec, Round::lost)
            )
        } else {
            format!("power cut(s) {quiet_cuts:?} with appendfsync everysec happened to land right after an fsync and lost nothing")
        },
        evidence: json!({"figures": stats["power_loss"]}),
        counterexample: None,
        seconds: 0.0,
    });
    checks.push(CheckResult {
        outside_claim: false,
        id: "crash.docker-backend".into(),
        suite: "crash".into(),
        level: Level::Should,
        verdict: match (&fallback, config.backend) {
            (Some(_), _) => Verdict::Warn,
            (None, BackendChoice::Process) => Verdict::Skipped,
            (None, _) => Verdict::Pass,
        },
        reason: match (&fallback, config.backend) {
            (Some(e), _) => format!("the kills ran on the process backend (kill -9) because {e}"),
            (None, BackendChoice::Process) => {
                "--crash-backend process was asked for: the kills ran on a managed redis-server (kill -9)".into()
            }
            (None, _) => "the kills ran on the server in a Docker container built here (docker kill -s KILL)".into(),
        },
        evidence,
        counterexample: None,
        seconds: 0.0,
    });
    Ok(CrashOutcome { checks, stats })
}
