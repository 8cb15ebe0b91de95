//! What happened: a list of events (invoke, ok, fail, info) with instance,
//! operation, server time and instance clock. Every suite produces one; every
//! checker and the report read one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::{Call, Reply, StoreError};

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
}

/// One event of a history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Its position in the history, from 0.
    pub index: usize,
    /// The instance that sent the request.
    pub instance: String,
    /// Invoke, ok, fail or info.
    pub kind: EventKind,
    /// The operation's wire name, e.g. `lease.take`.
    pub op: String,
    /// The arguments for an invoke; the reply or error otherwise.
    pub value: Value,
    /// Server time when known (managed servers).
    pub server_ms: Option<i64>,
    /// The instance clock sent with the request.
    pub clock_ms: i64,
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
            EventKind::Invoke,
            &call.op,
            call.args.clone(),
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
        let (kind, value) = match outcome {
            Ok(r) => (
                EventKind::Ok,
                serde_json::to_value(r).unwrap_or(Value::Null),
            ),
            Err(e) if e.kind == crate::contract::ErrorKind::Unavailable => (
                EventKind::Info,
                serde_json::to_value(e).unwrap_or(Value::Null),
            ),
            Err(e) => (
                EventKind::Fail,
                serde_json::to_value(e).unwrap_or(Value::Null),
            ),
        };
        self.push(instance, kind, op, value, server_ms, clock_ms);
    }

    fn push(
        &mut self,
        instance: &str,
        kind: EventKind,
        op: &str,
        value: Value,
        server_ms: Option<i64>,
        clock_ms: i64,
    ) {
        self.events.push(Event {
            index: self.events.len(),
            instance: instance.to_string(),
            kind,
            op: op.to_string(),
            value,
            server_ms,
            clock_ms,
        });
    }
}
