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
//! The matrix of sabotages against the checks that caught them comes with
//! the sabotage suite.

#![warn(missing_docs)]

mod client_clock;
mod conn;
mod corrupt;
mod read_then_write;
mod wrappers;

pub use client_clock::ClientClockLease;
pub use corrupt::corrupt;
pub use read_then_write::ReadThenWriteLease;
pub use wrappers::{Extra, Lie, Lying, RefusesAll, ServerBlind, SideEffect, Tampered};

use std::path::Path;
use std::sync::Arc;

use harness::store::redis::RedisStoreFactory;
use harness::store::StoreFactory;

/// A sabotaged store selectable by name (`--store sabotage:<name>`). The
/// check that must catch it is named by its test, next to the check.
pub struct Named {
    /// Its name after `sabotage:`.
    pub name: &'static str,
    /// The promise it breaks, in one sentence.
    pub breaks: &'static str,
    make: fn(RedisStoreFactory) -> Arc<dyn StoreFactory>,
}

/// The sabotaged stores selectable by name.
pub const NAMED: [Named; 3] = [
    Named {
        name: "read-then-write-take",
        breaks: "its take reads the lease and then writes it in a second command, so two instances can both be granted",
        make: |builtin| Arc::new(ReadThenWriteLease::new(builtin)),
    },
    Named {
        name: "read-then-write-renew",
        breaks: "its renew reads the lease and then writes it in a second command, so a renew can overwrite a newer holder",
        make: |builtin| Arc::new(ReadThenWriteLease::renew(builtin)),
    },
    Named {
        name: "lease-on-caller-clock",
        breaks: "it decides lease expiry on the caller's clock instead of the server's",
        make: |builtin| Arc::new(ClientClockLease::new(builtin)),
    },
];

/// The sabotaged store `name` (see [`NAMED`]), keeping durable files in `workdir`.
pub fn by_name(name: &str, workdir: &Path) -> Option<Arc<dyn StoreFactory>> {
    let named = NAMED.iter().find(|n| n.name == name)?;
    Some((named.make)(RedisStoreFactory::new(
        workdir.join("kept-executions.sqlite"),
    )))
}
