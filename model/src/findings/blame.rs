//! Each fault checker's violations as the model's [`Violation`]: the
//! events each blames and relates, named by the checker that found it
//! (the report draws them and reads nothing else of the finding).

use crate::contract::{Reply, Request};
use crate::history::Operation;
use crate::violation::{Named, Violation};

use super::children::ChildViolation;
use super::fencing::FencingViolation;
use super::full_server::FullServerViolation;
use super::linearizable::TreeVerdict;
use super::rate::RateViolation;

/// The invoke events of the operations that asked for one of `effects`
/// (their call names it as `effect`).
fn asking_for(ops: &[Operation], effects: &[&str]) -> Vec<usize> {
    ops.iter()
        .filter(|op| {
            matches!(Request::parse(op.call), Ok(Request::EffectApply { effect, .. })
                if effects.contains(&effect.as_str()))
        })
        .map(|op| op.invoke.index)
        .collect()
}

/// The invoke events of the operations on `tree` answered with a grant of
/// `epoch`.
fn grants_of(ops: &[Operation], tree: &str, epoch: i64) -> Vec<usize> {
    ops.iter()
        .filter(|op| Request::parse(op.call).is_ok_and(|r| r.subjects().contains(&("tree", tree))))
        .filter(|op| matches!(op.reply(), Some(Reply::Granted { epoch: e, .. }) if *e == epoch))
        .map(|op| op.invoke.index)
        .collect()
}

/// A tree no order explains (`verdict` of `tree`), if it is one.
pub fn of_tree(tree: &str, verdict: &TreeVerdict) -> Option<Violation> {
    let TreeVerdict::NotLinearizable {
        at_event,
        op_event,
        concurrent,
        ..
    } = verdict
    else {
        return None;
    };
    Some(Violation {
        at_event: Some(*at_event),
        ..Violation::new(
            None,
            Some(Named::new("tree", tree)),
            vec![*at_event, *op_event],
        )
        .relating(concurrent.clone())
    })
}

/// A broken children-once; `ops` are its history's operations.
pub fn of_child(v: &ChildViolation, ops: &[Operation]) -> Violation {
    let kind = Some(match v {
        ChildViolation::Lost { .. } => "lost",
        ChildViolation::AppliedTwice { .. } => "applied_twice",
        ChildViolation::NeverSaved { .. } => "never_saved",
        ChildViolation::CompletedTwice { .. } => "completed_twice",
        ChildViolation::ClaimedAfterDone { .. } => "claimed_after_done",
    });
    let (child, blamed) = match v {
        ChildViolation::Lost { child, saves } => (child, saves.clone()),
        ChildViolation::AppliedTwice {
            child,
            effects,
            saves,
        } => {
            let effects: Vec<&str> = effects.iter().map(String::as_str).collect();
            let mut blamed = saves.clone();
            blamed.extend(asking_for(ops, &effects));
            (child, blamed)
        }
        ChildViolation::NeverSaved { child, effects } => {
            let effects: Vec<&str> = effects.iter().map(String::as_str).collect();
            (child, asking_for(ops, &effects))
        }
        ChildViolation::CompletedTwice { child, completions } => {
            (child, completions.iter().map(|(e, _)| *e).collect())
        }
        ChildViolation::ClaimedAfterDone {
            child,
            completed_at,
            claim_invoke,
            claimed_at,
        } => (child, vec![*completed_at, *claim_invoke, *claimed_at]),
    };
    Violation::new(kind, Some(Named::new("child", child)), blamed)
}

