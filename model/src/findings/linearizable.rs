//! What the linearizability checker found: one verdict per tree, with a
//! linearization or the reply no order explains (docs/PROTOCOL.md §4.2).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One step of a linearization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The invoke event index of the operation (names it in the history).
    pub invoke_event: usize,
    /// The wire name.
    pub op: String,
    /// The instance that sent it.
    pub instance: String,
    /// For an operation whose outcome is unknown: whether it took effect in
    /// this linearization. `None` for an operation with a reply.
    pub took_effect: Option<bool>,
    /// The earliest server instant at which it can take effect in this order,
    /// given the steps before it (`None` when no server time is known).
    pub earliest_ms: Option<i64>,
    /// The latest such instant (`None` when unbounded or unknown).
    pub latest_ms: Option<i64>,
}

/// The verdict on one tree's operations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TreeVerdict {
    /// Some order explains every reply; here is one. Operations with an
    /// unknown outcome that did not take effect are listed too, with
    /// `took_effect: Some(false)`.
    Linearizable {
        /// The operations in the order they took effect.
        order: Vec<Step>,
    },
    /// No order explains the replies.
    NotLinearizable {
        /// The completion event ending the shortest prefix of the tree's
        /// history that is already not linearizable: the reply no order can
        /// explain, given what came before.
        at_event: usize,
        /// The invoke event of the operation that completed there.
        op_event: usize,
        /// Invoke events of the operations whose windows overlap that
        /// operation's (the ones a linearization could reorder with it).
        concurrent: Vec<usize>,
        /// The longest partial linearization the search found in that prefix.
        longest_partial: Vec<Step>,
        /// Why, in words: the lease as the longest partial linearization
        /// left it, and what the operation would have had to answer on it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    /// The search ran out of its step budget: the checker cannot tell.
    Undecided {
        /// How many search steps it took.
        steps: u64,
    },
}

impl TreeVerdict {
    /// Linearizable.
    pub fn is_linearizable(&self) -> bool {
        matches!(self, TreeVerdict::Linearizable { .. })
    }
}

/// The verdict on a whole history: one per tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Linearizability {
    /// Tree → its verdict.
    pub trees: BTreeMap<String, TreeVerdict>,
    /// Invoke events of lease operations left out: not a lease.take, renew,
    /// release or read, a call that does not parse, or refused for certain
    /// or declined (`unsupported`): it did not happen. A malformed reply is
    /// no refusal: that operation is judged as an unknown outcome.
    pub ignored: Vec<usize>,
}

impl Linearizability {
    /// Every tree is linearizable.
    pub fn all_linearizable(&self) -> bool {
        self.trees.values().all(TreeVerdict::is_linearizable)
    }

    /// The trees no order explains, with their verdicts.
    pub fn not_linearizable(&self) -> BTreeMap<String, TreeVerdict> {
        self.trees
            .iter()
            .filter(|(_, t)| matches!(t, TreeVerdict::NotLinearizable { .. }))
            .map(|(tree, t)| (tree.clone(), t.clone()))
            .collect()
    }
}

impl super::Findings for Linearizability {
    /// Violated by every tree no order explains; else undecided when the
    /// search ran out of its budget on some tree.
    fn checked(&self, _ops: &[crate::history::Operation<'_>]) -> super::Checked {
        let broken: Vec<crate::violation::Violation> = self
            .trees
            .iter()
            .filter_map(|(tree, t)| super::blame::of_tree(tree, t))
            .collect();
        if !broken.is_empty() {
            return super::Checked::Violated(broken);
        }
        if self
            .trees
            .values()
            .any(|t| matches!(t, TreeVerdict::Undecided { .. }))
        {
            return super::Checked::Undecided(
                "the search ran out of its budget on some tree".into(),
            );
        }
        super::Checked::Holds
    }

    /// The count, and why the first tree no order explains is so.
    fn summary(&self) -> String {
        let broken = self.not_linearizable();
        let counts = format!(
            "{} trees, {} not linearizable",
            self.trees.len(),
            broken.len()
        );
        let first = broken.iter().find_map(|(tree, t)| match t {
            TreeVerdict::NotLinearizable { why: Some(why), .. } => Some((tree, why)),
            _ => None,
        });
        match first {
            Some((tree, why)) => format!("{counts}; {tree}: {why}"),
            None => counts,
        }
    }
}
