//! What the children-once checker found (docs/PROTOCOL.md §4.3).

use serde::{Deserialize, Serialize};

/// What broke children-once, with the events involved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ChildViolation {
    /// The child's save was acknowledged, yet no effect was applied for it.
    Lost {
        /// The child.
        child: String,
        /// Invoke events of its acknowledged saves.
        saves: Vec<usize>,
    },
    /// More than one effect was applied for the child.
    AppliedTwice {
        /// The child.
        child: String,
        /// The effect ids applied for it.
        effects: Vec<String>,
        /// Invoke events of its saves (any outcome but a certain refusal).
        saves: Vec<usize>,
    },
    /// An effect was applied for a child that was never saved.
    NeverSaved {
        /// The child.
        child: String,
        /// The effect ids applied for it.
        effects: Vec<String>,
    },
    /// The child was completed by two different claims.
    CompletedTwice {
        /// The child.
        child: String,
        /// The completion events that answered `completed`, with the
        /// attempt each named: (completion event, attempt).
        completions: Vec<(usize, i64)>,
    },
    /// The child was claimed again after its completion was acknowledged.
    ClaimedAfterDone {
        /// The child.
        child: String,
        /// The completion event that answered `completed`.
        completed_at: usize,
        /// The invoke event of the later claim.
        claim_invoke: usize,
        /// The completion event where it answered `claimed`.
        claimed_at: usize,
    },
}

/// The verdict of children-once: holds when `violations` is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildrenOnce {
    /// Everything that broke, children in id order.
    pub violations: Vec<ChildViolation>,
    /// Children whose save was acknowledged (each must have one effect).
    pub acknowledged: usize,
    /// Children only saved with an unknown outcome (zero or one effect).
    pub ambiguous: usize,
}

impl ChildrenOnce {
    /// Nothing broke.
    pub fn holds(&self) -> bool {
        self.violations.is_empty()
    }
}

impl super::Findings for ChildrenOnce {
    fn checked(&self, ops: &[crate::history::Operation<'_>]) -> super::Checked {
        super::Checked::of(
            self.violations
                .iter()
                .map(|v| super::blame::of_child(v, ops))
                .collect(),
        )
    }

    fn summary(&self) -> String {
        format!(
            "{} children acknowledged, {} ambiguous, {} violations",
            self.acknowledged,
            self.ambiguous,
            self.violations.len()
        )
    }
}
