//! Conformance checks of the fencing set (docs/PROTOCOL.md §4.5): effects and
//! outbound calls fenced by the live lease on server time, for a durable store
//! that offers `fenced` (the Redis stores do not: skipped).

use serde_json::json;

use super::scenario::*;
use super::{scenario_check, CheckDef};
use harness::contract::Contract::Fenced;
use harness::Level::Must;

const TTL: i64 = 1000;

pub(super) fn checks() -> Vec<CheckDef> {
    vec![
        scenario_check(
            "conformance.fenced.apply-by-holder",
            Must,
            Fenced,
            "the live holder's effect at its epoch is applied; the same effect id again answers duplicate, whoever sends it",
            || {
                vec![
                    take("a", "t", TTL),
                    apply("a", "t", 1, 0, "e1"),
                    apply("a", "t", 1, 0, "e1"),
                    apply("b", "t", 1, 0, "e1"),
                    at(TTL - 1),
                    apply("a", "t", 1, 0, "e2"),
                ]
            },
        ),
        scenario_check(
            "conformance.fenced.apply-not-holder",
            Must,
            Fenced,
            "an effect naming another holder at the live epoch, or the holder at another epoch, is fenced with the tree's epoch and not applied",
            || {
                vec![
                    take("a", "t", TTL),
                    apply("b", "t", 1, 0, "e1"),
                    apply("a", "t", 1, 1, "e2"),
                    apply("a", "t", 1, -1, "e3"),
                    apply("a", "t", 1, 0, "e1"),
                ]
            },
        ),
        scenario_check(
            "conformance.fenced.apply-after-expiry",
            Must,
            Fenced,
            "an effect of an expired lease is fenced even before anyone takes over; after the takeover the zombie is fenced with the newer epoch and the new holder applies",
            || {
                vec![
                    take("a", "t", TTL),
                    at(TTL + 1),
                    apply("a", "t", 1, 0, "e1"),
                    take("b", "t", TTL),
                    apply("a", "t", 1, 0, "e2"),
                    apply("b", "t", 2, 0, "e3"),
                ]
            },
        ),
        scenario_check(
            "conformance.fenced.apply-after-release",
            Must,
            Fenced,
            "an effect of a released lease is fenced; a tree never leased fences with epoch 0",
            || {
                vec![
                    take("a", "t", TTL),
                    release("a", "t", 1, 0),
                    apply("a", "t", 1, 0, "e1"),
                    apply_literal("a", "never", 0, "e1"),
                    apply_literal("a", "never", 1, "e2"),
                ]
            },
        ),
        scenario_check(
            "conformance.fenced.call-once",
            Must,
            Fenced,
            "a call is begun once (a second begin answers duplicate); its first response stands (a second finish answers already_finished with it); a call never begun answers not_begun",
            || {
                vec![
                    take("a", "t", TTL),
                    begin("a", "t", 1, 0, "c1"),
                    begin("a", "t", 1, 0, "c1"),
                    finish("a", "c1", "r1"),
                    finish("a", "c1", "r2"),
                    finish("a", "c9", "r"),
                ]
            },
        ),
        scenario_check(
            "conformance.fenced.call-fenced",
            Must,
            Fenced,
            "a zombie's begin is fenced, and a call whose holder lost the lease cannot finish: fenced with the newer epoch",
            || {
                vec![
                    take("a", "t", TTL),
                    begin("a", "t", 1, 0, "c1"),
                    begin("b", "t", 1, 0, "c2"),
                    at(TTL + 1),
                    take("b", "t", TTL),
                    finish("a", "c1", "r"),
                    begin("a", "t", 1, 0, "c3"),
                ]
            },
        ),
        scenario_check(
            "conformance.fenced.bad-input",
            Must,
            Fenced,
            "bad input to effect.apply, call.begin and call.finish (empty ids, wrong types, a negative epoch) answers bad_request and changes nothing",
            || {
                let mut s = bad_inputs(
                    "a",
                    "effect.apply",
                    json!({"tree": "t", "holder": "a", "epoch": 1, "effect": "e", "payload": "x"}),
                );
                s.extend(bad_inputs(
                    "a",
                    "call.begin",
                    json!({"tree": "t", "holder": "a", "epoch": 1, "call": "c"}),
                ));
                s.extend(bad_inputs(
                    "a",
                    "call.finish",
                    json!({"call": "c", "response": "r"}),
                ));
                s.push(raw(
                    "a",
                    "effect.apply",
                    json!({"tree": "t", "holder": "a", "epoch": -1, "effect": "e", "payload": "x"}),
                ));
                // Read back through the store, whatever it keeps its state
                // in: no effect or call of those ids was recorded, so the
                // holder's apply, begin and finish of them go through now.
                s.extend([
                    take("a", "t", TTL),
                    apply("a", "t", 1, 0, "e"),
                    begin("a", "t", 1, 0, "c"),
                    finish("a", "c", "r"),
                ]);
                s
            },
        ),
    ]
}
