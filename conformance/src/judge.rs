//! The pure checker of conformance scenarios: from a recorded history (and
//! the server observations the runner made around it) to a verdict, with no
//! server. The runner plays; this module decides.
//!
//! The judge walks the scenario's steps beside the history: every call step
//! is one invoke and one completion, judged by the sequential model
//! ([`ContractModel`]) at the step's server time (or within the window of
//! the server's `TIME` read around it, on a server storeproof does not
//! control); every bad-input step must be refused with `bad_request` and
//! leave the keyspace as it was. The first step that breaks decides.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::runner::outcome_json;
use super::scenario::{Patch, Step};
use harness::check::{Level, Verdict};
use harness::contract::{ContractModel, ErrorKind, Judgement, Reply, Request, StoreError};
use harness::history::{Event, Happened, History};
use harness::keyspace::Snapshot;

/// What a scenario's run recorded: enough to judge it again without a
/// server. This is the evidence of a scenario check (plus `calls`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckHistory {
    /// The check's id, which names its scenario.
    pub check: String,
    /// MUST or SHOULD: a SHOULD check that breaks is a warning.
    pub level: Level,
    /// The server time (ms) the scenario started at; its `at` steps count from it.
    pub start_ms: i64,
    /// Every call sent and every answer, in order.
    pub history: History,
    /// What the runner saw of the server around the calls.
    #[serde(default)]
    pub observations: Vec<Observation>,
}

/// A keyspace read: the keys under the check's prefix, or why it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyspaceRead {
    /// Every key under the prefix with its value.
    Keys(Snapshot),
    /// The read failed (storeproof's trouble, not the store's).
    Failed(String),
}

/// Something the runner saw of the server (not of the store's replies),
/// tied to the scenario step it was seen at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Observation {
    /// The server's `TIME` (ms) read before and after the call of `step`, on
    /// a server whose clock storeproof does not control; `None`: it failed.
    ServerTime {
        /// The scenario step.
        step: usize,
        /// `TIME` before the call.
        before: Option<i64>,
        /// `TIME` after the call.
        after: Option<i64>,
    },
    /// The keyspace under the check's prefix before and after the bad input
    /// of `step`.
    Keyspace {
        /// The scenario step.
        step: usize,
        /// Read before the call.
        before: KeyspaceRead,
        /// Read after the call.
        after: KeyspaceRead,
    },
    /// The instance of `step` could not be connected, so the step was never sent.
    ConnectFailed {
        /// The scenario step.
        step: usize,
        /// The instance that failed to connect.
        instance: String,
        /// Its error.
        error: StoreError,
    },
}

impl Observation {
    fn step(&self) -> usize {
        match self {
            Observation::ServerTime { step, .. }
            | Observation::Keyspace { step, .. }
            | Observation::ConnectFailed { step, .. } => *step,
        }
    }
}

/// A scenario's counterexample: the steps up to the one that broke the
/// contract and what the store answered there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename = "conformance-scenario")]
pub struct ScenarioCounterexample {
    /// The scenario's steps, the breaking one last.
    pub steps: Vec<Step>,
    /// The store's answer to the last step (`{"error": …}` for an error;
    /// null when the step could not be sent).
    pub observed: Value,
}

/// The judge's verdict on one recorded scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// Pass, fail (warn for a SHOULD check or a conservative reply),
    /// skipped (the store does not support an operation) or unknown (the
    /// harness's trouble, or a history that does not follow the scenario).
    pub verdict: Verdict,
    /// Why; empty for a plain pass.
    pub reason: String,
    /// For a failure: the steps that led to it.
    pub counterexample: Option<ScenarioCounterexample>,
    /// Where the verdict was decided: the step, and how many events of the
    /// history it had read. `None`: the whole history (a pass or warning).
    pub decided_at: Option<(usize, usize)>,
}

/// Why a recorded history cannot be judged at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotJudgeable {
    /// The history names a check this version does not have as a scenario.
    #[error("{0:?} is not a scenario check of this version of storeproof")]
    UnknownCheck(String),
}

/// Judges a recorded scenario: the scenario is found by its check id.
pub fn judge(recorded: &CheckHistory) -> Result<Judged, NotJudgeable> {
    let steps = super::scenario_steps(&recorded.check)
        .ok_or_else(|| NotJudgeable::UnknownCheck(recorded.check.clone()))?;
    Ok(judge_steps(&steps, recorded))
}

