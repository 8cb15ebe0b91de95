//! What storeproof's tests share, so that each test says only what it
//! varies:
//!
//! - [`subject`]: the store under test as a suite gets it, built with the
//!   defaults every test used to spell out (no opt-out, every coordination
//!   contract, seed 0, servers of its own allowed);
//! - [`TestServer`]: a managed `redis-server` with the durable settings on
//!   the wall clock, whose failures end the test with the server's words;
//! - [`read_report`] and [`check`]: a run's `report.json` read back into
//!   [`harness::Report`], so a renamed or mistyped field fails to compile
//!   (or to parse) instead of comparing `null`.
//!
//! It is a dev-dependency only: its helpers panic, which is how a test fails.

mod report;
mod server;
mod subject;

pub use report::{check, read_report};
pub use server::TestServer;
pub use subject::{subject, SubjectBuilder, UNREACHABLE_URL};
