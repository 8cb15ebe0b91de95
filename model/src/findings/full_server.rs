//! What the full-server check found: writes refused with `store_full`
//! and the promises broken while full.

use serde::{Deserialize, Serialize};

/// What the full-server check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FullServer {
    /// Writes refused with `store_full` while the server was full.
    pub refused_full: usize,
    /// Everything that broke, each naming its invoke event.
    pub violations: Vec<FullServerViolation>,
    /// Operations the store declined (`unsupported`: it does not offer
    /// them), each with its message: not judged, never blamed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declined: Vec<String>,
}

/// One broken promise of a full server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FullServerViolation {
    /// The invoke event of the operation.
    pub invoke: usize,
    /// The operation, e.g. `lease.take`.
    pub op: String,
    /// What was wrong.
    pub why: String,
}

impl FullServer {
    /// Nothing broke and the server was seen refusing.
    pub fn holds(&self) -> bool {
        self.violations.is_empty() && self.refused_full > 0
    }
}

impl super::Findings for FullServer {
    /// Violated by every broken promise; undecided when no write was
    /// refused with `store_full` (the server never filled).
    fn checked(&self, _ops: &[crate::history::Operation<'_>]) -> super::Checked {
        if !self.violations.is_empty() {
            return super::Checked::Violated(
                self.violations
                    .iter()
                    .map(super::blame::of_full_server)
                    .collect(),
            );
        }
        if self.refused_full == 0 {
            return super::Checked::Undecided(
                "no write was refused with store_full: the server did not fill, so the check could not be decided".into(),
            );
        }
        super::Checked::Holds
    }

    /// The refusals while full, the broken promises, and what was declined.
    fn summary(&self) -> String {
        let mut reason = format!(
            "{} writes refused with store_full while full, {} broken promises",
            self.refused_full,
            self.violations.len()
        );
        if !self.declined.is_empty() {
            // Declined operations are not judged: say which.
            reason.push_str(&format!(
                "; not judged, the store declined them: {}",
                self.declined.join("; ")
            ));
        }
        reason
    }
}
