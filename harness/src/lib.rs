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
//! - [`store`]: what a store under test is to every suite (`StoreFactory`,
//!   `StoreClient`) and the client of adapters in any language; the stores
//!   storeproof ships live in the `stores` crate;
//! - [`gate`]: a RESP proxy per instance that holds, releases and records
//!   each command, and the one interleaving driver;
//! - [`server`]: managed `redis-server`s with a clock storeproof controls;
//! - [`keyspace`]: read-only views of a server's keys;
//! - [`figures`]: each suite's figures, typed.
//!
//! A check is declared once, as a [`CheckSpec`]; what a run cannot decide
//! is settled from the declaration before anything runs. A check about a
//! contract the store does not offer is outside its claim:
//!
//! ```rust
//! use harness::contract::Contract;
//! use harness::{CheckSpec, Level, Needs};
//!
//! const TAKE_BUSY: CheckSpec = CheckSpec {
//!     id: "conformance.lease.take-busy",
//!     level: Level::Must,
//!     contracts: &[Contract::Lease],
//!     needs: Needs::ManagedServer,
//!     about: "a take of a live lease answers busy and changes nothing",
//! };
//!
//! assert_eq!(TAKE_BUSY.outside_claim(&Contract::COORDINATION), None);
//! let why = TAKE_BUSY.outside_claim(&[Contract::Queue]).unwrap();
//! assert!(why.contains("the lease contract"), "{why}");
//! ```

pub mod cleanup;
pub mod gate;
pub mod keyspace;
pub mod server;
pub mod store;
mod suite;

// The pure model lives in its own crate (no runtime, no server client);
// its parts are re-exported here so the I/O side names them in one place.
pub use model::{
    check, contract, counterexample, evidence, explore, figures, findings, history, nemesis,
    recorded, scenario, violation,
};
pub use model::{
    CheckResult, Event, EventKind, Happened, History, Level, NemesisNote, NemesisPhase, ReplayFile,
    Report, RunSection, RunVerdict, ServerSection, StoreSection, Verdict,
};
pub use suite::{
    in_declared_order, plan, CheckSpec, Needs, Progress, ServerRef, Silent, Subject, Suite,
    SuiteError, SuiteRun,
};
