//! The conformance suite's figures.

use serde::{Deserialize, Serialize};

/// How many checks ran, each verdict's count, and the bytes a tree's
/// execution costs in Redis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConformanceFigures {
    /// Checks reported.
    pub checks: usize,
    /// Checks that held.
    pub pass: usize,
    /// MUST checks that broke.
    pub fail: usize,
    /// SHOULD checks that broke.
    pub warn: usize,
    /// Checks not run (each with its reason).
    pub skipped: usize,
    /// Checks the harness could not decide.
    pub unknown: usize,
    /// Wall time of the suite, in seconds.
    pub seconds: f64,
    /// Redis memory one tree's execution keeps, when measured.
    pub bytes_per_tree: Option<serde_json::Value>,
}
