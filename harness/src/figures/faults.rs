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
    /// Faults applied, by name (`lose_reply_after_apply`, …).
    pub faults: BTreeMap<String, usize>,
    /// Children whose save was sent.
    pub children_saved: usize,
    /// Children the end state shows done (or their effect applied).
    pub children_done: usize,
    /// Trees whose lease history was judged for linearizability.
    pub trees_judged: usize,
    /// Wall time of the workload, drain and end read included, in seconds.
    pub seconds: f64,
}
