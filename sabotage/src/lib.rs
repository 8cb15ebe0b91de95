//! The sabotage set (SPEC 3.5): deliberately broken stores, each of which a
//! named check must catch. They wrap a real store and break one promise:
//!
//! - [`Tampered`] corrupts the n-th answer of a run (every reply a
//!   conformance scenario receives is judged, so every corruption must fail
//!   the check);
//! - [`SideEffect`] keeps every answer right but also writes what it must
//!   not: kept execution ids into Redis, keys outside its prefix, kilobytes
//!   of padding per tree;
//! - [`ServerBlind`] never looks at the server it is given (it uses another)
//!   and [`RefusesAll`] refuses every server: the server-assumption checks
//!   must catch both.
//!
//! - [`ReadThenWriteLease`] makes its take of a read and then a write, which
//!   only `conformance.lease.take-races` can catch.
//!
//! Later issues add more semantic sabotages (a lease on the caller's clock)
//! and the matrix the report shows.

mod corrupt;
mod read_then_write;
mod wrappers;

pub use corrupt::corrupt;
pub use read_then_write::ReadThenWriteLease;
pub use wrappers::{Extra, RefusesAll, ServerBlind, SideEffect, Tampered};