/// A broken fencing rule; `ops` are its history's operations.
pub fn of_fencing(v: &FencingViolation, ops: &[Operation]) -> Violation {
    match v {
        FencingViolation::Stale {
            tree,
            invokes,
            newer,
            ..
        } => Violation::new(
            Some("stale"),
            Some(Named::new("tree", tree)),
            invokes.clone(),
        )
        .relating(vec![newer.invoke_event, newer.complete_event]),
        FencingViolation::BegunTwice { call, invokes } => Violation::new(
            Some("begun_twice"),
            Some(Named::new("call", call)),
            invokes.clone(),
        ),
        FencingViolation::StoredAfterNewerEpoch {
            tree,
            effect,
            newer_epoch,
            ..
        } => Violation::new(
            Some("stored_after_newer_epoch"),
            Some(Named::new("tree", tree)),
            asking_for(ops, &[effect]),
        )
        .relating(grants_of(ops, tree, *newer_epoch)),
        FencingViolation::Unexplained { effect } => Violation::new(
            Some("unexplained"),
            Some(Named::new("tree", &effect.tree)),
            asking_for(ops, &[&effect.effect]),
        ),
        FencingViolation::AppliedNotStored {
            tree,
            effect,
            invoke,
            ..
        } => {
            let mut blamed = vec![*invoke];
            blamed.extend(asking_for(ops, &[effect]));
            Violation::new(
                Some("applied_not_stored"),
                Some(Named::new("tree", tree)),
                blamed,
            )
        }
        FencingViolation::GrantNotSequenced { tree, invoke, .. } => Violation::new(
            Some("grant_not_sequenced"),
            Some(Named::new("tree", tree)),
            vec![*invoke],
        ),
    }
}

/// A broken rate bound.
pub fn of_rate(v: &RateViolation) -> Violation {
    let (kind, provider, blamed, related) = match v {
        RateViolation::TooManySlots {
            provider,
            acquire,
            live,
            ..
        } => ("too_many_slots", provider, vec![*acquire], live.clone()),
        RateViolation::TooManyHits {
            provider,
            hit,
            counted,
            ..
        } => ("too_many_hits", provider, vec![*hit], counted.clone()),
        RateViolation::TooManyTogether {
            provider, grants, ..
        } => ("too_many_together", provider, grants.clone(), Vec::new()),
        RateViolation::GrantedWhilePaused {
            provider,
            grant,
            pause_event,
            ..
        } => (
            "granted_while_paused",
            provider,
            vec![*grant],
            vec![*pause_event],
        ),
    };
    Violation::new(Some(kind), Some(Named::new("provider", provider)), blamed).relating(related)
}

