//! The crash suite: for each kill, run the workload on keys of its own,
//! SIGKILL the server at a seeded random moment, restart it on the same data
//! and check that every acknowledged write is there. Then the same with the
//! append-only file off and the opt-out given, where the loss must show in
//! every kill, and with simulated power cuts.
//!
//! Each kill round stands alone: its own key prefix and its own record of
//! what was acknowledged, so a kill's figures and verdicts are its own and a
//! loss is never inherited from an earlier kill.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::check::{CheckResult, Level, Verdict};
use harness::contract::{ChildState, Contract, ErrorKind, LeaseView, Reply, Request};
use harness::store::{Hello, StoreClient, StoreFactory, OPT_OUT_WRITES_MAY_BE_LOST};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
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
    /// The contracts the store claims (its hello): the workload writes only
    /// to these, and a check about none of them is outside the claim.
    pub contracts: Vec<Contract>,
}

/// What a crash run found.
pub struct CrashOutcome {
    /// One result per id of [`check_ids`], in report order.
    pub checks: Vec<CheckResult>,
    /// The crash figures for the report's `stats`: backend, and per kill of
    /// each setting what was acknowledged and lost, in named units
    /// ([`KillFigures`]).
    pub stats: Value,
}

const EPOCHS: &str = "crash.acknowledged-epochs-survive";
const NEXT_TAKE: &str = "crash.next-take-continues";
const RENEWS: &str = "crash.acknowledged-renews-survive";
const CHILDREN: &str = "crash.acknowledged-children-survive";
const CLAIMS: &str = "crash.acknowledged-claims-survive";
const COMPLETED_ONCE: &str = "crash.children-completed-once";
const PAUSES: &str = "crash.acknowledged-pauses-survive";
const OPT_OUT: &str = "crash.opt-out-loses";
const POWER_ALWAYS: &str = "crash.power-loss-always-keeps";
const POWER_EVERYSEC: &str = "crash.power-loss-everysec-loses";
const DOCKER: &str = "crash.docker-backend";

const LEASE: &[Contract] = &[Contract::Lease];
const QUEUE: &[Contract] = &[Contract::Queue];
const RATE: &[Contract] = &[Contract::Rate];
/// A check of the whole workload is judged on whichever contracts are claimed.
const WHOLE: &[Contract] = &Contract::ALL;

/// Every crash check in report order, with the contracts it is about: a
/// check none of whose contracts the store claims is outside the claim.
const CHECKS: [(&str, &[Contract]); 11] = [
    (EPOCHS, LEASE),
    (NEXT_TAKE, LEASE),
    (RENEWS, LEASE),
    (CHILDREN, QUEUE),
    (CLAIMS, QUEUE),
    (COMPLETED_ONCE, QUEUE),
    (PAUSES, RATE),
    (OPT_OUT, WHOLE),
    (POWER_ALWAYS, WHOLE),
    (POWER_EVERYSEC, WHOLE),
    (DOCKER, WHOLE),
];

/// The ids of the checks a crash run reports, in report order.
pub fn check_ids() -> [&'static str; 11] {
    CHECKS.map(|(id, _)| id)
}

/// The contracts crash check `id` is about (empty for an unknown id).
pub fn check_contracts(id: &str) -> &'static [Contract] {
    CHECKS
        .iter()
        .find(|(i, _)| *i == id)
        .map_or(&[], |(_, contracts)| contracts)
}

/// Why check `id` is outside the claim of a store claiming `claimed`, or
/// `None` when the store claims one of the contracts it is about.
fn outside_claim(id: &str, claimed: &[Contract]) -> Option<String> {
    let about = check_contracts(id);
    if about.iter().any(|c| claimed.contains(c)) {
        return None;
    }
    Some(if about.len() == 1 {
        format!(
            "the crash check is about the {} contract, which the store does not offer",
            about[0]
        )
    } else {
        "the crash workload writes only to the contracts the store claims, and it does not offer any"
            .to_string()
    })
}

/// The contracts a re-run of a crash check (its counterexample) was
/// recorded with; every contract when it names none (an older report).
pub fn contracts_of_rerun(rerun: &Value) -> Vec<Contract> {
    rerun
        .get("contracts")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_else(|| Contract::ALL.to_vec())
}

/// Acknowledged writes a round waits for before its kill may land.
const MIN_ACKED_PER_ROUND: u64 = 20;

/// How long a round's workload may take to acknowledge [`MIN_ACKED_PER_ROUND`] writes.
const WORKLOAD_TIMEOUT: Duration = Duration::from_secs(20);

/// A renew is judged only if it should still run this long after the read:
/// the server's clock is the host's real clock, read a moment apart.
const RENEW_MARGIN_MS: i64 = 1_000;

/// What one kill acknowledged and lost, each kind of write in its own unit.
/// An item counts once however many checks see its loss.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillFigures {
    /// The kill's number in its setting, from 1.
    pub kill: usize,
    /// Takes granted (each a new epoch).
    pub epochs_acknowledged: usize,
    /// Granted epochs the restarted server no longer covers (its record, or
    /// the next take, is at or below them).
    pub epochs_lost: usize,
    /// Renews answered `renewed`.
    pub renews_acknowledged: usize,
    /// Acknowledged renews not judged: their lease was released afterwards
    /// (or a release was in flight), or they ended before the check.
    pub renews_not_judged: usize,
    /// Judged renews whose expiry the restarted server does not honour.
    pub renews_lost: usize,
    /// Children saved.
    pub children_acknowledged: usize,
    /// Saved children unknown to the restarted server.
    pub children_lost: usize,
    /// Claims answered `claimed`.
    pub claims_acknowledged: usize,
    /// Claims the restarted server does not show, or hands out again.
    pub claims_lost: usize,
    /// Completes answered `completed`.
    pub completions_acknowledged: usize,
    /// Completed children not done after the restart, or handed out again.
    pub completions_lost: usize,
    /// Pauses answered `paused`.
    pub pauses_acknowledged: usize,
    /// Pauses not in force after the restart.
    pub pauses_lost: usize,
    /// Writes in flight at the kill: their outcome is unknown, nothing is
    /// judged on them.
    pub in_flight: usize,
}

