//! What a run reads back of a store's state, as data: a logical dump of
//! Redis keys under a prefix, and a durable store's own account of its
//! effects, calls and lease changes (the SQLite fencing set's outcomes and
//! log, `builtin:sqlite`). Pure data, so checkers judge it without a server
//! or a database.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::Reply;

/// A logical dump: key → {type, value, pttl}. Sorted, so two dumps of the same
/// logical content compare equal whatever the encoding.
pub type Snapshot = BTreeMap<String, Value>;

/// Why an effect, a call's begin or its finish was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FenceReason {
    /// The tree was never leased.
    NoLease,
    /// A newer epoch was granted: the caller is a zombie.
    Superseded,
    /// The lease at the caller's epoch is someone else's, or the caller named
    /// an epoch never granted.
    NotHolder,
    /// The caller released its lease.
    Released,
    /// The caller's lease expired on server time (nobody took it over yet).
    Expired,
}

/// What `effect.apply` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectOutcome {
    /// The caller held the live lease at its epoch; the effect is recorded.
    Applied,
    /// The effect id was already applied for this tree (by anyone); nothing
    /// changed. Checked before the fence: a retry after a lost reply learns
    /// its effect landed.
    Duplicate,
    /// The caller did not hold the live lease at its epoch; nothing changed.
    Fenced {
        /// The tree's current epoch (0 when it was never leased).
        epoch: i64,
        /// Why the caller does not hold the lease.
        reason: FenceReason,
    },
}

/// What `call.begin` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// The caller held the live lease; the call is recorded as begun and may
    /// go out. No other begin of this id will ever answer `Begun`.
    Begun,
    /// The call id was already begun (by anyone); it must not go out again.
    Duplicate {
        /// The call as recorded.
        record: CallRecord,
    },
    /// The caller did not hold the live lease at its epoch; nothing changed.
    Fenced {
        /// The tree's current epoch (0 when it was never leased).
        epoch: i64,
        /// Why the caller does not hold the lease.
        reason: FenceReason,
    },
}

/// What `call.finish` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishOutcome {
    /// The response is recorded.
    Finished,
    /// The call was already finished; its first response stands.
    AlreadyFinished {
        /// The response recorded first.
        response: String,
    },
    /// No call of that id was begun; nothing changed.
    NotBegun,
    /// The holder and epoch that began the call no longer hold the live
    /// lease; the response is not recorded (the call stays begun, in doubt).
    Fenced {
        /// The tree's current epoch.
        epoch: i64,
        /// Why the call's holder does not hold the lease.
        reason: FenceReason,
    },
}

/// An outbound call as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The call id.
    pub call: String,
    /// The tree whose lease fenced it.
    pub tree: String,
    /// Who began it.
    pub holder: String,
    /// The epoch it was begun under.
    pub epoch: i64,
    /// Server time of the begin, ms.
    pub begun_at_ms: i64,
    /// The response, once finished.
    pub response: Option<String>,
    /// Server time of the finish, ms.
    pub finished_at_ms: Option<i64>,
}

/// An applied effect as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectRecord {
    /// The effect id (unique per tree).
    pub effect: String,
    /// Who applied it.
    pub holder: String,
    /// The epoch it was applied under.
    pub epoch: i64,
    /// Its payload.
    pub payload: String,
    /// Server time of the apply, ms.
    pub applied_at_ms: i64,
}

/// What a lease log entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseEvent {
    /// A take of a tree never leased or released.
    Grant,
    /// A take of a tree whose lease expired unreleased: a newer epoch
    /// supersedes a holder that never let go.
    Takeover,
    /// A renew that succeeded.
    Renew,
    /// A release that succeeded.
    Release,
}

impl LeaseEvent {
    /// The name stored in the log table.
    pub fn name(self) -> &'static str {
        match self {
            LeaseEvent::Grant => "grant",
            LeaseEvent::Takeover => "takeover",
            LeaseEvent::Renew => "renew",
            LeaseEvent::Release => "release",
        }
    }

    /// The event stored under `name` in the log table, if any.
    pub fn from_name(name: &str) -> Option<LeaseEvent> {
        Some(match name {
            "grant" => LeaseEvent::Grant,
            "takeover" => LeaseEvent::Takeover,
            "renew" => LeaseEvent::Renew,
            "release" => LeaseEvent::Release,
            _ => return None,
        })
    }
}

/// One entry of the lease log, appended in the transaction that changed the
/// lease, so the log's order is the order of the changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Position in the file's log; grows with every entry.
    pub seq: i64,
    /// The tree.
    pub tree: String,
    /// What happened.
    pub event: LeaseEvent,
    /// The holder granted, renewed or releasing.
    pub holder: String,
    /// The epoch granted, renewed or released.
    pub epoch: i64,
    /// Server time of the change, ms.
    pub at_ms: i64,
    /// The lease's expiry after the change, ms.
    pub expires_at_ms: i64,
    /// For a takeover: the holder superseded.
    pub previous_holder: Option<String>,
    /// For a takeover: the epoch superseded.
    pub previous_epoch: Option<i64>,
}

/// An applied effect with its place in the file's one sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableEffect {
    /// Position in the sequence shared with the lease log ([`LogEntry::seq`]):
    /// the effect was committed after every entry with a smaller number and
    /// before every entry with a larger one.
    pub seq: i64,
    /// The tree it was applied under.
    pub tree: String,
    /// The effect id.
    pub effect: String,
    /// Who applied it.
    pub holder: String,
    /// The epoch it was applied with.
    pub epoch: i64,
}

/// What a durable store shows at the end of a run, read from the store's
/// own file (not over the wire): every effect and every lease log entry of
/// one namespace, numbered in one sequence, so the order in which effects
/// and grants were committed is the store's own account, whatever the
/// timing of the calls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableState {
    /// The applied effects, in sequence order.
    pub effects: Vec<DurableEffect>,
    /// The lease log of every tree, in sequence order.
    pub log: Vec<LogEntry>,
}

impl EffectOutcome {
    /// The wire reply (`applied`, `duplicate`, `fenced {epoch}`); the fence's
    /// reason stays with the typed outcome.
    pub fn into_reply(self) -> Reply {
        match self {
            EffectOutcome::Applied => Reply::Applied {},
            EffectOutcome::Duplicate => Reply::Duplicate {},
            EffectOutcome::Fenced { epoch, .. } => Reply::Fenced { epoch },
        }
    }
}

impl CallOutcome {
    /// The wire reply (`begun`, `duplicate`, `fenced {epoch}`).
    pub fn into_reply(self) -> Reply {
        match self {
            CallOutcome::Begun => Reply::Begun {},
            CallOutcome::Duplicate { .. } => Reply::Duplicate {},
            CallOutcome::Fenced { epoch, .. } => Reply::Fenced { epoch },
        }
    }
}

impl FinishOutcome {
    /// The wire reply (`finished`, `already_finished {response}`,
    /// `not_begun`, `fenced {epoch}`).
    pub fn into_reply(self) -> Reply {
        match self {
            FinishOutcome::Finished => Reply::Finished {},
            FinishOutcome::AlreadyFinished { response } => Reply::AlreadyFinished { response },
            FinishOutcome::NotBegun => Reply::NotBegun {},
            FinishOutcome::Fenced { epoch, .. } => Reply::Fenced { epoch },
        }
    }
}
