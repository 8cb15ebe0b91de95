//! After each restart: what the restarted server shows ([`observe`], the only
//! part that talks to the store) and what that means ([`judge_round`], a pure
//! function of the round's history and the observations).
//!
//! Keeping the judgement pure lets every way a write can be lost be shown
//! on hand-written histories (the tests below), without a server.

use std::collections::{BTreeMap, BTreeSet};

use model::contract::{ChildState, LeaseView, Reply, Request};
use model::figures::KillFigures;
use model::{CheckSpec, History};
use serde::{Deserialize, Serialize};

use crate::suite::{CHILDREN, CLAIMS, COMPLETED_ONCE, EPOCHS, NEXT_TAKE, PAUSES, RENEWS};
use crate::workload::{exchanges, Acked, Exchange, CLAIM_MS};

/// A renew is judged only if it should still run this long after the read:
/// the server's clock is the host's real clock, read a moment apart.
pub const RENEW_MARGIN_MS: i64 = 1_000;

/// The crash checks that judge one kill's acknowledged writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kept {
    /// Every acknowledged epoch is on the restarted server.
    Epochs,
    /// The first take after the restart is granted above every acknowledged epoch.
    NextTake,
    /// Every acknowledged renew still runs to its expiry.
    Renews,
    /// Every acknowledged child is there.
    Children,
    /// Every acknowledged claim still holds; no claimed child is handed out again.
    Claims,
    /// Every completed child stays done and is not handed out again.
    CompletedOnce,
    /// Every acknowledged pause is in force.
    Pauses,
}

impl Kept {
    /// Every one, in report order.
    pub const ALL: [Kept; 7] = [
        Kept::Epochs,
        Kept::NextTake,
        Kept::Renews,
        Kept::Children,
        Kept::Claims,
        Kept::CompletedOnce,
        Kept::Pauses,
    ];

    /// The check it is.
    pub fn spec(self) -> &'static CheckSpec {
        match self {
            Kept::Epochs => &EPOCHS,
            Kept::NextTake => &NEXT_TAKE,
            Kept::Renews => &RENEWS,
            Kept::Children => &CHILDREN,
            Kept::Claims => &CLAIMS,
            Kept::CompletedOnce => &COMPLETED_ONCE,
            Kept::Pauses => &PAUSES,
        }
    }
}

/// What the store answered one request after the restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// A reply (which may or may not be the right one).
    Reply(Reply),
    /// An error of the store's own (not the harness's), in words:
    /// `lease.read after the restart answered bad_request: …`.
    Refused(String),
    /// The store does not offer the operation (PROTOCOL: that check is
    /// skipped), in words: never a loss, what it reads is not judged.
    Unsupported(String),
}

/// A tree's record read after the restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRead {
    /// Wall-clock ms just before the read (the server runs on real time).
    pub read_at_ms: i64,
    /// What `lease.read` answered.
    pub answer: Answer,
}

/// How the verifier's first take of a tree after the restart ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TakeOutcome {
    /// Granted at this epoch.
    Granted(i64),
    /// Answered something else than granted or busy.
    Answered(Reply),
    /// Refused with an error of the store's own.
    Refused(String),
    /// Busy every time, though each holder's lease was released in between.
    AlwaysBusy,
    /// The take was answered `unsupported`, in words: not judged.
    Unsupported(String),
}

/// The verifier's first take of a tree after the restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextTake {
    /// How it ended.
    pub outcome: TakeOutcome,
    /// Releases (of a live holder, or of the verifier's own grant) the store
    /// refused, in words.
    pub refused_releases: Vec<String>,
    /// A release answered `unsupported`, in words: a take kept busy by it
    /// is not judged.
    #[serde(default)]
    pub release_unsupported: Option<String>,
}

/// A child the verifier could claim after the restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drained {
    /// The child handed out.
    pub child: String,
    /// The attempt it was handed out at.
    pub attempt: i64,
    /// The verifier's complete of it, if the store refused it.
    pub complete_refused: Option<String>,
}

/// Everything read back from the restarted server about one kill's writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    /// Tree → its record, for every tree with an acknowledged grant.
    pub leases: BTreeMap<String, LeaseRead>,
    /// Tree → the first take after the restart, for the same trees.
    pub next_takes: BTreeMap<String, NextTake>,
    /// Child → `queue.read`, for every child saved, claimed or completed.
    pub children: BTreeMap<String, Answer>,
    /// Provider → `rate.read`, for every provider paused.
    pub pauses: BTreeMap<String, Answer>,
    /// The children the queue handed out when drained, in order.
    pub drained: Vec<Drained>,
    /// A claim of the drain the store refused, if any (it stops the drain).
    pub drain_refused: Option<String>,
    /// A claim of the drain answered `unsupported`, if any (it stops the
    /// drain; nothing is judged on it).
    #[serde(default)]
    pub drain_unsupported: Option<String>,
}

/// What a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Item {
    /// A tree's lease.
    Tree(String),
    /// A child of the queue.
    Child(String),
    /// A provider's pause.
    Provider(String),
    /// The queue as a whole (its drain): no request of the workload names it.
    Queue,
}

