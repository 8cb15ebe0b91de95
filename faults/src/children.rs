//! Children-once (docs/PROTOCOL.md §4.3): every saved child's effect applied
//! exactly once, none lost, none twice, and no effect for a child never saved.
//!
//! **Inputs.** The queue operations of a [`History`] (`queue.save`,
//! `queue.claim`, `queue.complete`, each paired invoke with completion per
//! instance: an instance has one operation in flight) and [`EndEffects`],
//! the effects the durable store shows at the end of the run, each naming
//! the child it was for. The effects come from the end state rather than from
//! `effect.apply` replies because the end state is what "lost" and "twice"
//! are about (a reply may be lost while its effect landed). The runner
//! must take that observation after the queue was drained (claims run until
//! `empty` with no claim left to expire), or a child still queued reads as
//! lost.
//!
//! **Unknown outcomes, counted both ways.** A `queue.save` answered `saved`
//! or `exists` is acknowledged: that child exists and must have exactly one
//! effect. A save whose outcome is unknown (an `info` completion, or no
//! completion) may or may not have made the child: zero or one effect is
//! fine either way, but two effects are always a failure (a malformed reply
//! is such an unknown outcome too). A save refused for certain (`fail`) or
//! declined (`unsupported`) did not happen. An effect for a child that no
//! `queue.save` ever named (or only saves refused for certain) is a failure.
//!
//! **From the history alone** (sound whatever the end state): two
//! `completed` answers for one child under different attempts (completed by
//! two claims), and a `claimed` answer for a child whose completion was
//! acknowledged before that claim was sent (a done child handed out again).

use std::collections::{BTreeMap, BTreeSet};

use model::contract::{Reply, Request};
use model::History;
use serde::{Deserialize, Serialize};

use crate::ops::{operations, End, Op};
pub use model::findings::children::{ChildViolation, ChildrenOnce};

/// One effect the durable store shows at the end of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedEffect {
    /// The child it was applied for.
    pub child: String,
    /// The effect's id in the durable store.
    pub effect: String,
}

/// The effects the durable store shows at the end of the run (taken after
/// the queue was drained).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndEffects {
    /// Every applied effect, in any order.
    pub applied: Vec<AppliedEffect>,
}

/// Queue operations of `history` that parse, paired with their completions.
fn queue_ops(history: &History) -> Vec<Op<'_>> {
    operations(history, |request| {
        matches!(
            request,
            Request::QueueSave { .. } | Request::QueueClaim { .. } | Request::QueueComplete { .. }
        )
    })
}

