//! Replies: every outcome of every operation, in the wire shape of
//! docs/PROTOCOL.md §4 (exactly one key names the outcome, except `rate.read`).

use serde::{Deserialize, Serialize};

use super::Request;

/// A lease record as `lease.read` shows it. For a record that is not live
/// only `epoch` and `live` are judged, so a store that cannot know a
/// released or expired lease's holder or expiry (a lock key with `PX` beside
/// a fence counter) answers null there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseView {
    /// The holder of the latest grant; may be null once it is not live.
    pub holder: Option<String>,
    /// The latest epoch granted for the tree.
    pub epoch: i64,
    /// When the latest grant ends (or ended), in server time ms; may be null
    /// once it is not live.
    pub expires_at_ms: Option<i64>,
    /// Unexpired on server time and not released.
    pub live: bool,
}

/// The state of a child in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildState {
    /// Saved and waiting for its first claim.
    Queued,
    /// Held by a claim; claimable again once that claim expires on server time.
    Claimed,
    /// Completed by its current claim; never claimed or re-queued again.
    Done,
}

/// A child as `queue.read` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildView {
    /// Where the child is: queued, claimed or done.
    pub state: ChildState,
    /// The instance that claimed it last, kept once it is done; null if never claimed.
    pub claimer: Option<String>,
    /// How many times it has been claimed (0 until the first claim).
    pub attempt: i64,
    /// Its depth as saved; deeper children are claimed first.
    pub depth: i64,
}

/// Every successful outcome of every operation. Which outcomes an operation
/// may give is [`Reply::answers`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// `lease.take`: the tree was free, released or expired; the caller now
    /// holds it under a new epoch.
    Granted {
        /// The new epoch, greater than every earlier grant's for the tree.
        epoch: i64,
        /// When the lease ends: server now + `ttl_ms`, in server time ms.
        expires_at_ms: i64,
    },
    /// `lease.take`: the lease is live: its holder, epoch and expiry; nothing
    /// changed.
    Busy {
        /// The live holder; may be the caller itself after a lost reply.
        holder: String,
        /// The live lease's epoch, which that holder may adopt.
        epoch: i64,
        /// When the live lease ends, in server time ms.
        expires_at_ms: i64,
    },
    /// `lease.renew`: holder and epoch matched a live lease, which now runs to
    /// a new expiry.
    Renewed {
        /// The new expiry: server now + `ttl_ms`, in server time ms.
        expires_at_ms: i64,
    },
    /// `lease.renew`: the lease is someone else's, another epoch, released or
    /// expired; nothing changed.
    Lost {
        /// The current live holder, or null when no lease is live.
        holder: Option<String>,
        /// The current live epoch, or null when no lease is live.
        epoch: Option<i64>,
    },
    /// `lease.release`: holder and epoch matched; the tree is free and keeps
    /// its epoch. `rate.release_slot`: the live slot was handed back.
    Released {},
    /// `lease.release`: holder or epoch did not match, or it was already
    /// released; nothing changed and a newer epoch was not touched.
    NotHeld {},
    /// `lease.read`: the tree's record, or null when it was never taken.
    Lease(Option<LeaseView>),
    /// `lease.keep_execution`: the execution id is kept in the durable store.
    Kept {},
    /// `lease.kept_executions`: the execution ids kept for the tree.
    Executions(Vec<String>),
    /// `queue.save`: the child was unknown and is now queued.
    Saved {},
    /// `queue.save`: the id is already known; the child is left as it is.
    Exists {
        /// The known child's current state (a claimed or done child is never
        /// re-queued).
        state: ChildState,
    },
    /// `queue.claim`: the first claimable child in order, now claimed by the
    /// caller.
    Claimed {
        /// The claimed child's id.
        child: String,
        /// Its depth as saved.
        depth: i64,
        /// Its payload as saved.
        payload: String,
        /// This claim's number, one more than the last; `queue.complete` must
        /// name it.
        attempt: i64,
    },
    /// `queue.claim`: no child is queued or has an expired claim.
    Empty {},
    /// `queue.complete`: the caller's claim was current and unexpired; the
    /// child is done.
    Completed {},
    /// `queue.complete`: that claim is not the child's current, unexpired
    /// claim; nothing changed.
    NotClaimer {
        /// The child's latest claimer, or null when it has none or is unknown.
        claimer: Option<String>,
        /// The child's latest attempt, or null when the child is unknown.
        attempt: Option<i64>,
    },
    /// `queue.read`: the child's record, or null when the id is unknown.
    Child(Option<ChildView>),
    /// `rate.acquire_slot`: fewer than `limit` slots were live; the caller
    /// now holds a new one.
    Acquired {
        /// The new slot's id, to hand back with `rate.release_slot`.
        slot: String,
    },
    /// `rate.acquire_slot`: `limit` slots are live; nothing changed.
    Full {
        /// When the first live slot expires, on the instance clock (ms).
        retry_at_ms: i64,
    },
    /// `rate.pause`: the pause now in force. `rate.acquire_slot` and
    /// `rate.hit`: refused because the provider is paused; nothing changed.
    Paused {
        /// When the pause ends, on the instance clock (ms).
        until_ms: i64,
    },
    /// `rate.release_slot`: no live slot has that id; nothing changed.
    Unknown {},
    /// `rate.hit`: fewer than `limit` hits were in the window; this one is
    /// counted.
    Allowed {
        /// How many more hits the window allows after this one.
        remaining: i64,
    },
    /// `rate.hit`: `limit` hits are already in the window; this one is not
    /// counted.
    Limited {
        /// When the oldest counted hit leaves the window, on the instance
        /// clock (ms).
        retry_at_ms: i64,
    },
    /// `effect.apply`: the caller held the live lease at its epoch; the
    /// effect is recorded.
    Applied {},
    /// `effect.apply`: that effect id was already recorded for the tree;
    /// `call.begin`: that call was already begun. Nothing changed.
    Duplicate {},
    /// `effect.apply`, `call.begin`, `call.finish`: the caller (for a finish,
    /// whoever began the call) does not hold the live lease at its epoch;
    /// nothing changed.
    Fenced {
        /// The tree's latest epoch (0 when it was never leased).
        epoch: i64,
    },
    /// `call.begin`: the caller held the live lease; the call is begun and
    /// may go out. No other begin of this id ever answers `begun`.
    Begun {},
    /// `call.finish`: the response is recorded.
    Finished {},
    /// `call.finish`: the call was already finished; its first response stands.
    AlreadyFinished {
        /// The response recorded first.
        response: String,
    },
    /// `call.finish`: no call of that id was begun; nothing changed.
    NotBegun {},
    /// `rate.read`: the one reply without an outcome key.
    #[serde(untagged)]
    RateState {
        /// How many slots are live on the instance clock.
        slots_in_use: i64,
        /// When the pause in force ends (instance clock, ms), or null when
        /// not paused.
        paused_until_ms: Option<i64>,
    },
}

