//! What the pure checkers of the faults suite found, as data, and the one
//! way every checker's findings are judged ([`Findings::checked`]): the
//! detail a fault check's evidence carries and its violations are made
//! from these. The checkers themselves (`faults::{linearizable, children,
//! fencing, rate_bounds, full_server}`) compute them from a history.

pub mod blame;
pub mod children;
pub mod fencing;
pub mod full_server;
pub mod linearizable;
pub mod rate;

use crate::history::Operation;
use crate::violation::Violation;

/// What a checker decided about a history (Jepsen's `check`): it holds, it
/// is violated (each violation naming the events of the history it blames),
/// or the checker could not tell (why: its own limit, never the store's
/// doing).
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// Nothing broke.
    Holds,
    /// Something broke; never empty.
    Violated(Vec<Violation>),
    /// The checker could not decide.
    Undecided(String),
}

impl Checked {
    /// Violated when `violations` holds any, else holds.
    pub fn of(violations: Vec<Violation>) -> Checked {
        if violations.is_empty() {
            Checked::Holds
        } else {
            Checked::Violated(violations)
        }
    }

    /// Whether nothing broke (undecided is not broken either).
    pub fn holds(&self) -> bool {
        !matches!(self, Checked::Violated(_))
    }
}

/// A checker's findings, judged the one way every checker's are.
pub trait Findings {
    /// The verdict, each violation resolved against `ops`, the operations of
    /// the history the findings are of ([`crate::History::operations`]).
    fn checked(&self, ops: &[Operation<'_>]) -> Checked;

    /// One line for the check's reason: what was judged and what was found.
    fn summary(&self) -> String;
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::full_server::{FullServer, FullServerViolation};
    use super::linearizable::{Linearizability, TreeVerdict};
    use super::rate::RateBounds;
    use super::*;

    fn trees(verdicts: Vec<TreeVerdict>) -> Linearizability {
        Linearizability {
            trees: verdicts
                .into_iter()
                .enumerate()
                .map(|(i, t)| (format!("t{i}"), t))
                .collect::<BTreeMap<_, _>>(),
            ignored: Vec::new(),
        }
    }

    #[test]
    fn a_broken_tree_violates_an_exhausted_search_is_undecided_else_it_holds() {
        let broken = TreeVerdict::NotLinearizable {
            at_event: 3,
            op_event: 2,
            concurrent: vec![1],
            longest_partial: Vec::new(),
            why: None,
        };
        let out_of_budget = TreeVerdict::Undecided { steps: 9 };
        let fine = TreeVerdict::Linearizable { order: Vec::new() };
        let both = trees(vec![broken, out_of_budget.clone()]).checked(&[]);
        let Checked::Violated(found) = both else {
            panic!("{both:?}")
        };
        assert_eq!(found[0].blamed, vec![3, 2]);
        assert!(matches!(
            trees(vec![fine.clone(), out_of_budget]).checked(&[]),
            Checked::Undecided(_)
        ));
        assert_eq!(trees(vec![fine]).checked(&[]), Checked::Holds);
    }

    #[test]
    fn a_server_that_never_filled_is_undecided_never_a_pass() {
        let never_full = FullServer::default();
        assert!(matches!(never_full.checked(&[]), Checked::Undecided(_)));
        let refused = FullServer {
            refused_full: 2,
            ..FullServer::default()
        };
        assert_eq!(refused.checked(&[]), Checked::Holds);
        let broken = FullServer {
            violations: vec![FullServerViolation {
                invoke: 4,
                op: "lease.take".into(),
                why: "granted while full".into(),
            }],
            ..refused
        };
        assert!(!broken.checked(&[]).holds());
        assert_eq!(RateBounds::default().checked(&[]), Checked::Holds);
    }
}
