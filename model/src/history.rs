//! What happened: a list of events (invoke, ok, fail, info, nemesis) with
//! instance, operation, server time and instance clock. Every suite produces
//! one; every checker and the report read one.
//!
//! The events are typed (an invoke carries the wire [`Call`], an ok the
//! [`Reply`], a fail or info the [`StoreError`], a nemesis event the fault
//! and its phase); their JSON keeps the flat shape the report reads: `index`,
//! `instance`, `kind`, `op`, `value`, `server_ms`, `clock_ms`, with `value`
//! the arguments, reply, error or [`NemesisNote`].
//!
//! A nemesis event is neither an invoke nor a completion: checkers that pair
//! an instance's invokes with its completions must skip it (it is recorded
//! under the nemesis's own instance name, never a store instance's).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::{Call, ErrorKind, Reply, StoreError};

/// The kind of an event, after Jepsen: `info` means the outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A request was sent; `value` holds its arguments.
    Invoke,
    /// The store answered a reply; `value` holds it.
    Ok,
    /// The store answered an error other than `unavailable`: a definite refusal.
    Fail,
    /// The outcome is unknown (`unavailable`): it may or may not have happened.
    Info,
    /// A fault began or ended; `value` holds a [`NemesisNote`]. Not an
    /// operation of the store: no invoke pairs with it.
    Nemesis,
}

/// Whether a nemesis event marks a fault's start or its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NemesisPhase {
    /// The fault is applied from here on.
    Start,
    /// The fault is over (fired, disarmed, healed, or failed to apply).
    End,
}

/// What a nemesis event says: which fault (its fields as JSON, so that any
/// nemesis can record its own fault type), the phase, and at the end how
/// it ended. This is the event's JSON `value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NemesisNote {
    /// Start or end.
    pub phase: NemesisPhase,
    /// The fault's parameters (e.g. `{"instance": 1, "for_ms": 50}`).
    pub fault: Value,
    /// At the end: how the fault ended, one line; `None` at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<String>,
}

impl EventKind {
    /// Its word in the report: `invoke`, `ok`, `fail`, `info` or `nemesis`.
    pub fn word(self) -> &'static str {
        match self {
            EventKind::Invoke => "invoke",
            EventKind::Ok => "ok",
            EventKind::Fail => "fail",
            EventKind::Info => "info",
            EventKind::Nemesis => "nemesis",
        }
    }
}

impl NemesisNote {
    /// The instance the fault targets, by name (`a`, `b`, …); `None` for a
    /// fault of the whole server.
    pub fn instance_name(&self) -> Option<&str> {
        self.fault.get("instance_name").and_then(Value::as_str)
    }
}

/// What an event says happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Happened {
    /// A request was sent, as it went on the wire.
    Invoke(Call),
    /// The store answered `op` with a reply.
    Ok {
        /// The operation's wire name, e.g. `lease.take`.
        op: String,
        /// The reply.
        reply: Reply,
    },
    /// The store refused `op` for certain (an error other than `unavailable`).
    Fail {
        /// The operation's wire name.
        op: String,
        /// The refusal.
        error: StoreError,
    },
    /// The outcome of `op` is unknown (`unavailable`).
    Info {
        /// The operation's wire name.
        op: String,
        /// The error that left it unknown.
        error: StoreError,
    },
    /// The nemesis began or ended the fault `op` (`nemesis.<fault>`).
    Nemesis {
        /// The fault's name as an op, e.g. `nemesis.partition`.
        op: String,
        /// Which fault, which phase, how it ended.
        note: NemesisNote,
    },
}

impl Happened {
    /// The completion of `op` with `outcome`: ok for a reply, info for
    /// `unavailable` (the outcome is unknown), fail for any other error.
    pub fn completion(op: &str, outcome: &Result<Reply, StoreError>) -> Self {
        let op = op.to_string();
        match outcome {
            Ok(reply) => Happened::Ok {
                op,
                reply: reply.clone(),
            },
            Err(e) if e.kind == ErrorKind::Unavailable => Happened::Info {
                op,
                error: e.clone(),
            },
            Err(e) => Happened::Fail {
                op,
                error: e.clone(),
            },
        }
    }

    /// Invoke, ok, fail or info.
    pub fn kind(&self) -> EventKind {
        match self {
            Happened::Invoke(_) => EventKind::Invoke,
            Happened::Ok { .. } => EventKind::Ok,
            Happened::Fail { .. } => EventKind::Fail,
            Happened::Info { .. } => EventKind::Info,
            Happened::Nemesis { .. } => EventKind::Nemesis,
        }
    }