impl Item {
    /// The items a request of the workload is about: the tree, child or
    /// provider it names, or for a claim the child its reply hands out.
    fn of(x: &Exchange<'_>) -> Option<Item> {
        match Request::parse(x.call).ok()? {
            Request::LeaseTake { tree, .. }
            | Request::LeaseRenew { tree, .. }
            | Request::LeaseRelease { tree, .. }
            | Request::LeaseRead { tree } => Some(Item::Tree(tree)),
            Request::QueueSave { child, .. }
            | Request::QueueComplete { child, .. }
            | Request::QueueRead { child } => Some(Item::Child(child)),
            Request::QueueClaim { .. } => match x.reply() {
                Some(Reply::Claimed { child, .. }) => Some(Item::Child(child.clone())),
                _ => None,
            },
            Request::RatePause { provider, .. } | Request::RateRead { provider } => {
                Some(Item::Provider(provider))
            }
            _ => None,
        }
    }
}

/// The items of each check whose events a round keeps for its evidence:
/// as many as the verdict's reason words.
pub const SHOWN_ITEMS: usize = 3;

/// The requests a round keeps for its evidence at most (the last ones: a
/// kill loses the newest writes), so a report stays small.
pub const SHOWN_REQUESTS: usize = 20;

/// What one kill showed: its figures and, per check, what broke, with the
/// part of the kill's history that shows it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Round {
    /// Acknowledged and lost, per kind.
    pub figures: KillFigures,
    /// Per check, each finding in words.
    pub findings: BTreeMap<Kept, Vec<String>>,
    /// Per check, what its findings are about, in the order found, each once.
    pub items: BTreeMap<Kept, Vec<Item>>,
    /// The requests of the kill's history about the first
    /// [`SHOWN_ITEMS`] items of each check's findings (the last
    /// [`SHOWN_REQUESTS`] of them), invoke and completion together, each
    /// event keeping its index in the whole history. Empty when nothing broke.
    pub shown: History,
    /// Per check, the acknowledged writes of its kind it judged (epochs for
    /// the next take): a check with none judged in any kill is undecided.
    pub judged: BTreeMap<Kept, usize>,
    /// Per check, the first `unsupported` answer that left writes of its
    /// kind unjudged (or unsent), in words.
    pub unsupported: BTreeMap<Kept, String>,
}

impl Round {
    /// `n` more writes of `check`'s kind judged.
    fn judge(&mut self, check: Kept, n: usize) {
        *self.judged.entry(check).or_default() += n;
    }

    /// The writes of `check`'s kind judged in this kill.
    pub fn judged_of(&self, check: Kept) -> usize {
        self.judged.get(&check).copied().unwrap_or(0)
    }

    /// Keeps the first `unsupported` answer about `checks`.
    fn unsupported(&mut self, checks: &[Kept], what: &str) {
        for c in checks {
            self.unsupported
                .entry(*c)
                .or_insert_with(|| what.to_string());
        }
    }

    fn find(&mut self, check: Kept, item: Item, what: String) {
        self.findings.entry(check).or_default().push(what);
        let items = self.items.entry(check).or_default();
        if !items.contains(&item) {
            items.push(item);
        }
    }

    /// The findings of `check`.
    pub fn of(&self, check: Kept) -> &[String] {
        self.findings.get(&check).map_or(&[], Vec::as_slice)
    }

    /// The events that show what `check` found (every check's: `None`),
    /// a part of [`Round::shown`]; empty when it found nothing about a
    /// tree, child or provider.
    pub fn history_of(&self, check: Option<Kept>) -> History {
        let items: BTreeSet<&Item> = self
            .items
            .iter()
            .filter(|(k, _)| check.is_none_or(|c| c == **k))
            .flat_map(|(_, items)| items.iter().take(SHOWN_ITEMS))
            .collect();
        about(&self.shown, &items, SHOWN_REQUESTS)
    }
}

/// The requests of `history` about any of `items`, the last `most` of them,
/// each with its completion, in the history's order.
fn about(history: &History, items: &BTreeSet<&Item>, most: usize) -> History {
    let mut picked: Vec<Exchange<'_>> = exchanges(history)
        .into_iter()
        .filter(|x| Item::of(x).is_some_and(|i| items.contains(&i)))
        .collect();
    picked.sort_by_key(|x| x.invoke.index);
    let skip = picked.len().saturating_sub(most);
    let mut events: Vec<_> = picked
        .into_iter()
        .skip(skip)
        .flat_map(|x| std::iter::once(x.invoke).chain(x.completion))
        .cloned()
        .collect();
    events.sort_by_key(|e| e.index);
    History { events }
}