impl KillFigures {
    /// Items lost, of every kind.
    pub fn lost(&self) -> usize {
        self.epochs_lost
            + self.renews_lost
            + self.children_lost
            + self.claims_lost
            + self.completions_lost
            + self.pauses_lost
    }

    /// Items acknowledged, of every kind.
    pub fn acknowledged(&self) -> usize {
        self.epochs_acknowledged
            + self.renews_acknowledged
            + self.children_acknowledged
            + self.claims_acknowledged
            + self.completions_acknowledged
            + self.pauses_acknowledged
    }

    /// The figures of several kills added up (`kill` is the number of kills).
    pub fn total(kills: &[KillFigures]) -> KillFigures {
        let mut t = KillFigures {
            kill: kills.len(),
            ..KillFigures::default()
        };
        for k in kills {
            t.epochs_acknowledged += k.epochs_acknowledged;
            t.epochs_lost += k.epochs_lost;
            t.renews_acknowledged += k.renews_acknowledged;
            t.renews_not_judged += k.renews_not_judged;
            t.renews_lost += k.renews_lost;
            t.children_acknowledged += k.children_acknowledged;
            t.children_lost += k.children_lost;
            t.claims_acknowledged += k.claims_acknowledged;
            t.claims_lost += k.claims_lost;
            t.completions_acknowledged += k.completions_acknowledged;
            t.completions_lost += k.completions_lost;
            t.pauses_acknowledged += k.pauses_acknowledged;
            t.pauses_lost += k.pauses_lost;
            t.in_flight += k.in_flight;
        }
        t
    }

    /// The figures in words: `epochs acknowledged 41, lost 0; renews …`.
    pub fn sentence(&self) -> String {
        self.sentence_of(&Contract::ALL)
    }

    /// The figures of the writes of `contracts` in words (the others are
    /// never written, so their zeros say nothing).
    pub fn sentence_of(&self, contracts: &[Contract]) -> String {
        let mut parts = Vec::new();
        if contracts.contains(&Contract::Lease) {
            parts.push(format!(
                "epochs acknowledged {}, lost {}; renews acknowledged {}, lost {}",
                self.epochs_acknowledged,
                self.epochs_lost,
                self.renews_acknowledged,
                self.renews_lost
            ));
        }
        if contracts.contains(&Contract::Queue) {
            parts.push(format!(
                "children saved {}, lost {}; claims acknowledged {}, lost {}; completions acknowledged {}, lost {}",
                self.children_acknowledged,
                self.children_lost,
                self.claims_acknowledged,
                self.claims_lost,
                self.completions_acknowledged,
                self.completions_lost
            ));
        }
        if contracts.contains(&Contract::Rate) {
            parts.push(format!(
                "pauses acknowledged {}, lost {}",
                self.pauses_acknowledged, self.pauses_lost
            ));
        }
        parts.join("; ")
    }
}

/// What one kill showed: its figures and, per check, what broke.
#[derive(Debug, Default)]
struct Round {
    figures: KillFigures,
    findings: BTreeMap<&'static str, Vec<String>>,
}

impl Round {
    fn find(&mut self, check: &'static str, what: String) {
        self.findings.entry(check).or_default().push(what);
    }
}

/// The kills of one setting on one server.
struct Series {
    rounds: Vec<Round>,
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
    fn figures(&self) -> Vec<KillFigures> {
        self.rounds.iter().map(|r| r.figures.clone()).collect()
    }

