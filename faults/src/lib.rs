//! The fault suite (docs/CONTRACTS.md §2.3): the Redis queue and rate limits
//! beside a durable lease store with its fencing set (or the Redis coordination
//! set), run by several instances while a seeded nemesis injects faults between
//! them and the server ([`nemesis`], [`call_faults`]), and the recorded history
//! judged by pure checkers: [`linearizable`] (each tree's lease), [`children`]
//! (children-once), [`fencing`], [`rate_bounds`] and [`full_server`].
//! [`suite::FaultsSuite`] is `--suite faults`; [`bench_linearizability`]
//! measures the linearizability checker.
//!
//! The checkers take a recorded history and need no server:
//!
//! ```rust
//! use faults::rate_bounds;
//! use harness::contract::{Reply, Request};
//! use harness::History;
//!
//! // Two instances, 10 ms apart on their clocks, each told its hit was
//! // allowed, with room for one hit a second.
//! let hit = Request::RateHit { provider: "p".into(), limit: 1, window_ms: 1_000 };
//! let mut history = History::default();
//! for (instance, clock_ms) in [("a", 5_000), ("b", 5_010)] {
//!     history.invoke(instance, &hit.to_call(), None, clock_ms);
//!     let allowed = Ok(Reply::Allowed { remaining: 0 });
//!     history.complete(instance, hit.op(), &allowed, None, clock_ms);
//! }
//! assert!(!rate_bounds::check(&history).holds());
//! ```

mod bench;
pub use model::findings::blame;
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
