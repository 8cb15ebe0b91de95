//! The fault suite (docs/CONTRACTS.md §2.3): the Redis queue and rate limits
//! beside a durable lease store with its fencing set (or the Redis coordination
//! set), run by several instances while a seeded nemesis injects faults between
//! them and the server ([`nemesis`], [`call_faults`]), and the recorded history
//! judged by pure checkers: [`linearizable`] (each tree's lease), [`children`]
//! (children-once), [`fencing`], [`rate_bounds`] and [`full_server`].
//! [`suite::FaultsSuite`] is `--suite faults`; [`bench_linearizability`]
//! measures the linearizability checker.

mod bench;
pub mod call_faults;
pub mod children;
pub mod evidence;
pub mod fencing;
pub mod full_server;
pub mod linearizable;
pub mod nemesis;
mod ops;
pub mod rate_bounds;
pub mod suite;
pub mod workload;

pub use bench::{bench_linearizability, forge_last_busy, random_history, BenchSummary};
pub use suite::{FaultsConfig, FaultsSuite};