/// The values a scenario learned from the store: epochs granted per tree and
/// slots acquired per provider, so later steps can name them.
#[derive(Default)]
pub(crate) struct Learned {
    grants: HashMap<String, Vec<i64>>,
    slots: HashMap<String, Vec<String>>,
}

impl Learned {
    pub(crate) fn learn(&mut self, req: &Request, reply: &Reply) {
        match (req, reply) {
            (Request::LeaseTake { tree, .. }, Reply::Granted { epoch, .. }) => {
                self.grants.entry(tree.clone()).or_default().push(*epoch)
            }
            (Request::RateAcquireSlot { provider, .. }, Reply::Acquired { slot }) => self
                .slots
                .entry(provider.clone())
                .or_default()
                .push(slot.clone()),
            _ => {}
        }
    }

    /// Fills in a request's patched field; `Err` when the scenario names a
    /// grant or slot the store never gave (the store diverged earlier).
    pub(crate) fn patch(
        &self,
        req: &mut Request,
        patch: &Patch,
        start_ms: i64,
    ) -> Result<(), String> {
        match (req, patch) {
            (
                Request::LeaseRenew { tree, epoch, .. } | Request::LeaseRelease { tree, epoch, .. },
                Patch::Epoch(r),
            ) => {
                let granted = self
                    .grants
                    .get(tree.as_str())
                    .and_then(|g| g.get(r.grant.wrapping_sub(1)))
                    .ok_or_else(|| format!("tree {tree:?} has no grant number {}", r.grant))?;
                *epoch = granted + r.plus;
            }
            (Request::RateReleaseSlot { provider, slot }, Patch::Slot(k)) => {
                *slot = self
                    .slots
                    .get(provider.as_str())
                    .and_then(|s| s.get(k.wrapping_sub(1)))
                    .cloned()
                    .ok_or_else(|| format!("provider {provider:?} has no slot number {k}"))?;
            }
            (Request::RatePause { until_ms, .. }, Patch::UntilFromStart(off)) => {
                *until_ms = start_ms + off;
            }
            (req, patch) => return Err(format!("cannot apply {patch:?} to {}", req.op())),
        }
        Ok(())
    }
}

/// The walk's state: where it is in the history and what it decided.
struct Walk<'a> {
    steps: &'a [Step],
    recorded: &'a CheckHistory,
    /// Events read so far.
    read: usize,
}

impl<'a> Walk<'a> {
    fn observation(&self, step: usize) -> Option<&'a Observation> {
        self.recorded
            .observations
            .iter()
            .find(|o| o.step() == step && !matches!(o, Observation::ConnectFailed { .. }))
    }

    fn connect_failed(&self, step: usize) -> Option<(&'a str, &'a StoreError)> {
        self.recorded.observations.iter().find_map(|o| match o {
            Observation::ConnectFailed {
                step: s,
                instance,
                error,
            } if *s == step => Some((instance.as_str(), error)),
            _ => None,
        })
    }

    /// The invoke and completion of the next call, sent by `instance`.
    fn next_call(&mut self, step: usize, instance: &str) -> Result<(&'a Event, &'a Event), String> {
        let events = &self.recorded.history.events;
        let (Some(invoke), Some(done)) = (events.get(self.read), events.get(self.read + 1)) else {
            return Err(format!(
                "the history stops before step {step} ({} events) with nothing recorded to say why",
                events.len()
            ));
        };
        let n = self.read;
        if !matches!(invoke.what, Happened::Invoke(_)) || matches!(done.what, Happened::Invoke(_)) {
            return Err(format!(
                "events {n} and {} of the history are not a call and its answer",
                n + 1
            ));
        }
        if invoke.instance != instance || done.instance != instance || done.op() != invoke.op() {
            return Err(format!(
                "events {n} and {} of the history are not step {step}'s call by instance {instance}",
                n + 1
            ));
        }
        self.read += 2;
        Ok((invoke, done))
    }

    fn decided(
        &self,
        step: usize,
        verdict: Verdict,
        reason: String,
        observed: Option<Value>,
    ) -> Judged {
        Judged {
            verdict: match (verdict, self.recorded.level) {
                (Verdict::Fail, Level::Should) => Verdict::Warn,
                (v, _) => v,
            },
            reason,
            counterexample: observed.map(|observed| ScenarioCounterexample {
                steps: self.steps[..=step].to_vec(),
                observed,
            }),
            decided_at: Some((step, self.read)),
        }
    }
}