impl Reply {
    /// The outcome's wire name (`granted`, `busy`, …; `rate_state` for `rate.read`).
    pub fn outcome(&self) -> &'static str {
        match self {
            Reply::Granted { .. } => "granted",
            Reply::Busy { .. } => "busy",
            Reply::Renewed { .. } => "renewed",
            Reply::Lost { .. } => "lost",
            Reply::Released {} => "released",
            Reply::NotHeld {} => "not_held",
            Reply::Lease(_) => "lease",
            Reply::Kept {} => "kept",
            Reply::Executions(_) => "executions",
            Reply::Saved {} => "saved",
            Reply::Exists { .. } => "exists",
            Reply::Claimed { .. } => "claimed",
            Reply::Empty {} => "empty",
            Reply::Completed {} => "completed",
            Reply::NotClaimer { .. } => "not_claimer",
            Reply::Child(_) => "child",
            Reply::Acquired { .. } => "acquired",
            Reply::Full { .. } => "full",
            Reply::Paused { .. } => "paused",
            Reply::Unknown {} => "unknown",
            Reply::Allowed { .. } => "allowed",
            Reply::Limited { .. } => "limited",
            Reply::RateState { .. } => "rate_state",
            Reply::Applied {} => "applied",
            Reply::Duplicate {} => "duplicate",
            Reply::Fenced { .. } => "fenced",
            Reply::Begun {} => "begun",
            Reply::Finished {} => "finished",
            Reply::AlreadyFinished { .. } => "already_finished",
            Reply::NotBegun {} => "not_begun",
        }
    }

    /// Whether this outcome is one the request's operation may answer at all
    /// (docs/PROTOCOL.md §4's table). A reply that is not is malformed,
    /// whatever its values.
    pub fn answers(&self, req: &Request) -> bool {
        let allowed: &[&str] = match req {
            Request::LeaseTake { .. } => &["granted", "busy"],
            Request::LeaseRenew { .. } => &["renewed", "lost"],
            Request::LeaseRelease { .. } => &["released", "not_held"],
            Request::LeaseRead { .. } => &["lease"],
            Request::LeaseKeepExecution { .. } => &["kept"],
            Request::LeaseKeptExecutions { .. } => &["executions"],
            Request::QueueSave { .. } => &["saved", "exists"],
            Request::QueueClaim { .. } => &["claimed", "empty"],
            Request::QueueComplete { .. } => &["completed", "not_claimer"],
            Request::QueueRead { .. } => &["child"],
            Request::RateAcquireSlot { .. } => &["acquired", "full", "paused"],
            Request::RateReleaseSlot { .. } => &["released", "unknown"],
            Request::RateHit { .. } => &["allowed", "limited", "paused"],
            Request::RatePause { .. } => &["paused"],
            Request::RateRead { .. } => &["rate_state"],
            Request::EffectApply { .. } => &["applied", "duplicate", "fenced"],
            Request::CallBegin { .. } => &["begun", "duplicate", "fenced"],
            Request::CallFinish { .. } => &["finished", "already_finished", "not_begun", "fenced"],
        };
        allowed.contains(&self.outcome())
    }
}