    /// The operation's wire name.
    pub fn op(&self) -> &str {
        match self {
            Happened::Invoke(call) => &call.op,
            Happened::Ok { op, .. }
            | Happened::Fail { op, .. }
            | Happened::Info { op, .. }
            | Happened::Nemesis { op, .. } => op,
        }
    }

    /// A completion as the store's answer; `None` for an invoke or a
    /// nemesis event (neither is an answer of the store).
    pub fn outcome(&self) -> Option<Result<Reply, StoreError>> {
        match self {
            Happened::Invoke(_) | Happened::Nemesis { .. } => None,
            Happened::Ok { reply, .. } => Some(Ok(reply.clone())),
            Happened::Fail { error, .. } | Happened::Info { error, .. } => Some(Err(error.clone())),
        }
    }
}

/// One event of a history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "FlatEvent", try_from = "FlatEvent")]
pub struct Event {
    /// Its position in the history, from 0.
    pub index: usize,
    /// The instance that sent the request.
    pub instance: String,
    /// What happened.
    pub what: Happened,
    /// Server time when known (managed servers).
    pub server_ms: Option<i64>,
    /// The instance clock sent with the request.
    pub clock_ms: i64,
}

impl Event {
    /// Invoke, ok, fail or info.
    pub fn kind(&self) -> EventKind {
        self.what.kind()
    }

    /// The operation's wire name, e.g. `lease.take`.
    pub fn op(&self) -> &str {
        self.what.op()
    }
}

/// An event as JSON has it: the typed payload flattened to `op` and `value`.
#[derive(Serialize, Deserialize)]
struct FlatEvent {
    index: usize,
    instance: String,
    kind: EventKind,
    op: String,
    value: Value,
    server_ms: Option<i64>,
    clock_ms: i64,
}

impl Happened {
    /// Its payload as an event's JSON `value` has it: the call's arguments,
    /// the reply, the error, or the nemesis note.
    pub fn value(&self) -> Value {
        match self {
            Happened::Invoke(call) => call.args.clone(),
            Happened::Ok { reply, .. } => serde_json::to_value(reply).unwrap_or(Value::Null),
            Happened::Fail { error, .. } | Happened::Info { error, .. } => {
                serde_json::to_value(error).unwrap_or(Value::Null)
            }
            Happened::Nemesis { note, .. } => serde_json::to_value(note).unwrap_or(Value::Null),
        }
    }
}

impl From<Event> for FlatEvent {
    fn from(e: Event) -> Self {
        FlatEvent {
            kind: e.kind(),
            op: e.op().to_string(),
            value: e.what.value(),
            index: e.index,
            instance: e.instance,
            server_ms: e.server_ms,
            clock_ms: e.clock_ms,
        }
    }
}

impl TryFrom<FlatEvent> for Event {
    type Error = String;

    fn try_from(f: FlatEvent) -> Result<Self, String> {
        let bad = |what: &str, e: serde_json::Error| {
            format!("event {}: the value is not {what}: {e}", f.index)
        };
        let what = match f.kind {
            EventKind::Invoke => Happened::Invoke(Call {
                op: f.op.clone(),
                args: f.value.clone(),
            }),
            EventKind::Ok => Happened::Ok {
                op: f.op.clone(),
                reply: serde_json::from_value(f.value.clone()).map_err(|e| bad("a reply", e))?,
            },
            EventKind::Fail => Happened::Fail {
                op: f.op.clone(),
                error: serde_json::from_value(f.value.clone()).map_err(|e| bad("an error", e))?,
            },
            EventKind::Info => Happened::Info {
                op: f.op.clone(),
                error: serde_json::from_value(f.value.clone()).map_err(|e| bad("an error", e))?,
            },
            EventKind::Nemesis => Happened::Nemesis {
                op: f.op.clone(),
                note: serde_json::from_value(f.value.clone())
                    .map_err(|e| bad("a nemesis note", e))?,
            },
        };
        Ok(Event {
            index: f.index,
            instance: f.instance,
            what,
            server_ms: f.server_ms,
            clock_ms: f.clock_ms,
        })
    }
}

/// An append-only history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// The events in the order they happened.
    pub events: Vec<Event>,
}

impl History {
    /// Records an invocation.
    pub fn invoke(&mut self, instance: &str, call: &Call, server_ms: Option<i64>, clock_ms: i64) {
        self.push(
            instance,
            Happened::Invoke(call.clone()),
            server_ms,
            clock_ms,
        );
    }

