//! storeproof as a library: certify a Rust store from `cargo test`.
//!
//! A store is an implementation of [`StoreFactory`] (connect an instance,
//! given the server and key prefix of [`Hello`]) and [`StoreClient`] (one
//! call per contract operation, [`Call`] in, [`Reply`] or [`StoreError`]
//! out): the same traits storeproof's own stores implement, judged by the
//! same suites as `storeproof certify` judges them. [`Certification`] runs
//! the suites on a Redis server it starts itself and writes the same report
//! folder; its [`Certificate`] carries the typed report, so a test asserts
//! on the verdict and prints each failed check with its counterexample.
//!
//! ```
//! use storeproof::kit::example::ExampleStore;
//! use storeproof::{Certification, Suite};
//!
//! // The kit's example store stands in for yours; its kept executions go
//! // to a file in the run's working directory.
//! let certificate = Certification::of_in_workdir(|dir| ExampleStore::new(dir.join("kept.sqlite")))
//!     .suites(&[Suite::Conformance])
//!     .check("conformance.lease.take")
//!     .cases(2)
//!     .out(std::env::temp_dir().join("storeproof-doc-report"))
//!     .run_blocking()
//!     .expect("the run could be set up");
//! assert!(certificate.passed(), "{certificate}");
//! ```
//!
//! The `storeproof` binary is [`cli::main`].

mod bench;
mod bench_adapters;
mod certify;
pub mod cli;
mod judge;
pub mod kit;
mod layout_cmd;
mod library;
mod merge;
mod mutate;
mod progress;
mod replay;
mod sabotage_suite;
mod shard;
mod store_spec;

use std::path::PathBuf;

pub use harness::contract::{Call, Contract, ErrorKind, Reply, StoreError};
pub use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
pub use harness::RunVerdict;
pub use harness::{CheckResult, Report, Verdict};
pub use library::{Certificate, Certification, Error};
pub use library::{CrashBackend, Suite};

/// The run's working directory (durable files of the store under test),
/// removed by the signal handler, which leaves without running destructors.
pub(crate) static RUN_WORKDIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Sets the run's working directory, removed by the signal handler's
/// cleanup (last: until then the run's stores could still write into it).
pub(crate) fn set_run_workdir(dir: PathBuf) {
    let _ = RUN_WORKDIR.set(dir);
    harness::cleanup::register(
        "the run's working directory",
        harness::cleanup::Stage::Files,
        remove_run_workdir,
    );
}

fn remove_run_workdir() {
    if let Some(dir) = RUN_WORKDIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Where the report goes when `--out` is not given.
pub(crate) fn default_out() -> PathBuf {
    PathBuf::from("storeproof-report")
}
