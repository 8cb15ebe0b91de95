//! The sabotage suite's figures: the matrix of named sabotages against the
//! checks of the suites run on them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::Verdict;

/// What the sabotage suite measured: one row per sabotage it ran, and the
/// checks that caught at least one of them (the matrix's columns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SabotageFigures {
    /// One row per sabotage run, in the suite's order.
    pub rows: Vec<SabotageRow>,
    /// Every check that failed (or warned) on at least one sabotage, in the
    /// order the suites declare them: the columns worth drawing.
    pub catching: Vec<String>,
    /// The sizes the suites were run at, e.g. `explorer depth` → `6`.
    pub sizes: BTreeMap<String, String>,
    /// Wall time of the suite, in seconds.
    pub seconds: f64,
}

/// One sabotage and every verdict the suites gave on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SabotageRow {
    /// Its name after `sabotage:`.
    pub sabotage: String,
    /// The store it was run as, in `--store` spelling.
    pub store: String,
    /// The promise it breaks, in one sentence.
    pub breaks: String,
    /// The id of the check that must catch it.
    pub caught_by: String,
    /// The suites run on it, in order.
    pub suites: Vec<String>,
    /// Every check's verdict on it (outside-claim checks as skipped).
    pub verdicts: BTreeMap<String, Verdict>,
    /// The verdict of its own `sabotage.<name>` check: pass when the named
    /// check caught it.
    pub verdict: Verdict,
    /// Wall time of its row, in seconds.
    pub seconds: f64,
}

impl SabotageRow {
    /// The checks that caught it (failed or warned), in id order, and its
    /// named check when the row passed on it undecided (a check that never
    /// blames the store catches by refusing to pass).
    pub fn caught_by_all(&self) -> Vec<&str> {
        self.verdicts
            .iter()
            .filter(|(id, v)| {
                matches!(v, Verdict::Fail | Verdict::Warn)
                    || (**id == self.caught_by
                        && **v == Verdict::Unknown
                        && self.verdict == Verdict::Pass)
            })
            .map(|(id, _)| id.as_str())
            .collect()
    }
}
