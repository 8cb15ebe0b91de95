//! What the fencing checker found (docs/PROTOCOL.md §4.5).

use serde::{Deserialize, Serialize};

/// Where the store said a newer epoch existed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewerEpoch {
    /// The newer epoch.
    pub epoch: i64,
    /// The lease operation's invoke event.
    pub invoke_event: usize,
    /// Its completion event (before the stale write's invoke).
    pub complete_event: usize,
}

/// What broke fencing, with the events involved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum FencingViolation {
    /// A write of an older epoch took effect after a newer epoch was known
    /// granted.
    Stale {
        /// `effect.apply` or `call.begin`.
        op: String,
        /// The tree.
        tree: String,
        /// The stale epoch it was written with.
        epoch: i64,
        /// The effect or call id.
        id: String,
        /// Invoke events of the operations that may have written it: one
        /// when answered `applied`/`begun`; for an effect only the end state
        /// shows, every unknown-outcome apply that could have (each stale).
        invokes: Vec<usize>,
        /// Whether the store answered that it took effect (else the end
        /// state shows it).
        answered: bool,
        /// A newer epoch known granted before every one of those invokes.
        newer: NewerEpoch,
    },
    /// One call was begun more than once.
    BegunTwice {
        /// The call id.
        call: String,
        /// Invoke events of the `call.begin`s answered `begun`.
        invokes: Vec<usize>,
    },
    /// The store's own sequence shows the effect written after a newer
    /// epoch of its tree was granted.
    StoredAfterNewerEpoch {
        /// The tree.
        tree: String,
        /// The effect id.
        effect: String,
        /// The stale epoch it was written with.
        epoch: i64,
        /// The effect's position in the store's sequence.
        seq: i64,
        /// The first newer epoch granted before it.
        newer_epoch: i64,
        /// That grant's position in the store's sequence.
        newer_seq: i64,
    },
    /// The end state shows an effect no `effect.apply` of the history asked
    /// for (no apply of that tree, effect and epoch that may have happened).
    Unexplained {
        /// The stored effect.
        effect: StoredEffect,
    },
    /// The store answered `applied` and its own end state does not show
    /// the effect: an acknowledged write lost, or an end state that hides
    /// what the durable-order rule would judge.
    AppliedNotStored {
        /// The tree.
        tree: String,
        /// The effect id.
        effect: String,
        /// The epoch it was applied with.
        epoch: i64,
        /// The `effect.apply`'s invoke event.
        invoke: usize,
    },
    /// The store answered `granted {epoch}` and its own sequence shows no
    /// grant of that epoch: the durable-order rule cannot see what came
    /// after it.
    GrantNotSequenced {
        /// The tree.
        tree: String,
        /// The epoch granted.
        epoch: i64,
        /// The `lease.take`'s invoke event.
        invoke: usize,
    },
}

/// The verdict of fencing: holds when `violations` is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fencing {
    /// Everything that broke, in history order.
    pub violations: Vec<FencingViolation>,
    /// Invoke events of fenced operations whose ok answer did not read (or
    /// whose arguments did not): judged as unknown outcomes, or left out.
    pub unread: Vec<usize>,
    /// Each rule of the check, and whether this history and end state let
    /// it be applied (a rule not applied judged nothing: say so).
    #[serde(default)]
    pub rules: Vec<FencingRule>,
}

/// One rule of the fencing check, and whether it could be applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FencingRule {
    /// Its name: `stale-by-replies`, `begun-once`, `end-state` or
    /// `durable-order`.
    pub rule: String,
    /// Whether it judged something here.
    pub applied: bool,
    /// What it judged, or why it could not be applied.
    pub why: String,
}

impl Fencing {
    /// The rules not applied, each with why.
    pub fn not_applied(&self) -> Vec<&FencingRule> {
        self.rules.iter().filter(|r| !r.applied).collect()
    }

    /// Nothing broke.
    pub fn holds(&self) -> bool {
        self.violations.is_empty()
    }
}

/// One effect the durable store shows at the end of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEffect {
    /// The tree it was applied under.
    pub tree: String,
    /// The effect's id.
    pub effect: String,
    /// The epoch it was written with.
    pub epoch: i64,
}

impl super::Findings for Fencing {
    fn checked(&self, ops: &[crate::history::Operation<'_>]) -> super::Checked {
        super::Checked::of(
            self.violations
                .iter()
                .map(|v| super::blame::of_fencing(v, ops))
                .collect(),
        )
    }

    /// The violations, the rules applied, and why the others were not.
    fn summary(&self) -> String {
        let applied: Vec<&str> = self
            .rules
            .iter()
            .filter(|r| r.applied)
            .map(|r| r.rule.as_str())
            .collect();
        let not: Vec<String> = self
            .not_applied()
            .iter()
            .map(|r| format!("{} ({})", r.rule, r.why))
            .collect();
        let mut summary = format!(
            "{} violations; rules applied: {}",
            self.violations.len(),
            if applied.is_empty() {
                "none".to_string()
            } else {
                applied.join(", ")
            }
        );
        if !not.is_empty() {
            summary.push_str(&format!("; not applied: {}", not.join("; ")));
        }
        summary
    }
}