/// A broken promise of a full server.
pub fn of_full_server(v: &FullServerViolation) -> Violation {
    Violation::new(None, None, vec![v.invoke])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::contract::Call;
    use crate::findings::fencing::{NewerEpoch, StoredEffect};
    use crate::History;

    /// The `kind` a finding's JSON carries.
    fn tag<T: serde::Serialize>(v: &T) -> Option<String> {
        serde_json::to_value(v).unwrap()["kind"]
            .as_str()
            .map(str::to_string)
    }

    #[test]
    fn each_violation_is_named_as_its_checker_writes_it() {
        let h = History::default();
        let child = || "c".to_string();
        for v in [
            ChildViolation::Lost {
                child: child(),
                saves: vec![1],
            },
            ChildViolation::AppliedTwice {
                child: child(),
                effects: vec!["e".into()],
                saves: vec![1],
            },
            ChildViolation::NeverSaved {
                child: child(),
                effects: vec!["e".into()],
            },
            ChildViolation::CompletedTwice {
                child: child(),
                completions: vec![(3, 1), (5, 2)],
            },
            ChildViolation::ClaimedAfterDone {
                child: child(),
                completed_at: 3,
                claim_invoke: 4,
                claimed_at: 6,
            },
        ] {
            let blamed = of_child(&v, &h.operations());
            assert_eq!(blamed.kind, tag(&v), "{v:?}");
            assert_eq!(blamed.about, Some(Named::new("child", "c")));
        }
        let newer = NewerEpoch {
            epoch: 2,
            invoke_event: 1,
            complete_event: 2,
        };
        for v in [
            FencingViolation::Stale {
                op: "effect.apply".into(),
                tree: "t".into(),
                epoch: 1,
                id: "e".into(),
                invokes: vec![4],
                answered: true,
                newer: newer.clone(),
            },
            FencingViolation::BegunTwice {
                call: "k".into(),
                invokes: vec![4, 6],
            },
            FencingViolation::StoredAfterNewerEpoch {
                tree: "t".into(),
                effect: "e".into(),
                epoch: 1,
                seq: 5,
                newer_epoch: 2,
                newer_seq: 4,
            },
            FencingViolation::Unexplained {
                effect: StoredEffect {
                    tree: "t".into(),
                    effect: "e".into(),
                    epoch: 1,
                },
            },
            FencingViolation::AppliedNotStored {
                tree: "t".into(),
                effect: "e".into(),
                epoch: 1,
                invoke: 4,
            },
            FencingViolation::GrantNotSequenced {
                tree: "t".into(),
                epoch: 1,
                invoke: 4,
            },
        ] {
            assert_eq!(of_fencing(&v, &h.operations()).kind, tag(&v), "{v:?}");
        }
        let provider = || "p".to_string();
        for v in [
            RateViolation::TooManySlots {
                provider: provider(),
                acquire: 4,
                clock_ms: 0,
                limit: 1,
                live: vec![1],
            },
            RateViolation::TooManyHits {
                provider: provider(),
                hit: 4,
                clock_ms: 0,
                limit: 1,
                window_ms: 10,
                counted: vec![1],
            },
            RateViolation::TooManyTogether {
                provider: provider(),
                op: "rate.hit".into(),
                grants: vec![1, 4],
                limit: 1,
            },
            RateViolation::GrantedWhilePaused {
                provider: provider(),
                grant: 4,
                clock_ms: 0,
                until_ms: 9,
                pause_event: 2,
            },
        ] {
            let blamed = of_rate(&v);
            assert_eq!(blamed.kind, tag(&v), "{v:?}");
            assert!(!blamed.blamed.is_empty());
        }
    }

    #[test]
    fn an_effect_blames_what_asked_for_it_and_relates_the_newer_grant() {
        let call = |op: &str, args| Call {
            op: op.into(),
            args,
        };
        let mut h = History::default();
        let apply = |effect: &str| {
            call(
                "effect.apply",
                json!({"tree": "t", "holder": "a", "effect": effect, "epoch": 1, "payload": "p"}),
            )
        };
        h.invoke("a", &apply("e1"), None, 0); // 0
        h.invoke("b", &apply("e2"), None, 0); // 1
        let take = call(
            "lease.take",
            json!({"tree": "t", "holder": "c", "ttl_ms": 9}),
        );
        h.invoke("c", &take, None, 0); // 2
        let granted = Ok(Reply::Granted {
            epoch: 2,
            expires_at_ms: 9,
        });
        h.complete("c", "lease.take", &granted, None, 0); // 3
        let v = of_fencing(
            &FencingViolation::StoredAfterNewerEpoch {
                tree: "t".into(),
                effect: "e1".into(),
                epoch: 1,
                seq: 5,
                newer_epoch: 2,
                newer_seq: 4,
            },
            &h.operations(),
        );
        assert_eq!((v.blamed, v.related), (vec![0], vec![2]));
        let other = of_fencing(
            &FencingViolation::StoredAfterNewerEpoch {
                tree: "t".into(),
                effect: "e2".into(),
                epoch: 1,
                seq: 5,
                newer_epoch: 3,
                newer_seq: 4,
            },
            &h.operations(),
        );
        assert_eq!(
            (other.blamed, other.related),
            (vec![1], Vec::<usize>::new())
        );
    }

    #[test]
    fn a_tree_no_order_explains_names_its_reply_and_what_ran_beside_it() {
        let v = of_tree(
            "t1",
            &TreeVerdict::NotLinearizable {
                at_event: 10,
                op_event: 8,
                concurrent: vec![6],
                longest_partial: Vec::new(),
                why: None,
            },
        )
        .expect("a violation");
        assert_eq!(v.at_event, Some(10));
        assert_eq!((v.blamed, v.related), (vec![10, 8], vec![6]));
        assert!(of_tree("t1", &TreeVerdict::Undecided { steps: 1 }).is_none());
    }
}
