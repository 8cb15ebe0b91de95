//! storeproof's pure model: what a store promises and what a run found.
//!
//! Nothing here does I/O or depends on a runtime, a server client or a
//! database: every checker, `reports` and `storeproof check` can be built on
//! this crate alone, and what they decide depends only on the data they are
//! given.
//!
//! - [`contract`]: the operations, replies and errors of docs/PROTOCOL.md and
//!   a pure sequential model of each contract;
//! - [`History`]: what happened in a run, and its operations paired;
//! - the run model: [`CheckResult`], [`Verdict`], [`Report`] and the run's
//!   verdict;
//! - [`figures`]: each suite's figures, typed;
//! - [`observed`]: what a run reads back of a store's state, as data;
//! - [`redact_secrets`]: the one redaction every report and message goes
//!   through.

pub mod check;
pub mod contract;
pub mod figures;
pub mod history;
pub mod observed;
mod redact;

pub use check::{
    CheckResult, Level, ReplayFile, Report, RunSection, RunVerdict, ServerSection, StoreSection,
    Verdict,
};
pub use history::{Event, EventKind, Happened, History, NemesisNote, NemesisPhase};
pub use redact::redact_secrets;
