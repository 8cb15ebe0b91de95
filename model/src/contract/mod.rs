//! The contracts as code (docs/PROTOCOL.md §4): operations, replies, errors,
//! and a pure sequential model of each (the fencing set's beside the leases it
//! reads) that checkers and tests can run.
//!
//! Everything here is pure: no I/O, no clocks. Time comes in as arguments.

mod error;
mod lease_model;
mod queue_model;
mod rate_model;
mod reply;
mod request;

pub use error::{ErrorKind, StoreError};
pub use lease_model::{CallRecordModel, LeaseModel, LeaseRecord};
pub use queue_model::{ChildRecord, QueueModel};
pub use rate_model::{ProviderRecord, RateModel};
pub use reply::{ChildState, ChildView, LeaseView, Reply};
pub use request::{Call, Request, MAX_DURATION_MS, MAX_LIMIT};

use serde::{Deserialize, Serialize};

/// One of the contracts a store may offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Contract {
    /// The execution lease store (docs/PROTOCOL.md §4.2), on server time.
    Lease,
    /// The child execution queue (docs/PROTOCOL.md §4.3), on server time.
    Queue,
    /// Provider rate limits (docs/PROTOCOL.md §4.4), on the instance clock.
    Rate,
    /// The fencing set of a durable store (docs/PROTOCOL.md §4.5), beside its
    /// lease store and on the same server time: fenced effects and outbound
    /// calls begun at most once (`effect.*`, `call.*`).
    Fenced,
}

impl Contract {
    /// The coordination set (docs/CONTRACTS.md §1.5): the contracts a Redis
    /// store offers.
    pub const COORDINATION: [Contract; 3] = [Contract::Lease, Contract::Queue, Contract::Rate];

    /// Every contract, in report order.
    pub const ALL: [Contract; 4] = [
        Contract::Lease,
        Contract::Queue,
        Contract::Rate,
        Contract::Fenced,
    ];

    /// The contract an operation's wire name belongs to (`lease.take` → lease).
    pub fn of_op(op: &str) -> Option<Contract> {
        match op.split('.').next()? {
            "lease" => Some(Contract::Lease),
            "queue" => Some(Contract::Queue),
            "rate" => Some(Contract::Rate),
            "effect" | "call" => Some(Contract::Fenced),
            _ => None,
        }
    }

    /// The wire name: `lease`, `queue`, `rate` or `fenced`.
    pub fn name(self) -> &'static str {
        match self {
            Contract::Lease => "lease",
            Contract::Queue => "queue",
            Contract::Rate => "rate",
            Contract::Fenced => "fenced",
        }
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A judge's word on one reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// The contract allows this reply.
    Agrees,
    /// A safe deviation (a SHOULD): e.g. `busy` at the exact expiry instant.
    Conservative(String),
    /// The contract forbids this reply (a MUST).
    Violates(String),
}

/// The three sequential models side by side: lease (with the fencing set,
/// which reads its records) and queue on server time, rate limits on the
/// instance clock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContractModel {
    /// The execution leases, on server time.
    pub lease: LeaseModel,
    /// The child execution queue, on server time.
    pub queue: QueueModel,
    /// The provider rate limits, on the instance clock.
    pub rate: RateModel,
}

impl ContractModel {
    /// The time the contract of `req` decides on: server time for lease and
    /// queue, the instance clock for rate limits.
    pub fn now_for(req: &Request, server_now_ms: i64, clock_ms: i64) -> i64 {
        match req.contract() {
            Contract::Rate => clock_ms,
            Contract::Lease | Contract::Queue | Contract::Fenced => server_now_ms,
        }
    }

    /// The canonical reply to `req` and its effect.
    pub fn apply(&mut self, req: &Request, server_now_ms: i64, clock_ms: i64) -> Reply {
        let now = Self::now_for(req, server_now_ms, clock_ms);
        let reply = match req.contract() {
            // The fencing set reads the lease records: one model holds both.
            Contract::Lease | Contract::Fenced => self.lease.apply(req, now),
            Contract::Queue => self.queue.apply(req, now),
            Contract::Rate => self.rate.apply(req, now),
        };
        // Every request belongs to exactly one model, so this never falls through.
        reply.unwrap_or(Reply::Unknown {})
    }

    /// Judges a store's answer to a valid request, by the model of the
    /// request's contract, at server time or at the instance clock as that
    /// contract decides ([`now_for`](Self::now_for)). An allowed reply moves
    /// the model along it (a reply the contract leaves to the store, such as
    /// a grant's epoch or a slot's id, is adopted); a conservative or a
    /// violating one leaves the model as it was.
    ///
    /// Every error answer is a violation here, `unavailable` and
    /// `unsupported` included: the model knows only replies. So a caller
    /// settles the errors that are not the store's fault before it asks: an
    /// `unsupported` skips the checks about its operation; an `unavailable`
    /// (the outcome unknown) is counted both ways by the fault suites, and in
    /// a conformance check is passed here to blame the store only once
    /// storeproof's own server answered a PING sent straight to it (else the
    /// check is unknown: the harness's trouble).
    pub fn judge(
        &mut self,
        req: &Request,
        server_now_ms: i64,
        clock_ms: i64,
        observed: &Result<Reply, StoreError>,
    ) -> Judgement {
        let now = Self::now_for(req, server_now_ms, clock_ms);
        let reply = match observed {
            Ok(r) => r,
            Err(e) => {
                let mut next = self.clone();
                let want = next.apply(req, server_now_ms, clock_ms);
                return Judgement::Violates(format!(
                    "expected {}, got the error {e}",
                    serde_json::to_string(&want).unwrap_or_default()
                ));
            }
        };
        match req.contract() {
            Contract::Lease | Contract::Fenced => self.lease.judge(req, now, reply),
            Contract::Queue => self.queue.judge(req, now, reply),
            Contract::Rate => self.rate.judge(req, now, reply),
        }
    }
}
