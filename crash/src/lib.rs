//! The crash suite (SPEC 3.4): the server is killed with SIGKILL in the
//! middle of a workload and restarted on the same data; every acknowledged
//! epoch, child and pause must survive it (with the required settings), and
//! with the append-only file off (opted out) the loss must show.
//!
//! - [`backend`]: where the server runs — [`process`] (a managed
//!   `redis-server`, `kill -9`) or `docker` (a locally built image,
//!   `docker kill -s KILL`);
//! - [`workload`]: instances writing, and the record of what was acknowledged;
//! - [`verify`]: what the restarted server shows, and the pure judgement of it;
//! - [`suite`]: [`suite::CrashSuite`], kills, restarts, checks and figures.

#![warn(missing_docs)]

pub mod backend;
pub mod docker;
pub mod image;
pub mod process;
pub mod suite;
pub mod verify;
pub mod workload;

pub use backend::{CrashBackend, CrashError};
pub use docker::DockerBackend;
