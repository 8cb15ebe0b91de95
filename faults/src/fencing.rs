//! Fencing (docs/PROTOCOL.md §4.5): no effect of an older epoch applied after a
//! newer one was granted, even when the zombie reaches the write first; and a
//! call begun at most once.
//!
//! **Inputs.** A [`History`] holding the lease operations of the durable
//! lease store and the fenced operations of its fencing set
//! (`effect.apply {tree, holder, epoch, effect, payload}` and `call.begin
//! {tree, holder, epoch, call}`, with their `applied | begun | duplicate |
//! fenced {epoch}` replies), and [`DurableEnd`], the effects the durable
//! store shows at the end of the run.
//!
//! **What is known to have been granted, and when.** The store itself says
//! epoch `e` of a tree exists when a lease operation's reply names it:
//! `granted {epoch}`, `busy {epoch}`, `lost {epoch}` or a `lease.read` record.
//! That reply's completion event is the instant by which `e` was granted. A
//! take whose outcome is unknown may have granted an epoch, but nothing is
//! known of it, so it never blames the store.
//!
//! **The rule.** A fenced operation that took effect (an `applied` or
//! `begun` answer; for an `effect.apply` whose outcome is unknown, the end
//! state showing its tree, effect and epoch) took effect after its invoke.
//! If some epoch `e' > epoch` of its tree was known granted at an event
//! before that invoke, it took effect after `e'` was granted: a violation.
//! A grant that completed after the invoke may have come after the write,
//! so it never blames. When several unknown-outcome applies could have
//! written one stored effect, it is blamed only if every one of them would
//! be stale.
//!
//! A fenced operation answered with a reply it never gives is listed in
//! [`Fencing::unread`] and judged as an unknown outcome.
//!
//! **The durable order.** The rule above judges by the timing of the calls,
//! so it cannot blame a write that was checked before the takeover and
//! landed after it (a fence read outside the write's transaction): the
//! calls overlap. A store that numbers its lease log and its effects in one
//! sequence ([`DurableEnd::sequence`]) says itself in which order they were
//! committed: an effect of epoch `e` numbered after the grant (or takeover)
//! of an epoch `e' > e` of the same tree is a stale write whatever the
//! timing ([`FencingViolation::StoredAfterNewerEpoch`]). An end state without
//! that sequence is judged by the rule above alone.

use std::collections::{BTreeMap, HashMap};

use model::contract::Reply;
use model::observed::DurableState;
use model::observed::LeaseEvent;
use model::{Happened, History};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ops::{ended, End};
pub use model::findings::fencing::{
    Fencing, FencingRule, FencingViolation, NewerEpoch, StoredEffect,
};

/// What the durable store shows at the end of the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableEnd {
    /// Every applied effect, in any order.
    pub effects: Vec<StoredEffect>,
    /// The store's own commit order of grants and effects, if it keeps one
    /// (empty: unknown, and the durable-order rule judges nothing).
    #[serde(default)]
    pub sequence: Vec<Sequenced>,
    /// The store reported this end state of itself (else it reports none:
    /// empty, and only the rules on the replies judge).
    #[serde(default)]
    pub reported: bool,
}

impl DurableEnd {
    /// The end state a durable store reported of itself
    /// ([`harness::store::StoreFactory::durable_state`]): its effects, and
    /// its grants, takeovers and effects in its one sequence (renewals and
    /// releases start no epoch and are left out).
    pub fn from_state(state: &DurableState) -> DurableEnd {
        let effects = state
            .effects
            .iter()
            .map(|e| StoredEffect {
                tree: e.tree.clone(),
                effect: e.effect.clone(),
                epoch: e.epoch,
            })
            .collect();
        let grants = state
            .log
            .iter()
            .filter(|l| matches!(l.event, LeaseEvent::Grant | LeaseEvent::Takeover))
            .map(|l| Sequenced {
                seq: l.seq,
                tree: l.tree.clone(),
                epoch: l.epoch,
                what: SequencedKind::Grant,
            });
        let written = state.effects.iter().map(|e| Sequenced {
            seq: e.seq,
            tree: e.tree.clone(),
            epoch: e.epoch,
            what: SequencedKind::Effect {
                effect: e.effect.clone(),
            },
        });
        let mut sequence: Vec<Sequenced> = grants.chain(written).collect();
        sequence.sort_by_key(|s| s.seq);
        DurableEnd {
            effects,
            sequence,
            reported: true,
        }
    }
}

