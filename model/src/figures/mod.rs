//! Each suite's figures, typed: the suites fill them, the report's `stats`
//! carries them, `reports`, `bench` and `replay` read them by field.
//!
//! A new suite adds its figures type here (a file of its own) and a field
//! of [`Stats`].

mod conformance;
mod crash;
mod explorer;
mod faults;
mod layout;
mod merge;
mod sabotage;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::{CheckResult, Verdict};

pub use conformance::ConformanceFigures;
pub use crash::{CrashFigures, KillFigures, PowerLossFigures, SeriesFigures};
pub use explorer::{ExplorerFigures, SkewFigures};
pub use faults::{FaultMeeting, FaultsFigures, WorkloadFigures};
pub use layout::{GivenLayout, LayoutFigures};
pub use sabotage::{SabotageFigures, SabotageRow};

/// What one suite's run measured.
#[derive(Debug, Clone, PartialEq)]
pub enum Figures {
    /// The conformance suite's.
    Conformance(ConformanceFigures),
    /// The explorer's.
    Explorer(ExplorerFigures),
    /// The crash suite's.
    Crash(CrashFigures),
    /// The layout suite's.
    Layout(LayoutFigures),
    /// The fault suite's.
    Faults(FaultsFigures),
    /// The sabotage suite's: the matrix.
    Sabotage(SabotageFigures),
}

impl Figures {
    /// The figures with the suite's own tally over `results` (every check
    /// it reported, those settled before it ran included) and its wall time.
    pub fn tallied(self, results: &[CheckResult], took: Duration) -> Figures {
        match self {
            Figures::Conformance(f) => {
                let count = |v: Verdict| results.iter().filter(|r| r.verdict == v).count();
                Figures::Conformance(ConformanceFigures {
                    checks: results.len(),
                    pass: count(Verdict::Pass),
                    fail: count(Verdict::Fail),
                    warn: count(Verdict::Warn),
                    skipped: count(Verdict::Skipped),
                    unknown: count(Verdict::Unknown),
                    seconds: (took.as_secs_f64() * 1000.0).round() / 1000.0,
                    ..f
                })
            }
            other => other,
        }
    }
}

/// The report's `stats`: the figures of every suite that ran, under its name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The conformance suite's figures, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conformance: Option<ConformanceFigures>,
    /// The crash suite's figures, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<CrashFigures>,
    /// The explorer's figures, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explorer: Option<ExplorerFigures>,
    /// The layout suite's figures, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutFigures>,
    /// The fault suite's figures, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultsFigures>,
    /// The sabotage suite's matrix, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sabotage: Option<SabotageFigures>,
}

impl Stats {
    /// Files `figures` under its suite's name.
    pub fn add(&mut self, figures: Figures) {
        match figures {
            Figures::Conformance(f) => self.conformance = Some(f),
            Figures::Explorer(f) => self.explorer = Some(f),
            Figures::Crash(f) => self.crash = Some(f),
            Figures::Layout(f) => self.layout = Some(f),
            Figures::Faults(f) => self.faults = Some(f),
            Figures::Sabotage(f) => self.sabotage = Some(f),
        }
    }

    /// Whether no suite left figures.
    pub fn is_empty(&self) -> bool {
        self.conformance.is_none()
            && self.crash.is_none()
            && self.explorer.is_none()
            && self.layout.is_none()
            && self.faults.is_none()
            && self.sabotage.is_none()
    }
}
