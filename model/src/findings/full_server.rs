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