    /// Records a completion: ok for a reply, fail for a definite refusal, info
    /// for `unavailable` (the outcome is unknown).
    pub fn complete(
        &mut self,
        instance: &str,
        op: &str,
        outcome: &Result<Reply, StoreError>,
        server_ms: Option<i64>,
        clock_ms: i64,
    ) {
        self.push(
            instance,
            Happened::completion(op, outcome),
            server_ms,
            clock_ms,
        );
    }

    /// Records a nemesis event: the fault `op` (`nemesis.<fault>`) started
    /// or ended, under instance `nemesis` (a name no store instance has).
    pub fn nemesis(
        &mut self,
        nemesis: &str,
        op: &str,
        note: NemesisNote,
        server_ms: Option<i64>,
        clock_ms: i64,
    ) {
        self.push(
            nemesis,
            Happened::Nemesis {
                op: op.to_string(),
                note,
            },
            server_ms,
            clock_ms,
        );
    }

    fn push(&mut self, instance: &str, what: Happened, server_ms: Option<i64>, clock_ms: i64) {
        self.events.push(Event {
            index: self.events.len(),
            instance: instance.to_string(),
            what,
            server_ms,
            clock_ms,
        });
    }
}

/// What an event is to the pairing of operations ([`pair_operations`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An instance sent a request: an operation starts.
    Invoke,
    /// An instance's answer came back (ok, fail, info): it ends the
    /// instance's operation in flight, if any.
    Completion,
    /// Anything else (a fault's start or end, a mark): never part of an
    /// operation.
    Other,
}

impl Role {
    /// The role of an event of `kind`.
    pub fn of(kind: EventKind) -> Role {
        match kind {
            EventKind::Invoke => Role::Invoke,
            EventKind::Ok | EventKind::Fail | EventKind::Info => Role::Completion,
            EventKind::Nemesis => Role::Other,
        }
    }
}

/// One operation as positions in a list of events: its invoke, and the
/// completion paired with it (`None`: it never answered, as far as the list
/// knows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pairing {
    /// The position of the invoke.
    pub invoke: usize,
    /// The position of its completion.
    pub completion: Option<usize>,
}

/// The one pairing of invokes with completions every checker and the report
/// read: each invoke is paired with the next completion of the same
/// instance; a later invoke of that instance before it ends the earlier
/// operation unanswered (an instance has one operation in flight; what the
/// earlier one did is unknown); a completion with no operation in flight,
/// and every [`Role::Other`] event, pairs with nothing. Operations come in
/// invoke order. `role` says what each event is and which instance it is
/// of; it lets the same rule serve typed events and the report's JSON.
pub fn pair_operations<T>(events: &[T], role: impl Fn(&T) -> (Role, &str)) -> Vec<Pairing> {
    let mut ops: Vec<Pairing> = Vec::new();
    let mut in_flight: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (at, e) in events.iter().enumerate() {
        match role(e) {
            (Role::Invoke, instance) => {
                in_flight.insert(instance, ops.len());
                ops.push(Pairing {
                    invoke: at,
                    completion: None,
                });
            }
            (Role::Completion, instance) => {
                if let Some(i) = in_flight.remove(instance) {
                    ops[i].completion = Some(at);
                }
            }
            (Role::Other, _) => {}
        }
    }
    ops
}

/// One operation of a [`History`]: an invoke, its call, and the completion
/// paired with it by [`pair_operations`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Operation<'a> {
    /// The invoke event.
    pub invoke: &'a Event,
    /// The request as it went on the wire.
    pub call: &'a Call,
    /// The completion event; `None` when it never answered.
    pub completion: Option<&'a Event>,
}

impl Operation<'_> {
    /// The reply, when the store answered one (an ok completion).
    pub fn reply(&self) -> Option<&Reply> {
        match self.completion.map(|c| &c.what) {
            Some(Happened::Ok { reply, .. }) => Some(reply),
            _ => None,
        }
    }
}

impl History {
    /// Every operation, in invoke order, each invoke paired with its
    /// instance's next completion ([`pair_operations`]: nemesis events are
    /// never part of one).
    pub fn operations(&self) -> Vec<Operation<'_>> {
        pair_operations(&self.events, |e| (Role::of(e.kind()), e.instance.as_str()))
            .into_iter()
            .filter_map(|p| {
                let invoke = &self.events[p.invoke];
                let Happened::Invoke(call) = &invoke.what else {
                    return None;
                };
                Some(Operation {
                    invoke,
                    call,
                    completion: p.completion.map(|c| &self.events[c]),
                })
            })
            .collect()
    }
}

