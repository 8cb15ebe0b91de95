//! The sabotage set (SPEC 3.5): deliberately broken stores, each of which a
//! named check must catch. They wrap a real store and break one promise:
//!
//! - [`Tampered`] corrupts the n-th answer of a run (every reply a
//!   conformance scenario receives is judged, so every corruption must fail
//!   the check);
//! - [`SideEffect`] keeps every answer right but also writes what it must
//!   not: kept execution ids into Redis, keys outside its prefix, kilobytes
//!   of padding per tree, a key for a request it refused as bad;
//! - [`ServerBlind`] never looks at the server it is given (it uses another)
//!   and [`RefusesAll`] refuses every server: the server-assumption checks
//!   must catch both.
//!
//! - [`ReadThenWriteLease`] makes its take (or its renew) of a read and then
//!   a write, which only `conformance.lease.take-races` can catch.
//!
//! - [`ClientClockLease`] decides lease expiry on the caller's clock, which
//!   `explorer.one-live-holder` must catch under a skewed second clock.
//!
//! The fault suite's four (issue 10), each caught by a named `faults.*` check:
//!
//! - [`BlindRetry`] retries a call once after `unavailable`
//!   (`faults.lease-linearizable`);
//! - [`CompleteAnyAttempt`] completes a child by its id only, whatever the
//!   attempt (`faults.children-once`);
//! - [`OomSwallowed`] answers a success when the server is full
//!   (`faults.full-server-refuses`, `faults.lease-linearizable`);
//! - `fence-outside-transaction`, the SQLite fencing set with its fence read
//!   outside the write's transaction
//!   ([`SqliteStoreFactory::with_fence_outside_transaction`]), which only
//!   the durable order of `faults.fencing` can catch.
//!
//! The matrix of sabotages against the checks that caught them comes with
//! the sabotage suite.

#![warn(missing_docs)]

mod blind_retry;
mod client_clock;
mod complete_any_attempt;
mod conn;
mod corrupt;
mod oom_swallowed;
mod read_then_write;
mod sabotaged;
mod wrappers;

pub use blind_retry::BlindRetry;
pub use client_clock::ClientClockLease;
pub use complete_any_attempt::CompleteAnyAttempt;
pub use corrupt::corrupt;
pub use oom_swallowed::OomSwallowed;
pub use read_then_write::ReadThenWriteLease;
pub use sabotaged::{ClientSabotage, Sabotaged};
pub use wrappers::{Extra, Lie, Lying, RefusesAll, ServerBlind, SideEffect, Tampered};

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use harness::server::VirtualClock;
use harness::store::redis::RedisStoreFactory;
use harness::store::sqlite::{SqliteClock, SqliteStoreFactory};
use harness::store::StoreFactory;

/// How long `sabotage:fence-outside-transaction` waits between its fence
/// read and its write: long enough for a takeover to land in between under
/// the fault suite's timing.
pub const FENCE_PAUSE: Duration = Duration::from_millis(200);

/// The database file of `sabotage:fence-outside-transaction`, in the run's
/// workdir.
pub const SQLITE_FILE: &str = "sabotage-sqlite.sqlite";

/// What a sabotage is built from: the run's workdir (durable files go
/// there) and the managed server's virtual clock, if the run has one.
type Make = fn(&Path, Option<Arc<VirtualClock>>) -> Arc<dyn StoreFactory>;

/// The built-in Redis store, its kept execution ids in `workdir`.
fn builtin(workdir: &Path) -> RedisStoreFactory {
    RedisStoreFactory::new(workdir.join("kept-executions.sqlite"))
}

/// A sabotaged store selectable by name (`--store sabotage:<name>`). The
/// check that must catch it is named by its test, next to the check.
pub struct Named {
    /// Its name after `sabotage:`.
    pub name: &'static str,
    /// The promise it breaks, in one sentence.
    pub breaks: &'static str,
    make: Make,
}

/// The sabotaged stores selectable by name.
pub const NAMED: [Named; 7] = [
    Named {
        name: "read-then-write-take",
        breaks: "its take reads the lease and then writes it in a second command, so two instances can both be granted",
        make: |w, _| Arc::new(ReadThenWriteLease::new(builtin(w))),
    },
    Named {
        name: "read-then-write-renew",
        breaks: "its renew reads the lease and then writes it in a second command, so a renew can overwrite a newer holder",
        make: |w, _| Arc::new(ReadThenWriteLease::renew(builtin(w))),
    },
    Named {
        name: "lease-on-caller-clock",
        breaks: "it decides lease expiry on the caller's clock instead of the server's",
        make: |w, _| Arc::new(ClientClockLease::new(builtin(w))),
    },
    Named {
        name: "blind-retry",
        breaks: "after an unavailable answer it sends the same call again and answers that, so a take whose reply was lost comes back busy under its own epoch",
        make: |w, _| Arc::new(BlindRetry::new(builtin(w))),
    },
    Named {
        name: "complete-any-attempt",
        breaks: "its queue.complete goes by child id only, so a worker whose claim expired still completes the child another worker re-claimed",
        make: |w, _| Arc::new(CompleteAnyAttempt::new(builtin(w))),
    },
    Named {
        name: "oom-swallowed",
        breaks: "when the server is full it answers a success instead of store_full, acknowledging writes that never landed",
        make: |w, _| Arc::new(OomSwallowed::new(builtin(w))),
    },
    Named {
        name: "fence-outside-transaction",
        breaks: "the SQLite fencing set checks the lease in one transaction and writes the effect in another, so a zombie's effect lands after a takeover",
        make: |w, clock| {
            Arc::new(
                SqliteStoreFactory::new(w.join(SQLITE_FILE), SqliteClock::following(clock))
                    .with_fence_outside_transaction(FENCE_PAUSE),
            )
        },
    },
];

/// The sabotaged store `name` (see [`NAMED`]), keeping durable files in
/// `workdir`; a SQLite-based one reads the system clock (see
/// [`by_name_following`]).
pub fn by_name(name: &str, workdir: &Path) -> Option<Arc<dyn StoreFactory>> {
    by_name_following(name, workdir, None)
}

/// The sabotaged store `name`, keeping durable files in `workdir`; a
/// SQLite-based one reads its server time from `server_clock` when given
/// (the managed server's virtual clock, as `builtin:sqlite` does).
pub fn by_name_following(
    name: &str,
    workdir: &Path,
    server_clock: Option<Arc<VirtualClock>>,
) -> Option<Arc<dyn StoreFactory>> {
    let named = NAMED.iter().find(|n| n.name == name)?;
    Some((named.make)(workdir, server_clock))
}
