//! storeproof's foundation: the contracts as code, the store clients, managed
//! Redis servers with a controlled clock, checks and the conformance suite.
//!
//! Data flows one way: a schedule (here, a conformance scenario) is run by a
//! runner against store clients on a server, producing a history; checkers
//! turn histories into verdicts; the binary hands the verdicts to `reports`.

#![warn(missing_docs)]

pub mod check;
pub mod contract;
pub mod figures;
pub mod gate;
pub mod history;
pub mod keyspace;
pub mod server;
pub mod store;
pub mod suite;