/// Judges `recorded` as a run of `steps` (see the module's doc).
pub fn judge_steps(steps: &[Step], recorded: &CheckHistory) -> Judged {
    let mut walk = Walk {
        steps,
        recorded,
        read: 0,
    };
    let mut model = ContractModel::default();
    let mut learned = Learned::default();
    let start = recorded.start_ms;
    let mut now = start;
    let mut warnings = Vec::new();

    for (i, step) in steps.iter().enumerate() {
        let instance = match step {
            Step::At(ms) => {
                now = start + ms;
                continue;
            }
            Step::Call { instance, .. } | Step::Raw { instance, .. } => instance,
        };
        if let Some((_, e)) = walk.connect_failed(i) {
            // A store that cannot be connected refused a server it must
            // accept, unless its adapter failed (bad input, not a verdict).
            let verdict = if e.kind == ErrorKind::AdapterFailed {
                Verdict::Unknown
            } else {
                Verdict::Fail
            };
            let reason = if e.kind == ErrorKind::AdapterFailed {
                e.message.clone()
            } else {
                e.to_string()
            };
            return walk.decided(i, verdict, reason, None);
        }
        let (call, req) = match step {
            Step::Raw { call, .. } => (call.clone(), None),
            Step::Call { request, patch, .. } => {
                let mut req = request.clone();
                if let Some(p) = patch {
                    if let Err(e) = learned.patch(&mut req, p, start) {
                        return walk.decided(
                            i,
                            Verdict::Fail,
                            format!("step {i}: {e}: the store diverged earlier"),
                            Some(Value::Null),
                        );
                    }
                }
                (req.to_call(), Some(req))
            }
            Step::At(_) => continue,
        };
        let (invoke, done) = match walk.next_call(i, instance) {
            Ok(pair) => pair,
            Err(why) => return walk.decided(i, Verdict::Unknown, why, None),
        };
        if invoke.what != Happened::Invoke(call.clone()) {
            return walk.decided(
                i,
                Verdict::Unknown,
                format!(
                    "event {} sends {} {} where step {i} of the scenario, given the answers before it, sends {} {}: the history does not follow its scenario",
                    invoke.index,
                    invoke.op(),
                    match &invoke.what {
                        Happened::Invoke(c) => c.args.to_string(),
                        _ => String::new(),
                    },
                    call.op,
                    call.args
                ),
                None,
            );
        }
        let Some(outcome) = done.what.outcome() else {
            continue;
        };
        if let Err(e) = &outcome {
            if e.kind == ErrorKind::AdapterFailed {
                return walk.decided(
                    i,
                    Verdict::Unknown,
                    format!(
                        "the adapter of instance {instance} failed during {} {}: {}",
                        call.op, call.args, e.message
                    ),
                    None,
                );
            }
        }
        let observed = outcome_json(&outcome);
        let Some(req) = req else {
            // Bad input: refused with bad_request, and nothing changed.
            if !matches!(&outcome, Err(e) if e.kind == ErrorKind::BadRequest) {
                return walk.decided(
                    i,
                    Verdict::Fail,
                    format!(
                        "step {i}: bad input {} {} was not refused with bad_request: got {observed}",
                        call.op, call.args
                    ),
                    Some(observed),
                );
            }
            match walk.observation(i) {
                Some(Observation::Keyspace {
                    before: KeyspaceRead::Keys(b),
                    after: KeyspaceRead::Keys(a),
                    ..
                }) if b == a => {}
                Some(Observation::Keyspace {
                    before: KeyspaceRead::Keys(_),
                    after: KeyspaceRead::Keys(_),
                    ..
                }) => {
                    return walk.decided(
                        i,
                        Verdict::Fail,
                        format!(
                            "step {i}: bad input {} {} was refused but changed the keyspace",
                            call.op, call.args
                        ),
                        Some(observed),
                    )
                }
                Some(Observation::Keyspace {
                    before: KeyspaceRead::Failed(e),
                    ..
                })
                | Some(Observation::Keyspace {
                    after: KeyspaceRead::Failed(e),
                    ..
                }) => {
                    return walk.decided(
                        i,
                        Verdict::Unknown,
                        format!(
                            "storeproof could not read the keyspace to see whether the refused request changed it: {e}"
                        ),
                        None,
                    )
                }
                _ => {
                    return walk.decided(
                        i,
                        Verdict::Unknown,
                        format!("the history has no keyspace read around the bad input of step {i}"),
                        None,
                    )
                }
            }
            continue;
        };
        // On a server storeproof does not control, the call happened
        // somewhere in the window of TIME read around it.
        let window = match walk.observation(i) {
            Some(Observation::ServerTime {
                before: Some(lo),
                after: Some(hi),
                ..
            }) => Some((*lo, *hi)),
            Some(Observation::ServerTime { .. }) => {
                return walk.decided(
                    i,
                    Verdict::Unknown,
                    format!(
                        "storeproof could not read the server's TIME around step {i}, so the reply cannot be judged: TIME failed"
                    ),
                    None,
                )
            }
            _ => None,
        };
        if let Err(e) = &outcome {
            if e.kind == ErrorKind::Unsupported {
                return walk.decided(
                    i,
                    Verdict::Skipped,
                    format!(
                        "the store answered unsupported to {}: {}",
                        call.op, e.message
                    ),
                    None,
                );
            }
        }
        let clock_ms = invoke.clock_ms;
        let judgement = match window {
            Some((lo, hi)) => judge_within(&mut model, &req, lo, hi, clock_ms, &outcome),
            None => model.judge(&req, now, clock_ms, &outcome),
        };
        match judgement {
            Judgement::Agrees => {}
            Judgement::Conservative(why) => warnings.push(format!("step {i}: {why}")),
            Judgement::Violates(why) => {
                return walk.decided(
                    i,
                    Verdict::Fail,
                    format!("step {i}: {} {}: {why}", call.op, call.args),
                    Some(observed),
                )
            }
        }
        if let Ok(reply) = &outcome {
            learned.learn(&req, reply);
        }
    }
    let events = recorded.history.events.len();
    if walk.read < events {
        return Judged {
            verdict: Verdict::Unknown,
            reason: format!(
                "the history has {} events after the scenario's last step: it does not follow its scenario",
                events - walk.read
            ),
            counterexample: None,
            decided_at: None,
        };
    }
    Judged {
        verdict: if warnings.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Warn
        },
        reason: warnings.join("; "),
        counterexample: None,
        decided_at: None,
    }
}

