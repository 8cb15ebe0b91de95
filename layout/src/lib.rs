//! The one-backend rule (docs/CONTRACTS.md §1.5): a layout names a backend per
//! store, and a fenced-effect or outbound-call store must share the lease
//! store's backend; otherwise assembly fails with
//! `[application.store-backend-mismatch]`, naming each store and backend.
//!
//! [`Layout`] reads a layout (TOML, `[stores]`), [`assemble`] enforces the
//! rule, [`check_file`] is `storeproof layout check FILE`, and
//! [`LayoutSuite`] proves the rule holds as `--suite layout`.
//!
//! ```rust
//! use layout::{assemble, Backend, Layout, Store, MISMATCH_ID};
//!
//! // The coordination set: Redis leases, queue and rate limits.
//! let coordination = Layout::coordination_set();
//! let assembled = assemble(&coordination).unwrap();
//! assert_eq!(assembled.supported_name(), Some("coordination-set"));
//!
//! // A fenced effect on SQLite beside a lease on Redis is refused: the lease
//! // could not be read in the effect's own transaction.
//! let split = coordination.with(Store::FencedEffect, Backend::Sqlite);
//! let refusal = assemble(&split).unwrap_err().to_string();
//! assert!(refusal.starts_with(MISMATCH_ID), "{refusal}");
//! ```
//!
//! Decisions the rule leaves open: the lease log may be on any backend (it is a
//! record written after the fact; the seed page "Running on Redis" lists it
//! with the queue and rate limits as free); a fenced-effect or outbound-call
//! store with no lease store is refused under the same id (there is no lease to
//! share a backend with); a layout with no lease store at all is refused too,
//! as [`LayoutError::MissingLease`]. The rule binds backends only: that Redis
//! offers no fenced-effect store is not its concern.

mod assemble;
mod error;
mod file;
mod suite;

pub use assemble::{assemble, check_file, Assembled};
pub use error::{LayoutError, MISMATCH_ID};
pub use file::{Backend, Layout, LayoutFile, Store};
pub use suite::LayoutSuite;