/// One entry of the durable store's commit order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sequenced {
    /// Its position: committed after every smaller number.
    pub seq: i64,
    /// The tree.
    pub tree: String,
    /// The epoch granted, or the epoch the effect was written with.
    pub epoch: i64,
    /// A grant or an effect.
    pub what: SequencedKind,
}

/// What a [`Sequenced`] entry records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SequencedKind {
    /// A grant or takeover: epoch `epoch` of the tree began.
    Grant,
    /// An effect written with epoch `epoch`.
    Effect {
        /// The effect id.
        effect: String,
    },
}

/// An `effect.apply` or `call.begin` answer, as read from its JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FencedAnswer {
    /// `effect.apply`: the effect was written.
    Applied,
    /// `call.begin`: the call was begun.
    Begun,
    /// Already applied or begun; nothing written.
    Duplicate,
    /// Refused: a newer epoch holds the tree.
    Fenced {
        /// The epoch the store named, if it named one.
        epoch: Option<i64>,
    },
}

impl FencedAnswer {
    /// Reads the reply of `op` (`effect.apply` or `call.begin`); `None`
    /// when it is no answer of that operation.
    pub fn read(op: &str, reply: &Reply) -> Option<FencedAnswer> {
        match (op, reply) {
            ("effect.apply", Reply::Applied {}) => Some(FencedAnswer::Applied),
            ("call.begin", Reply::Begun {}) => Some(FencedAnswer::Begun),
            (_, Reply::Duplicate {}) => Some(FencedAnswer::Duplicate),
            (_, Reply::Fenced { epoch }) => Some(FencedAnswer::Fenced {
                epoch: Some(*epoch),
            }),
            _ => None,
        }
    }

    fn took_effect(self) -> bool {
        matches!(self, FencedAnswer::Applied | FencedAnswer::Begun)
    }
}

struct FencedOp {
    invoke: usize,
    op: String,
    tree: String,
    epoch: i64,
    id: String,
    /// `None`: unknown outcome. Refused-for-certain ops are not kept.
    answer: Option<FencedAnswer>,
}

