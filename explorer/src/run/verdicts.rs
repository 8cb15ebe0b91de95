//! What an exploration found, as checks: each violation rendered as a
//! counterexample (its steps, its history), confirmed on fresh processes,
//! and every property's verdict with the scope of what held.

use std::sync::atomic::Ordering;

use harness::contract::Contract;
use harness::counterexample::Answer;
use harness::evidence::{Evidence, ExplorerEvidence};
use harness::figures::ExplorerFigures;
use harness::gate::drive::instance_name;
use harness::History;
use harness::{CheckResult, Verdict};

use crate::model::LeaseModel;
use crate::property::Property;
use crate::state::{Action, Op, State, Tick};
use crate::walk::shrink;
use crate::world::request;

use super::*;

/// A violation found, with where.
pub(super) struct Finding {
    pub(super) property: Property,
    pub(super) message: String,
    pub(super) found_in: String,
    pub(super) schedule: Schedule,
    pub(super) steps: Vec<ExplorerStep>,
    pub(super) history: History,
    /// Re-running the schedule broke the property again.
    pub(super) replays: bool,
}

pub(super) fn describe(a: &Action) -> String {
    let n = |i: &usize| instance_name(*i);
    match a {
        Action::Start(i, op) => format!(
            "{}: {}",
            n(i),
            match op {
                Op::Take => "take".to_string(),
                Op::Renew => "renew".to_string(),
                Op::Release => "release".to_string(),
                Op::Read => "read".to_string(),
                Op::Save(k) => format!("save {}", crate::queue::child_name(*k)),
                Op::Claim => "claim".to_string(),
                Op::Complete => "complete".to_string(),
                Op::QueueRead => format!("read {}", crate::queue::child_name(0)),
                Op::Acquire => format!("acquire a slot of {}", crate::rate::PROVIDER),
                Op::ReleaseSlot => "release its slot".to_string(),
                Op::Hit => format!("hit {}", crate::rate::PROVIDER),
                Op::Pause => format!("pause {} (clock + lease/2)", crate::rate::PROVIDER),
                Op::RateRead => format!("read {}", crate::rate::PROVIDER),
            }
        ),
        Action::Continue(i) => format!("{}: next command", n(i)),
        Action::Lose(i, op) => format!(
            "{}: {}, its reply lost (connection closed)",
            n(i),
            describe(&Action::Start(*i, *op))
                .split_once(": ")
                .map_or(String::new(), |(_, what)| what.to_string())
        ),
        Action::Crash(i) => format!("{}: crashes for good", n(i)),
        Action::Fill => "the server fills up (maxmemory): writes refused".into(),
        Action::Free => "room is given back: writes accepted again".into(),
        Action::Tick(t) => match t {
            Tick::NearestExpiry(d) => format!("time → nearest expiry {d:+} ms"),
            Tick::HalfLease => "time + lease/2".into(),
            Tick::Lease => "time + lease".into(),
            Tick::LongPause => "time + 100 leases (long pause)".into(),
        },
    }
}

/// The steps of a path as the report shows them.
pub(super) fn render(start: &State, path: &[(Action, State)]) -> Vec<ExplorerStep> {
    let mut steps = vec![ExplorerStep {
        step: 0,
        what: "start".into(),
        server_ms: start.now,
        commands: None,
        answer: None,
    }];
    for (k, (a, s)) in path.iter().enumerate() {
        steps.push(ExplorerStep {
            step: k + 1,
            what: describe(a),
            server_ms: s.now,
            commands: Some(s.note.commands.clone()),
            answer: Some(s.note.answer.as_ref().map_or(Answer::Nothing, Answer::of)),
        });
    }
    steps
}

/// The operations of a path as a history. The invocation's call is the
/// request the world sent (it follows from the state the operation started
/// in); the completion is the answer the step that finished it recorded.
pub(super) fn history_of(start: &State, path: &[(Action, State)]) -> History {
    let mut history = History::default();
    let mut before = start;
    for (action, after) in path {
        // The instance whose operation this step started or continued, with
        // the call and the clock it was invoked with.
        let ran = match *action {
            Action::Start(i, op) => {
                let call = request(before, i, op).to_call();
                let clock_ms = before.now + before.insts[i].skew_ms;
                history.invoke(instance_name(i), &call, Some(before.now), clock_ms);
                Some((i, call.op, clock_ms))
            }
            Action::Continue(i) => before.insts[i]
                .pending
                .as_ref()
                .map(|p| (i, request(before, i, p.op).op().to_string(), p.clock_ms)),
            Action::Lose(i, op) => match before.insts[i].pending.as_ref() {
                Some(p) => Some((i, request(before, i, p.op).op().to_string(), p.clock_ms)),
                None => {
                    let call = request(before, i, op).to_call();
                    let clock_ms = before.now + before.insts[i].skew_ms;
                    history.invoke(instance_name(i), &call, Some(before.now), clock_ms);
                    Some((i, call.op, clock_ms))
                }
            },
            Action::Tick(_) | Action::Crash(_) | Action::Fill | Action::Free => None,
        };
        if let (Some((i, op, clock_ms)), Some(outcome)) = (ran, after.note.answer.as_ref()) {
            history.complete(instance_name(i), &op, outcome, Some(after.now), clock_ms);
        }
        before = after;
    }
    history
}

