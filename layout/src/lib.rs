//! The one-backend rule (docs/CONTRACTS.md §1.5): a layout names a backend per
//! store, and a fenced-effect or outbound-call store must share the lease
//! store's backend; otherwise assembly fails with
//! `[application.store-backend-mismatch]`, naming each store and backend.
//!
//! [`Layout`] reads a layout (TOML, `[stores]`), [`assemble`] enforces the
//! rule, [`check_file`] is `storeproof layout check FILE`, and
//! [`LayoutSuite`] proves the rule holds as `--suite layout`.
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
mod model;
mod suite;

pub use assemble::{assemble, check_file, Assembled};
pub use error::{LayoutError, MISMATCH_ID};
pub use model::{Backend, Layout, Store};
pub use suite::LayoutSuite;
