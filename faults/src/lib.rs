//! The fault suite (SPEC 3.3): will hold fault scenarios (lost replies, latency,
//! dropped connections, partitions, server restart, a full server) for the Redis
//! queue and rate limits beside the SQLite fencing set, and the checkers of their
//! histories. Built so far: [`linearizable`], the linearizability checker of
//! lease histories, and [`bench_linearizability`], its benchmark.

#![warn(missing_docs)]

mod bench;
pub mod call_faults;
pub mod children;
pub mod fencing;
pub mod linearizable;
pub mod nemesis;
mod ops;
pub mod rate_bounds;

pub use bench::{bench_linearizability, forge_last_busy, random_history, BenchSummary};