impl Reply {
    /// Reads the `ok` value an adapter answered to `op`, demanding exactly
    /// what the contract judges: an outcome key `op` may answer, and each
    /// field present with its type (null only where PROTOCOL.md allows it;
    /// unknown extra fields are ignored). The error names the field that is
    /// wrong, e.g. ``lease.read: `lease.epoch` must be a whole number (a JSON
    /// integer), got "x"``.
    pub fn from_wire(op: &str, ok: &serde_json::Value) -> Result<Reply, String> {
        WireReader { op }.reply(ok)
    }
}

/// `outcome.field`, or `field` alone for `rate.read` (no outcome key).
fn field_path(outcome: &str, field: &str) -> String {
    if outcome.is_empty() {
        field.to_string()
    } else {
        format!("{outcome}.{field}")
    }
}

/// The outcomes each operation may answer, in wire names.
fn outcomes_of(op: &str) -> Option<&'static [&'static str]> {
    Some(match op {
        "lease.take" => &["granted", "busy"],
        "lease.renew" => &["renewed", "lost"],
        "lease.release" => &["released", "not_held"],
        "lease.read" => &["lease"],
        "lease.keep_execution" => &["kept"],
        "lease.kept_executions" => &["executions"],
        "queue.save" => &["saved", "exists"],
        "queue.claim" => &["claimed", "empty"],
        "queue.complete" => &["completed", "not_claimer"],
        "queue.read" => &["child"],
        "rate.acquire_slot" => &["acquired", "full", "paused"],
        "rate.release_slot" => &["released", "unknown"],
        "rate.hit" => &["allowed", "limited", "paused"],
        "rate.pause" => &["paused"],
        "effect.apply" => &["applied", "duplicate", "fenced"],
        "call.begin" => &["begun", "duplicate", "fenced"],
        "call.finish" => &["finished", "already_finished", "not_begun", "fenced"],
        _ => return None,
    })
}

/// Short JSON of a value for a message (long values cut).
fn shown(v: &serde_json::Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

struct WireReader<'a> {
    op: &'a str,
}

type Obj = serde_json::Map<String, serde_json::Value>;