    /// Every finding of `check`, prefixed with its kill.
    fn findings(&self, check: &str) -> Vec<String> {
        self.rounds
            .iter()
            .flat_map(|r| {
                r.findings
                    .get(check)
                    .into_iter()
                    .flatten()
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

/// A reply in a few words, for findings.
fn words(reply: &Reply) -> String {
    match reply {
        Reply::Lease(None) => "no record".into(),
        Reply::Lease(Some(v)) => lease_words(v),
        Reply::Child(None) => "no such child".into(),
        Reply::Child(Some(v)) => format!(
            "{} (claimer {}, attempt {})",
            serde_json::to_value(v.state)
                .ok()
                .and_then(|s| s.as_str().map(str::to_string))
                .unwrap_or_default(),
            v.claimer.as_deref().unwrap_or("none"),
            v.attempt
        ),
        other => serde_json::to_string(other).unwrap_or_else(|_| other.outcome().to_string()),
    }
}

fn lease_words(v: &LeaseView) -> String {
    if v.live {
        format!(
            "epoch {} held by {} until {}",
            v.epoch,
            v.holder.as_deref().unwrap_or("nobody"),
            v.expires_at_ms
                .map_or("no expiry".into(), |x| x.to_string())
        )
    } else {
        format!("epoch {}, not live", v.epoch)
    }
}

/// Asks the store after the restart. `Ok(None)`: the store answered an
/// error of its own, recorded as a finding of `check` about `item`.
/// `Err`: harness trouble (the adapter failed, the server cannot be
/// reached): the check cannot be decided.
async fn ask(
    client: &mut Box<dyn StoreClient>,
    req: Request,
    check: &'static str,
    item: &str,
    round: &mut Round,
) -> Result<Option<Reply>, String> {
    match client.call(&req.to_call(), wall_ms()).await {
        Ok(reply) => Ok(Some(reply)),
        Err(e) if matches!(e.kind, ErrorKind::AdapterFailed | ErrorKind::Unavailable) => Err(
            format!("{} of {item} after the restart answered {e}", req.op()),
        ),
        Err(e) => {
            round.find(
                check,
                format!("{item}: {} after the restart answered {e}", req.op()),
            );
            Ok(None)
        }
    }
}

/// Checks every acknowledged write of a round after the restart; figures
/// and findings go into `round`. `Err` is harness trouble. Only the
/// `contracts` the store claims were written, so only they are asked about:
/// a store is never sent an operation it does not offer.
async fn verify(
    client: &mut Box<dyn StoreClient>,
    acked: &Acked,
    contracts: &[Contract],
    round: &mut Round,
    verifier: &str,
) -> Result<(), String> {
    let f = &mut round.figures;
    f.epochs_acknowledged = acked.grants.values().map(Vec::len).sum();
    f.renews_acknowledged = acked.renews.values().map(Vec::len).sum();
    f.children_acknowledged = acked.saved.len();
    f.claims_acknowledged = acked.claims.values().map(Vec::len).sum();
    f.completions_acknowledged = acked.completed.values().map(|n| *n as usize).sum();
    f.pauses_acknowledged = acked.pauses.values().map(Vec::len).sum();
    f.in_flight = acked.in_flight.len();

    // Epochs and renews: the record of every tree with an acknowledged grant.
    let mut lost_epochs: BTreeSet<(String, i64)> = BTreeSet::new();
    for (tree, grants) in &acked.grants {
        let top = grants.iter().map(|g| g.epoch).max().unwrap_or(0);
        let read_at = wall_ms();
        let Some(reply) = ask(
            client,
            Request::LeaseRead { tree: tree.clone() },
            EPOCHS,
            tree,
            round,
        )
        .await?
        else {
            lost_epochs.extend(grants.iter().map(|g| (tree.clone(), g.epoch)));
            continue;
        };
        let view = match reply {
            Reply::Lease(v) => v,
            other => {
                round.find(
                    EPOCHS,
                    format!("{tree}: lease.read answered {}", words(&other)),
                );
                lost_epochs.extend(grants.iter().map(|g| (tree.clone(), g.epoch)));
                continue;
            }
        };
        let on_server = view.as_ref().map_or(0, |v| v.epoch);
        if on_server < top {
            round.find(
                EPOCHS,
                format!(
                    "{tree}: epoch {top} was acknowledged, the restarted server reads {}",
                    view.as_ref().map_or("no record".into(), lease_words)
                ),
            );
            lost_epochs.extend(
                grants
                    .iter()
                    .filter(|g| g.epoch > on_server)
                    .map(|g| (tree.clone(), g.epoch)),
            );
        }
        // An acknowledged renew must still be in force: a lost renew lets a
        // second holder in early.
        for ((t, epoch), expiries) in acked.renews.range((tree.clone(), i64::MIN)..) {
            if t != tree {
                break;
            }
            let judged: Vec<i64> = expiries
                .iter()
                .copied()
                .filter(|x| *x > read_at + RENEW_MARGIN_MS)
                .collect();
            let released =
                acked.released.contains(&(t.clone(), *epoch)) || acked.release_in_flight(t, *epoch);
            if released || judged.is_empty() {
                round.figures.renews_not_judged += expiries.len();
                continue;
            }
            round.figures.renews_not_judged += expiries.len() - judged.len();
            let holder = grants
                .iter()
                .find(|g| g.epoch == *epoch)
                .map_or("", |g| g.holder.as_str());
            let until = judged.iter().copied().max().unwrap_or(0);
            let honoured = match &view {
                Some(v) if v.live && v.epoch == *epoch && v.holder.as_deref() == Some(holder) => {
                    v.expires_at_ms.unwrap_or(read_at)
                }
                _ => read_at,
            };
            let lost = judged.iter().filter(|x| **x > honoured).count();
            if lost > 0 {
                round.figures.renews_lost += lost;
                round.find(
                    RENEWS,
                    format!(
                        "{tree}: a renew of epoch {epoch} by {holder} to {until} was acknowledged, \
                         the restarted server reads {} at {read_at}",
                        view.as_ref().map_or("no record".into(), lease_words)
                    ),
                );
            }
        }
    }

    // The next take continues above every acknowledged epoch. Short leases
    // have run out by now; a live one (renewed, or taken in flight) is
    // released in its holder's name first.
    if !acked.grants.is_empty() {
        tokio::time::sleep(Duration::from_millis(LEASE_MS as u64 + 20)).await;
    }
    for (tree, grants) in &acked.grants {
        let top = grants.iter().map(|g| g.epoch).max().unwrap_or(0);
        let take = Request::LeaseTake {
            tree: tree.clone(),
            holder: verifier.into(),
            ttl_ms: LEASE_MS,
        };
        let mut granted = None;
        for _ in 0..5 {
            let Some(reply) = ask(client, take.clone(), NEXT_TAKE, tree, round).await? else {
                break;
            };
            match reply {
                Reply::Granted { epoch, .. } => {
                    granted = Some(epoch);
                    break;
                }
                Reply::Busy { holder, epoch, .. } => {
                    let release = Request::LeaseRelease {
                        tree: tree.clone(),
                        holder,
                        epoch,
                    };
                    ask(client, release, NEXT_TAKE, tree, round).await?;
                }
                other => {
                    round.find(
                        NEXT_TAKE,
                        format!(
                            "{tree}: the take after the restart answered {}",
                            words(&other)
                        ),
                    );
                    break;
                }
            }
        }
        let Some(got) = granted else {
            if !round.findings.contains_key(NEXT_TAKE) {
                round.find(
                    NEXT_TAKE,
                    format!("{tree}: the take after the restart was refused five times"),
                );
            }
            continue;
        };
        if got <= top {
            round.find(
                NEXT_TAKE,
                format!(
                    "{tree}: epoch {top} was acknowledged, the first take after the restart was granted epoch {got}"
                ),
            );
            lost_epochs.extend(
                grants
                    .iter()
                    .filter(|g| g.epoch >= got)
                    .map(|g| (tree.clone(), g.epoch)),
            );
        }
        let release = Request::LeaseRelease {
            tree: tree.clone(),
            holder: verifier.into(),
            epoch: got,
        };
        ask(client, release, NEXT_TAKE, tree, round).await?;
    }
    round.figures.epochs_lost = lost_epochs.len();

    for child in &acked.saved {
        let read = Request::QueueRead {
            child: child.clone(),
        };
        match ask(client, read, CHILDREN, child, round).await? {
            Some(Reply::Child(Some(_))) => {}
            None => round.figures.children_lost += 1,
            Some(other) => {
                round.figures.children_lost += 1;
                round.find(
                    CHILDREN,
                    format!(
                        "{child}: saved and acknowledged, the restarted server reads {}",
                        words(&other)
                    ),
                );
            }
        }
    }

    // A claim runs for CLAIM_MS: after the restart its child is still
    // claimed at that attempt (or done), and nobody else may claim it.
    let mut lost_claims: BTreeMap<String, usize> = BTreeMap::new();
    for (child, claims) in &acked.claims {
        let Some(last) = claims.iter().max_by_key(|c| c.attempt) else {
            continue;
        };
        let read = Request::QueueRead {
            child: child.clone(),
        };
        let Some(reply) = ask(client, read, CLAIMS, child, round).await? else {
            lost_claims.insert(child.clone(), claims.len());
            continue;
        };
        let shown = match &reply {
            Reply::Child(Some(v)) if matches!(v.state, ChildState::Claimed | ChildState::Done) => {
                v.attempt
            }
            _ => 0,
        };
        let lost = claims.iter().filter(|c| c.attempt > shown).count();
        if lost > 0 {
            lost_claims.insert(child.clone(), lost);
            round.find(
                CLAIMS,
                format!(
                    "{child}: claimed by {} (attempt {}) and acknowledged, the restarted server reads {}",
                    last.instance,
                    last.attempt,
                    words(&reply)
                ),
            );
        }
    }

    let mut lost_completions: BTreeSet<String> = BTreeSet::new();
    for child in acked.completed.keys() {
        let read = Request::QueueRead {
            child: child.clone(),
        };
        match ask(client, read, COMPLETED_ONCE, child, round).await? {
            Some(Reply::Child(Some(v))) if v.state == ChildState::Done => {}
            None => {
                lost_completions.insert(child.clone());
            }
            Some(other) => {
                lost_completions.insert(child.clone());
                round.find(
                    COMPLETED_ONCE,
                    format!(
                        "{child}: completed and acknowledged, the restarted server reads {}",
                        words(&other)
                    ),
                );
            }
        }
    }

    for (provider, untils) in &acked.pauses {
        let until = untils.iter().copied().max().unwrap_or(0);
        let read = Request::RateRead {
            provider: provider.clone(),
        };
        let in_force = match ask(client, read, PAUSES, provider, round).await? {
            Some(Reply::RateState {
                paused_until_ms, ..
            }) => paused_until_ms,
            Some(other) => {
                round.find(
                    PAUSES,
                    format!("{provider}: rate.read answered {}", words(&other)),
                );
                None
            }
            None => None,
        };
        let lost = untils
            .iter()
            .filter(|u| **u > in_force.unwrap_or(i64::MIN))
            .count();
        if lost > 0 {
            round.figures.pauses_lost += lost;
            if in_force.is_some() || !round.findings.contains_key(PAUSES) {
                round.find(
                    PAUSES,
                    format!(
                        "{provider}: paused until {until} (acknowledged), the restarted server reads {}",
                        in_force.map_or("no pause".into(), |p| format!("paused until {p}"))
                    ),
                );
            }
        }
    }

    // Drain what is claimable: no completed or live-claimed child may be
    // handed out again. The verifier's own writes are never counted.
    let bound = if contracts.contains(&Contract::Queue) {
        acked.saved.len() + acked.in_flight.len() + 1
    } else {
        0
    };
    for _ in 0..bound {
        let claim = Request::QueueClaim {
            instance: verifier.into(),
            claim_ttl_ms: CLAIM_MS,
        };
        let Some(Reply::Claimed { child, attempt, .. }) =
            ask(client, claim, CLAIMS, "the queue", round).await?
        else {
            break;
        };
        if acked.completed.contains_key(&child) {
            if lost_completions.insert(child.clone()) {
                round.find(
                    COMPLETED_ONCE,
                    format!("{child}: completed before the kill, handed out again after it"),
                );
            }
        } else if let Some(claims) = acked.claims.get(&child) {
            if !lost_claims.contains_key(&child) {
                lost_claims.insert(child.clone(), claims.len());
                let last = claims.last().map_or(String::new(), |c| {
                    format!("{} (attempt {})", c.instance, c.attempt)
                });
                round.find(
                    CLAIMS,
                    format!(
                        "{child}: claimed by {last} for {} minutes before the kill, handed out again \
                         (attempt {attempt}) after it",
                        CLAIM_MS / 60_000
                    ),
                );
            }
        }
        let done = Request::QueueComplete {
            child: child.clone(),
            instance: verifier.into(),
            attempt,
        };
        ask(client, done, CLAIMS, &child, round).await?;
    }
    round.figures.claims_lost = lost_claims.values().sum();
    round.figures.completions_lost = lost_completions.len();
    for v in &acked.violations {
        round.find(COMPLETED_ONCE, v.clone());
    }
    Ok(())
}

/// How one series of kills is run.
struct SeriesPlan<'a> {
    settings: &'a [(String, String)],
    opt_out: Option<String>,
    kills: usize,
    /// Names the Docker objects and seeds the kill moments.
    label: String,
    /// Key prefix tag: each round writes under `<prefix><tag><kill>:`.
    tag: &'static str,
    /// A simulated power cut instead of a plain SIGKILL (process backend).
    power: bool,
}

/// Runs one series of kills on one server. `Err` only when its server
/// cannot start; trouble later ends the series with `trouble` set.
async fn series(
    factory: &Arc<dyn StoreFactory>,
    prefix: &str,
    config: &CrashConfig,
    plan: SeriesPlan<'_>,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Series, String> {
    // Only the process backend sees the server's fsyncs.
    let choice = if plan.power {
        BackendChoice::Process
    } else {
        config.backend
    };
    let (mut server, fallback) = backend(choice, plan.settings, &plan.label)
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Series {
        rounds: Vec::new(),
        trouble: None,
        asked: plan.kills,
        backend: server.name(),
        fallback,
    };
    let url = server.url();
    let mut rng = StdRng::seed_from_u64(config.seed ^ plan.label.len() as u64);
    for k in 0..plan.kills {
        let round_prefix = format!("{prefix}{}{k}:", plan.tag);
        let hello = |instance: String| Hello {
            instance,
            redis_url: url.clone(),
            prefix: round_prefix.clone(),
            opt_out: plan.opt_out.clone(),
        };
        match kill_round(
            factory,
            &hello,
            config.instances,
            rng.random::<u64>(),
            rng.random_range(0..150),
            &config.contracts,
            plan.power,
            &mut *server,
            k,
        )
        .await
        {
            Ok(round) => {
                progress(&format!(
                    "crash ({}{}{}): kill {}/{}: {}",
                    out.backend,
                    if plan.power { ", power cut" } else { "" },
                    if plan.opt_out.is_some() {
                        ", opted out"
                    } else {
                        ""
                    },
                    k + 1,
                    plan.kills,
                    round.figures.sentence_of(&config.contracts)
                ));
                out.rounds.push(round);
            }
            Err(trouble) => {
                let trouble = format!("kill {} of {}: {trouble}", k + 1, plan.kills);
                progress(&format!("crash ({}): {trouble}", out.backend));
                out.trouble = Some(trouble);
                break;
            }
        }
    }
    if let Err(e) = server.destroy().await {
        // The verdicts stand; what is left is said, with how to remove it.
        progress(&format!("crash: could not remove the server: {e}"));
    }
    Ok(out)
}

/// One kill: workload, kill, restart, verification. `Err` is harness trouble.
#[allow(clippy::too_many_arguments)]
async fn kill_round(
    factory: &Arc<dyn StoreFactory>,
    hello: &(dyn Fn(String) -> Hello + Sync),
    instances: usize,
    seed: u64,
    delay_ms: u64,
    contracts: &[Contract],
    power: bool,
    server: &mut dyn CrashBackend,
    k: usize,
) -> Result<Round, String> {
    let acked = Arc::new(Mutex::new(Acked::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = workload::start(
        factory,
        |i| hello(format!("w{i}")),
        instances,
        seed,
        contracts,
        &acked,
        &stop,
    )
    .await?;
    let written = || acked.lock().map(|a| a.writes).unwrap_or(0);
    // The kill lands at a seeded moment once the workload is going.
    let deadline = Instant::now() + WORKLOAD_TIMEOUT;
    while written() < MIN_ACKED_PER_ROUND {
        if Instant::now() > deadline {
            stop.store(true, Ordering::Relaxed);
            let why = acked
                .lock()
                .map(|a| a.stopped.join("; "))
                .unwrap_or_default();
            return Err(format!(
                "the workload acknowledged {} writes in {} s, too few to crash it{}",
                written(),
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
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
    }
    killed.map_err(|e| format!("could not kill the server: {e}"))?;
    server
        .restart()
        .await
        .map_err(|e| format!("could not restart the server: {e}"))?;
    let acked = acked
        .lock()
        .map_err(|_| "the record of acknowledged writes is unreadable".to_string())?
        .clone();
    let h = hello(format!("verifier{k}"));
    let (_, mut client) = factory
        .connect(&h, wall_ms())
        .await
        .map_err(|e| format!("the store could not connect after the restart: {e}"))?;
    let mut round = Round {
        figures: KillFigures {
            kill: k + 1,
            ..KillFigures::default()
        },
        ..Round::default()
    };
    verify(&mut client, &acked, contracts, &mut round, &h.instance).await?;
    Ok(round)
}

/// The figures of a series for the report's `stats`.
fn series_stats(s: &Series) -> Value {
    let per_kill = s.figures();
    let total = KillFigures::total(&per_kill);
    json!({
        "kills": s.rounds.len(),
        "asked": s.asked,
        "acknowledged": total.acknowledged(),
        "lost": total.lost(),
        "kills_showing_loss": per_kill.iter().filter(|k| k.lost() > 0).count(),
        "total": total,
        "per_kill": per_kill,
        "trouble": s.trouble,
    })
}

/// A series' checks have no verdict of their own when it did not run.
fn series_trouble(s: Result<Series, String>, asked: usize) -> Series {
    s.unwrap_or_else(|e| Series {
        rounds: Vec::new(),
        trouble: Some(format!("its server could not start: {e}")),
        asked,
        backend: "process",
        fallback: None,
    })
}

/// How a check over one series words its verdict.
struct Judgement<'a> {
    id: &'static str,
    level: Level,
    series: &'a Series,
    found: Vec<String>,
    /// The reason when nothing was found and every kill ran.
    pass: String,
    /// The first words of the reason when something was found.
    fail: String,
    /// Why no kill ran, when none was asked for.
    none_asked: &'a str,
    evidence: Value,
    rerun: Value,
}

fn judge(j: Judgement<'_>) -> CheckResult {
    let (verdict, reason) = if !j.found.is_empty() {
        let more = j.found.len().saturating_sub(3);
        (
            if j.level == Level::Must {
                Verdict::Fail
            } else {
                Verdict::Warn
            },
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
    } else {
        (Verdict::Pass, j.pass)
    };
    CheckResult {
        id: j.id.into(),
        suite: "crash".into(),
        level: j.level,
        verdict,
        outside_claim: false,
        reason,
        counterexample: (verdict == Verdict::Fail).then_some(j.rerun),
        evidence: j.evidence,
        seconds: 0.0,
    }
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
            Verdict::Warn,
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
    CheckResult {
        id: DOCKER.into(),
        suite: "crash".into(),
        level: Level::Should,
        verdict,
        outside_claim: false,
        reason,
        evidence,
        counterexample: None,
        seconds: 0.0,
    }
}

/// Runs the crash suite against `factory`.
///
/// `Err` only when the first server cannot start (a setup error: nothing
/// ran yet). Harness trouble after that — a restart, reconnect or workload
/// that fails — leaves the checks it touches `unknown` with why; a store
/// that answers wrongly after a restart fails the check it was asked for.
pub async fn run(
    factory: Arc<dyn StoreFactory>,
    prefix: String,
    config: &CrashConfig,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<CrashOutcome, String> {
    let started = Instant::now();
    let claimed = &config.contracts;
    if claimed.is_empty() {
        // Nothing to write: no server is started, every check is outside the claim.
        let checks = check_ids()
            .iter()
            .map(|id| {
                let why = outside_claim(id, claimed).unwrap_or_default();
                CheckResult::outside_claim(id, "crash", why)
            })
            .collect();
        return Ok(CrashOutcome {
            checks,
            stats: json!({"contracts": claimed, "kills": 0}),
        });
    }
    if config.backend != BackendChoice::Process {
        // What runs killed with SIGKILL left behind goes first (no engine:
        // nothing to reap, and the backend choice says the rest).
        if let Ok(docker) = crate::docker::docker_available().await {
            match crate::docker::reap_dead_runs(&docker).await {
                Ok(r) if r.containers.is_empty() && r.volumes.is_empty() => {}
                Ok(r) => progress(&format!(
                    "crash: removed what dead runs left behind: containers {}; volumes {}",
                    r.containers.join(", "),
                    r.volumes.join(", ")
                )),
                Err(e) => progress(&format!(
                    "crash: could not remove what dead runs left behind: {e}"
                )),
            }
        }
    }
    let label = format!("{:08x}", config.seed as u32);
    let (required, required_opt_out) = match &config.sabotage_settings {
        Some(s) => (s.clone(), Some(OPT_OUT_WRITES_MAY_BE_LOST.to_string())),
        None => (required_settings(), None),
    };
    let opt_out = Some(OPT_OUT_WRITES_MAY_BE_LOST.to_string());
    let durable = series(
        &factory,
        &prefix,
        config,
        SeriesPlan {
            settings: &required,
            opt_out: required_opt_out.clone(),
            kills: config.kills,
            label: format!("{label}-durable"),
            tag: "",
            power: false,
        },
        progress,
    )
    .await?;
    let opted = series(
        &factory,
        &prefix,
        config,
        SeriesPlan {
            settings: &opt_out_settings(),
            opt_out: opt_out.clone(),
            kills: config.opt_out_kills,
            label: format!("{label}-optout"),
            tag: "o",
            power: false,
        },
        progress,
    )
    .await;
    let opted = series_trouble(opted, config.opt_out_kills);
    // Power cuts: appendfsync always keeps everything; everysec (opted out)
    // loses the last second of acknowledged writes.
    let power_always = series(
        &factory,
        &prefix,
        config,
        SeriesPlan {
            settings: &required,
            opt_out: required_opt_out,
            kills: config.power_losses,
            label: format!("{label}-power-always"),
            tag: "pa",
            power: true,
        },
        progress,
    )
    .await;
    let power_always = series_trouble(power_always, config.power_losses);
    let mut everysec = required_settings();
    everysec.retain(|(k, _)| k != "appendfsync");
    everysec.push(("appendfsync".into(), "everysec".into()));
    let power_everysec = series(
        &factory,
        &prefix,
        config,
        SeriesPlan {
            settings: &everysec,
            opt_out,
            kills: config.power_losses,
            label: format!("{label}-power-everysec"),
            tag: "pe",
            power: true,
        },
        progress,
    )
    .await;
    let power_everysec = series_trouble(power_everysec, config.power_losses);

    let backend = durable.backend;
    let durable_stats = series_stats(&durable);
    let opted_stats = series_stats(&opted);
    let always_stats = series_stats(&power_always);
    let everysec_stats = series_stats(&power_everysec);
    let stats = json!({
        "backend": backend,
        "contracts": claimed,
        "docker_unavailable": durable.fallback,
        "kills": durable.rounds.len(),
        "acknowledged": durable_stats["acknowledged"],
        "lost": durable_stats["lost"],
        "total": durable_stats["total"],
        "per_kill": durable_stats["per_kill"],
        "trouble": durable.trouble,
        "opt_out": opted_stats,
        "power_loss": {
            "backend": "process",
            "always": always_stats,
            "everysec_opted_out": everysec_stats,
        },
        "seed": config.seed,
        "seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    });
    // What re-runs a failed crash check: the same seed (kill moments and
    // writers), sizes and backend. Thread timing is not replayed, so a
    // re-run repeats the schedule, not every interleaving of it.
    let rerun = |found: &[String]| {
        json!({
            "kind": "crash-run",
            "seed": config.seed,
            "kills": config.kills,
            "opt_out_kills": config.opt_out_kills,
            "power_losses": config.power_losses,
            "instances": config.instances,
            "backend": backend,
            "contracts": claimed,
            "found": found.iter().take(5).collect::<Vec<_>>(),
        })
    };
    let kills = durable.rounds.len();
    let total = KillFigures::total(&durable.figures());
    let sigkills = format!(
        "{kills} SIGKILL{} ({backend} backend)",
        if kills == 1 { "" } else { "s" }
    );
    let none_asked = "not run: no kill was asked for (--kills 0)";
    let keep =
        |id: &'static str, unit: &str, what: &str, acked: usize, lost: usize| -> CheckResult {
            let found = durable.findings(id);
            judge(Judgement {
                id,
                level: Level::Must,
                series: &durable,
                pass: format!(
                    "{what} after each of {sigkills}: {unit} acknowledged {acked}, lost 0"
                ),
                fail: format!("{lost} of {acked} acknowledged {unit} lost across {sigkills}"),
                none_asked,
                evidence: json!({"figures": durable_stats, "found": found}),
                rerun: rerun(&found),
                found,
            })
        };
    let mut checks = vec![
        keep(
            EPOCHS,
            "epochs",
            "every acknowledged epoch was on the restarted server",
            total.epochs_acknowledged,
            total.epochs_lost,
        ),
        {
            let found = durable.findings(NEXT_TAKE);
            judge(Judgement {
                id: NEXT_TAKE,
                level: Level::Must,
                series: &durable,
                pass: format!(
                    "the first take after each of {sigkills} was granted above every acknowledged epoch of its tree"
                ),
                fail: format!(
                    "{} take(s) after a restart were not granted above the acknowledged epochs ({sigkills})",
                    found.len()
                ),
                none_asked,
                evidence: json!({"figures": durable_stats, "found": found}),
                rerun: rerun(&found),
                found,
            })
        },
        keep(
            RENEWS,
            "renews",
            "every acknowledged renew still ran to its acknowledged expiry on the restarted server",
            total.renews_acknowledged,
            total.renews_lost,
        ),
        keep(
            CHILDREN,
            "children",
            "every acknowledged child was on the restarted server",
            total.children_acknowledged,
            total.children_lost,
        ),
        keep(
            CLAIMS,
            "claims",
            "every acknowledged claim was still held on the restarted server and no claimed child was handed out again",
            total.claims_acknowledged,
            total.claims_lost,
        ),
        keep(
            COMPLETED_ONCE,
            "completions",
            "every completed child stayed done on the restarted server and none was handed out again",
            total.completions_acknowledged,
            total.completions_lost,
        ),
        keep(
            PAUSES,
            "pauses",
            "every acknowledged provider pause was in force on the restarted server",
            total.pauses_acknowledged,
            total.pauses_lost,
        ),
    ];

    // The opted-out server must show the loss in every kill, each on its own.
    let quiet: Vec<String> = opted
        .rounds
        .iter()
        .filter(|r| r.figures.lost() == 0)
        .map(|r| {
            format!(
                "kill {} lost nothing ({})",
                r.figures.kill,
                r.figures.sentence_of(claimed)
            )
        })
        .collect();
    let opted_total = KillFigures::total(&opted.figures());
    let regranted = if claimed.contains(&Contract::Lease) {
        format!("; {} epochs granted again", opted.findings(NEXT_TAKE).len())
    } else {
        String::new()
    };
    // The loss shown first: an epoch granted again when leases are claimed.
    let example = opted
        .findings(NEXT_TAKE)
        .into_iter()
        .chain(opted.all_findings())
        .next();
    checks.push(judge(Judgement {
        id: OPT_OUT,
        level: Level::Must,
        series: &opted,
        pass: format!(
            "as expected with appendonly no and the opt-out, every one of {} kills lost acknowledged writes \
             ({} in all{regranted}): {}",
            opted.rounds.len(),
            opted_total.lost(),
            opted
                .rounds
                .iter()
                .map(|r| format!("kill {}: {} of {} lost", r.figures.kill, r.figures.lost(), r.figures.acknowledged()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        fail: format!(
            "the opted-out server did not show the loss in {} of {} kills: the demonstration did not demonstrate",
            quiet.len(),
            opted.rounds.len()
        ),
        none_asked: "not run: no opted-out kill was asked for (--opt-out-kills 0)",
        evidence: json!({"figures": opted_stats, "example": example}),
        rerun: rerun(&[]),
        found: quiet,
    }));

    let always_found = power_always.all_findings();
    let always_total = KillFigures::total(&power_always.figures());
    checks.push(judge(Judgement {
        id: POWER_ALWAYS,
        level: Level::Must,
        series: &power_always,
        pass: format!(
            "with appendfsync always, {} simulated power cuts (SIGKILL, then the append-only file cut back \
             to its last fsync) lost nothing: {}",
            power_always.rounds.len(),
            always_total.sentence_of(claimed)
        ),
        fail: format!(
            "{} of {} acknowledged writes lost in power cuts with appendfsync always ({})",
            always_total.lost(),
            always_total.acknowledged(),
            always_total.sentence_of(claimed)
        ),
        none_asked: "not run: no power cut was asked for (--power-losses 0)",
        evidence: json!({"figures": always_stats, "found": always_found}),
        rerun: rerun(&always_found),
        found: always_found,
    }));

    let quiet_cuts: Vec<String> = power_everysec
        .rounds
        .iter()
        .filter(|r| r.figures.lost() == 0)
        .map(|r| {
            format!(
                "cut {} landed right after an fsync and lost nothing",
                r.figures.kill
            )
        })
        .collect();
    let everysec_total = KillFigures::total(&power_everysec.figures());
    checks.push(judge(Judgement {
        id: POWER_EVERYSEC,
        level: Level::Should,
        series: &power_everysec,
        pass: format!(
            "as expected with appendfsync everysec (opted out), every one of {} power cuts lost acknowledged \
             writes ({} of {} in all) — why the store requires appendfsync always: {}",
            power_everysec.rounds.len(),
            everysec_total.lost(),
            everysec_total.acknowledged(),
            power_everysec
                .rounds
                .iter()
                .map(|r| format!("cut {}: {} lost", r.figures.kill, r.figures.lost()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        fail: format!(
            "{} of {} power cuts with appendfsync everysec lost nothing",
            quiet_cuts.len(),
            power_everysec.rounds.len()
        ),
        none_asked: "not run: no power cut was asked for (--power-losses 0)",
        evidence: json!({"figures": everysec_stats}),
        rerun: Value::Null,
        found: quiet_cuts,
    }));
    checks.push(docker_backend_check(
        durable.fallback.as_deref(),
        config.backend,
        json!({"figures": stats}),
    ));
    // The checks about contracts the store does not claim were never
    // written to: they are outside the claim, whatever their zeros say.
    let checks = checks
        .into_iter()
        .map(|c| match outside_claim(&c.id, claimed) {
            Some(why) => CheckResult {
                level: c.level,
                ..CheckResult::outside_claim(&c.id, "crash", why)
            },
            None => c,
        })
        .collect();
    Ok(CrashOutcome { checks, stats })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            docker_backend_check(None, BackendChoice::Auto, Value::Null).verdict,
            Verdict::Pass
        );
    }

    #[test]
    fn kill_figures_read_in_named_units_and_add_up() {
        let k = KillFigures {
            kill: 1,
            epochs_acknowledged: 41,
            children_acknowledged: 30,
            children_lost: 2,
            ..KillFigures::default()
        };
        assert_eq!(k.lost(), 2);
        assert!(
            k.sentence()
                .starts_with("epochs acknowledged 41, lost 0; renews acknowledged 0, lost 0; children saved 30, lost 2"),
            "{}",
            k.sentence()
        );
        let t = KillFigures::total(&[k.clone(), k]);
        assert_eq!((t.kill, t.epochs_acknowledged, t.lost()), (2, 82, 4));
    }

    #[test]
    fn each_check_is_outside_the_claim_only_when_it_is_about_no_claimed_contract() {
        for id in check_ids() {
            assert!(!check_contracts(id).is_empty(), "{id}");
        }
        let rate = [Contract::Rate];
        let epochs = outside_claim(EPOCHS, &rate).unwrap_or_default();
        assert!(
            epochs.contains("the lease contract") && epochs.contains("does not offer"),
            "{epochs}"
        );
        assert_eq!(outside_claim(PAUSES, &rate), None);
        assert_eq!(
            outside_claim(CHILDREN, &[Contract::Queue, Contract::Rate]),
            None
        );
        // The whole workload is judged on whatever is claimed.
        for id in [OPT_OUT, POWER_ALWAYS, POWER_EVERYSEC, DOCKER] {
            assert_eq!(outside_claim(id, &rate), None, "{id}");
            assert!(outside_claim(id, &[]).is_some(), "{id}");
        }
    }

    #[test]
    fn figures_in_words_name_only_the_claimed_kinds() {
        let k = KillFigures {
            pauses_acknowledged: 12,
            ..KillFigures::default()
        };
        assert_eq!(
            k.sentence_of(&[Contract::Rate]),
            "pauses acknowledged 12, lost 0"
        );
        assert!(k.sentence().starts_with("epochs acknowledged 0"));
    }

    #[test]
    fn a_rerun_keeps_its_contracts_and_an_older_one_means_all() {
        let narrowed = json!({"kind": "crash-run", "contracts": ["lease"]});
        assert_eq!(contracts_of_rerun(&narrowed), vec![Contract::Lease]);
        assert_eq!(
            contracts_of_rerun(&json!({"kind": "crash-run"})),
            Contract::ALL.to_vec()
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
                (harness::store::StoreInfo, Box<dyn StoreClient>),
                harness::contract::StoreError,
            > {
                panic!("nothing is written to a store that claims nothing")
            }
        }
        let config = CrashConfig {
            kills: 1,
            opt_out_kills: 1,
            power_losses: 1,
            instances: 1,
            seed: 1,
            backend: BackendChoice::Process,
            sabotage_settings: None,
            contracts: vec![],
        };
        let outcome = run(
            Arc::new(Unreachable),
            "sp:none:".into(),
            &config,
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!(outcome.checks.len(), check_ids().len());
        for c in &outcome.checks {
            assert!(c.outside_claim && !c.leaves_incomplete(), "{}", c.id);
        }
    }

    #[test]
    fn harness_trouble_leaves_a_check_unknown_and_a_finding_still_fails() {
        let series = Series {
            rounds: vec![Round::default()],
            trouble: Some("kill 2 of 3: could not restart the server: gone".into()),
            asked: 3,
            backend: "process",
            fallback: None,
        };
        let j = |found: Vec<String>| Judgement {
            id: EPOCHS,
            level: Level::Must,
            series: &series,
            found,
            pass: "held".into(),
            fail: "lost".into(),
            none_asked: "none",
            evidence: Value::Null,
            rerun: Value::Null,
        };
        let unknown = judge(j(vec![]));
        assert_eq!(unknown.verdict, Verdict::Unknown);
        assert!(
            unknown.reason.contains("could not restart"),
            "{}",
            unknown.reason
        );
        assert!(unknown.leaves_incomplete());
        assert_eq!(judge(j(vec!["tree-1: gone".into()])).verdict, Verdict::Fail);
    }
}
