//! Who plays each role in a workload, what a workload leaves for the
//! checkers, and which operations each check is about.

use std::collections::BTreeMap;

use harness::contract::{Contract, ErrorKind, Request};
use harness::figures::WorkloadFigures;
use harness::{Happened, History, Subject};
use serde::{Deserialize, Serialize};

use crate::evidence::Boundary;
use crate::fencing::DurableEnd;
use crate::nemesis::Plan;
use crate::workload::{EndState, LayoutKind, WorkloadOptions};

use super::checks::WorkloadCheck;

/// Who plays a role in a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Player {
    /// The store under test.
    Subject,
    /// storeproof's built-in Redis stores.
    ReferenceRedis,
    /// storeproof's SQLite fencing set.
    ReferenceSqlite,
}

impl Player {
    pub(super) fn name(self) -> &'static str {
        match self {
            Player::Subject => "the store under test",
            Player::ReferenceRedis => "storeproof's built-in Redis stores",
            Player::ReferenceSqlite => "storeproof's SQLite fencing set",
        }
    }
}

/// The players of one layout's roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// Leases (with the fencing set in the durable layout).
    pub lease: Player,
    /// The queue.
    pub queue: Player,
    /// The rate limits.
    pub rate: Player,
}

impl Roles {
    pub(super) fn of(layout: LayoutKind, subject: &Subject<'_>) -> Roles {
        let redis = subject.factory.keeps_state_in_redis();
        let on_redis = |c: Contract| {
            if redis && subject.claims(c) {
                Player::Subject
            } else {
                Player::ReferenceRedis
            }
        };
        Roles {
            lease: match layout {
                LayoutKind::Durable if subject.claims(Contract::Fenced) => Player::Subject,
                LayoutKind::Durable => Player::ReferenceSqlite,
                LayoutKind::Coordination => on_redis(Contract::Lease),
            },
            queue: on_redis(Contract::Queue),
            rate: on_redis(Contract::Rate),
        }
    }

    pub(super) fn figures(&self) -> BTreeMap<String, String> {
        [
            ("lease", self.lease),
            ("queue", self.queue),
            ("rate", self.rate),
        ]
        .into_iter()
        .map(|(role, p)| (role.to_string(), p.name().to_string()))
        .collect()
    }
}

/// The layouts a subject is run in: a store that keeps its state in Redis
/// in both; a durable store only beside the Redis queue and rate limits.
pub(super) fn layouts(subject: &Subject<'_>) -> Vec<LayoutKind> {
    if subject.factory.keeps_state_in_redis() {
        vec![LayoutKind::Coordination, LayoutKind::Durable]
    } else {
        vec![LayoutKind::Durable]
    }
}

/// What one workload left for the checkers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadRun {
    /// Its options (seed included).
    pub options: WorkloadOptions,
    /// Who played each role.
    pub roles: Roles,
    /// The plans the nemeses played (Redis gates; the call boundary of a
    /// store without a Redis wire).
    pub plans: Vec<Plan>,
    /// Why a nemesis stopped early, if one did (the harness's trouble, not
    /// the store's: the checks are then unknown).
    pub nemesis_trouble: Option<String>,
    /// The history, nemesis events included.
    pub history: History,
    /// What the drain and end read found.
    pub end: EndState,
    /// The durable end state, when the lease store keeps one.
    pub durable: DurableEnd,
    /// The lease store runs in-process, without a Redis wire: the gate's
    /// faults never meet its operations, the call boundary's do.
    #[serde(default)]
    pub lease_off_wire: bool,
    /// Once the faults healed, whether storeproof's own server answered
    /// `PING` directly and through every instance's gate (`None`), or why
    /// not: a store that does not answer again is blamed only when it did.
    #[serde(default)]
    pub route_trouble: Option<String>,
    /// Its figures.
    pub figures: WorkloadFigures,
}

/// The operations a fault check is about (its faults must meet one).
pub(super) fn about(check: WorkloadCheck) -> fn(&Request) -> bool {
    match check {
        WorkloadCheck::Linearizable => |r| {
            matches!(
                r,
                Request::LeaseTake { .. }
                    | Request::LeaseRenew { .. }
                    | Request::LeaseRelease { .. }
                    | Request::LeaseRead { .. }
            )
        },
        WorkloadCheck::Fencing => lease_side,
        WorkloadCheck::ChildrenOnce => |r| r.op().starts_with("queue."),
        WorkloadCheck::RateBounds => |r| r.op().starts_with("rate."),
    }
}

/// Served by the lease store (with its fencing set).
pub(super) fn lease_side(r: &Request) -> bool {
    let op = r.op();
    op.starts_with("lease.") || op.starts_with("effect.") || op.starts_with("call.")
}

/// Whether `r`'s commands pass `at`: every store talks through its
/// instance's gate but an in-process lease store, which only the call
/// boundary's faults reach.
pub(super) fn behind(lease_off_wire: bool) -> impl Fn(&Request, Boundary) -> bool {
    move |r, at| match at {
        Boundary::Gate => !(lease_off_wire && lease_side(r)),
        Boundary::Call => lease_off_wire && lease_side(r),
    }
}

/// Who played the role `check` judges in `run`, and whether the check is
/// judged in its layout at all (fencing: the durable layout only).
pub(super) fn judged_here(check: WorkloadCheck, run_roles: &Roles, layout: LayoutKind) -> bool {
    let played = match check {
        WorkloadCheck::Linearizable | WorkloadCheck::Fencing => run_roles.lease,
        WorkloadCheck::ChildrenOnce => run_roles.queue,
        WorkloadCheck::RateBounds => run_roles.rate,
    };
    played == Player::Subject && (check != WorkloadCheck::Fencing || layout == LayoutKind::Durable)
}

/// Operations a store may decline (`unsupported`) without leaving the other
/// rules of its check short: reads, and the pause (its rule then judges
/// nothing, which the reason says).
pub(super) const DECLINABLE: [&str; 4] = ["lease.read", "queue.read", "rate.read", "rate.pause"];

/// The operations `about` accepts that the store declined (`unsupported`),
/// each op once with the store's first message; the drain's included (it
/// is the same store).
pub(super) fn declined(history: &History, about: fn(&Request) -> bool) -> Vec<(String, String)> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for o in history.operations() {
        if !Request::parse(o.call).is_ok_and(|r| about(&r)) {
            continue;
        }
        if let Some(Happened::Fail { op, error }) = o.completion.map(|c| &c.what) {
            if error.kind == ErrorKind::Unsupported {
                out.entry(op.clone())
                    .or_insert_with(|| error.message.clone());
            }
        }
    }
    out.into_iter().collect()
}
