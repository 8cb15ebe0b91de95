//! What a conformance scenario's run recorded besides the store's replies:
//! the history with the server observations around it, enough for the judge
//! (`conformance::judge`) to decide again without a server.

use serde::{Deserialize, Serialize};

use crate::contract::StoreError;
use crate::observed::{DurableState, Snapshot};
use crate::{History, Level};

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
    /// The same keys and values as the read before the call (kept short:
    /// a refused request usually changes nothing).
    Unchanged,
}

/// The durable state of a store that keeps its state outside Redis (its
/// effects and lease log, read from its own storage, never over the wire)
/// before and after a bad input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DurableRead {
    /// The same before and after.
    Unchanged,
    /// Different after the call: the refused request changed it.
    Changed,
    /// The store reports no durable state (an adapter): what the refused
    /// request left is judged by the scenario's reads back alone.
    NotReported,
    /// A read failed (storeproof's trouble, not the store's).
    Failed(String),
}

impl DurableRead {
    /// Compares two reads of the store's durable state.
    pub fn of(
        before: Result<Option<DurableState>, StoreError>,
        after: Result<Option<DurableState>, StoreError>,
    ) -> DurableRead {
        match (before, after) {
            (Err(e), _) | (_, Err(e)) => DurableRead::Failed(e.message),
            (Ok(Some(b)), Ok(Some(a))) if a == b => DurableRead::Unchanged,
            (Ok(Some(_)), Ok(Some(_))) => DurableRead::Changed,
            _ => DurableRead::NotReported,
        }
    }
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
    /// The durable state of a store outside Redis around the bad input of
    /// `step` ([`DurableRead`]).
    DurableState {
        /// The scenario step.
        step: usize,
        /// What the comparison found.
        read: DurableRead,
    },
    /// storeproof's own `PING`, sent straight to the server (not through the
    /// store) after the store answered `unavailable` at `step` or could not
    /// connect there: `error` is `None` when the server answered.
    ServerPing {
        /// The scenario step.
        step: usize,
        /// Why the server did not answer; `None`: it answered.
        #[serde(default)]
        error: Option<String>,
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
    /// The scenario step it was seen at.
    pub fn step(&self) -> usize {
        match self {
            Observation::ServerTime { step, .. }
            | Observation::Keyspace { step, .. }
            | Observation::DurableState { step, .. }
            | Observation::ServerPing { step, .. }
            | Observation::ConnectFailed { step, .. } => *step,
        }
    }
}
