//! Checks and the run model: ids, levels, verdicts, evidence, and the report
//! every suite fills and `reports` renders. Pure data, no I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How much a check matters (SPEC §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Breaking it is unsafe: a failure fails the run.
    Must,
    /// A safe deviation from the contract: a warning that does not fail the run.
    Should,
}

/// A check's outcome. There is no silent skip: `Skipped` always has a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It holds: nothing broke the check.
    Pass,
    /// A MUST check broke: the run fails.
    Fail,
    /// A SHOULD check broke (a safe deviation): the run still passes.
    Warn,
    /// Not run; `reason` says why (never a silent skip).
    Skipped,
}

/// One check's result as the report carries it (SPEC §5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// Stable id named for what it checks, e.g. `conformance.lease.take-busy`.
    pub id: String,
    /// The suite that ran it, e.g. `conformance`, `explorer` or `crash`.
    pub suite: String,
    /// MUST or SHOULD: whether a failure fails the run.
    pub level: Level,
    /// Pass, fail, warn or skipped.
    pub verdict: Verdict,
    /// Why it failed, warned or was skipped; what it proved when it passed.
    pub reason: String,
    /// What the check saw: its figures and findings, as JSON.
    pub evidence: Value,
    /// For a failure: the minimal sequence of steps that shows it.
    pub counterexample: Option<Value>,
    /// Wall time of the check.
    pub seconds: f64,
}

impl CheckResult {
    /// Whether this result fails the run: a MUST check that failed.
    pub fn fails_run(&self) -> bool {
        self.verdict == Verdict::Fail
    }
}

/// The store section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreSection {
    /// What `--store` named, e.g. `builtin:redis`.
    pub spec: String,
    /// The store's own name, from its hello.
    pub name: String,
    /// The store's own version, from its hello.
    pub version: String,
    /// The contracts it offers (`lease`, `queue`, `rate`).
    pub contracts: Vec<String>,
}

/// The server section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSection {
    /// The Redis server's version, e.g. `7.0.15`.
    pub version: String,
    /// Started and controlled by storeproof (virtual clock, restarts).
    pub managed: bool,
    /// The settings SPEC 2.6 is about (durability, role, cluster), as the server
    /// reported them.
    pub settings: BTreeMap<String, String>,
}

/// Everything one `storeproof certify` found, in the shape of SPEC §5.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The storeproof version that made the report.
    pub storeproof: String,
    /// Pass unless a MUST check failed.
    pub verdict: RunVerdict,
    /// The store certified.
    pub store: StoreSection,
    /// The server it ran against.
    pub server: ServerSection,
    /// Every check run, in report order.
    pub checks: Vec<CheckResult>,
    /// Figures per suite: checks run, seconds, and suite-specific ones.
    pub stats: BTreeMap<String, Value>,
    /// How this run can be repeated: command line and run prefix.
    pub run: BTreeMap<String, Value>,
}

/// The whole run's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunVerdict {
    /// No check failed (warnings and skips allowed): exit 0.
    Pass,
    /// At least one MUST check failed: exit 1.
    Fail,
}

impl Report {
    /// The run verdict a list of checks gives: fail if any check failed.
    pub fn verdict_of(checks: &[CheckResult]) -> RunVerdict {
        if checks.iter().any(CheckResult::fails_run) {
            RunVerdict::Fail
        } else {
            RunVerdict::Pass
        }
    }

    /// Counts of each verdict, for summaries.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for c in &self.checks {
            let k = match c.verdict {
                Verdict::Pass => "pass",
                Verdict::Fail => "fail",
                Verdict::Warn => "warn",
                Verdict::Skipped => "skipped",
            };
            *counts.entry(k).or_insert(0) += 1;
        }
        counts
    }
}