/// Checks fencing on `history`, the fenced operations' ok answers and the
/// durable store's end state.
pub fn check(history: &History, end: &DurableEnd) -> Fencing {
    let mut unread = Vec::new();
    // tree → epochs the store named, with the events that named them.
    let mut known: HashMap<String, Vec<NewerEpoch>> = HashMap::new();
    let mut fenced: Vec<FencedOp> = Vec::new();

    // Every operation paired by the one pairing (`History::operations`).
    let mut lease_ends: Vec<(usize, &str, End<'_>)> = Vec::new();
    let mut fenced_ends: HashMap<usize, End<'_>> = HashMap::new();
    for o in history.operations() {
        let end = ended(&o);
        if o.call.op.starts_with("lease.") {
            lease_ends.push((o.invoke.index, tree_of(&o.call.args), end));
        } else if is_fenced(&o.call.op) {
            fenced_ends.insert(o.invoke.index, end);
        }
    }
    let mut granted: Vec<(usize, String, i64)> = Vec::new();
    for (invoke, tree, end) in lease_ends {
        let End::Reply(complete, reply) = end else {
            continue;
        };
        if let Reply::Granted { epoch, .. } = reply {
            granted.push((invoke, tree.to_string(), *epoch));
        }
        let epoch = match reply {
            Reply::Granted { epoch, .. } | Reply::Busy { epoch, .. } => Some(*epoch),
            Reply::Lost { epoch, .. } => *epoch,
            Reply::Lease(Some(view)) => Some(view.epoch),
            _ => None,
        };
        if let Some(epoch) = epoch {
            known.entry(tree.to_string()).or_default().push(NewerEpoch {
                epoch,
                invoke_event: invoke,
                complete_event: complete,
            });
        }
    }

    for e in &history.events {
        let Happened::Invoke(call) = &e.what else {
            continue;
        };
        if !is_fenced(&call.op) {
            continue;
        }
        let args = &call.args;
        let id_key = if call.op == "effect.apply" {
            "effect"
        } else {
            "call"
        };
        let (Some(tree), Some(epoch), Some(id)) = (
            args.get("tree").and_then(Value::as_str),
            args.get("epoch").and_then(Value::as_i64),
            args.get(id_key).and_then(Value::as_str),
        ) else {
            unread.push(e.index);
            continue;
        };
        let answer = match fenced_ends.get(&e.index) {
            Some(End::Refused | End::Declined) => continue,
            Some(End::Reply(_, reply)) => {
                let a = FencedAnswer::read(&call.op, reply);
                if a.is_none() {
                    unread.push(e.index);
                }
                a
            }
            _ => None,
        };
        fenced.push(FencedOp {
            invoke: e.index,
            op: call.op.clone(),
            tree: tree.to_string(),
            epoch,
            id: id.to_string(),
            answer,
        });
    }

    // The newest epoch of `tree` the store named before event `before`.
    let newest_before = |tree: &str, before: usize| -> Option<&NewerEpoch> {
        known
            .get(tree)?
            .iter()
            .filter(|k| k.complete_event < before)
            .max_by_key(|k| (k.epoch, std::cmp::Reverse(k.complete_event)))
    };
    let stale = |op: &FencedOp| -> Option<NewerEpoch> {
        newest_before(&op.tree, op.invoke)
            .filter(|k| k.epoch > op.epoch)
            .cloned()
    };

    let mut violations = Vec::new();
    for op in &fenced {
        if op.answer.is_some_and(FencedAnswer::took_effect) {
            if let Some(newer) = stale(op) {
                violations.push(FencingViolation::Stale {
                    op: op.op.clone(),
                    tree: op.tree.clone(),
                    epoch: op.epoch,
                    id: op.id.clone(),
                    invokes: vec![op.invoke],
                    answered: true,
                    newer,
                });
            }
        }
    }

    let mut begun: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for op in &fenced {
        if op.answer == Some(FencedAnswer::Begun) {
            begun.entry(&op.id).or_default().push(op.invoke);
        }
    }
    for (call, invokes) in begun {
        if invokes.len() > 1 {
            violations.push(FencingViolation::BegunTwice {
                call: call.to_string(),
                invokes,
            });
        }
    }

    for stored in &end.effects {
        let candidates: Vec<&FencedOp> = fenced
            .iter()
            .filter(|op| {
                op.op == "effect.apply"
                    && op.tree == stored.tree
                    && op.id == stored.effect
                    && op.epoch == stored.epoch
            })
            .collect();
        if candidates.is_empty() {
            violations.push(FencingViolation::Unexplained {
                effect: stored.clone(),
            });
            continue;
        }
        // An `applied` answer explains it (and was judged above). When
        // every candidate answered (`duplicate` or `fenced`: none wrote),
        // the effect predates them; nothing here tells when it was written.
        if candidates
            .iter()
            .any(|op| op.answer == Some(FencedAnswer::Applied))
        {
            continue;
        }
        // Any unknown-outcome candidate may have written it. The earliest
        // is the least stale: if even it was sent after a newer epoch was
        // known, every one was, and that epoch was known before them all.
        let Some(first) = candidates
            .iter()
            .filter(|op| op.answer.is_none())
            .min_by_key(|op| op.invoke)
        else {
            continue;
        };
        if let Some(newer) = stale(first) {
            violations.push(FencingViolation::Stale {
                op: "effect.apply".into(),
                tree: stored.tree.clone(),
                epoch: stored.epoch,
                id: stored.effect.clone(),
                invokes: candidates
                    .iter()
                    .filter(|op| op.answer.is_none())
                    .map(|op| op.invoke)
                    .collect(),
                answered: false,
                newer,
            });
        }
    }

    violations.extend(durable_order(&end.sequence));
    if end.reported {
        violations.extend(unreported(&fenced, &granted, end));
    }

    unread.sort_unstable();
    let rules = rules_applied(&fenced, &known, end);
    Fencing {
        violations,
        unread,
        rules,
    }
}

/// Which rules had something to judge: a rule over no fenced operation,
/// no begun call, no end state or no commit order judged nothing.
fn rules_applied(
    fenced: &[FencedOp],
    known: &HashMap<String, Vec<NewerEpoch>>,
    end: &DurableEnd,
) -> Vec<FencingRule> {
    let rule = |rule: &str, applied: bool, why: String| FencingRule {
        rule: rule.into(),
        applied,
        why,
    };
    let epochs: usize = known.values().map(Vec::len).sum();
    let begun = fenced
        .iter()
        .filter(|op| op.answer == Some(FencedAnswer::Begun))
        .count();
    vec![
        rule(
            "stale-by-replies",
            !fenced.is_empty() && epochs > 0,
            format!(
                "{} fenced operations judged against {epochs} epochs the store's replies named",
                fenced.len()
            ),
        ),
        rule(
            "begun-once",
            begun > 0,
            format!("{begun} call.begin answered begun"),
        ),
        if end.reported {
            rule(
                "end-state",
                true,
                format!(
                    "{} stored effects the store reported of itself",
                    end.effects.len()
                ),
            )
        } else {
            rule(
                "end-state",
                false,
                "the store reports no end state of itself: effects whose apply ended unknown, and effects no apply asked for, were not judged".into(),
            )
        },
        if end.sequence.is_empty() {
            rule(
                "durable-order",
                false,
                "the store reports no commit order of its grants and effects: a stale write checked before a takeover and stored after it (the zombie reaching the write first) is judged only by the timing of the replies".into(),
            )
        } else {
            rule(
                "durable-order",
                true,
                format!(
                    "{} grants and effects in the store's own commit order",
                    end.sequence.len()
                ),
            )
        },
    ]
}

/// What a store that reports its end state must show of what it answered:
/// every effect it answered `applied` (it was committed, and no fault of
/// this suite takes a commit back), and in its sequence, when it keeps one,
/// every grant it answered `granted` (else the durable-order rule judges an
/// order with holes).
fn unreported(
    fenced: &[FencedOp],
    granted: &[(usize, String, i64)],
    end: &DurableEnd,
) -> Vec<FencingViolation> {
    let mut violations: Vec<FencingViolation> = fenced
        .iter()
        .filter(|op| op.op == "effect.apply" && op.answer == Some(FencedAnswer::Applied))
        .filter(|op| {
            !end.effects
                .iter()
                .any(|s| s.tree == op.tree && s.effect == op.id && s.epoch == op.epoch)
        })
        .map(|op| FencingViolation::AppliedNotStored {
            tree: op.tree.clone(),
            effect: op.id.clone(),
            epoch: op.epoch,
            invoke: op.invoke,
        })
        .collect();
    if !end.sequence.is_empty() {
        violations.extend(
            granted
                .iter()
                .filter(|(_, tree, epoch)| {
                    !end.sequence.iter().any(|s| {
                        s.what == SequencedKind::Grant && &s.tree == tree && s.epoch == *epoch
                    })
                })
                .map(
                    |(invoke, tree, epoch)| FencingViolation::GrantNotSequenced {
                        tree: tree.clone(),
                        epoch: *epoch,
                        invoke: *invoke,
                    },
                ),
        );
    }
    violations
}

/// The durable-order rule: every effect numbered after a grant of a newer
/// epoch of its tree.
fn durable_order(sequence: &[Sequenced]) -> Vec<FencingViolation> {
    let mut ordered: Vec<&Sequenced> = sequence.iter().collect();
    ordered.sort_by_key(|s| s.seq);
    // tree → the grants seen so far, in sequence order.
    let mut granted: HashMap<&str, Vec<&Sequenced>> = HashMap::new();
    let mut violations = Vec::new();
    for s in ordered {
        match &s.what {
            SequencedKind::Grant => granted.entry(&s.tree).or_default().push(s),
            SequencedKind::Effect { effect } => {
                let newer = granted
                    .get(s.tree.as_str())
                    .and_then(|g| g.iter().find(|g| g.epoch > s.epoch));
                if let Some(newer) = newer {
                    violations.push(FencingViolation::StoredAfterNewerEpoch {
                        tree: s.tree.clone(),
                        effect: effect.clone(),
                        epoch: s.epoch,
                        seq: s.seq,
                        newer_epoch: newer.epoch,
                        newer_seq: newer.seq,
                    });
                }
            }
        }
    }
    violations
}

fn is_fenced(op: &str) -> bool {
    op == "effect.apply" || op == "call.begin"
}

fn tree_of(args: &Value) -> &str {
    args.get("tree").and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::contract::{Call, ErrorKind, StoreError};
    use serde_json::json;

    #[derive(Default)]
    struct H {
        h: History,
        end: DurableEnd,
    }

    impl H {
        fn inv(&mut self, who: &str, op: &str, args: Value) -> usize {
            let call = Call {
                op: op.into(),
                args,
            };
            self.h.invoke(who, &call, None, 0);
            self.h.events.len() - 1
        }
        fn take(&mut self, who: &str) -> &mut Self {
            let args = json!({"tree": "t", "holder": who, "ttl_ms": 100});
            self.inv(who, "lease.take", args);
            self
        }
        fn granted(&mut self, who: &str, epoch: i64) -> &mut Self {
            let r = Reply::Granted {
                epoch,
                expires_at_ms: 100,
            };
            self.h.complete(who, "lease.take", &Ok(r), None, 0);
            self
        }
        fn lost(&mut self, who: &str, op: &str) -> &mut Self {
            let e = StoreError::new(ErrorKind::Unavailable, "reply lost");
            self.h.complete(who, op, &Err(e), None, 0);
            self
        }
        /// Sends `effect.apply`; returns its invoke event.
        fn apply(&mut self, who: &str, epoch: i64, effect: &str) -> usize {
            let args = json!({"tree": "t", "holder": who, "epoch": epoch,
                "effect": effect, "payload": "x"});
            self.inv(who, "effect.apply", args)
        }
        fn begin(&mut self, who: &str, epoch: i64, call: &str) -> usize {
            let args = json!({"tree": "t", "holder": who, "epoch": epoch, "call": call});
            self.inv(who, "call.begin", args)
        }
        /// The store's answer (its wire JSON) to the fenced operation
        /// invoked at `invoke`.
        fn answer(&mut self, invoke: usize, v: Value) -> &mut Self {
            let (who, op) = (
                self.h.events[invoke].instance.clone(),
                self.h.events[invoke].what.op().to_string(),
            );
            let reply = Reply::from_wire(&op, &v).unwrap();
            self.h.complete(&who, &op, &Ok(reply), None, 0);
            self
        }
        fn stored(&mut self, epoch: i64, effect: &str) -> &mut Self {
            self.end.effects.push(StoredEffect {
                tree: "t".into(),
                effect: effect.into(),
                epoch,
            });
            self
        }
        fn verdict(&self) -> Fencing {
            check(&self.h, &self.end)
        }
    }

    fn assert_stale(v: &Fencing, want_invokes: &[usize], want_answered: bool, newer: i64) {
        match &v.violations[..] {
            [FencingViolation::Stale {
                invokes,
                answered,
                newer: n,
                ..
            }] => {
                assert_eq!(invokes, want_invokes, "{v:?}");
                assert_eq!(*answered, want_answered, "{v:?}");
                assert_eq!(n.epoch, newer, "{v:?}");
            }
            _ => panic!("expected one stale write, got {v:?}"),
        }
    }

    #[test]
    fn a_zombie_fenced_after_a_takeover_passes() {
        let mut h = H::default();
        h.take("a").granted("a", 1);
        let first = h.apply("a", 1, "e1");
        h.answer(first, json!({"applied": {}})).stored(1, "e1");
        h.take("b").granted("b", 2);
        let zombie = h.apply("a", 1, "e2");
        h.answer(zombie, json!({"fenced": {"epoch": 2}}));
        let v = h.verdict();
        assert!(v.holds(), "{v:?}");
        assert!(v.unread.is_empty());
    }

    #[test]
    fn a_zombie_applied_after_a_known_takeover_fails() {
        let mut h = H::default();
        h.take("a").granted("a", 1);
        h.take("b").granted("b", 2);
        let zombie = h.apply("a", 1, "e2");
        h.answer(zombie, json!({"applied": {}})).stored(1, "e2");
        let v = h.verdict();
        assert_stale(&v, &[zombie], true, 2);
        let FencingViolation::Stale { newer, .. } = &v.violations[0] else {
            unreachable!()
        };
        assert_eq!((newer.invoke_event, newer.complete_event), (2, 3));
    }

    #[test]
    fn a_busy_reply_naming_a_newer_epoch_proves_it_was_granted() {
        let mut h = H::default();
        h.take("c");
        h.h.complete(
            "c",
            "lease.take",
            &Ok(Reply::Busy {
                holder: "b".into(),
                epoch: 3,
                expires_at_ms: 50,
            }),
            None,
            0,
        );
        let zombie = h.apply("a", 2, "e");
        h.answer(zombie, json!({"applied": {}}));
        assert_stale(&h.verdict(), &[zombie], true, 3);
    }

    #[test]
    fn a_grant_concurrent_with_the_write_or_with_unknown_outcome_is_not_blamed() {
        // The zombie's write was sent before the takeover was acknowledged:
        // the write may have come first.
        let mut h = H::default();
        h.take("a").granted("a", 1);
        let zombie = h.apply("a", 1, "e");
        h.take("b").granted("b", 2);
        h.answer(zombie, json!({"applied": {}}));
        assert!(h.verdict().holds(), "{:?}", h.verdict());

        // A take whose reply was lost may or may not have granted epoch 2.
        let mut h = H::default();
        h.take("a").granted("a", 1);
        h.take("b").lost("b", "lease.take");
        let zombie = h.apply("a", 1, "e");
        h.answer(zombie, json!({"applied": {}}));
        assert!(h.verdict().holds(), "{:?}", h.verdict());
    }

    #[test]
    fn an_unknown_apply_is_judged_by_the_end_state() {
        let setup = || {
            let mut h = H::default();
            h.take("a").granted("a", 1);
            h.take("b").granted("b", 2);
            let zombie = h.apply("a", 1, "e");
            h.lost("a", "effect.apply");
            (h, zombie)
        };
        // Not in the end state: it did not happen.
        let (h, _) = setup();
        assert!(h.verdict().holds());
        // In the end state: it happened after epoch 2 was known.
        let (mut h, zombie) = setup();
        h.stored(1, "e");
        assert_stale(&h.verdict(), &[zombie], false, 2);
        // A retry that never completed at all counts the same way.
        let (mut h, zombie) = setup();
        let retry = h.apply("a", 1, "e");
        h.stored(1, "e");
        assert_stale(&h.verdict(), &[zombie, retry], false, 2);
    }

    #[test]
    fn a_stored_effect_an_earlier_unknown_apply_may_have_written_is_not_blamed() {
        let mut h = H::default();
        h.take("a").granted("a", 1);
        h.apply("a", 1, "e");
        h.lost("a", "effect.apply");
        h.take("b").granted("b", 2);
        let retry = h.apply("a", 1, "e");
        h.answer(retry, json!({"duplicate": {}})).stored(1, "e");
        let v = h.verdict();
        assert!(v.holds(), "{v:?}");
    }

    #[test]
    fn a_stored_effect_no_apply_asked_for_fails() {
        let mut h = H::default();
        h.take("a").granted("a", 1);
        let apply = h.apply("a", 1, "e");
        h.answer(apply, json!({"applied": {}}));
        // Stored under another epoch than any apply sent.
        h.stored(7, "e");
        assert!(matches!(
            &h.verdict().violations[..],
            [FencingViolation::Unexplained { effect }] if effect.epoch == 7
        ));
    }

    #[test]
    fn a_call_is_begun_at_most_once() {
        let mut h = H::default();
        h.take("a").granted("a", 1);
        let first = h.begin("a", 1, "c1");
        h.answer(first, json!({"begun": {}}));
        let retry = h.begin("a", 1, "c1");
        h.answer(retry, json!({"duplicate": {}}));
        assert!(h.verdict().holds(), "{:?}", h.verdict());
        let again = h.begin("a", 1, "c1");
        h.answer(again, json!({"begun": {}}));
        assert_eq!(
            h.verdict().violations,
            vec![FencingViolation::BegunTwice {
                call: "c1".into(),
                invokes: vec![first, again]
            }]
        );
    }

    #[test]
    fn a_call_begun_under_a_superseded_epoch_fails() {
        let mut h = H::default();
        h.take("a").granted("a", 1);
        h.take("b").granted("b", 2);
        let zombie = h.begin("a", 1, "c1");
        h.answer(zombie, json!({"begun": {}}));
        assert_stale(&h.verdict(), &[zombie], true, 2);
    }

    #[test]
    fn the_sqlite_store_answers_read() {
        use model::observed::{CallOutcome, EffectOutcome, FenceReason};
        let fenced = EffectOutcome::Fenced {
            epoch: 2,
            reason: FenceReason::Superseded,
        };
        let cases = [
            (
                "effect.apply",
                EffectOutcome::Applied.into_reply(),
                FencedAnswer::Applied,
            ),
            (
                "effect.apply",
                EffectOutcome::Duplicate.into_reply(),
                FencedAnswer::Duplicate,
            ),
            (
                "effect.apply",
                fenced.into_reply(),
                FencedAnswer::Fenced { epoch: Some(2) },
            ),
            (
                "call.begin",
                CallOutcome::Begun.into_reply(),
                FencedAnswer::Begun,
            ),
        ];
        for (op, reply, want) in cases {
            assert_eq!(FencedAnswer::read(op, &reply), Some(want), "{op} {reply:?}");
        }
        // `applied` is not an answer of call.begin.
        assert_eq!(FencedAnswer::read("call.begin", &Reply::Applied {}), None);
    }

    fn seq(seq: i64, epoch: i64, effect: Option<&str>) -> Sequenced {
        Sequenced {
            seq,
            tree: "t".into(),
            epoch,
            what: effect.map_or(SequencedKind::Grant, |e| SequencedKind::Effect {
                effect: e.into(),
            }),
        }
    }

    /// A holds epoch 1; its apply was sent before B's take was answered (the
    /// calls overlap), so the timing rule cannot blame it either way.
    fn overlapping() -> H {
        let mut h = H::default();
        h.take("a").granted("a", 1);
        let apply = h.apply("a", 1, "e");
        h.take("b").granted("b", 2);
        h.answer(apply, json!({"applied": {}})).stored(1, "e");
        h
    }

    #[test]
    fn an_effect_stored_before_the_newer_grant_passes() {
        let mut h = overlapping();
        h.end.sequence = vec![seq(1, 1, None), seq(2, 1, Some("e")), seq(3, 2, None)];
        let v = h.verdict();
        assert!(v.holds(), "{v:?}");
        // Without a sequence the timing rule alone judges: it passes too.
        assert!(overlapping().verdict().holds());
        // An effect of another tree numbered after the takeover is not
        // this tree's: never blamed.
        let mut h = overlapping();
        let mut other = seq(4, 1, Some("e"));
        other.tree = "u".into();
        h.end.sequence = vec![
            seq(1, 1, None),
            seq(2, 1, Some("e")),
            seq(3, 2, None),
            other,
        ];
        let v = h.verdict();
        assert!(
            !v.violations
                .iter()
                .any(|x| matches!(x, FencingViolation::StoredAfterNewerEpoch { .. })),
            "{v:?}"
        );
    }

    #[test]
    fn an_effect_stored_after_the_newer_grant_fails_whatever_the_timing() {
        let mut h = overlapping();
        // The store's own order: grant 1, takeover 2, then the epoch-1 write.
        h.end.sequence = vec![seq(5, 1, Some("e")), seq(1, 1, None), seq(3, 2, None)];
        assert_eq!(
            h.verdict().violations,
            vec![FencingViolation::StoredAfterNewerEpoch {
                tree: "t".into(),
                effect: "e".into(),
                epoch: 1,
                seq: 5,
                newer_epoch: 2,
                newer_seq: 3,
            }]
        );
    }

    #[test]
    fn an_applied_effect_missing_from_a_reported_end_fails() {
        let mut h = overlapping();
        h.end.sequence = vec![seq(1, 1, None), seq(2, 1, Some("e")), seq(3, 2, None)];
        h.end.reported = true;
        assert!(h.verdict().holds(), "{:?}", h.verdict());
        // The store reports an end without the effect it answered `applied`.
        h.end.effects.clear();
        h.end.sequence.retain(|s| s.what == SequencedKind::Grant);
        let v = h.verdict();
        assert!(
            matches!(&v.violations[..], [FencingViolation::AppliedNotStored { effect, epoch: 1, .. }] if effect == "e"),
            "{v:?}"
        );
        // A store that reports no end state is judged by the replies alone.
        h.end.reported = false;
        assert!(h.verdict().holds());
    }

    #[test]
    fn a_granted_epoch_missing_from_a_reported_sequence_fails() {
        let mut h = overlapping();
        h.end.reported = true;
        // The sequence shows the effect but not the grant of epoch 2.
        h.end.sequence = vec![seq(1, 1, None), seq(2, 1, Some("e"))];
        let v = h.verdict();
        assert!(
            matches!(
                &v.violations[..],
                [FencingViolation::GrantNotSequenced { epoch: 2, .. }]
            ),
            "{v:?}"
        );
        // No sequence at all: the store keeps none, nothing to miss.
        h.end.sequence.clear();
        assert!(h.verdict().holds(), "{:?}", h.verdict());
    }

    #[test]
    fn the_rules_it_could_not_apply_are_named() {
        let mut h = H::default();
        h.take("a").granted("a", 1);
        let inv = h.apply("a", 1, "e1");
        h.answer(inv, json!({"applied": {}}));
        // No end state reported: neither the end-state rule nor the
        // durable order judged anything.
        let v = h.verdict();
        assert!(v.holds(), "{v:?}");
        let not: Vec<&str> = v.not_applied().iter().map(|r| r.rule.as_str()).collect();
        assert_eq!(not, vec!["begun-once", "end-state", "durable-order"]);
        assert!(v.not_applied()[2].why.contains("no commit order"));
        // With the store's own end state and order, they are applied.
        h.stored(1, "e1");
        h.end.sequence = vec![seq(1, 1, None), seq(2, 1, Some("e1"))];
        h.end.reported = true;
        let v = h.verdict();
        assert!(v.holds(), "{v:?}");
        let not: Vec<&str> = v.not_applied().iter().map(|r| r.rule.as_str()).collect();
        assert_eq!(not, vec!["begun-once"]);
    }

    #[test]
    fn an_end_state_without_a_sequence_reads_as_before() {
        let end: DurableEnd =
            serde_json::from_value(json!({"effects": [{"tree": "t", "effect": "e", "epoch": 1}]}))
                .unwrap();
        assert!(end.sequence.is_empty());
        assert_eq!(end.effects.len(), 1);
    }

    #[test]
    fn the_sqlite_state_converts_with_grants_and_effects_in_order() {
        use model::observed::DurableEffect;
        use model::observed::LogEntry;
        let log = |seq, event, epoch| LogEntry {
            seq,
            tree: "t".into(),
            event,
            holder: "a".into(),
            epoch,
            at_ms: 0,
            expires_at_ms: 0,
            previous_holder: None,
            previous_epoch: None,
        };
        let state = DurableState {
            effects: vec![DurableEffect {
                seq: 4,
                tree: "t".into(),
                effect: "e".into(),
                holder: "a".into(),
                epoch: 1,
            }],
            log: vec![
                log(1, LeaseEvent::Grant, 1),
                log(2, LeaseEvent::Renew, 1),
                log(3, LeaseEvent::Takeover, 2),
            ],
        };
        let end = DurableEnd::from_state(&state);
        assert!(end.reported);
        assert_eq!(
            end.sequence,
            vec![seq(1, 1, None), seq(3, 2, None), seq(4, 1, Some("e"))]
        );
        assert_eq!(end.effects[0].epoch, 1);
    }

    #[test]
    fn an_apply_answered_malformed_is_judged_as_an_unknown_outcome() {
        // Its effect landed though its answer went wrong: the stored effect
        // is explained by it, not "unexplained".
        let mut h = H::default();
        h.take("a").granted("a", 1);
        h.apply("a", 1, "e");
        let e = StoreError::new(ErrorKind::MalformedReply, "`applied` is not an object");
        h.h.complete("a", "effect.apply", &Err(e), None, 0);
        h.stored(1, "e");
        h.end.reported = true;
        let v = h.verdict();
        assert!(v.holds(), "{v:?}");
    }

    #[test]
    fn refused_and_unreadable_answers_are_never_blamed() {
        let mut h = H::default();
        h.take("a").granted("a", 1);
        h.take("b").granted("b", 2);
        let refused = h.apply("a", 1, "e");
        let e = StoreError::new(ErrorKind::BadRequest, "no");
        h.h.complete("a", "effect.apply", &Err(e), None, 0);
        let odd = h.apply("a", 1, "f");
        // An answer effect.apply never gives (a broken store's).
        h.h.complete("a", "effect.apply", &Ok(Reply::Kept {}), None, 0);
        let v = h.verdict();
        assert!(v.holds(), "{v:?}");
        assert_eq!(v.unread, vec![odd]);
        assert_ne!(refused, odd);
    }
}
