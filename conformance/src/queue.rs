//! Conformance checks of the child execution queue (docs/PROTOCOL.md §4.3).

use serde_json::json;

use super::scenario::*;
use super::{scenario_check, CheckDef};
use harness::contract::Contract::Queue;
use harness::Level::Must;

const CLAIM: i64 = 1000;
/// Idle time the records must survive: 31 days, past any TTL of a month.
const IDLE_MS: i64 = 31 * 86_400_000;

pub(super) fn checks() -> Vec<CheckDef> {
    vec![
        scenario_check(
            "conformance.queue.save-and-read",
            Must,
            Queue,
            "a saved child reads as queued, attempt 0, with its depth; an unknown child reads null",
            || vec![qread("a", "c"), save("a", "c", 2, "payload"), qread("b", "c")],
        ),
        scenario_check(
            "conformance.queue.save-existing",
            Must,
            Queue,
            "saving a known child answers exists with its state and never re-queues a claimed or done child",
            || {
                vec![
                    save("a", "c", 0, "p"),
                    save("b", "c", 5, "other"),
                    claim("a", CLAIM),
                    save("b", "c", 0, "p"),
                    complete("a", "c", 1),
                    save("b", "c", 0, "p"),
                    claim("b", CLAIM),
                    qread("b", "c"),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.records-survive-idle",
            Must,
            Queue,
            "a queued, a claimed and a done child each read the same after 31 days idle, a later save re-queues none of them (exists with its state), and they are claimed as before: a claimed child whose claim ran out, then the queued one, never the done one",
            || {
                vec![
                    save("a", "c1", 0, "p1"),
                    save("a", "c2", 0, "p2"),
                    save("a", "c3", 0, "p3"),
                    claim("b", CLAIM),
                    claim("b", CLAIM),
                    complete("b", "c2", 1),
                    // A "safety" TTL of up to a month on queue records
                    // would be gone by now.
                    at(IDLE_MS),
                    qread("a", "c1"),
                    qread("a", "c2"),
                    qread("a", "c3"),
                    save("a", "c2", 0, "again"),
                    save("a", "c1", 0, "again"),
                    save("a", "c3", 0, "again"),
                    claim("a", CLAIM),
                    claim("a", CLAIM),
                    claim("a", CLAIM),
                    qread("b", "c2"),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.claim-empty",
            Must,
            Queue,
            "a claim of an empty queue answers empty",
            || vec![claim("a", CLAIM), claim("b", CLAIM)],
        ),
        scenario_check(
            "conformance.queue.order-deepest-first",
            Must,
            Queue,
            "claims return the deepest queued child first, whatever the save order",
            || {
                vec![
                    save("a", "d1", 1, "p1"),
                    save("a", "d3", 3, "p3"),
                    save("a", "d0", 0, "p0"),
                    save("a", "d2", 2, "p2"),
                    claim("b", CLAIM),
                    claim("b", CLAIM),
                    claim("b", CLAIM),
                    claim("b", CLAIM),
                    claim("b", CLAIM),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.order-longest-waiting",
            Must,
            Queue,
            "among children of one depth the longest waiting (server time of save, then save order) is claimed first",
            || {
                vec![
                    save("a", "z-first", 1, "p"),
                    save("a", "a-second", 1, "p"),
                    at(5),
                    save("a", "m-third", 1, "p"),
                    claim("b", CLAIM),
                    claim("b", CLAIM),
                    claim("b", CLAIM),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.claim-skips-live-claims",
            Must,
            Queue,
            "a child under a live claim is not handed out again",
            || {
                vec![
                    save("a", "c1", 1, "p"),
                    save("a", "c2", 0, "p"),
                    claim("a", CLAIM),
                    claim("b", CLAIM),
                    claim("b", CLAIM),
                    qread("b", "c1"),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.claim-expiry-exact",
            Must,
            Queue,
            "a claim holds until one millisecond before it expires on server time; at its expiry the child is claimed again with the next attempt",
            || {
                vec![
                    save("a", "c", 0, "p"),
                    claim("a", CLAIM),
                    at(CLAIM - 1),
                    claim("b", CLAIM),
                    at(CLAIM),
                    claim("b", CLAIM),
                    qread("a", "c"),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.expired-claim-keeps-its-place",
            Must,
            Queue,
            "a child whose claim expired is offered again in its original order, before later children",
            || {
                vec![
                    save("a", "old", 1, "p"),
                    claim("a", CLAIM),
                    at(10),
                    save("a", "new", 1, "p"),
                    at(CLAIM + 1),
                    claim("b", CLAIM),
                    claim("b", CLAIM),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.complete",
            Must,
            Queue,
            "the current claimer completes its claim once; a second complete answers not_claimer and the child stays done",
            || {
                vec![
                    save("a", "c", 0, "p"),
                    claim("a", CLAIM),
                    at(CLAIM - 1),
                    complete("a", "c", 1),
                    qread("a", "c"),
                    complete("a", "c", 1),
                    qread("b", "c"),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.complete-not-claimer",
            Must,
            Queue,
            "a complete naming another instance, another attempt, an unclaimed or unknown child answers not_claimer and changes nothing",
            || {
                vec![
                    complete("a", "nobody", 1),
                    save("a", "c", 0, "p"),
                    complete("a", "c", 0),
                    claim("a", CLAIM),
                    complete("b", "c", 1),
                    complete("a", "c", 2),
                    qread("a", "c"),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.complete-after-claim-expired",
            Must,
            Queue,
            "a claim that expired cannot be completed, even if nobody claimed the child again",
            || {
                vec![
                    save("a", "c", 0, "p"),
                    claim("a", CLAIM),
                    at(CLAIM),
                    complete("a", "c", 1),
                    qread("a", "c"),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.zombie-complete-refused",
            Must,
            Queue,
            "after another instance re-claimed an expired claim, the old claimer's complete is refused and the new one's succeeds",
            || {
                vec![
                    save("a", "c", 0, "p"),
                    claim("a", CLAIM),
                    at(CLAIM + 1),
                    claim("b", CLAIM),
                    complete("a", "c", 1),
                    complete("b", "c", 2),
                    qread("a", "c"),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.done-never-claimed",
            Must,
            Queue,
            "a completed child is never handed out again, however long one waits",
            || {
                vec![
                    save("a", "c", 0, "p"),
                    claim("a", CLAIM),
                    complete("a", "c", 1),
                    at(100 * CLAIM),
                    claim("b", CLAIM),
                    qread("b", "c"),
                ]
            },
        ),
        scenario_check(
            "conformance.queue.odd-ids",
            Must,
            Queue,
            "children and instances with unicode, `a:{b}`, `*` and 1 KiB ids work like any other",
            || {
                let long = "y".repeat(1024);
                let mut s = vec![];
                for (depth, id) in ["ünï→漢字", "a:{b}", "*", long.as_str()].iter().enumerate() {
                    s.push(save("a", id, depth as i64, id));
                    s.push(qread("a", id));
                }
                for _ in 0..4 {
                    s.push(claim("*", CLAIM));
                }
                s.push(complete("*", "*", 1));
                s.push(qread("a", "*"));
                s
            },
        ),
        scenario_check(
            "conformance.queue.bad-input",
            Must,
            Queue,
            "empty ids, negative depth, claim ttl ≤ 0 or over a year, wrong types and missing fields are answered bad_request and change nothing",
            || {
                let mut s = vec![save("a", "c", 0, "p")];
                s.extend(bad_inputs(
                    "a",
                    "queue.save",
                    json!({"child": "c2", "depth": 1, "payload": "p"}),
                ));
                s.push(raw(
                    "a",
                    "queue.save",
                    json!({"child": "c2", "depth": -1, "payload": "p"}),
                ));
                s.extend(bad_inputs(
                    "a",
                    "queue.claim",
                    json!({"instance": "a", "claim_ttl_ms": CLAIM}),
                ));
                s.extend(bad_inputs(
                    "a",
                    "queue.complete",
                    json!({"child": "c", "instance": "a", "attempt": 1}),
                ));
                s.extend(bad_inputs("a", "queue.read", json!({"child": "c"})));
                s.push(qread("a", "c"));
                s.push(claim("a", CLAIM));
                s
            },
        ),
        scenario_check(
            "conformance.queue.server-clock-rules",
            Must,
            Queue,
            "an instance clock 30 years ahead or behind changes no claim expiry: server time decides",
            || {
                vec![
                    save("a", "c", 0, "p").skewed(-30 * YEAR_MS),
                    claim("a", CLAIM).skewed(30 * YEAR_MS),
                    at(CLAIM - 1),
                    claim("b", CLAIM).skewed(30 * YEAR_MS),
                    complete("a", "c", 1).skewed(-30 * YEAR_MS),
                    save("a", "d", 0, "p"),
                    claim("a", CLAIM).skewed(-30 * YEAR_MS),
                    at(2 * CLAIM - 1),
                    claim("b", CLAIM).skewed(30 * YEAR_MS),
                    at(2 * CLAIM),
                    claim("b", CLAIM).skewed(-30 * YEAR_MS),
                ]
            },
        ),
        super::special_check(
            "conformance.queue.claim-races",
            Must,
            Queue,
            "two claims of the last ready child, and a claim against a completion while the clock reaches the claim's expiry instant, each race in every interleaving of their Redis commands: one claim at a time holds the child, and a completion is accepted only from the live claim",
            super::special::Special::ClaimRaces,
        ),
        super::special_check(
            "conformance.queue.claim-cost-bounded",
            harness::Level::Should,
            Queue,
            "a claim after 200 children were completed runs about as many Redis commands as a claim on a fresh queue (INFO commandstats): completed children are not walked again",
            super::special::Special::ClaimCostBounded,
        ),
    ]
}