/// Instance `i`'s name, as holders, schedules and counterexamples write it:
/// `a`, `b`, `c`, `d` (any further one is `x`).
pub fn instance_name(i: usize) -> &'static str {
    ["a", "b", "c", "d"].get(i).copied().unwrap_or("x")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_pair_each_invoke_with_its_instance_s_next_completion() {
        let call = |op: &str| Call {
            op: op.into(),
            args: serde_json::json!({"tree": "t"}),
        };
        let granted = Ok(Reply::Granted {
            epoch: 1,
            expires_at_ms: 5,
        });
        let mut h = History::default();
        h.invoke("a", &call("lease.take"), None, 0); // 0: answered at 3
        h.invoke("b", &call("lease.take"), None, 0); // 1: superseded by 4
        h.nemesis(
            "nemesis",
            "nemesis.pause",
            NemesisNote {
                phase: NemesisPhase::Start,
                fault: serde_json::json!({}),
                ending: None,
            },
            None,
            0,
        ); // 2: no operation's
        h.complete("a", "lease.take", &granted, None, 0); // 3
        h.invoke("b", &call("lease.read"), None, 0); // 4: answered at 6
        h.complete("c", "lease.take", &granted, None, 0); // 5: nobody's
        h.complete("b", "lease.read", &Ok(Reply::Lease(None)), None, 0); // 6
        h.invoke("a", &call("lease.release"), None, 0); // 7: open
        let got: Vec<(usize, Option<usize>, &str)> = h
            .operations()
            .iter()
            .map(|o| {
                (
                    o.invoke.index,
                    o.completion.map(|c| c.index),
                    o.call.op.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Some(3), "lease.take"),
                (1, None, "lease.take"),
                (4, Some(6), "lease.read"),
                (7, None, "lease.release"),
            ]
        );
    }
    use serde_json::json;

    #[test]
    fn events_keep_the_flat_json_shape_and_read_back_typed() {
        let mut h = History::default();
        let call = Call {
            op: "lease.take".into(),
            args: json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
        };
        h.invoke("a", &call, Some(5), 7);
        h.complete(
            "a",
            "lease.take",
            &Ok(Reply::Granted {
                epoch: 1,
                expires_at_ms: 1005,
            }),
            Some(5),
            7,
        );
        h.complete(
            "a",
            "lease.take",
            &Err(StoreError::new(ErrorKind::Unavailable, "gone")),
            None,
            7,
        );
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["events"][0]["kind"], "invoke");
        assert_eq!(v["events"][0]["value"]["tree"], "t");
        assert_eq!(v["events"][1]["kind"], "ok");
        assert_eq!(v["events"][1]["value"]["granted"]["epoch"], 1);
        assert_eq!(v["events"][2]["kind"], "info");
        assert_eq!(v["events"][2]["value"]["kind"], "unavailable");
        let back: History = serde_json::from_value(v).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn a_nemesis_event_is_its_own_kind_and_reads_back() {
        let mut h = History::default();
        let start = NemesisNote {
            phase: NemesisPhase::Start,
            fault: json!({"instance": 1, "for_ms": 50}),
            ending: None,
        };
        h.nemesis("nemesis", "nemesis.partition", start, Some(3), 0);
        let end = NemesisNote {
            phase: NemesisPhase::End,
            fault: json!({"instance": 1, "for_ms": 50}),
            ending: Some("healed".into()),
        };
        h.nemesis("nemesis", "nemesis.partition", end, Some(53), 50);
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["events"][0]["kind"], "nemesis");
        assert_eq!(v["events"][0]["op"], "nemesis.partition");
        assert_eq!(v["events"][0]["value"]["phase"], "start");
        assert_eq!(v["events"][0]["value"]["fault"]["for_ms"], 50);
        assert!(v["events"][0]["value"].get("ending").is_none());
        assert_eq!(v["events"][1]["value"]["phase"], "end");
        assert_eq!(v["events"][1]["value"]["ending"], "healed");
        assert_eq!(h.events[0].kind(), EventKind::Nemesis);
        assert_eq!(
            h.events[0].what.outcome(),
            None,
            "not an answer of the store"
        );
        let back: History = serde_json::from_value(v).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn an_ok_event_whose_value_is_no_reply_does_not_read() {
        let v = json!({"events": [{"index": 0, "instance": "a", "kind": "ok", "op": "lease.take",
            "value": {"nonsense": 1}, "server_ms": null, "clock_ms": 0}]});
        let err = serde_json::from_value::<History>(v)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a reply"), "{err}");
    }
}