impl WireReader<'_> {
    fn err(&self, path: &str, want: &str, got: Option<&serde_json::Value>) -> String {
        match got {
            Some(v) => format!("{}: `{path}` must be {want}, got {}", self.op, shown(v)),
            None => format!("{}: `{path}` must be {want}, but it is missing", self.op),
        }
    }

    fn object<'v>(&self, path: &str, v: &'v serde_json::Value) -> Result<&'v Obj, String> {
        v.as_object()
            .ok_or_else(|| self.err(path, "an object", Some(v)))
    }

    fn int(&self, o: &Obj, outcome: &str, field: &str) -> Result<i64, String> {
        let v = o.get(field);
        v.and_then(serde_json::Value::as_i64).ok_or_else(|| {
            self.err(
                &field_path(outcome, field),
                "a whole number (a JSON integer)",
                v,
            )
        })
    }

    fn opt_int(&self, o: &Obj, outcome: &str, field: &str) -> Result<Option<i64>, String> {
        match o.get(field) {
            Some(serde_json::Value::Null) => Ok(None),
            Some(v) if v.is_i64() => Ok(v.as_i64()),
            v => Err(self.err(&field_path(outcome, field), "a whole number or null", v)),
        }
    }

    fn text(&self, o: &Obj, outcome: &str, field: &str) -> Result<String, String> {
        let v = o.get(field);
        v.and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| self.err(&field_path(outcome, field), "a string", v))
    }

    fn opt_text(&self, o: &Obj, outcome: &str, field: &str) -> Result<Option<String>, String> {
        match o.get(field) {
            Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            v => Err(self.err(&field_path(outcome, field), "a string or null", v)),
        }
    }

    fn state(&self, o: &Obj, outcome: &str, field: &str) -> Result<ChildState, String> {
        let v = o.get(field);
        match v.and_then(serde_json::Value::as_str) {
            Some("queued") => Ok(ChildState::Queued),
            Some("claimed") => Ok(ChildState::Claimed),
            Some("done") => Ok(ChildState::Done),
            _ => Err(self.err(
                &field_path(outcome, field),
                "one of \"queued\", \"claimed\", \"done\"",
                v,
            )),
        }
    }

    fn empty(&self, o: &serde_json::Value, outcome: &str) -> Result<(), String> {
        self.object(outcome, o).map(|_| ())
    }

    fn reply(&self, ok: &serde_json::Value) -> Result<Reply, String> {
        let top = ok.as_object().ok_or_else(|| {
            format!(
                "{}: the ok value must be an object, got {}",
                self.op,
                shown(ok)
            )
        })?;
        if self.op == "rate.read" {
            return Ok(Reply::RateState {
                slots_in_use: self.int(top, "", "slots_in_use")?,
                paused_until_ms: self.opt_int(top, "", "paused_until_ms")?,
            });
        }
        let Some(allowed) = outcomes_of(self.op) else {
            return Err(format!("{} is not an operation", self.op));
        };
        let want = allowed
            .iter()
            .map(|o| format!("`{o}`"))
            .collect::<Vec<_>>()
            .join(" or ");
        let mut keys = top.iter();
        let (outcome, body) = match (keys.next(), keys.next()) {
            (Some((k, v)), None) => (k.as_str(), v),
            _ => {
                return Err(format!(
                    "{}: the ok value must have exactly one key, the outcome ({want}), got {}",
                    self.op,
                    shown(ok)
                ))
            }
        };
        if !allowed.contains(&outcome) {
            return Err(format!(
                "{}: the outcome must be {want}, got `{outcome}`",
                self.op
            ));
        }
        Ok(match outcome {
            "lease" if body.is_null() => Reply::Lease(None),
            "lease" => {
                let o = self.object("lease", body)?;
                let live = o.get("live");
                Reply::Lease(Some(LeaseView {
                    holder: self.opt_text(o, "lease", "holder")?,
                    epoch: self.int(o, "lease", "epoch")?,
                    expires_at_ms: self.opt_int(o, "lease", "expires_at_ms")?,
                    live: live
                        .and_then(serde_json::Value::as_bool)
                        .ok_or_else(|| self.err("lease.live", "true or false", live))?,
                }))
            }
            "child" if body.is_null() => Reply::Child(None),
            "child" => {
                let o = self.object("child", body)?;
                Reply::Child(Some(ChildView {
                    state: self.state(o, "child", "state")?,
                    claimer: self.opt_text(o, "child", "claimer")?,
                    attempt: self.int(o, "child", "attempt")?,
                    depth: self.int(o, "child", "depth")?,
                }))
            }
            "executions" => {
                let list = body
                    .as_array()
                    .ok_or_else(|| self.err("executions", "an array of strings", Some(body)))?;
                let mut ids = Vec::with_capacity(list.len());
                for (i, v) in list.iter().enumerate() {
                    ids.push(
                        v.as_str()
                            .ok_or_else(|| {
                                self.err(&format!("executions[{i}]"), "a string", Some(v))
                            })?
                            .to_string(),
                    );
                }
                Reply::Executions(ids)
            }
            "released" => self.empty(body, outcome).map(|_| Reply::Released {})?,
            "not_held" => self.empty(body, outcome).map(|_| Reply::NotHeld {})?,
            "kept" => self.empty(body, outcome).map(|_| Reply::Kept {})?,
            "saved" => self.empty(body, outcome).map(|_| Reply::Saved {})?,
            "empty" => self.empty(body, outcome).map(|_| Reply::Empty {})?,
            "completed" => self.empty(body, outcome).map(|_| Reply::Completed {})?,
            "unknown" => self.empty(body, outcome).map(|_| Reply::Unknown {})?,
            "applied" => self.empty(body, outcome).map(|_| Reply::Applied {})?,
            "duplicate" => self.empty(body, outcome).map(|_| Reply::Duplicate {})?,
            "begun" => self.empty(body, outcome).map(|_| Reply::Begun {})?,
            "finished" => self.empty(body, outcome).map(|_| Reply::Finished {})?,
            "not_begun" => self.empty(body, outcome).map(|_| Reply::NotBegun {})?,
            _ => {
                let o = self.object(outcome, body)?;
                match outcome {
                    "granted" => Reply::Granted {
                        epoch: self.int(o, outcome, "epoch")?,
                        expires_at_ms: self.int(o, outcome, "expires_at_ms")?,
                    },
                    "busy" => Reply::Busy {
                        holder: self.text(o, outcome, "holder")?,
                        epoch: self.int(o, outcome, "epoch")?,
                        expires_at_ms: self.int(o, outcome, "expires_at_ms")?,
                    },
                    "fenced" => Reply::Fenced {
                        epoch: self.int(o, outcome, "epoch")?,
                    },
                    "already_finished" => Reply::AlreadyFinished {
                        response: self.text(o, outcome, "response")?,
                    },
                    "renewed" => Reply::Renewed {
                        expires_at_ms: self.int(o, outcome, "expires_at_ms")?,
                    },
                    "lost" => Reply::Lost {
                        holder: self.opt_text(o, outcome, "holder")?,
                        epoch: self.opt_int(o, outcome, "epoch")?,
                    },
                    "exists" => Reply::Exists {
                        state: self.state(o, outcome, "state")?,
                    },
                    "claimed" => Reply::Claimed {
                        child: self.text(o, outcome, "child")?,
                        depth: self.int(o, outcome, "depth")?,
                        payload: self.text(o, outcome, "payload")?,
                        attempt: self.int(o, outcome, "attempt")?,
                    },
                    "not_claimer" => Reply::NotClaimer {
                        claimer: self.opt_text(o, outcome, "claimer")?,
                        attempt: self.opt_int(o, outcome, "attempt")?,
                    },
                    "acquired" => {
                        let slot = self.text(o, outcome, "slot")?;
                        if slot.is_empty() {
                            return Err(self.err(
                                "acquired.slot",
                                "a non-empty string",
                                o.get("slot"),
                            ));
                        }
                        Reply::Acquired { slot }
                    }
                    "full" => Reply::Full {
                        retry_at_ms: self.int(o, outcome, "retry_at_ms")?,
                    },
                    "paused" => Reply::Paused {
                        until_ms: self.int(o, outcome, "until_ms")?,
                    },
                    "allowed" => Reply::Allowed {
                        remaining: self.int(o, outcome, "remaining")?,
                    },
                    "limited" => Reply::Limited {
                        retry_at_ms: self.int(o, outcome, "retry_at_ms")?,
                    },
                    other => return Err(format!("{}: unknown outcome `{other}`", self.op)),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes_match_the_spec() {
        let cases = [
            (
                Reply::Granted {
                    epoch: 1,
                    expires_at_ms: 5,
                },
                json!({"granted": {"epoch": 1, "expires_at_ms": 5}}),
            ),
            (Reply::Released {}, json!({"released": {}})),
            (Reply::Lease(None), json!({"lease": null})),
            (
                Reply::Lost {
                    holder: None,
                    epoch: None,
                },
                json!({"lost": {"holder": null, "epoch": null}}),
            ),
            (
                Reply::Executions(vec!["e1".into()]),
                json!({"executions": ["e1"]}),
            ),
            (
                Reply::RateState {
                    slots_in_use: 2,
                    paused_until_ms: None,
                },
                json!({"slots_in_use": 2, "paused_until_ms": null}),
            ),
            (
                Reply::Exists {
                    state: ChildState::Done,
                },
                json!({"exists": {"state": "done"}}),
            ),
        ];
        for (reply, wire) in cases {
            assert_eq!(serde_json::to_value(&reply).unwrap(), wire);
            assert_eq!(serde_json::from_value::<Reply>(wire).unwrap(), reply);
        }
    }

    #[test]
    fn garbage_is_not_a_reply() {
        assert!(serde_json::from_value::<Reply>(json!({"granted": {"epoch": "x"}})).is_err());
        assert!(serde_json::from_value::<Reply>(json!({"weird": {}})).is_err());
    }

    #[test]
    fn a_lease_that_is_not_live_may_read_with_null_holder_and_expiry() {
        let ok =
            json!({"lease": {"holder": null, "epoch": 1, "expires_at_ms": null, "live": false}});
        assert_eq!(
            Reply::from_wire("lease.read", &ok).unwrap(),
            Reply::Lease(Some(LeaseView {
                holder: None,
                epoch: 1,
                expires_at_ms: None,
                live: false
            }))
        );
    }

    #[test]
    fn every_canonical_reply_reads_back_from_its_wire_form() {
        let cases = [
            (
                "lease.take",
                Reply::Busy {
                    holder: "a".into(),
                    epoch: 2,
                    expires_at_ms: 9,
                },
            ),
            (
                "lease.renew",
                Reply::Lost {
                    holder: None,
                    epoch: None,
                },
            ),
            ("lease.release", Reply::NotHeld {}),
            ("lease.read", Reply::Lease(None)),
            ("lease.kept_executions", Reply::Executions(vec!["e".into()])),
            (
                "queue.save",
                Reply::Exists {
                    state: ChildState::Claimed,
                },
            ),
            (
                "queue.claim",
                Reply::Claimed {
                    child: "c".into(),
                    depth: 1,
                    payload: String::new(),
                    attempt: 1,
                },
            ),
            (
                "queue.complete",
                Reply::NotClaimer {
                    claimer: None,
                    attempt: Some(0),
                },
            ),
            (
                "queue.read",
                Reply::Child(Some(ChildView {
                    state: ChildState::Done,
                    claimer: Some("i".into()),
                    attempt: 1,
                    depth: 0,
                })),
            ),
            ("rate.acquire_slot", Reply::Paused { until_ms: 5 }),
            ("rate.release_slot", Reply::Unknown {}),
            ("rate.hit", Reply::Limited { retry_at_ms: 3 }),
            (
                "rate.read",
                Reply::RateState {
                    slots_in_use: 0,
                    paused_until_ms: None,
                },
            ),
        ];
        for (op, reply) in cases {
            let wire = serde_json::to_value(&reply).unwrap();
            assert_eq!(Reply::from_wire(op, &wire), Ok(reply), "{op}");
        }
    }

    #[test]
    fn a_malformed_reply_names_the_field_that_is_wrong() {
        let cases = [
            (
                "lease.read",
                json!({"lease": {"holder": "a", "epoch": "x", "expires_at_ms": 1, "live": false}}),
                "lease.read: `lease.epoch` must be a whole number (a JSON integer), got \"x\"",
            ),
            (
                "lease.take",
                json!({"granted": {"epoch": 1.5, "expires_at_ms": 1}}),
                "lease.take: `granted.epoch` must be a whole number (a JSON integer), got 1.5",
            ),
            (
                "lease.take",
                json!({"busy": {"holder": null, "epoch": 1, "expires_at_ms": 1}}),
                "lease.take: `busy.holder` must be a string, got null",
            ),
            (
                "lease.renew",
                json!({"renewed": {}}),
                "lease.renew: `renewed.expires_at_ms` must be a whole number (a JSON integer), but it is missing",
            ),
            (
                "lease.release",
                json!({"released": null}),
                "lease.release: `released` must be an object, got null",
            ),
            (
                "lease.take",
                json!({"kept": {}}),
                "lease.take: the outcome must be `granted` or `busy`, got `kept`",
            ),
            (
                "queue.read",
                json!({"child": {"state": "lost", "claimer": null, "attempt": 0, "depth": 0}}),
                "queue.read: `child.state` must be one of \"queued\", \"claimed\", \"done\", got \"lost\"",
            ),
            (
                "rate.read",
                json!({"slots_in_use": "2", "paused_until_ms": null}),
                "rate.read: `slots_in_use` must be a whole number (a JSON integer), got \"2\"",
            ),
            (
                "rate.acquire_slot",
                json!({"acquired": {"slot": ""}}),
                "rate.acquire_slot: `acquired.slot` must be a non-empty string, got \"\"",
            ),
            (
                "queue.claim",
                json!({"claimed": {}, "empty": {}}),
                "queue.claim: the ok value must have exactly one key",
            ),
        ];
        for (op, wire, want) in cases {
            let got = Reply::from_wire(op, &wire).unwrap_err();
            assert!(
                got.starts_with(want),
                "{op} {wire}:\n got {got}\nwant {want}"
            );
        }
    }
}
