//! The sequential conformance suite (SPEC 3.1): every operation and edge case
//! of the three contracts on a server whose clock storeproof controls, bad
//! input, odd ids, the server's own clock ruling, the server assumptions,
//! kept execution ids never in Redis, and bytes per tree.
//!
//! Most checks are [`scenario`]s judged reply by reply by the sequential
//! model; the rest (`special`, `server_checks`) look at the server itself.
//! A new check goes into the list of its contract's module (`lease`, `queue`,
//! `rate`, `server_checks`) with a stable id named for what it checks.

mod lease;
mod queue;
mod races;
mod rate;
mod runner;
pub mod scenario;
mod server_checks;
mod special;

use std::sync::Arc;

pub use runner::{run_check, run_suite, ServerRef, Target};
pub use server_checks::ServerCase;
pub use special::Special;

use harness::check::Level;
use harness::contract::Contract;
use scenario::Step;

/// How a check runs.
#[derive(Clone)]
pub enum CheckKind {
    /// A scenario judged by the sequential model.
    Scenario(fn() -> Vec<Step>),
    /// A check that inspects the server itself.
    Special(Special),
    /// A server-assumption case on a server started for it.
    Server(ServerCase),
}

/// One conformance check: a stable id, its level and what it proves.
#[derive(Clone)]
pub struct CheckDef {
    /// Stable id, e.g. `conformance.lease.take-busy`.
    pub id: &'static str,
    /// MUST or SHOULD: whether a failure fails the run or only warns.
    pub level: Level,
    /// The contract the check needs the store to offer (none: server checks).
    pub contract: Option<Contract>,
    /// One sentence: what passing proves.
    pub about: &'static str,
    /// How it runs.
    pub kind: CheckKind,
}

/// Every conformance check, in report order.
pub fn all_checks() -> Vec<Arc<CheckDef>> {
    let mut checks = Vec::new();
    checks.extend(lease::checks());
    checks.extend(queue::checks());
    checks.extend(rate::checks());
    checks.extend(server_checks::checks());
    checks.into_iter().map(Arc::new).collect()
}

pub(crate) fn scenario_check(
    id: &'static str,
    level: Level,
    contract: Contract,
    about: &'static str,
    steps: fn() -> Vec<Step>,
) -> CheckDef {
    CheckDef {
        id,
        level,
        contract: Some(contract),
        about,
        kind: CheckKind::Scenario(steps),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn ids_are_unique_stable_and_named_for_their_suite() {
        let checks = all_checks();
        let ids: BTreeSet<_> = checks.iter().map(|c| c.id).collect();
        assert_eq!(ids.len(), checks.len(), "duplicate check id");
        for id in ids {
            assert!(id.starts_with("conformance."), "{id}");
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-'),
                "{id}"
            );
        }
        assert!(checks.len() >= 40, "only {} checks", checks.len());
    }

    #[test]
    fn every_scenario_is_consistent_with_the_model() {
        // The model must agree with itself on every scenario: a scenario that
        // the model cannot follow (say, a release of a grant that never
        // happened) would fail every store.
        for c in all_checks() {
            if let CheckKind::Scenario(steps) = c.kind {
                let steps = steps();
                assert!(!steps.is_empty(), "{}", c.id);
                runner::dry_run(&steps).unwrap_or_else(|e| panic!("{}: {e}", c.id));
            }
        }
    }
}