/// A reply in a few words, for findings.
pub fn words(reply: &Reply) -> String {
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

const NOT_READ: &str = "was not read after the restart";

/// Judges one kill (number `kill`, from 1): what its history acknowledged
/// before it ([`Acked::from_history`]) against what the restarted server
/// showed. Pure: a request whose outcome is unknown is never judged.
pub fn judge_round(kill: usize, history: &History, seen: &Observed) -> Round {
    let acked = &Acked::from_history(history);
    let mut round = Round {
        figures: KillFigures {
            kill,
            epochs_acknowledged: acked.grants.values().map(Vec::len).sum(),
            renews_acknowledged: acked.renews.values().map(Vec::len).sum(),
            children_acknowledged: acked.saved.len(),
            claims_acknowledged: acked.claims.values().map(Vec::len).sum(),
            completions_acknowledged: acked.completed.values().map(|n| *n as usize).sum(),
            pauses_acknowledged: acked.pauses.values().map(Vec::len).sum(),
            in_flight: acked.in_flight.len(),
            ..KillFigures::default()
        },
        ..Round::default()
    };
    // What the store said it does not offer while it was written to: those
    // writes were never made, their checks have nothing of theirs to judge.
    for (op, message) in &acked.unsupported {
        let what = format!("{op} answered unsupported: {message}");
        match op.as_str() {
            "lease.take" => round.unsupported(&[Kept::Epochs, Kept::NextTake], &what),
            "lease.renew" => round.unsupported(&[Kept::Renews], &what),
            "queue.save" => round.unsupported(&[Kept::Children], &what),
            "queue.claim" => round.unsupported(&[Kept::Claims], &what),
            "queue.complete" => round.unsupported(&[Kept::CompletedOnce], &what),
            "rate.pause" => round.unsupported(&[Kept::Pauses], &what),
            _ => {}
        }
    }
    let mut lost_epochs: BTreeSet<(String, i64)> = BTreeSet::new();
    judge_leases(acked, seen, &mut round, &mut lost_epochs);
    judge_next_takes(acked, seen, &mut round, &mut lost_epochs);
    round.figures.epochs_lost = lost_epochs.len();
    judge_queue(acked, seen, &mut round);
    judge_pauses(acked, seen, &mut round);
    let items: BTreeSet<&Item> = round
        .items
        .values()
        .flat_map(|items| items.iter().take(SHOWN_ITEMS))
        .collect();
    round.shown = about(history, &items, SHOWN_REQUESTS * Kept::ALL.len());
    round
}

/// Epochs and renews: the record of every tree with an acknowledged grant.
fn judge_leases(
    acked: &Acked,
    seen: &Observed,
    round: &mut Round,
    lost_epochs: &mut BTreeSet<(String, i64)>,
) {
    for (tree, grants) in &acked.grants {
        let top = grants.iter().map(|g| g.epoch).max().unwrap_or(0);
        let renews_of_tree = || {
            acked
                .renews
                .range((tree.clone(), i64::MIN)..)
                .take_while(|((t, _), _)| t == tree)
                .map(|(_, x)| x.len())
                .sum::<usize>()
        };
        let (read_at, view) = match seen.leases.get(tree) {
            Some(LeaseRead {
                read_at_ms,
                answer: Answer::Reply(Reply::Lease(v)),
            }) => (*read_at_ms, v),
            // Not offered: neither its epochs nor its renews can be read.
            Some(LeaseRead {
                answer: Answer::Unsupported(what),
                ..
            }) => {
                round.figures.epochs_not_judged += grants.len();
                round.figures.renews_not_judged += renews_of_tree();
                round.unsupported(&[Kept::Epochs, Kept::Renews], what);
                continue;
            }
            other => {
                let what = match other {
                    Some(LeaseRead {
                        answer: Answer::Reply(r),
                        ..
                    }) => format!("lease.read answered {}", words(r)),
                    Some(LeaseRead {
                        answer: Answer::Refused(e) | Answer::Unsupported(e),
                        ..
                    }) => e.clone(),
                    None => NOT_READ.to_string(),
                };
                round.judge(Kept::Epochs, grants.len());
                round.find(
                    Kept::Epochs,
                    Item::Tree(tree.clone()),
                    format!("{tree}: {what}"),
                );
                lost_epochs.extend(grants.iter().map(|g| (tree.clone(), g.epoch)));
                continue;
            }
        };
        round.judge(Kept::Epochs, grants.len());
        let on_server = view.as_ref().map_or(0, |v| v.epoch);
        if on_server < top {
            round.find(
                Kept::Epochs,
                Item::Tree(tree.clone()),
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
            round.judge(Kept::Renews, judged.len());
            let holder = grants
                .iter()
                .find(|g| g.epoch == *epoch)
                .map_or("", |g| g.holder.as_str());
            let until = judged.iter().copied().max().unwrap_or(0);
            let honoured = match view {
                Some(v) if v.live && v.epoch == *epoch && v.holder.as_deref() == Some(holder) => {
                    v.expires_at_ms.unwrap_or(read_at)
                }
                _ => read_at,
            };
            let lost = judged.iter().filter(|x| **x > honoured).count();
            if lost > 0 {
                round.figures.renews_lost += lost;
                round.find(
                    Kept::Renews,
                    Item::Tree(tree.clone()),
                    format!(
                        "{tree}: a renew of epoch {epoch} by {holder} to {until} was acknowledged, \
                         the restarted server reads {} at {read_at}",
                        view.as_ref().map_or("no record".into(), lease_words)
                    ),
                );
            }
        }
    }
}

/// The next take of each tree continues above every acknowledged epoch.
fn judge_next_takes(
    acked: &Acked,
    seen: &Observed,
    round: &mut Round,
    lost_epochs: &mut BTreeSet<(String, i64)>,
) {
    for (tree, grants) in &acked.grants {
        let top = grants.iter().map(|g| g.epoch).max().unwrap_or(0);
        let Some(take) = seen.next_takes.get(tree) else {
            round.find(
                Kept::NextTake,
                Item::Tree(tree.clone()),
                format!("{tree}: the take {NOT_READ}"),
            );
            continue;
        };
        for e in &take.refused_releases {
            round.find(
                Kept::NextTake,
                Item::Tree(tree.clone()),
                format!("{tree}: {e}"),
            );
        }
        match (&take.outcome, &take.release_unsupported) {
            // Not offered, or kept busy by a release that is not: not judged.
            (TakeOutcome::Unsupported(what), _) | (TakeOutcome::AlwaysBusy, Some(what)) => {
                round.unsupported(&[Kept::NextTake], what);
                continue;
            }
            _ => round.judge(Kept::NextTake, grants.len()),
        }
        match &take.outcome {
            TakeOutcome::Granted(got) if *got <= top => {
                round.find(
                    Kept::NextTake,
                    Item::Tree(tree.clone()),
                    format!(
                        "{tree}: epoch {top} was acknowledged, the first take after the restart was granted epoch {got}"
                    ),
                );
                lost_epochs.extend(
                    grants
                        .iter()
                        .filter(|g| g.epoch >= *got)
                        .map(|g| (tree.clone(), g.epoch)),
                );
            }
            TakeOutcome::Granted(_) => {}
            TakeOutcome::Answered(other) => round.find(
                Kept::NextTake,
                Item::Tree(tree.clone()),
                format!(
                    "{tree}: the take after the restart answered {}",
                    words(other)
                ),
            ),
            TakeOutcome::Refused(e) => round.find(
                Kept::NextTake,
                Item::Tree(tree.clone()),
                format!("{tree}: {e}"),
            ),
            TakeOutcome::AlwaysBusy => round.find(
                Kept::NextTake,
                Item::Tree(tree.clone()),
                format!("{tree}: the take after the restart was refused five times"),
            ),
            TakeOutcome::Unsupported(_) => {}
        }
    }
}

/// Children, claims and completions, and the drain of the queue.
fn judge_queue(acked: &Acked, seen: &Observed, round: &mut Round) {
    let read = |child: &str| seen.children.get(child);
    let unsupported = |child: &str| match seen.children.get(child) {
        Some(Answer::Unsupported(what)) => Some(what.clone()),
        _ => None,
    };
    let trouble = |answer: Option<&Answer>, what: &str| -> String {
        match answer {
            Some(Answer::Refused(e) | Answer::Unsupported(e)) => e.clone(),
            Some(Answer::Reply(r)) => format!("{what}, the restarted server reads {}", words(r)),
            None => format!("{what}, but it {NOT_READ}"),
        }
    };
    for child in &acked.saved {
        if let Some(what) = unsupported(child) {
            round.figures.children_not_judged += 1;
            round.unsupported(&[Kept::Children], &what);
            continue;
        }
        round.judge(Kept::Children, 1);
        let answer = read(child);
        if !matches!(answer, Some(Answer::Reply(Reply::Child(Some(_))))) {
            round.figures.children_lost += 1;
            let what = trouble(answer, "saved and acknowledged");
            round.find(
                Kept::Children,
                Item::Child(child.clone()),
                format!("{child}: {what}"),
            );
        }
    }

    // A claim runs for CLAIM_MS: after the restart its child is still
    // claimed at that attempt (or done), and nobody else may claim it.
    let mut lost_claims: BTreeMap<String, usize> = BTreeMap::new();
    for (child, claims) in &acked.claims {
        let Some(last) = claims.iter().max_by_key(|c| c.attempt) else {
            continue;
        };
        if let Some(what) = unsupported(child) {
            round.figures.claims_not_judged += claims.len();
            round.unsupported(&[Kept::Claims], &what);
            continue;
        }
        round.judge(Kept::Claims, claims.len());
        let answer = read(child);
        let shown = match answer {
            Some(Answer::Reply(Reply::Child(Some(v))))
                if matches!(v.state, ChildState::Claimed | ChildState::Done) =>
            {
                v.attempt
            }
            _ => 0,
        };
        let lost = match answer {
            Some(Answer::Reply(_)) => claims.iter().filter(|c| c.attempt > shown).count(),
            _ => claims.len(),
        };
        if lost > 0 {
            lost_claims.insert(child.clone(), lost);
            let what = trouble(
                answer,
                &format!(
                    "claimed by {} (attempt {}) and acknowledged",
                    last.instance, last.attempt
                ),
            );
            round.find(
                Kept::Claims,
                Item::Child(child.clone()),
                format!("{child}: {what}"),
            );
        }
    }

    let mut lost_completions: BTreeSet<String> = BTreeSet::new();
    for (child, n) in &acked.completed {
        if let Some(what) = unsupported(child) {
            round.figures.completions_not_judged += *n as usize;
            round.unsupported(&[Kept::CompletedOnce], &what);
            continue;
        }
        round.judge(Kept::CompletedOnce, *n as usize);
        let answer = read(child);
        if !matches!(answer, Some(Answer::Reply(Reply::Child(Some(v)))) if v.state == ChildState::Done)
        {
            lost_completions.insert(child.clone());
            let what = trouble(answer, "completed and acknowledged");
            round.find(
                Kept::CompletedOnce,
                Item::Child(child.clone()),
                format!("{child}: {what}"),
            );
        }
    }

    // No completed or live-claimed child may be handed out again.
    for d in &seen.drained {
        let child = &d.child;
        if acked.completed.contains_key(child) {
            if lost_completions.insert(child.clone()) {
                round.find(
                    Kept::CompletedOnce,
                    Item::Child(child.clone()),
                    format!("{child}: completed before the kill, handed out again after it"),
                );
            }
        } else if let Some(claims) = acked.claims.get(child) {
            if !lost_claims.contains_key(child) {
                lost_claims.insert(child.clone(), claims.len());
                let last = claims.last().map_or(String::new(), |c| {
                    format!("{} (attempt {})", c.instance, c.attempt)
                });
                round.find(
                    Kept::Claims,
                    Item::Child(child.clone()),
                    format!(
                        "{child}: claimed by {last} for {} minutes before the kill, handed out again \
                         (attempt {}) after it",
                        CLAIM_MS / 60_000,
                        d.attempt
                    ),
                );
            }
        }
        if let Some(e) = &d.complete_refused {
            round.find(
                Kept::Claims,
                Item::Child(child.clone()),
                format!("{child}: {e}"),
            );
        }
    }
    if let Some(e) = &seen.drain_refused {
        round.find(Kept::Claims, Item::Queue, format!("the queue: {e}"));
    }
    if let Some(what) = &seen.drain_unsupported {
        round.unsupported(&[Kept::Claims, Kept::CompletedOnce], what);
    }
    round.figures.claims_lost = lost_claims.values().sum();
    round.figures.completions_lost = lost_completions.len();
    for (child, n) in &acked.completed_again {
        round.find(
            Kept::CompletedOnce,
            Item::Child(child.clone()),
            format!("{child}: completed {n} times before the kill"),
        );
    }
}

/// Every acknowledged pause is in force after the restart.
fn judge_pauses(acked: &Acked, seen: &Observed, round: &mut Round) {
    for (provider, untils) in &acked.pauses {
        let until = untils.iter().copied().max().unwrap_or(0);
        if let Some(Answer::Unsupported(what)) = seen.pauses.get(provider) {
            round.figures.pauses_not_judged += untils.len();
            round.unsupported(&[Kept::Pauses], what);
            continue;
        }
        round.judge(Kept::Pauses, untils.len());
        let (in_force, said) = match seen.pauses.get(provider) {
            Some(Answer::Reply(Reply::RateState {
                paused_until_ms, ..
            })) => (*paused_until_ms, None),
            Some(Answer::Reply(other)) => {
                (None, Some(format!("rate.read answered {}", words(other))))
            }
            Some(Answer::Refused(e) | Answer::Unsupported(e)) => (None, Some(e.clone())),
            None => (None, Some(NOT_READ.to_string())),
        };
        let lost = untils
            .iter()
            .filter(|u| **u > in_force.unwrap_or(i64::MIN))
            .count();
        if let Some(said) = &said {
            round.find(
                Kept::Pauses,
                Item::Provider(provider.clone()),
                format!("{provider}: {said}"),
            );
        }
        if lost > 0 {
            round.figures.pauses_lost += lost;
            if said.is_none() {
                round.find(
                    Kept::Pauses,
                    Item::Provider(provider.clone()),
                    format!(
                        "{provider}: paused until {until} (acknowledged), the restarted server reads {}",
                        in_force.map_or("no pause".into(), |p| format!("paused until {p}"))
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Claim, Grant, LEASE_MS};
    use model::contract::{ChildView, ErrorKind, StoreError};
    use model::EventKind;

    const NOW: i64 = 2_000_000_000_000;

    fn lease(epoch: i64, holder: &str, until: i64) -> Answer {
        Answer::Reply(Reply::Lease(Some(LeaseView {
            holder: Some(holder.into()),
            epoch,
            expires_at_ms: Some(until),
            live: until > NOW,
        })))
    }

    fn child(state: ChildState, attempt: i64) -> Answer {
        Answer::Reply(Reply::Child(Some(ChildView {
            state,
            claimer: (attempt > 0).then(|| "w1".to_string()),
            attempt,
            depth: 0,
        })))
    }

    /// Records `req` sent by `who` and answered `outcome`.
    fn send(h: &mut History, who: &str, req: &Request, outcome: Result<Reply, StoreError>) {
        h.invoke(who, &req.to_call(), None, NOW);
        h.complete(who, req.op(), &outcome, None, NOW);
    }

    fn take(holder: &str) -> Request {
        Request::LeaseTake {
            tree: "tree-1".into(),
            holder: holder.into(),
            ttl_ms: LEASE_MS,
        }
    }

    fn claim(who: &str) -> Request {
        Request::QueueClaim {
            instance: who.into(),
            claim_ttl_ms: CLAIM_MS,
        }
    }

    fn claimed(child: &str) -> Reply {
        Reply::Claimed {
            child: child.into(),
            depth: 0,
            payload: String::new(),
            attempt: 1,
        }
    }

    fn complete(child: &str, who: &str) -> Request {
        Request::QueueComplete {
            child: child.into(),
            instance: who.into(),
            attempt: 1,
        }
    }

    fn save(child: &str) -> Request {
        Request::QueueSave {
            child: child.into(),
            depth: 0,
            payload: String::new(),
        }
    }

    fn release(holder: &str, epoch: i64) -> Request {
        Request::LeaseRelease {
            tree: "tree-1".into(),
            holder: holder.into(),
            epoch,
        }
    }

    /// One kill's history: a tree granted twice (the second renewed), three
    /// children saved, one claimed, one completed, a provider paused; and,
    /// around them, answers that acknowledge nothing (busy, empty, refused).
    fn history() -> History {
        let mut h = History::default();
        let granted = |epoch| {
            Ok(Reply::Granted {
                epoch,
                expires_at_ms: NOW,
            })
        };
        send(&mut h, "w0", &take("w0"), granted(3));
        send(&mut h, "w1", &take("w1"), granted(4));
        send(
            &mut h,
            "w0",
            &take("w0"),
            Ok(Reply::Busy {
                holder: "w1".into(),
                epoch: 4,
                expires_at_ms: NOW,
            }),
        );
        send(
            &mut h,
            "w1",
            &Request::LeaseRenew {
                tree: "tree-1".into(),
                holder: "w1".into(),
                epoch: 4,
                ttl_ms: 30_000,
            },
            Ok(Reply::Renewed {
                expires_at_ms: NOW + 30_000,
            }),
        );
        send(&mut h, "w2", &claim("w2"), Ok(Reply::Empty {}));
        for c in ["child-a", "child-b", "child-c"] {
            send(&mut h, "w2", &save(c), Ok(Reply::Saved {}));
        }
        send(&mut h, "w1", &claim("w1"), Ok(claimed("child-b")));
        send(&mut h, "w1", &claim("w1"), Ok(claimed("child-c")));
        send(
            &mut h,
            "w1",
            &complete("child-c", "w1"),
            Ok(Reply::Completed {}),
        );
        send(
            &mut h,
            "w3",
            &save("child-d"),
            Err(StoreError::new(ErrorKind::BadRequest, "refused")),
        );
        send(
            &mut h,
            "w0",
            &Request::RatePause {
                provider: "provider-0".into(),
                until_ms: NOW + 3_600_000,
            },
            Ok(Reply::Paused {
                until_ms: NOW + 3_600_000,
            }),
        );
        h
    }

    /// What a server that kept everything shows.
    fn kept() -> Observed {
        let mut s = Observed::default();
        s.leases.insert(
            "tree-1".into(),
            LeaseRead {
                read_at_ms: NOW,
                answer: lease(4, "w1", NOW + 30_000),
            },
        );
        s.next_takes.insert(
            "tree-1".into(),
            NextTake {
                outcome: TakeOutcome::Granted(5),
                refused_releases: vec![],
                release_unsupported: None,
            },
        );
        s.children
            .insert("child-a".into(), child(ChildState::Queued, 0));
        s.children
            .insert("child-b".into(), child(ChildState::Claimed, 1));
        s.children
            .insert("child-c".into(), child(ChildState::Done, 1));
        s.pauses.insert(
            "provider-0".into(),
            Answer::Reply(Reply::RateState {
                slots_in_use: 0,
                paused_until_ms: Some(NOW + 3_600_000),
            }),
        );
        s.drained.push(Drained {
            child: "child-a".into(),
            attempt: 1,
            complete_refused: None,
        });
        s
    }

    #[test]
    fn a_server_that_kept_everything_passes_every_check() {
        let round = judge_round(1, &history(), &kept());
        assert!(round.findings.is_empty(), "{:?}", round.findings);
        let f = &round.figures;
        assert_eq!(f.lost(), 0);
        assert_eq!(
            (
                f.epochs_acknowledged,
                f.renews_acknowledged,
                f.children_acknowledged,
                f.claims_acknowledged,
                f.completions_acknowledged,
                f.pauses_acknowledged
            ),
            (2, 1, 3, 2, 1, 1)
        );
    }

    #[test]
    fn an_acknowledged_epoch_read_back_lower_fails_the_epoch_check() {
        let mut seen = kept();
        seen.leases.get_mut("tree-1").unwrap().answer = lease(3, "w0", NOW - 1);
        let round = judge_round(1, &history(), &seen);
        assert_eq!(round.figures.epochs_lost, 1);
        assert!(
            round.of(Kept::Epochs)[0].contains("epoch 4 was acknowledged"),
            "{:?}",
            round.findings
        );
        // The renew of the lost epoch is lost with it.
        assert_eq!(round.figures.renews_lost, 1);
        assert!(round.of(Kept::Renews)[0].contains("a renew of epoch 4"));
    }

    #[test]
    fn a_take_granted_at_an_acknowledged_epoch_fails_the_next_take_check() {
        let mut seen = kept();
        seen.next_takes.get_mut("tree-1").unwrap().outcome = TakeOutcome::Granted(4);
        let round = judge_round(1, &history(), &seen);
        assert!(
            round.of(Kept::NextTake)[0].contains("granted epoch 4"),
            "{:?}",
            round.findings
        );
        assert_eq!(round.figures.epochs_lost, 1);
        assert!(round.of(Kept::Epochs).is_empty());
    }

    #[test]
    fn a_renew_whose_expiry_went_back_fails_the_renew_check_alone() {
        let mut seen = kept();
        seen.leases.get_mut("tree-1").unwrap().answer = lease(4, "w1", NOW + 100);
        let round = judge_round(1, &history(), &seen);
        assert_eq!(round.figures.renews_lost, 1);
        assert_eq!(
            round.findings.keys().copied().collect::<Vec<_>>(),
            vec![Kept::Renews]
        );
        // A renew whose lease was released afterwards is not judged.
        let mut released = history();
        send(
            &mut released,
            "w1",
            &release("w1", 4),
            Ok(Reply::Released {}),
        );
        let round = judge_round(1, &released, &seen);
        assert!(round.findings.is_empty(), "{:?}", round.findings);
        assert_eq!(round.figures.renews_not_judged, 1);
    }

    #[test]
    fn a_claimed_child_handed_out_again_fails_the_claim_check() {
        let mut seen = kept();
        seen.drained.push(Drained {
            child: "child-b".into(),
            attempt: 2,
            complete_refused: None,
        });
        let round = judge_round(1, &history(), &seen);
        assert_eq!(round.figures.claims_lost, 1);
        assert!(
            round.of(Kept::Claims)[0].contains("handed out again"),
            "{:?}",
            round.findings
        );
        // A completed child handed out again breaks completed-once instead.
        let mut seen = kept();
        seen.drained[0].child = "child-c".into();
        let round = judge_round(1, &history(), &seen);
        assert_eq!(round.figures.completions_lost, 1);
        assert!(round.of(Kept::Claims).is_empty());
        assert!(!round.of(Kept::CompletedOnce).is_empty());
    }

    #[test]
    fn a_lost_child_pause_or_refused_read_is_a_finding_of_its_check() {
        let mut seen = kept();
        seen.children.remove("child-a");
        seen.children
            .insert("child-a".into(), Answer::Reply(Reply::Child(None)));
        seen.pauses.insert(
            "provider-0".into(),
            Answer::Reply(Reply::RateState {
                slots_in_use: 0,
                paused_until_ms: None,
            }),
        );
        seen.children.insert(
            "child-b".into(),
            Answer::Refused("queue.read after the restart answered bad_request: no".into()),
        );
        let round = judge_round(2, &history(), &seen);
        assert_eq!(
            (
                round.figures.children_lost,
                round.figures.pauses_lost,
                round.figures.claims_lost
            ),
            (2, 1, 1)
        );
        assert!(round.of(Kept::Children)[0].contains("no such child"));
        assert!(round.of(Kept::Children)[1].contains("bad_request"));
        assert!(round.of(Kept::Pauses)[0].contains("no pause"));
        assert!(round.of(Kept::Claims)[0].contains("bad_request"));
    }

    #[test]
    fn a_child_completed_twice_before_the_kill_is_a_finding() {
        let mut h = history();
        send(
            &mut h,
            "w2",
            &complete("child-c", "w2"),
            Ok(Reply::Completed {}),
        );
        let round = judge_round(1, &h, &kept());
        assert!(round.of(Kept::CompletedOnce)[0].contains("completed 2 times"));
    }

    #[test]
    fn a_write_whose_outcome_is_unknown_is_never_judged() {
        let unknown = || Err(StoreError::new(ErrorKind::Unavailable, "connection reset"));
        let pause = Request::RatePause {
            provider: "provider-0".into(),
            until_ms: NOW + 3_600_000,
        };
        let renew = Request::LeaseRenew {
            tree: "tree-1".into(),
            holder: "w1".into(),
            epoch: 4,
            ttl_ms: 30_000,
        };
        // Each kind of write answered info (the kill cut the reply off), and
        // one more of each sent when the history ends (no completion).
        let mut h = History::default();
        for (who, req) in [
            ("w0", take("w0")),
            ("w1", renew),
            ("w2", save("child-a")),
            ("w3", claim("w3")),
            ("w4", complete("child-b", "w4")),
            ("w5", pause.clone()),
        ] {
            send(&mut h, who, &req, unknown());
            h.invoke(who, &req.to_call(), None, NOW);
        }
        let acked = Acked::from_history(&h);
        assert_eq!(acked.writes, 0);
        assert_eq!(acked.in_flight.len(), 12);
        // The server shows none of them: no finding, nothing acknowledged.
        let round = judge_round(1, &h, &Observed::default());
        assert!(round.findings.is_empty(), "{:?}", round.findings);
        assert_eq!(round.figures.acknowledged(), 0);
        assert_eq!(round.figures.in_flight, 12);
        // The server shows some of them: no finding either.
        let mut seen = kept();
        seen.drained.clear();
        let round = judge_round(1, &h, &seen);
        assert!(round.findings.is_empty(), "{:?}", round.findings);
        assert!(round.shown.events.is_empty());
    }

    #[test]
    fn a_release_whose_outcome_is_unknown_leaves_the_renew_unjudged() {
        let mut seen = kept();
        // The renew's expiry went back: lost, unless the lease was released.
        seen.leases.get_mut("tree-1").unwrap().answer = lease(4, "w1", NOW + 100);
        let mut h = history();
        send(
            &mut h,
            "w1",
            &release("w1", 4),
            Err(StoreError::new(ErrorKind::Unavailable, "gone")),
        );
        let round = judge_round(1, &h, &seen);
        assert!(round.findings.is_empty(), "{:?}", round.findings);
        assert_eq!(round.figures.renews_not_judged, 1);
        // Sent, never answered: the same.
        let mut h = history();
        h.invoke("w1", &release("w1", 4).to_call(), None, NOW);
        let round = judge_round(1, &h, &seen);
        assert!(round.findings.is_empty(), "{:?}", round.findings);
        assert_eq!(round.figures.renews_not_judged, 1);
    }

    #[test]
    fn an_unsupported_answer_is_never_a_loss_and_leaves_its_kind_unjudged() {
        let not_offered = |op: &str| {
            Answer::Unsupported(format!("{op} after the restart answered unsupported: no"))
        };
        let mut seen = kept();
        seen.leases.get_mut("tree-1").unwrap().answer = not_offered("lease.read");
        seen.children
            .insert("child-a".into(), not_offered("queue.read"));
        seen.pauses
            .insert("provider-0".into(), not_offered("rate.read"));
        let round = judge_round(1, &history(), &seen);
        assert!(round.findings.is_empty(), "{:?}", round.findings);
        let f = &round.figures;
        assert_eq!(f.lost(), 0);
        assert_eq!(
            (
                f.epochs_not_judged,
                f.renews_not_judged,
                f.children_not_judged,
                f.pauses_not_judged
            ),
            (2, 1, 1, 1)
        );
        assert_eq!(round.judged_of(Kept::Epochs), 0);
        assert_eq!(round.judged_of(Kept::Renews), 0);
        // The next take still judges the epochs; the other children are read.
        assert_eq!(round.judged_of(Kept::NextTake), 2);
        assert_eq!(round.judged_of(Kept::Children), 2);
        assert_eq!(round.judged_of(Kept::Pauses), 0);
        for k in [Kept::Epochs, Kept::Renews, Kept::Children, Kept::Pauses] {
            assert!(round.unsupported[&k].contains("unsupported: no"), "{k:?}");
        }
        // A take, or a release that keeps it busy, answered unsupported.
        let mut seen = kept();
        seen.next_takes.get_mut("tree-1").unwrap().outcome =
            TakeOutcome::Unsupported("lease.take answered unsupported".into());
        let round = judge_round(1, &history(), &seen);
        assert!(round.findings.is_empty(), "{:?}", round.findings);
        assert_eq!(round.judged_of(Kept::NextTake), 0);
        let take = seen.next_takes.get_mut("tree-1").unwrap();
        take.outcome = TakeOutcome::AlwaysBusy;
        take.release_unsupported = Some("lease.release answered unsupported".into());
        let round = judge_round(1, &history(), &seen);
        assert!(round.findings.is_empty(), "{:?}", round.findings);
        // A write answered unsupported in the workload: not in flight, its kind named.
        let mut h = history();
        let renew = Request::LeaseRenew {
            tree: "tree-1".into(),
            holder: "w0".into(),
            epoch: 3,
            ttl_ms: 30_000,
        };
        send(
            &mut h,
            "w0",
            &renew,
            Err(StoreError::new(
                ErrorKind::Unsupported,
                "renews are not offered",
            )),
        );
        let acked = Acked::from_history(&h);
        assert!(!acked.in_flight.iter().any(|r| r.op() == "lease.renew"));
        assert_eq!(acked.unsupported["lease.renew"], "renews are not offered");
        let round = judge_round(1, &h, &kept());
        assert!(round.unsupported[&Kept::Renews].contains("renews are not offered"));
    }

    #[test]
    fn every_check_counts_the_writes_of_its_kind_it_judged() {
        let round = judge_round(1, &history(), &kept());
        let judged: Vec<usize> = Kept::ALL.iter().map(|k| round.judged_of(*k)).collect();
        // Epochs 2 (read, next take), renews 1, children 3, claims 2,
        // completions 1, pauses 1.
        assert_eq!(judged, vec![2, 2, 1, 3, 2, 1, 1]);
        // No renew: the renew check judged nothing.
        let h = History {
            events: history()
                .events
                .into_iter()
                .filter(|e| e.op() != "lease.renew")
                .collect(),
        };
        let round = judge_round(1, &h, &kept());
        assert_eq!(round.judged_of(Kept::Renews), 0);
        assert_eq!(round.figures.renews_acknowledged, 0);
    }

    #[test]
    fn a_completion_read_back_undone_fails_the_completed_once_check() {
        let mut seen = kept();
        seen.children
            .insert("child-c".into(), child(ChildState::Claimed, 1));
        let round = judge_round(1, &history(), &seen);
        assert_eq!(
            round.findings.keys().copied().collect::<Vec<_>>(),
            vec![Kept::CompletedOnce]
        );
        assert_eq!(round.figures.completions_lost, 1);
        assert!(round.of(Kept::CompletedOnce)[0].contains("completed and acknowledged"));
    }

    /// The (op, instance, kind) of each event, to compare histories by.
    fn shape(h: &History) -> Vec<(String, String, EventKind)> {
        h.events
            .iter()
            .map(|e| (e.op().to_string(), e.instance.clone(), e.kind()))
            .collect()
    }

    #[test]
    fn a_failed_check_shows_the_events_about_what_it_lost_and_nothing_else() {
        let mut seen = kept();
        seen.leases.get_mut("tree-1").unwrap().answer = Answer::Reply(Reply::Lease(None));
        seen.children
            .insert("child-b".into(), child(ChildState::Queued, 0));
        let round = judge_round(1, &history(), &seen);
        let epochs = round.history_of(Some(Kept::Epochs));
        let ok = EventKind::Ok;
        let invoke = EventKind::Invoke;
        let lease = |op: &str, who: &str, kind| (op.to_string(), who.to_string(), kind);
        // Every request about tree-1, each invoke with its completion, at
        // their places in the whole history.
        assert_eq!(
            shape(&epochs),
            vec![
                lease("lease.take", "w0", invoke),
                lease("lease.take", "w0", ok),
                lease("lease.take", "w1", invoke),
                lease("lease.take", "w1", ok),
                lease("lease.take", "w0", invoke),
                lease("lease.take", "w0", ok),
                lease("lease.renew", "w1", invoke),
                lease("lease.renew", "w1", ok),
            ]
        );
        assert_eq!(
            epochs.events.iter().map(|e| e.index).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
        // The lost claim: its save, and the claim that handed child-b out
        // (not the claim answered empty).
        let claims = round.history_of(Some(Kept::Claims));
        assert_eq!(
            shape(&claims),
            vec![
                lease("queue.save", "w2", invoke),
                lease("queue.save", "w2", ok),
                lease("queue.claim", "w1", invoke),
                lease("queue.claim", "w1", ok),
            ]
        );
        assert!(round.history_of(Some(Kept::Pauses)).events.is_empty());
        assert_eq!(
            round.history_of(None).events.len(),
            epochs.events.len() + claims.events.len()
        );
        // Nothing broke: nothing shown.
        assert!(judge_round(1, &history(), &kept()).shown.events.is_empty());
    }

    #[test]
    fn the_events_shown_are_the_last_requests_about_what_was_lost() {
        let h = history();
        let tree = Item::Tree("tree-1".into());
        let shown = about(&h, &BTreeSet::from([&tree]), 1);
        assert_eq!(
            shape(&shown),
            vec![
                (
                    "lease.renew".to_string(),
                    "w1".to_string(),
                    EventKind::Invoke
                ),
                ("lease.renew".to_string(), "w1".to_string(), EventKind::Ok),
            ]
        );
    }

    #[test]
    fn grants_and_claims_are_recorded_in_order() {
        let a = Acked::from_history(&history());
        assert_eq!(
            a.grants["tree-1"],
            vec![
                Grant {
                    epoch: 3,
                    holder: "w0".into()
                },
                Grant {
                    epoch: 4,
                    holder: "w1".into()
                }
            ]
        );
        assert_eq!(
            a.claims["child-b"],
            vec![Claim {
                instance: "w1".into(),
                attempt: 1
            }]
        );
    }
}