/// What happened, in words: the violation's message, or the harness's
/// trouble for [`Property::HarnessOk`].
pub(super) fn violation_of(state: &State, property: Property) -> String {
    let found = match property {
        Property::HarnessOk => state.harness_error.as_deref(),
        p => state.violation(p),
    };
    found.map_or_else(
        || format!("{property} was not broken (no message recorded)"),
        str::to_string,
    )
}

/// A discovery made into a finding. A violation is shrunk, and the shrunk
/// schedule must break the property again when re-run from the start on a
/// world of its own; if the discovered schedule does not, the finding says
/// so (`replays: false`) and is not a verdict on the store. The harness's
/// trouble is reported as found.
pub(super) fn finding(
    model: &LeaseModel,
    property: Property,
    actions: &[Action],
    found: &State,
    found_in: String,
) -> Finding {
    let schedule = |actions: Vec<Action>| Schedule {
        skews: model.skews.clone(),
        actions,
    };
    let shrunk = if property == Property::HarnessOk {
        None
    } else {
        shrink(model, actions, property)
    };
    // The schedule shown is re-run with a fresh process per operation:
    // what an adapter process kept on trial remembered is never blamed.
    let fresh = model.with_fresh_processes();
    let shrunk = shrunk.and_then(|(shrunk, last)| {
        let on_fresh = replay_path(&fresh, &shrunk);
        (model.fresh_processes || !model.shared.speed.trial || on_fresh.0.broke(property))
            .then_some((shrunk, last, on_fresh))
    });
    match shrunk {
        Some((shrunk, last, (_, steps, history))) => {
            let found_in = if shrunk.len() < actions.len() {
                format!("{found_in}, shrunk from {} steps", actions.len())
            } else {
                found_in
            };
            Finding {
                property,
                message: violation_of(&last, property),
                found_in,
                schedule: schedule(shrunk),
                steps,
                history,
                replays: true,
            }
        }
        None => {
            let (_, steps, history) = replay_path(&fresh, actions);
            Finding {
                property,
                message: violation_of(found, property),
                found_in,
                schedule: schedule(actions.to_vec()),
                steps,
                history,
                replays: property == Property::HarnessOk,
            }
        }
    }
}

/// Why a search that kept adapter processes on trial is not to be trusted:
/// a violation it discovered (and no earlier search did: only the first is
/// `reported`) does not break its property again when its
/// schedule is re-run from the start with a fresh process per operation
/// (what a kept process remembered made it). `None` when every one does,
/// or no process was kept on trial. Such a process is then no longer kept
/// ([`Shared::distrust`]).
pub(super) fn unconfirmed(
    model: &LeaseModel,
    searched: &crate::search::Searched,
    reported: &[Finding],
) -> Option<String> {
    let shared = &model.shared;
    if !shared.speed.trial
        || !shared.trusts_memory()
        || shared.kept_on_trial.load(Ordering::Relaxed) == 0
    {
        return None;
    }
    let fresh = model.with_fresh_processes();
    for property in Property::always(model.contract) {
        let Some(d) = searched.discoveries.get(property) else {
            continue;
        };
        if reported.iter().any(|f| f.property == *property) {
            // Only a property's first discovery is reported: this one
            // would not be shown, and blames nothing.
            continue;
        }
        let (end, _, _) = replay_path(&fresh, &d.actions);
        if !end.broke(*property) && end.harness_error.is_none() {
            let why = format!(
                "the schedule that broke {property} on processes kept on trial ({} steps) did not break it with a fresh process per operation",
                d.actions.len()
            );
            shared.distrust(why.clone());
            return Some(why);
        }
    }
    None
}

/// The counterexample of `f`, as a check carries it.
pub(super) fn counterexample(f: &Finding) -> Option<harness::counterexample::Counterexample> {
    Some(harness::counterexample::Counterexample::Explorer(Box::new(
        Counterexample {
            kind: ExplorerTag::ExplorerSchedule,
            property: f.property,
            schedule: f.schedule.clone(),
            steps: f.steps.clone(),
            history: f.history.clone(),
        },
    )))
}

