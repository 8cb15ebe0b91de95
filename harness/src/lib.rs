//! What every storeproof suite shares.
//!
//! At the root, the run model: the store under test as a [`Subject`], the
//! [`Suite`] trait and each check declared once as a [`CheckSpec`] ([`plan`]
//! settles what a run cannot decide), a [`History`] of what happened, and the
//! verdicts and [`Report`] the binary hands to `reports`. The parts, each a
//! namespace of its own:
//!
//! - [`contract`]: the operations, replies and errors of docs/PROTOCOL.md and
//!   a pure sequential model of each contract;
//! - [`store`]: store clients: the built-in Redis stores and adapters in any
//!   language;
//! - [`gate`]: a RESP proxy per instance that holds, releases and records
//!   each command, and the one interleaving driver;
//! - [`server`]: managed `redis-server`s with a clock storeproof controls;
//! - [`keyspace`]: read-only views of a server's keys;
//! - [`figures`]: each suite's figures, typed.

mod check;
pub mod contract;
pub mod figures;
pub mod gate;
mod history;
pub mod keyspace;
pub mod server;
pub mod store;
mod suite;

pub use check::{
    CheckResult, Level, ReplayFile, Report, RunSection, RunVerdict, ServerSection, StoreSection,
    Verdict,
};
pub use history::{Event, EventKind, Happened, History, NemesisNote, NemesisPhase};
pub use suite::{
    in_declared_order, plan, CheckSpec, Needs, Progress, ServerRef, Silent, Subject, Suite,
    SuiteError, SuiteRun,
};
