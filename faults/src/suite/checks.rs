//! The fault suite's checks, declared and typed: a workload check's variant
//! picks its role, its operations and its checker.

use harness::contract::Contract;
use harness::{CheckSpec, Level, Needs};

/// A MUST check of the fault suite.
pub(super) const fn must(
    id: &'static str,
    contracts: &'static [Contract],
    needs: Needs,
    about: &'static str,
) -> CheckSpec {
    CheckSpec {
        id,
        level: Level::Must,
        contracts,
        needs,
        about,
    }
}

/// `faults.lease-linearizable`.
pub const LINEARIZABLE: CheckSpec = must(
    "faults.lease-linearizable",
    &[Contract::Lease],
    Needs::FaultServers,
    "under lost replies, dropped and reset connections, latency, partitions, paused instances and restarts, each tree's lease history is linearizable (an operation whose reply was lost may or may not have taken effect)",
);

/// `faults.children-once`.
pub const CHILDREN_ONCE: CheckSpec = must(
    "faults.children-once",
    &[Contract::Queue],
    Needs::FaultServers,
    "under the same faults, every saved child's effect is applied exactly once: none lost, none twice, none for a child never saved",
);

/// `faults.fencing`.
pub const FENCING: CheckSpec = must(
    "faults.fencing",
    &[Contract::Fenced],
    Needs::FaultServers,
    "under the same faults, no effect or outbound call of an older epoch takes effect after a newer one was granted, even when the zombie reaches the write first, and a call is begun at most once",
);

/// `faults.rate-bounds`.
pub const RATE_BOUNDS: CheckSpec = must(
    "faults.rate-bounds",
    &[Contract::Rate],
    Needs::FaultServers,
    "under the same faults, never more live slots or allowed hits than the limit, and nothing granted while paused, with unknown outcomes counted both ways",
);

/// `faults.full-server-refuses`.
pub const FULL_SERVER: CheckSpec = must(
    "faults.full-server-refuses",
    &[Contract::Lease, Contract::Queue, Contract::Rate],
    Needs::FullRedis,
    "while the server is full (maxmemory reached, noeviction) every write is refused with store_full or really lands: nothing acknowledged is lost, nothing granted twice",
);

/// A check the fault suite judges over its workloads: the variant picks
/// its role, its operations and its checker, so a new check is a variant
/// every match must judge (before, an id string fell through to the rate
/// bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadCheck {
    /// [`LINEARIZABLE`].
    Linearizable,
    /// [`CHILDREN_ONCE`].
    ChildrenOnce,
    /// [`FENCING`].
    Fencing,
    /// [`RATE_BOUNDS`].
    RateBounds,
}

impl WorkloadCheck {
    /// Every one, in report order.
    pub const ALL: [WorkloadCheck; 4] = [
        WorkloadCheck::Linearizable,
        WorkloadCheck::ChildrenOnce,
        WorkloadCheck::Fencing,
        WorkloadCheck::RateBounds,
    ];

    /// Its declaration.
    pub const fn spec(self) -> CheckSpec {
        match self {
            WorkloadCheck::Linearizable => LINEARIZABLE,
            WorkloadCheck::ChildrenOnce => CHILDREN_ONCE,
            WorkloadCheck::Fencing => FENCING,
            WorkloadCheck::RateBounds => RATE_BOUNDS,
        }
    }
}

/// Every check of the fault suite, typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultCheck {
    /// Judged over the workloads under faults.
    Workload(WorkloadCheck),
    /// [`FULL_SERVER`]: judged on a server of its own, filled up.
    FullServer,
}

impl FaultCheck {
    /// The check declared with `id`, if the suite has one.
    pub fn of(id: &str) -> Option<FaultCheck> {
        if id == FULL_SERVER.id {
            return Some(FaultCheck::FullServer);
        }
        WorkloadCheck::ALL
            .into_iter()
            .find(|c| c.spec().id == id)
            .map(FaultCheck::Workload)
    }
}
