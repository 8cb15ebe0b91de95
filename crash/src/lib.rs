//! The crash suite (docs/CONTRACTS.md §2.4): the server is killed with SIGKILL
//! in the middle of a workload and restarted on the same data; every
//! acknowledged epoch, renew, child, claim, completion and pause must survive
//! it (with the required settings), each check judged only on writes of its own
//! kind, and while the server is down the store must acknowledge nothing. With
//! the append-only file off (opted out) the loss must show on storeproof's own
//! reference store written beside the store: a demonstration that the kills are
//! real, never the store's duty (its own figures are only reported).
//!
//! The modules are private; what other crates use is re-exported here.
//!
//! ```rust
//! use crash::{BackendChoice, CrashConfig, CrashSuite};
//! use harness::{Level, Suite};
//!
//! // Three kills with the required settings and one opted out, on a local
//! // redis-server: what it checks is known before anything is killed.
//! let suite = CrashSuite::new(CrashConfig::new(3, 1, 0, BackendChoice::Process));
//! let checks = suite.checks();
//! let epochs = checks
//!     .iter()
//!     .find(|c| c.id == "crash.acknowledged-epochs-survive")
//!     .unwrap();
//! assert_eq!(epochs.level, Level::Must);
//! assert!(checks.iter().all(|c| c.id.starts_with("crash.")));
//! ```
//!
//! - `backend`: the [`CrashError`] and the trait every place the server
//!   runs implements (kill, power cut, restart, destroy);
//! - `process`: a managed `redis-server` on disk, killed with `kill -9`;
//! - `docker`: `redis-server` in a container, killed with `docker kill -s
//!   KILL`, and the cleanup of every container and volume (also of dead runs);
//! - `image`: the locally built image the `docker` backend runs;
//! - `workload`: instances writing, and the record of what was acknowledged;
//! - `verify`: what the restarted server shows, and the pure judgement of it;
//! - `suite`: [`CrashSuite`], kills, restarts, checks and figures.

mod backend;
mod docker;
mod image;
mod observe;
mod process;
mod suite;
mod verify;
mod workload;

pub use backend::CrashError;
pub use docker::{cleanup_all_blocking, docker_available};
pub use suite::{BackendChoice, CrashConfig, CrashSuite, KillHistory, Rounds, SeriesPlan};
