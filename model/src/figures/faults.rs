//! The fault suite's figures: per workload (one per layout), what was sent,
//! how it ended, which faults played, and what the checkers judged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the fault suite measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultsFigures {
    /// The seed every workload and nemesis plan was drawn from.
    pub seed: u64,
    /// One entry per workload run, in the order run.
    pub workloads: Vec<WorkloadFigures>,
    /// Wall time of the suite, in seconds.
    pub seconds: f64,
}

/// One workload: a layout of stores, its instances and the faults played.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadFigures {
    /// The layout: `durable` (Redis queue and rate limits beside a durable
    /// lease store with its fencing set) or `coordination` (Redis leases,
    /// queue and rate limits).
    pub layout: String,
    /// Which store served each role (`lease`, `fenced`, `queue`, `rate`):
    /// the store under test or storeproof's reference.
    pub stores: BTreeMap<String, String>,
    /// Instances that ran side by side.
    pub instances: usize,
    /// Operations sent (invokes), drain included.
    pub operations: usize,
    /// Answered with a reply.
    pub ok: usize,
    /// Refused for certain (an error other than `unavailable`).
    pub refused: usize,
    /// Outcome unknown (`unavailable`, or no answer).
    pub unknown: usize,
    /// Faults that took effect (fired, healed, restarted), by name
    /// (`lose_reply_after_apply`, …); one-shot faults disarmed unfired are
    /// in `disarmed`, never here.
    pub faults: BTreeMap<String, usize>,
    /// One-shot faults disarmed unfired (no command came while armed), by
    /// name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub disarmed: BTreeMap<String, usize>,
    /// Per fault check the store under test was judged on here (its id),
    /// per fault name: how its faults met that check's operations. A check
    /// whose faults met none is `unknown`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub met: BTreeMap<String, BTreeMap<String, FaultMeeting>>,
    /// Children whose save was sent.
    pub children_saved: usize,
    /// Children the end state shows done (or their effect applied).
    pub children_done: usize,
    /// Trees whose lease history was judged for linearizability.
    pub trees_judged: usize,
    /// Wall time of the workload, drain and end read included, in seconds.
    pub seconds: f64,
}

/// How the faults of one kind met one fault check's operations of the store
/// under test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultMeeting {
    /// Faults that met at least one of the check's operations.
    pub met: usize,
    /// Faults that took effect (fired, healed, restarted) but met none.
    pub missed: usize,
    /// One-shot faults disarmed unfired: no command came while armed.
    pub disarmed: usize,
}