/// Judges a reply whose server instant is only known to lie in `[lo, hi]`:
/// the instant a grant or renewal implies (its expiry minus the ttl) when it
/// falls in the window, else either end. The model follows the first
/// instant that explains the reply.
fn judge_within(
    model: &mut ContractModel,
    req: &Request,
    lo: i64,
    hi: i64,
    clock_ms: i64,
    outcome: &Result<Reply, StoreError>,
) -> Judgement {
    let ttl = match req {
        Request::LeaseTake { ttl_ms, .. } | Request::LeaseRenew { ttl_ms, .. } => Some(*ttl_ms),
        _ => None,
    };
    let implied = match (outcome, ttl) {
        (Ok(Reply::Granted { expires_at_ms, .. }), Some(t))
        | (Ok(Reply::Renewed { expires_at_ms }), Some(t)) => Some(expires_at_ms - t),
        _ => None,
    };
    let mut last = Judgement::Agrees;
    for now in implied
        .filter(|n| (lo..=hi).contains(n))
        .into_iter()
        .chain([lo, hi])
    {
        let mut candidate = model.clone();
        let j = candidate.judge(req, now, clock_ms, outcome);
        if !matches!(j, Judgement::Violates(_)) {
            *model = candidate;
            return j;
        }
        last = j;
    }
    last
}

/// The history up to where the verdict was decided (the breaking answer
/// last), with the observations of those steps: it judges the same.
pub fn cut(mut recorded: CheckHistory, judged: &Judged) -> CheckHistory {
    if let Some((step, events)) = judged.decided_at {
        recorded.history.events.truncate(events);
        recorded.observations.retain(|o| o.step() <= step);
    }
    recorded
}