/// What is known of how an exploration ran, beside its findings, that the
/// checks' verdicts and words depend on.
#[derive(Debug, Default)]
pub(super) struct Context<'a> {
    /// What a step is, for a store with no Redis wire.
    pub(super) step: Option<&'a str>,
    /// The shard's part, in words (`None`: the whole).
    pub(super) part: Option<&'a str>,
    /// What fail-fast, or the store's adapter failing, left out, in words.
    pub(super) cut: Option<&'a str>,
    /// The store's adapter failed (its first failure, in words): what did
    /// not break is not known to hold.
    pub(super) adapter_failed: Option<&'a str>,
    /// The operations the store answered `unsupported`, with its message.
    pub(super) unsupported: &'a [(Op, String)],
    /// The searches filled the server between commands (a store whose
    /// state is on the Redis wire): the `answered` checks also say that a
    /// write refused on the full server changed nothing.
    pub(super) filled: bool,
}

impl Context<'_> {
    /// The operations of `property` the store does not support, in words
    /// with its message, if any.
    fn unsupported_of(&self, property: Property) -> Option<String> {
        let said: Vec<String> = self
            .unsupported
            .iter()
            .filter(|(op, _)| property.ops().contains(op))
            .map(|(op, message)| format!("{} (\"{message}\")", op_name(*op)))
            .collect();
        (!said.is_empty()).then(|| said.join(", "))
    }
}

/// The refusals of a write on the full server that `contract`'s searches
/// judged, summed over its skews; `None` when none of them was searched
/// here (a shard of walks alone).
pub(super) fn refusals_of(figures: &ExplorerFigures, contract: Contract) -> Option<usize> {
    let rows: Vec<_> = figures
        .per_skew
        .iter()
        .filter(|r| r.contract == contract.name())
        .collect();
    (!rows.is_empty()).then(|| rows.iter().map(|r| r.full_refusals).sum())
}

/// An operation's wire name.
pub(super) fn op_name(op: Op) -> &'static str {
    op.wire()
}

