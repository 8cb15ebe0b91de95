//! A conformance scenario as data: steps of time and calls, with the values
//! filled in from earlier answers. A scenario is a schedule: the runner plays
//! it, the sequential model judges it, and a failing one is its own
//! counterexample ([`crate::counterexample::ScenarioCounterexample`]).

use serde::{Deserialize, Serialize};

use crate::contract::{Call, Contract, Request};

/// Which epoch a lease request names: the one the store granted on the k-th
/// grant of the tree in this scenario (1-based), optionally plus a delta.
/// Stores choose their own epoch numbers, so scenarios never hard-code them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochRef {
    /// Which grant of the tree, counting from 1.
    pub grant: usize,
    /// Added to that grant's epoch (e.g. +1 for an epoch never granted).
    pub plus: i64,
}

/// A value filled in at run time from what the store answered earlier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Patch {
    /// Set the request's `epoch` from a grant of its tree.
    Epoch(EpochRef),
    /// Set the request's `epoch` from the store's answer to the take at
    /// scenario step `step` (+ `plus`): its grant's epoch, or, when it
    /// answered `busy` (at the expiry instant, a choice the contract allows),
    /// the live lease's epoch it named. Generated sequences name grants so:
    /// a grant the store legitimately did not make shifts no later one.
    EpochOf {
        /// The scenario step of the take.
        step: usize,
        /// Added to that epoch.
        plus: i64,
    },
    /// Set the request's `slot` to the k-th slot (1-based) acquired from its provider.
    Slot(usize),
    /// Set `until_ms` to the scenario's start time plus this offset.
    UntilFromStart(i64),
}

/// One step of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Move time to this many ms after the scenario's start: the server clock
    /// (managed servers) and every instance clock move together.
    At(i64),
    /// A valid request, judged by the model.
    Call {
        /// The instance that sends it, e.g. `a`.
        instance: String,
        /// The request; its expected reply comes from the model.
        request: Request,
        /// The instance clock's offset from server time.
        skew_ms: i64,
        /// A value filled in from earlier answers before it is sent.
        patch: Option<Patch>,
    },
    /// Bad input: must answer `bad_request` and leave the keyspace unchanged.
    Raw {
        /// The instance that sends it, e.g. `a`.
        instance: String,
        /// The bad call, sent as it is (wrong types, missing fields, empty ids).
        call: Call,
    },
}

impl Step {
    /// The contract a call step touches.
    pub fn contract(&self) -> Option<Contract> {
        match self {
            Step::Call { request, .. } => Some(request.contract()),
            Step::Raw { call, .. } => Contract::of_op(&call.op),
            Step::At(_) => None,
        }
    }

    /// The same call step with the instance clock `skew_ms` off server time.
    pub fn skewed(mut self, by_ms: i64) -> Step {
        if let Step::Call { skew_ms, .. } = &mut self {
            *skew_ms = by_ms;
        }
        self
    }
}
