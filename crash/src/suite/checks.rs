//! The crash suite's checks: each declared with its level and contracts, and
//! typed ([`CrashCheck`]) so the verdict's match must judge every one.

use harness::contract::Contract;
use harness::{CheckSpec, Level, Needs};

use crate::verify::Kept;

pub(super) const LEASE: &[Contract] = &[Contract::Lease];
pub(super) const QUEUE: &[Contract] = &[Contract::Queue];
pub(super) const RATE: &[Contract] = &[Contract::Rate];
/// A check of the whole workload is judged on whichever contracts are claimed.
pub(super) const WHOLE: &[Contract] = &Contract::COORDINATION;

pub(super) const fn must(
    id: &'static str,
    contracts: &'static [Contract],
    about: &'static str,
) -> CheckSpec {
    CheckSpec {
        id,
        level: Level::Must,
        contracts,
        needs: Needs::OwnServers,
        about,
    }
}

/// Every acknowledged epoch is on the restarted server.
pub const EPOCHS: CheckSpec = must(
    "crash.acknowledged-epochs-survive",
    LEASE,
    "every epoch granted before a SIGKILL is on the restarted server",
);
/// The first take after a restart continues above every acknowledged epoch.
pub const NEXT_TAKE: CheckSpec = must(
    "crash.next-take-continues",
    LEASE,
    "the first take after a restart is granted above every acknowledged epoch of its tree",
);
/// Every acknowledged renew still runs to its expiry.
pub const RENEWS: CheckSpec = must(
    "crash.acknowledged-renews-survive",
    LEASE,
    "every acknowledged renew still runs to its expiry on the restarted server",
);
/// Every acknowledged child is on the restarted server.
pub const CHILDREN: CheckSpec = must(
    "crash.acknowledged-children-survive",
    QUEUE,
    "every child saved before a SIGKILL is on the restarted server",
);
/// Every acknowledged claim still holds, and no claimed child is handed out again.
pub const CLAIMS: CheckSpec = must(
    "crash.acknowledged-claims-survive",
    QUEUE,
    "every acknowledged claim still holds after a restart; no claimed child is handed out again",
);
/// Every completed child stays done.
pub const COMPLETED_ONCE: CheckSpec = must(
    "crash.children-completed-once",
    QUEUE,
    "every completed child stays done after a restart and is never handed out again",
);
/// Every acknowledged pause is in force on the restarted server.
pub const PAUSES: CheckSpec = must(
    "crash.acknowledged-pauses-survive",
    RATE,
    "every acknowledged provider pause is in force on the restarted server",
);
/// With the append-only file off, every kill loses writes of storeproof's
/// own reference store: the kills are real. A demonstration of the
/// harness, never the store's duty: the store's own figures are beside it.
pub const OPT_OUT: CheckSpec = must(
    "crash.opt-out-loses",
    WHOLE,
    "with appendonly no, every kill loses acknowledged writes of storeproof's reference store (the built-in Redis store) run beside the store: the kills are real",
);
/// Power cuts with appendfsync always lose nothing.
pub const POWER_ALWAYS: CheckSpec = must(
    "crash.power-loss-always-keeps",
    WHOLE,
    "with appendfsync always, a power cut (the AOF cut back to its last fsync) loses nothing",
);
/// Power cuts with appendfsync everysec (opted out) lose writes of the
/// reference store: why always is required. A demonstration, as [`OPT_OUT`].
pub const POWER_EVERYSEC: CheckSpec = CheckSpec {
    level: Level::Should,
    ..must(
        "crash.power-loss-everysec-loses",
        WHOLE,
        "with appendfsync everysec (opted out), a power cut loses acknowledged writes of storeproof's reference store run beside the store: why always is required",
    )
};
/// While the killed server is down, the store acknowledges nothing.
pub const DOWN_SERVER: CheckSpec = must(
    "crash.down-server-unavailable",
    WHOLE,
    "while the killed server is down, a new instance of the store acknowledges nothing: its hello or its write answers an error (PROTOCOL: unavailable when the server cannot be reached)",
);
/// The kills ran in a Docker container.
pub const DOCKER: CheckSpec = CheckSpec {
    level: Level::Should,
    ..must(
        "crash.docker-backend",
        WHOLE,
        "the kills ran on the server in a container built here (docker kill -s KILL)",
    )
};

/// Every check of the crash suite, typed: a new one is a variant the
/// verdict's match must judge (no chain of id comparisons to fall out of).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashCheck {
    /// What a kill must keep, judged on the required setting's kills.
    Kept(Kept),
    /// [`OPT_OUT`].
    OptOut,
    /// [`POWER_ALWAYS`].
    PowerAlways,
    /// [`POWER_EVERYSEC`].
    PowerEverysec,
    /// [`DOWN_SERVER`].
    DownServer,
    /// [`DOCKER`].
    Docker,
}

impl CrashCheck {
    /// Every one but the kept ones, with its declaration.
    pub(super) const OTHERS: [(CrashCheck, &'static CheckSpec); 5] = [
        (CrashCheck::OptOut, &OPT_OUT),
        (CrashCheck::PowerAlways, &POWER_ALWAYS),
        (CrashCheck::PowerEverysec, &POWER_EVERYSEC),
        (CrashCheck::DownServer, &DOWN_SERVER),
        (CrashCheck::Docker, &DOCKER),
    ];

    /// The check declared with `id`, if the suite has one.
    pub fn of(id: &str) -> Option<CrashCheck> {
        Kept::ALL
            .into_iter()
            .find(|k| k.spec().id == id)
            .map(CrashCheck::Kept)
            .or_else(|| {
                CrashCheck::OTHERS
                    .into_iter()
                    .find(|(_, spec)| spec.id == id)
                    .map(|(check, _)| check)
            })
    }
}

/// Every crash check in report order, with the contracts it is about: a
/// check none of whose contracts the store claims is outside the claim.
pub const CHECKS: [CheckSpec; 12] = [
    EPOCHS,
    NEXT_TAKE,
    RENEWS,
    CHILDREN,
    CLAIMS,
    COMPLETED_ONCE,
    PAUSES,
    DOWN_SERVER,
    OPT_OUT,
    POWER_ALWAYS,
    POWER_EVERYSEC,
    DOCKER,
];