/// One result per property of the contracts explored, in [`Property::ALL`]
/// order.
pub(super) fn checks(
    findings: &[Finding],
    unreached: &[(Property, i64)],
    figures: &ExplorerFigures,
    config: &ExplorerConfig,
    context: &Context<'_>,
) -> Vec<CheckResult> {
    let Context {
        step,
        part,
        cut,
        adapter_failed,
        ..
    } = *context;
    let evidence = Evidence::Explorer(Box::new(ExplorerEvidence {
        figures: figures.clone(),
        step: step.map(str::to_string),
    }));
    let scope_of =
        |contract: Option<Contract>| crate::scope::scope(figures, config, contract, step, part);
    // The harness's own trouble: the schedules past it were not explored,
    // so what did not break is not known to hold.
    let harness = findings.iter().find(|f| f.property == Property::HarnessOk);
    // A search that stopped at a violation cannot be asked to reach more.
    let stopped: Vec<&str> = findings
        .iter()
        .filter(|f| f.property != Property::HarnessOk)
        .map(|f| f.property.name())
        .collect();
    // With fail-fast cutting the exploration short, what would pass is
    // only not known to fail: not judged, with what was left out.
    let result = |property: Property, verdict: Verdict, reason: String| {
        // An operation the store does not offer skips the checks about it
        // (PROTOCOL); what it did break with the others still fails.
        let unsupported = context.unsupported_of(property);
        let (verdict, reason) = match (cut, unsupported) {
            (_, Some(ops)) if verdict != Verdict::Fail => (
                Verdict::Skipped,
                format!(
                    "skipped: the store does not support {ops}: it answered `unsupported`, and this check is about {}",
                    property.check().about
                ),
            ),
            (cut, _) => match cut {
            Some(cut) if verdict == Verdict::Pass && adapter_failed.is_some() => (
                Verdict::Unknown,
                format!(
                    "not judged: the store's adapter failed ({}); not explored: {cut}",
                    adapter_failed.unwrap_or_default()
                ),
            ),
            Some(cut) if verdict == Verdict::Pass => (
                Verdict::Skipped,
                format!(
                    "not judged: --fail-fast stopped the exploration at the first violation ({}); not explored: {cut}",
                    stopped.join(", ")
                ),
            ),
            _ => (verdict, reason),
            },
        };
        CheckResult {
            evidence: evidence.clone(),
            ..property.check().result("explorer", verdict, reason)
        }
    };
    Property::ALL
        .into_iter()
        // Only the contracts explored have checks here (the suite settles
        // the others).
        .filter(|p| p.contract().is_none_or(|c| config.contracts.contains(&c)))
        .map(|property| {
            let what = property.check().about;
            // Only a violation of the same contract's search stops it.
            let stopped: Vec<&str> = findings
                .iter()
                .filter(|f| f.property != Property::HarnessOk && f.property.contract() == property.contract())
                .map(|f| f.property.name())
                .collect();
            match property {
                Property::HarnessOk => CheckResult {
                    counterexample: harness.and_then(counterexample),
                    ..result(
                        property,
                        // The harness's trouble is never the store's failure.
                        if harness.is_some() { Verdict::Unknown } else { Verdict::Pass },
                        match harness {
                            Some(f) => format!(
                                "not decided: the exploration could not go on: {} ({})",
                                f.message, f.found_in
                            ),
                            None if !config.cache => format!(
                                "{what}: {} transitions, every one against the server (the transition cache was off)",
                                figures.transitions
                            ),
                            None => format!(
                                "{what}: {} transitions; {} commands and ticks answered from the transition cache, {} cached outcomes compared with the server's for the same input (a seeded sample, one entry in {}, and every entry met again when its input went to the server), none differed",
                                figures.transitions,
                                figures.cache.answered,
                                figures.cache.verified,
                                config.cache_check_one_in
                            ),
                        },
                    )
                },
                p if p.is_race() => {
                    let contract = property.contract().unwrap_or(Contract::Lease);
                    let missing: Vec<String> = unreached
                        .iter()
                        .filter(|(k, _)| *k == property)
                        .map(|(_, skew)| format!("second clock {skew:+} ms"))
                        .collect();
                    // A race never reached is never the store's failure. With
                    // nothing else broken, every takeover the search tried was
                    // granted (a store keeping a tree from a new holder breaks
                    // no-tree-stuck, one answering an error breaks answered), so
                    // the race lay only beyond the depth: its operations take
                    // more commands than the search had steps. That is the
                    // search's limit, so undecided.
                    let verdict = match (missing.is_empty(), stopped.is_empty()) {
                        (true, _) => Verdict::Pass,
                        (false, _) if harness.is_some() => Verdict::Unknown,
                        (false, true) => Verdict::Unknown,
                        (false, false) => Verdict::Skipped,
                    };
                    let reason = if !missing.is_empty() && harness.is_some() {
                        format!(
                            "not decided: the exploration could not go on before it reached {what} under {}",
                            missing.join(", ")
                        )
                    } else if !missing.is_empty() && !stopped.is_empty() {
                        format!(
                            "not judged: the search stopped at the violations of {} before it reached {what}",
                            stopped.join(", ")
                        )
                    } else if missing.is_empty() {
                        format!("{what} was reached under every clock skew")
                    } else {
                        format!(
                            "not decided: the search never reached {what} under {} within {} steps, though nothing it tried kept {}; the store's operations take more commands than that depth allows, so a deeper search ({}) is needed",
                            missing.join(", "),
                            config.depth_of(contract),
                            match contract {
                                Contract::Queue => "a saved child from being claimed",
                                Contract::Rate => "a free slot or window place from being granted",
                                _ => "a tree from a new holder",
                            },
                            ExplorerConfig::depth_flag(contract),
                        )
                    };
                    result(property, verdict, reason)
                }
                _ => {
                    let found = findings.iter().find(|f| f.property == property);
                    // An `answered` check also says a write refused on the
                    // full server changed nothing: decided only if the
                    // searches of its contract met such a refusal.
                    // (A search fail-fast cut short says so instead.)
                    let refusals = (context.filled && property.is_answered() && cut.is_none())
                        .then(|| refusals_of(figures, property.contract().unwrap_or(Contract::Lease)))
                        .flatten();
                    let verdict = match found {
                        Some(f) if f.replays => Verdict::Fail,
                        Some(_) => Verdict::Unknown,
                        None if harness.is_some() => Verdict::Unknown,
                        None if refusals == Some(0) => Verdict::Unknown,
                        None => Verdict::Pass,
                    };
                    let reason = match (found, harness) {
                        (Some(f), _) if f.replays => format!(
                            "{} (found in {}; {} steps)",
                            f.message,
                            f.found_in,
                            f.schedule.actions.len()
                        ),
                        (Some(f), _) => format!(
                            "not decided: {} (found in {}; {} steps), but re-running that schedule from the start did not break it again",
                            f.message,
                            f.found_in,
                            f.schedule.actions.len()
                        ),
                        (None, Some(h)) => format!(
                            "not decided: the exploration could not go on ({}; {}); no schedule explored before that broke it ({what})",
                            h.message, h.found_in
                        ),
                        (None, None) if refusals == Some(0) => format!(
                            "not decided: every operation was answered in {}, but no search met a write on the full server, so that a refused write changes nothing was never tried (a deeper search is needed)",
                            scope_of(property.contract())
                        ),
                        (None, None) => {
                            let judged = match refusals {
                                Some(n) => format!("; {n} refusals of a write on the full server judged"),
                                None => String::new(),
                            };
                            format!("{what}: held in {}{judged}", scope_of(property.contract()))
                        }
                    };
                    CheckResult {
                        counterexample: found.and_then(counterexample),
                        ..result(property, verdict, reason)
                    }
                }
            }
        })
        .collect()
}
