//! storeproof's pure model: what a store promises and what a run found.
//!
//! Nothing here does I/O or depends on a runtime, a server client or a
//! database: every checker, `reports` and `storeproof check` can be built on
//! this crate alone, and what they decide depends only on the data they are
//! given.
//!
//! A contract's model judges a store's replies one by one, at the time the
//! contract decides on, and follows the store along every reply the contract
//! allows:
//!
//! ```rust
//! use model::contract::{Judgement, LeaseModel, Reply, Request};
//!
//! let take = |holder: &str| Request::LeaseTake {
//!     tree: "t1".into(),
//!     holder: holder.into(),
//!     ttl_ms: 1_000,
//! };
//! let mut leases = LeaseModel::default();
//!
//! // `a` takes the free tree at server time 5000. Any epoch above the tree's
//! // last is allowed; the model adopts the store's.
//! let granted = Reply::Granted { epoch: 7, expires_at_ms: 6_000 };
//! assert_eq!(leases.judge(&take("a"), 5_000, &granted), Judgement::Agrees);
//!
//! // While `a`'s lease is live, `b`'s take is busy, naming `a` and its epoch...
//! let busy = Reply::Busy { holder: "a".into(), epoch: 7, expires_at_ms: 6_000 };
//! assert_eq!(leases.judge(&take("b"), 5_999, &busy), Judgement::Agrees);
//! // ...and a second grant breaks one-live-holder.
//! let second = Reply::Granted { epoch: 8, expires_at_ms: 6_999 };
//! assert!(matches!(leases.judge(&take("b"), 5_999, &second), Judgement::Violates(_)));
//!
//! // A lease ends at its expiry instant: busy then is a safe deviation, a
//! // SHOULD (a warning), not a MUST.
//! assert!(matches!(leases.judge(&take("b"), 6_000, &busy), Judgement::Conservative(_)));
//! ```
//!
//! - [`contract`]: the operations, replies and errors of docs/PROTOCOL.md and
//!   a pure sequential model of each contract;
//! - [`History`]: what happened in a run, and its operations paired;
//! - the run model: [`CheckResult`], [`Verdict`], [`Report`] and the run's
//!   verdict;
//! - [`counterexample`]: what a failed check saves to be shown and
//!   replayed, one closed enum, and what it is made of: [`scenario`]s,
//!   [`explore`] schedules and properties, [`nemesis`] plans;
//! - [`violation`]: a checker's violation, naming the events it blames;
//! - [`figures`]: each suite's figures, typed;
//! - [`observed`]: what a run reads back of a store's state, as data;
//! - [`redact_secrets`]: the one redaction every report and message goes
//!   through.

pub mod check;
pub mod contract;
pub mod counterexample;
pub mod evidence;
pub mod explore;
pub mod figures;
pub mod findings;
pub mod history;
pub mod layout;
pub mod nemesis;
pub mod observed;
pub mod recorded;
mod redact;
pub mod scenario;
pub mod violation;

pub use check::{
    CheckResult, CheckSpec, Level, Needs, ReplayFile, Report, RunSection, RunVerdict,
    ServerSection, StoreSection, Verdict,
};
pub use history::{Event, EventKind, Happened, History, NemesisNote, NemesisPhase};
pub use redact::redact_secrets;
