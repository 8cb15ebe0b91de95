//! The pure checker of conformance scenarios: from a recorded history (and
//! the server observations the runner made around it) to a verdict, with no
//! server. The runner plays; this module decides.
//!
//! The judge walks the scenario's steps beside the history: every call step
//! is one invoke and one completion, judged by the sequential model
//! ([`ContractModel`]) at the step's server time (or within the window of
//! the server's `TIME` read around it, on a server storeproof does not
//! control); every bad-input step must be refused with `bad_request` and
//! leave the keyspace as it was. The first step that breaks decides. An
//! `unavailable` answer is the store's failure only when storeproof's own
//! PING of the server, sent straight to it, was answered
//! ([`Observation::ServerPing`]); else the step is undecided.

use std::collections::HashMap;

use super::scenario::{Patch, Step};
use model::contract::{ContractModel, ErrorKind, Judgement, Reply, Request, StoreError};
use model::{Event, Happened};
use model::{Level, Verdict};

pub use model::recorded::{CheckHistory, DurableRead, KeyspaceRead, Observation};

pub use model::counterexample::{Answer, ScenarioCounterexample};

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
    /// Scenario step of a take → the epoch it answered (granted, or the
    /// live lease's it was refused with).
    takes: HashMap<usize, i64>,
}

impl Learned {
    /// Learns from the store's `reply` to `req`, sent at scenario step `step`.
    pub(crate) fn learn(&mut self, step: usize, req: &Request, reply: &Reply) {
        match (req, reply) {
            (Request::LeaseTake { tree, .. }, Reply::Granted { epoch, .. }) => {
                self.takes.insert(step, *epoch);
                self.grants.entry(tree.clone()).or_default().push(*epoch)
            }
            (Request::LeaseTake { .. }, Reply::Busy { epoch, .. }) => {
                self.takes.insert(step, *epoch);
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
                Request::LeaseRenew { tree, epoch, .. }
                | Request::LeaseRelease { tree, epoch, .. }
                | Request::EffectApply { tree, epoch, .. }
                | Request::CallBegin { tree, epoch, .. },
                Patch::Epoch(r),
            ) => {
                let granted = self
                    .grants
                    .get(tree.as_str())
                    .and_then(|g| g.get(r.grant.wrapping_sub(1)))
                    .ok_or_else(|| format!("tree {tree:?} has no grant number {}", r.grant))?;
                *epoch = granted + r.plus;
            }
            (
                Request::LeaseRenew { epoch, .. }
                | Request::LeaseRelease { epoch, .. }
                | Request::EffectApply { epoch, .. }
                | Request::CallBegin { epoch, .. },
                Patch::EpochOf { step, plus },
            ) => {
                let answered = self
                    .takes
                    .get(step)
                    .ok_or_else(|| format!("the take of step {step} answered no epoch"))?;
                // A neighbouring epoch below 0 is no valid request: 0 is.
                *epoch = (answered + plus).max(0);
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
    /// The server's time or keyspace read around `step`.
    fn observation(&self, step: usize) -> Option<&'a Observation> {
        self.recorded.observations.iter().find(|o| {
            o.step() == step
                && matches!(
                    o,
                    Observation::ServerTime { .. } | Observation::Keyspace { .. }
                )
        })
    }

    /// The comparison of a store's durable state around the bad input of
    /// `step`, for a store outside Redis.
    fn durable_state(&self, step: usize) -> Option<&'a DurableRead> {
        self.recorded.observations.iter().find_map(|o| match o {
            Observation::DurableState { step: s, read } if *s == step => Some(read),
            _ => None,
        })
    }

    /// After an `unavailable` at `step`: why storeproof's own server is to
    /// blame (it did not answer a PING sent straight to it, or no PING was
    /// recorded), or `None` when it answered, so the store is.
    fn server_down(&self, step: usize) -> Option<String> {
        let ping = self.recorded.observations.iter().find_map(|o| match o {
            Observation::ServerPing { step: s, error } if *s == step => Some(error),
            _ => None,
        });
        match ping {
            Some(None) => None,
            Some(Some(e)) => Some(format!(
                "storeproof's own server did not answer a PING sent straight to it either ({e}): the harness's trouble, not the store's"
            )),
            None => Some(
                "the history records no PING of storeproof's own server after it, so whether the server or the store failed is not known"
                    .into(),
            ),
        }
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
        observed: Option<Answer>,
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
            if e.kind == ErrorKind::Unavailable {
                if let Some(why) = walk.server_down(i) {
                    return walk.decided(
                        i,
                        Verdict::Unknown,
                        format!("step {i}: {e}; {why}"),
                        None,
                    );
                }
            }
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
                    // Every answer before was one the contract allows (the
                    // judge would have stopped at the first that was not),
                    // so a grant or slot the store never gave is a choice
                    // the scenario did not foresee: nothing left to judge.
                    if let Err(e) = learned.patch(&mut req, p, start) {
                        return walk.decided(
                            i,
                            Verdict::Unknown,
                            format!(
                                "step {i}: {e}: the store made a choice the contract allows that this scenario did not foresee, so the rest cannot be judged"
                            ),
                            None,
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
        let observed = Answer::of(&outcome);
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
                    before: KeyspaceRead::Keys(_),
                    after: KeyspaceRead::Unchanged,
                    ..
                }) => {}
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
            match walk.durable_state(i) {
                Some(DurableRead::Changed) => {
                    return walk.decided(
                        i,
                        Verdict::Fail,
                        format!(
                            "step {i}: bad input {} {} was refused but changed the store's durable state (its effects or lease log)",
                            call.op, call.args
                        ),
                        Some(observed),
                    )
                }
                Some(DurableRead::Failed(e)) => {
                    return walk.decided(
                        i,
                        Verdict::Unknown,
                        format!(
                            "storeproof could not read the store's durable state to see whether the refused request changed it: {e}"
                        ),
                        None,
                    )
                }
                Some(DurableRead::Unchanged | DurableRead::NotReported) | None => {}
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
        let mut blame = String::new();
        if let Err(e) = &outcome {
            if e.kind == ErrorKind::Unavailable {
                match walk.server_down(i) {
                    Some(why) => {
                        return walk.decided(
                            i,
                            Verdict::Unknown,
                            format!(
                                "step {i}: {} {} answered unavailable ({}); {why}",
                                call.op, call.args, e.message
                            ),
                            None,
                        )
                    }
                    None => {
                        blame = " (storeproof's own server answered a PING sent straight to it, so the store is to blame)".into()
                    }
                }
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
                    format!("step {i}: {} {}: {why}{blame}", call.op, call.args),
                    Some(observed),
                )
            }
        }
        if let Ok(reply) = &outcome {
            learned.learn(i, &req, reply);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{at, raw, read, release, renew, take};
    use model::contract::{LeaseView, StoreError};
    use model::observed::{DurableState, Snapshot};
    use model::History;
    use serde_json::json;

    const START: i64 = 2_000_000_000_000;

    fn recorded(level: Level, history: History, observations: Vec<Observation>) -> CheckHistory {
        CheckHistory {
            check: "conformance.test".into(),
            level,
            start_ms: START,
            history,
            observations,
        }
    }

    /// The history a store that answers exactly as the model does records on
    /// a managed server; bad input is refused and changes nothing.
    fn canonical(steps: &[Step]) -> CheckHistory {
        let mut model = ContractModel::default();
        let mut learned = Learned::default();
        let mut h = History::default();
        let mut observations = Vec::new();
        let mut now = START;
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::At(ms) => now = START + ms,
                Step::Call {
                    instance,
                    request,
                    skew_ms,
                    patch,
                } => {
                    let mut req = request.clone();
                    if let Some(p) = patch {
                        learned.patch(&mut req, p, START).unwrap();
                    }
                    let call = req.to_call();
                    h.invoke(instance, &call, Some(now), now + skew_ms);
                    let reply = model.apply(&req, now, now + skew_ms);
                    learned.learn(i, &req, &reply);
                    h.complete(instance, &call.op, &Ok(reply), Some(now), now + skew_ms);
                }
                Step::Raw { instance, call } => {
                    h.invoke(instance, call, Some(now), now);
                    let refusal = Err(StoreError::new(ErrorKind::BadRequest, "no"));
                    h.complete(instance, &call.op, &refusal, Some(now), now);
                    let keys = Snapshot::from([("k".to_string(), json!("v"))]);
                    observations.push(Observation::Keyspace {
                        step: i,
                        before: KeyspaceRead::Keys(keys.clone()),
                        after: KeyspaceRead::Keys(keys),
                    });
                }
            }
        }
        recorded(Level::Must, h, observations)
    }

    /// The reply of event `n` replaced by `reply`.
    fn answer(mut rec: CheckHistory, n: usize, outcome: Result<Reply, StoreError>) -> CheckHistory {
        let op = rec.history.events[n].op().to_string();
        rec.history.events[n].what = Happened::completion(&op, &outcome);
        rec
    }

    fn granted(epoch: i64, expires_at_ms: i64) -> Result<Reply, StoreError> {
        Ok(Reply::Granted {
            epoch,
            expires_at_ms,
        })
    }

    #[test]
    fn a_hand_written_take_and_read_passes() {
        let steps = [take("a", "t", 1000), read("a", "t")];
        let mut h = History::default();
        let take_call = json!({"tree": "t", "holder": "a", "ttl_ms": 1000});
        let call = |op: &str, args: serde_json::Value| Call {
            op: op.into(),
            args,
        };
        h.invoke("a", &call("lease.take", take_call), Some(START), START);
        h.complete(
            "a",
            "lease.take",
            &granted(7, START + 1000),
            Some(START),
            START,
        );
        h.invoke(
            "a",
            &call("lease.read", json!({"tree": "t"})),
            Some(START),
            START,
        );
        let view = LeaseView {
            holder: Some("a".into()),
            epoch: 7,
            expires_at_ms: Some(START + 1000),
            live: true,
        };
        h.complete(
            "a",
            "lease.read",
            &Ok(Reply::Lease(Some(view))),
            Some(START),
            START,
        );
        let j = judge_steps(&steps, &recorded(Level::Must, h, vec![]));
        assert_eq!(j.verdict, Verdict::Pass, "{}", j.reason);
        assert_eq!(j.decided_at, None);
    }

    use model::contract::Call;

    #[test]
    fn every_scenario_answered_as_the_model_answers_passes() {
        for def in crate::all_checks() {
            if let crate::CheckKind::Scenario(steps) = def.kind {
                let steps = steps();
                let j = judge_steps(&steps, &canonical(&steps));
                assert_eq!(j.verdict, Verdict::Pass, "{}: {}", def.spec.id, j.reason);
            }
        }
    }

    #[test]
    fn a_read_showing_another_epoch_than_granted_fails_with_the_steps_so_far() {
        let steps = [take("a", "t", 1000), read("a", "t")];
        // The grant says epoch 5; the read (the model's) says 1.
        let rec = answer(canonical(&steps), 1, granted(5, START + 1000));
        let j = judge_steps(&steps, &rec);
        assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
        assert!(j.reason.starts_with("step 1: lease.read"), "{}", j.reason);
        let cx = j.counterexample.expect("a counterexample");
        assert_eq!(cx.steps.len(), 2);
        assert!(
            matches!(&cx.observed, Answer::Reply(Reply::Lease(Some(v))) if v.epoch == 1),
            "{}",
            cx.observed
        );
        assert_eq!(j.decided_at, Some((1, 4)));
        let v = serde_json::to_value(&cx).unwrap();
        assert_eq!(v["kind"], "conformance-scenario");
    }

    #[test]
    fn a_grant_while_the_lease_is_live_fails() {
        let steps = [take("a", "t", 1000), at(10), take("b", "t", 1000)];
        let rec = answer(canonical(&steps), 3, granted(2, START + 1010));
        let j = judge_steps(&steps, &rec);
        assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
        assert!(j.reason.starts_with("step 2: lease.take"), "{}", j.reason);
    }

    #[test]
    fn a_renewal_after_expiry_fails_and_a_should_check_only_warns() {
        let steps = [take("a", "t", 1000), at(1001), renew("a", "t", 1, 0, 1000)];
        let rec = answer(
            canonical(&steps),
            3,
            Ok(Reply::Renewed {
                expires_at_ms: START + 2001,
            }),
        );
        assert_eq!(judge_steps(&steps, &rec).verdict, Verdict::Fail);
        let should = CheckHistory {
            level: Level::Should,
            ..rec
        };
        assert_eq!(judge_steps(&steps, &should).verdict, Verdict::Warn);
    }

    #[test]
    fn an_error_answer_to_a_valid_request_fails_but_unsupported_is_skipped() {
        let steps = [take("a", "t", 1000)];
        let full = answer(
            canonical(&steps),
            1,
            Err(StoreError::new(ErrorKind::StoreFull, "full")),
        );
        assert_eq!(judge_steps(&steps, &full).verdict, Verdict::Fail);
        let unsupported = answer(
            canonical(&steps),
            1,
            Err(StoreError::new(ErrorKind::Unsupported, "no leases")),
        );
        let j = judge_steps(&steps, &unsupported);
        assert_eq!(j.verdict, Verdict::Skipped, "{}", j.reason);
    }

    #[test]
    fn unavailable_fails_the_store_only_when_storeproof_s_server_answered_its_own_ping() {
        let steps = [take("a", "t", 1000)];
        let unavailable = answer(
            canonical(&steps),
            1,
            Err(StoreError::new(ErrorKind::Unavailable, "connection reset")),
        );
        let ping = |error: Option<&str>| Observation::ServerPing {
            step: 0,
            error: error.map(str::to_string),
        };
        let mut answered = unavailable.clone();
        answered.observations.push(ping(None));
        let j = judge_steps(&steps, &answered);
        assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
        assert!(j.reason.contains("store is to blame"), "{}", j.reason);

        let mut down = unavailable.clone();
        down.observations
            .push(ping(Some("no answer to PING in 5 s")));
        let j = judge_steps(&steps, &down);
        assert_eq!(j.verdict, Verdict::Unknown, "{}", j.reason);
        assert!(j.reason.contains("harness's trouble"), "{}", j.reason);

        // No PING recorded: nobody knows whose trouble it was.
        assert_eq!(judge_steps(&steps, &unavailable).verdict, Verdict::Unknown);

        // The same for a store that could not connect.
        let mut rec = recorded(Level::Must, History::default(), vec![]);
        rec.observations.push(Observation::ConnectFailed {
            step: 0,
            instance: "a".into(),
            error: StoreError::new(ErrorKind::Unavailable, "refused"),
        });
        let mut up = rec.clone();
        up.observations.insert(0, ping(None));
        assert_eq!(judge_steps(&steps, &up).verdict, Verdict::Fail);
        rec.observations.insert(0, ping(Some("refused")));
        assert_eq!(judge_steps(&steps, &rec).verdict, Verdict::Unknown);
    }

    fn bad_input() -> Vec<Step> {
        vec![
            take("a", "t", 1000),
            raw(
                "a",
                "lease.take",
                json!({"tree": "", "holder": "a", "ttl_ms": 1000}),
            ),
        ]
    }

    #[test]
    fn bad_input_refused_without_a_change_passes_and_with_one_fails() {
        let steps = bad_input();
        let rec = canonical(&steps);
        assert_eq!(judge_steps(&steps, &rec).verdict, Verdict::Pass);
        let mut short = rec.clone();
        short.observations = vec![Observation::Keyspace {
            step: 1,
            before: KeyspaceRead::Keys(Snapshot::new()),
            after: KeyspaceRead::Unchanged,
        }];
        assert_eq!(judge_steps(&steps, &short).verdict, Verdict::Pass);
        let mut changed = rec.clone();
        changed.observations = vec![Observation::Keyspace {
            step: 1,
            before: KeyspaceRead::Keys(Snapshot::new()),
            after: KeyspaceRead::Keys(Snapshot::from([("k".into(), json!(1))])),
        }];
        let j = judge_steps(&steps, &changed);
        assert_eq!(j.verdict, Verdict::Fail);
        assert!(
            j.reason.contains("was refused but changed the keyspace"),
            "{}",
            j.reason
        );
        let accepted = answer(rec.clone(), 3, granted(2, START + 1000));
        let j = judge_steps(&steps, &accepted);
        assert_eq!(j.verdict, Verdict::Fail);
        assert!(
            j.reason.contains("was not refused with bad_request"),
            "{}",
            j.reason
        );
        let mut unread = rec;
        unread.observations = vec![Observation::Keyspace {
            step: 1,
            before: KeyspaceRead::Failed("connection reset".into()),
            after: KeyspaceRead::Keys(Snapshot::new()),
        }];
        assert_eq!(judge_steps(&steps, &unread).verdict, Verdict::Unknown);
    }

    /// A store outside Redis writes nothing to the keyspace: an empty
    /// keyspace unchanged proves nothing, its durable state decides.
    #[test]
    fn bad_input_that_changed_a_durable_store_fails_though_the_keyspace_did_not_change() {
        let steps = bad_input();
        let with = |read: DurableRead| {
            let mut rec = canonical(&steps);
            rec.observations = vec![
                Observation::Keyspace {
                    step: 1,
                    before: KeyspaceRead::Keys(Snapshot::new()),
                    after: KeyspaceRead::Unchanged,
                },
                Observation::DurableState { step: 1, read },
            ];
            judge_steps(&steps, &rec)
        };
        let j = with(DurableRead::Changed);
        assert_eq!(j.verdict, Verdict::Fail, "{}", j.reason);
        assert!(
            j.reason.contains("changed the store's durable state"),
            "{}",
            j.reason
        );
        assert_eq!(with(DurableRead::Unchanged).verdict, Verdict::Pass);
        assert_eq!(with(DurableRead::NotReported).verdict, Verdict::Pass);
        assert_eq!(
            with(DurableRead::Failed("locked".into())).verdict,
            Verdict::Unknown
        );
        let state = |effects: usize| {
            Ok(Some(DurableState {
                effects: vec![
                    model::observed::DurableEffect {
                        seq: 1,
                        tree: "t".into(),
                        effect: "e".into(),
                        holder: "a".into(),
                        epoch: 1,
                    };
                    effects
                ],
                log: Vec::new(),
            }))
        };
        assert_eq!(DurableRead::of(state(0), state(1)), DurableRead::Changed);
        assert_eq!(DurableRead::of(state(1), state(1)), DurableRead::Unchanged);
        assert_eq!(
            DurableRead::of(Ok(None), Ok(None)),
            DurableRead::NotReported
        );
    }

    #[test]
    fn the_harness_own_trouble_is_unknown_never_fail() {
        let steps = [take("a", "t", 1000), read("a", "t")];
        let dead = answer(
            canonical(&steps),
            1,
            Err(StoreError::new(ErrorKind::AdapterFailed, "exited")),
        );
        let j = judge_steps(&steps, &dead);
        assert_eq!(j.verdict, Verdict::Unknown);
        assert!(j.reason.contains("adapter of instance a"), "{}", j.reason);

        let mut no_time = canonical(&steps);
        no_time.observations.push(Observation::ServerTime {
            step: 0,
            before: Some(START),
            after: None,
        });
        assert_eq!(judge_steps(&steps, &no_time).verdict, Verdict::Unknown);

        let mut short = canonical(&steps);
        short.history.events.truncate(2);
        let j = judge_steps(&steps, &short);
        assert_eq!(j.verdict, Verdict::Unknown);
        assert!(j.reason.contains("stops before step 1"), "{}", j.reason);
    }

    #[test]
    fn a_store_that_cannot_connect_fails_unless_its_adapter_failed() {
        let steps = [take("a", "t", 1000)];
        let mut rec = recorded(Level::Must, History::default(), vec![]);
        rec.observations.push(Observation::ConnectFailed {
            step: 0,
            instance: "a".into(),
            error: StoreError::new(ErrorKind::Durability, "appendonly no"),
        });
        assert_eq!(judge_steps(&steps, &rec).verdict, Verdict::Fail);
        rec.observations[0] = Observation::ConnectFailed {
            step: 0,
            instance: "a".into(),
            error: StoreError::new(ErrorKind::AdapterFailed, "exited"),
        };
        assert_eq!(judge_steps(&steps, &rec).verdict, Verdict::Unknown);
    }

    #[test]
    fn a_grant_the_store_legitimately_never_gave_is_unknown_and_a_foreign_call_is_no_history_of_the_scenario(
    ) {
        // At exactly the expiry instant a busy is a conservative answer (a
        // SHOULD), so the judge goes on; then b has no grant to release: the
        // scenario cannot be judged further, which is no failure of the store.
        let steps = [
            take("a", "t", 1000),
            at(1000),
            take("b", "t", 1000),
            release("b", "t", 2, 0),
        ];
        let busy = Ok(Reply::Busy {
            holder: "a".into(),
            epoch: 1,
            expires_at_ms: START + 1000,
        });
        let mut rec = answer(canonical(&steps), 3, busy.clone());
        rec.history.events.truncate(4);
        let j = judge_steps(&steps, &rec);
        assert_eq!(j.verdict, Verdict::Unknown, "{}", j.reason);
        assert!(
            j.reason.contains("has no grant number 2") && j.reason.contains("did not foresee"),
            "{}",
            j.reason
        );
        assert_eq!(j.counterexample, None);

        // Named by the step of its take instead, the release follows the
        // store's choice: b names the epoch it was refused with, is told
        // not_held, and the case is judged to its end (a warning for the busy).
        let steps = [
            take("a", "t", 1000),
            at(1000),
            take("b", "t", 1000),
            Step::Call {
                instance: "b".into(),
                request: Request::LeaseRelease {
                    tree: "t".into(),
                    holder: "b".into(),
                    epoch: 0,
                },
                skew_ms: 0,
                patch: Some(Patch::EpochOf { step: 2, plus: 0 }),
            },
        ];
        let mut rec = answer(canonical(&steps), 3, busy);
        rec.history.events.truncate(4);
        let release_b = Call {
            op: "lease.release".into(),
            args: json!({"tree": "t", "holder": "b", "epoch": 1}),
        };
        rec.history
            .invoke("b", &release_b, Some(START + 1000), START + 1000);
        rec.history.complete(
            "b",
            "lease.release",
            &Ok(Reply::NotHeld {}),
            Some(START + 1000),
            START + 1000,
        );
        let j = judge_steps(&steps, &rec);
        assert_eq!(j.verdict, Verdict::Warn, "{}", j.reason);
        assert!(
            j.reason.contains("busy at the exact expiry instant"),
            "{}",
            j.reason
        );

        let steps = [take("a", "t", 1000), release("a", "t", 1, 0)];
        let mut foreign = canonical(&steps);
        foreign.history.events[2].what = Happened::Invoke(Call {
            op: "lease.release".into(),
            args: json!({"tree": "t", "holder": "a", "epoch": 99}),
        });
        let j = judge_steps(&steps, &foreign);
        assert_eq!(j.verdict, Verdict::Unknown);
        assert!(
            j.reason.contains("does not follow its scenario"),
            "{}",
            j.reason
        );
    }

    #[test]
    fn on_a_server_not_storeproof_s_the_reply_is_judged_within_the_time_window() {
        let steps = [take("a", "t", 1000)];
        let mut rec = answer(canonical(&steps), 1, granted(1, START + 1040));
        // Without the window the expiry is 40 ms off; TIME read 0..50 ms
        // around the call explains it.
        assert_eq!(judge_steps(&steps, &rec).verdict, Verdict::Fail);
        rec.observations.push(Observation::ServerTime {
            step: 0,
            before: Some(START),
            after: Some(START + 50),
        });
        let j = judge_steps(&steps, &rec);
        assert_eq!(j.verdict, Verdict::Pass, "{}", j.reason);
    }

    #[test]
    fn a_history_cut_where_it_was_decided_judges_the_same_and_reads_back() {
        let steps = [take("a", "t", 1000), read("a", "t"), read("a", "t")];
        let rec = answer(canonical(&steps), 1, granted(5, START + 1000));
        let j = judge_steps(&steps, &rec);
        let short = cut(rec, &j);
        assert_eq!(short.history.events.len(), 4);
        let back: CheckHistory =
            serde_json::from_value(serde_json::to_value(&short).unwrap()).unwrap();
        assert_eq!(back, short);
        let again = judge_steps(&steps, &back);
        assert_eq!((again.verdict, again.reason), (j.verdict, j.reason));
    }

    #[test]
    fn judge_finds_the_scenario_by_its_check_id() {
        let id = "conformance.lease.take-free-tree";
        let steps = crate::scenario_steps(id).expect("a scenario check");
        let rec = CheckHistory {
            check: id.into(),
            ..canonical(&steps)
        };
        assert_eq!(judge(&rec).unwrap().verdict, Verdict::Pass);
        let unknown = CheckHistory {
            check: "conformance.nope".into(),
            ..rec
        };
        assert!(matches!(
            judge(&unknown),
            Err(NotJudgeable::UnknownCheck(_))
        ));
    }
}