/// Checks children-once on the queue operations of `history` and the
/// effects the durable store shows at the end.
pub fn check(history: &History, end: &EndEffects) -> ChildrenOnce {
    let ops = queue_ops(history);
    // Per child: acknowledged saves, and saves that may have happened.
    let mut acked: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut maybe: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut completed: BTreeMap<&str, Vec<(usize, i64)>> = BTreeMap::new();
    for op in &ops {
        match (&op.request, op.end) {
            (Request::QueueSave { child, .. }, End::Reply(_, r)) => {
                if matches!(r, Reply::Saved {} | Reply::Exists { .. }) {
                    acked.entry(child).or_default().push(op.invoke);
                }
                maybe.entry(child).or_default().push(op.invoke);
            }
            (Request::QueueSave { child, .. }, End::Unknown) => {
                maybe.entry(child).or_default().push(op.invoke);
            }
            (
                Request::QueueComplete { child, attempt, .. },
                End::Reply(at, Reply::Completed {}),
            ) => {
                completed.entry(child).or_default().push((at, *attempt));
            }
            _ => {}
        }
    }
    let mut effects: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for e in &end.applied {
        effects.entry(&e.child).or_default().push(e.effect.clone());
    }

    let mut violations = Vec::new();
    let children: BTreeSet<&str> = maybe.keys().chain(effects.keys()).copied().collect();
    for child in children {
        let applied = effects.get(child).map_or(&[][..], Vec::as_slice);
        let saves = maybe.get(child);
        match (saves, applied.len()) {
            (None, n) if n > 0 => violations.push(ChildViolation::NeverSaved {
                child: child.to_string(),
                effects: applied.to_vec(),
            }),
            (Some(saves), n) if n > 1 => violations.push(ChildViolation::AppliedTwice {
                child: child.to_string(),
                effects: applied.to_vec(),
                saves: saves.clone(),
            }),
            (Some(_), 0) => {
                if let Some(saves) = acked.get(child) {
                    violations.push(ChildViolation::Lost {
                        child: child.to_string(),
                        saves: saves.clone(),
                    });
                }
            }
            _ => {}
        }
    }

    for (child, list) in &completed {
        let attempts: BTreeSet<i64> = list.iter().map(|&(_, a)| a).collect();
        if attempts.len() > 1 {
            violations.push(ChildViolation::CompletedTwice {
                child: child.to_string(),
                completions: list.clone(),
            });
        }
        // A done child is never claimable again: a claim sent after the
        // first acknowledged completion cannot have come before it.
        let Some(&(done_at, _)) = list.iter().min() else {
            continue;
        };
        let again = ops.iter().find_map(|op| match (&op.request, op.end) {
            (Request::QueueClaim { .. }, End::Reply(at, Reply::Claimed { child: c, .. }))
                if c == child && op.invoke > done_at =>
            {
                Some((op.invoke, at))
            }
            _ => None,
        });
        if let Some((claim_invoke, claimed_at)) = again {
            violations.push(ChildViolation::ClaimedAfterDone {
                child: child.to_string(),
                completed_at: done_at,
                claim_invoke,
                claimed_at,
            });
        }
    }

    let ambiguous = maybe.keys().filter(|c| !acked.contains_key(*c)).count();
    ChildrenOnce {
        violations,
        acknowledged: acked.len(),
        ambiguous,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::contract::{Call, ChildState, ErrorKind, StoreError};
    use serde_json::json;

    #[derive(Default)]
    struct H(History);

    impl H {
        fn inv(&mut self, who: &str, op: &str, args: serde_json::Value) -> &mut Self {
            let call = Call {
                op: op.into(),
                args,
            };
            self.0.invoke(who, &call, None, 0);
            self
        }
        fn save(&mut self, who: &str, child: &str) -> &mut Self {
            let args = json!({"child": child, "depth": 1, "payload": "p"});
            self.inv(who, "queue.save", args)
        }
        fn claim(&mut self, who: &str) -> &mut Self {
            self.inv(
                who,
                "queue.claim",
                json!({"instance": who, "claim_ttl_ms": 100}),
            )
        }
        fn complete(&mut self, who: &str, child: &str, attempt: i64) -> &mut Self {
            let args = json!({"child": child, "instance": who, "attempt": attempt});
            self.inv(who, "queue.complete", args)
        }
        fn ok(&mut self, who: &str, op: &str, reply: Reply) -> &mut Self {
            self.0.complete(who, op, &Ok(reply), None, 0);
            self
        }
        fn claimed(&mut self, who: &str, child: &str, attempt: i64) -> &mut Self {
            let r = Reply::Claimed {
                child: child.into(),
                depth: 1,
                payload: "p".into(),
                attempt,
            };
            self.ok(who, "queue.claim", r)
        }
        fn lost(&mut self, who: &str, op: &str) -> &mut Self {
            let e = StoreError::new(ErrorKind::Unavailable, "reply lost");
            self.0.complete(who, op, &Err(e), None, 0);
            self
        }
        fn refused(&mut self, who: &str, op: &str) -> &mut Self {
            let e = StoreError::new(ErrorKind::BadRequest, "no");
            self.0.complete(who, op, &Err(e), None, 0);
            self
        }
    }

    fn end(effects: &[(&str, &str)]) -> EndEffects {
        EndEffects {
            applied: effects
                .iter()
                .map(|&(child, effect)| AppliedEffect {
                    child: child.into(),
                    effect: effect.into(),
                })
                .collect(),
        }
    }

    /// The usual life of a child: saved, claimed, completed.
    fn one_child_done() -> H {
        let mut h = H::default();
        h.save("a", "c1").ok("a", "queue.save", Reply::Saved {});
        h.claim("b").claimed("b", "c1", 1);
        h.complete("b", "c1", 1)
            .ok("b", "queue.complete", Reply::Completed {});
        h
    }

    #[test]
    fn a_child_saved_and_applied_once_passes() {
        let v = check(&one_child_done().0, &end(&[("c1", "e1")]));
        assert!(v.holds(), "{v:?}");
        assert_eq!((v.acknowledged, v.ambiguous), (1, 0));
    }

    #[test]
    fn an_acknowledged_child_without_effect_is_lost() {
        let v = check(&one_child_done().0, &end(&[]));
        assert_eq!(
            v.violations,
            vec![ChildViolation::Lost {
                child: "c1".into(),
                saves: vec![0]
            }]
        );
        // `exists` acknowledges the child too.
        let mut h = H::default();
        h.save("a", "c1").lost("a", "queue.save");
        h.save("a", "c1").ok(
            "a",
            "queue.save",
            Reply::Exists {
                state: ChildState::Queued,
            },
        );
        let v = check(&h.0, &end(&[]));
        assert!(matches!(&v.violations[..], [ChildViolation::Lost { saves, .. }] if saves == &[2]));
    }

    #[test]
    fn a_save_answered_malformed_may_have_made_its_child() {
        // The save ran (its answer went wrong): its effect is no child
        // "never saved", and no effect is no loss.
        let mut h = H::default();
        h.save("a", "c1");
        let e = StoreError::new(ErrorKind::MalformedReply, "`saved` is not an object");
        h.0.complete("a", "queue.save", &Err(e), None, 0);
        let v = check(&h.0, &end(&[("c1", "e1")]));
        assert!(v.holds(), "{v:?}");
        assert_eq!((v.acknowledged, v.ambiguous), (0, 1));
        assert!(check(&h.0, &end(&[])).holds());
    }

    #[test]
    fn two_effects_for_one_child_fail() {
        let v = check(&one_child_done().0, &end(&[("c1", "e1"), ("c1", "e2")]));
        assert!(
            matches!(&v.violations[..], [ChildViolation::AppliedTwice { effects, .. }] if effects.len() == 2),
            "{v:?}"
        );
    }

    #[test]
    fn a_save_with_unknown_outcome_passes_with_zero_or_one_effect_but_not_two() {
        for lost_reply in [true, false] {
            let mut h = H::default();
            h.save("a", "c1");
            if lost_reply {
                h.lost("a", "queue.save");
            }
            for effects in [&[][..], &[("c1", "e1")][..]] {
                let v = check(&h.0, &end(effects));
                assert!(v.holds(), "{effects:?}: {v:?}");
                assert_eq!((v.acknowledged, v.ambiguous), (0, 1));
            }
            let v = check(&h.0, &end(&[("c1", "e1"), ("c1", "e2")]));
            assert!(matches!(
                &v.violations[..],
                [ChildViolation::AppliedTwice { .. }]
            ));
        }
    }

    #[test]
    fn an_effect_for_a_child_never_saved_fails() {
        let v = check(&one_child_done().0, &end(&[("c1", "e1"), ("ghost", "e9")]));
        assert_eq!(
            v.violations,
            vec![ChildViolation::NeverSaved {
                child: "ghost".into(),
                effects: vec!["e9".into()]
            }]
        );
        // A save refused for certain did not happen.
        let mut h = H::default();
        h.save("a", "c2").refused("a", "queue.save");
        let v = check(&h.0, &end(&[("c2", "e1")]));
        assert!(matches!(
            &v.violations[..],
            [ChildViolation::NeverSaved { .. }]
        ));
    }

    #[test]
    fn completed_by_two_claims_fails_but_a_retried_completion_does_not() {
        let mut h = one_child_done();
        // The claim expired, another instance claimed and completed too.
        h.claim("c").claimed("c", "c1", 2);
        h.complete("c", "c1", 2)
            .ok("c", "queue.complete", Reply::Completed {});
        let v = check(&h.0, &end(&[("c1", "e1")]));
        assert!(
            v.violations
                .iter()
                .any(|x| matches!(x, ChildViolation::CompletedTwice { completions, .. } if completions.len() == 2)),
            "{v:?}"
        );

        // The same claim completing twice (a retry after a lost reply) is
        // not two claims.
        let mut h = one_child_done();
        h.complete("b", "c1", 1)
            .ok("b", "queue.complete", Reply::Completed {});
        assert!(check(&h.0, &end(&[("c1", "e1")])).holds());
    }

    #[test]
    fn a_claim_sent_after_an_acknowledged_completion_must_not_get_the_child() {
        let mut h = one_child_done();
        h.claim("c").claimed("c", "c1", 2);
        let v = check(&h.0, &end(&[("c1", "e1")]));
        assert_eq!(
            v.violations,
            vec![ChildViolation::ClaimedAfterDone {
                child: "c1".into(),
                completed_at: 5,
                claim_invoke: 6,
                claimed_at: 7
            }]
        );
        // A claim after done that finds nothing, or whose reply is lost,
        // is fine.
        let mut h = one_child_done();
        h.claim("c").ok("c", "queue.claim", Reply::Empty {});
        h.claim("c").lost("c", "queue.claim");
        let v = check(&h.0, &end(&[("c1", "e1")]));
        assert!(v.holds(), "{v:?}");
    }
}
