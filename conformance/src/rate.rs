//! Conformance checks of provider rate limits (docs/PROTOCOL.md §4.4). All of
//! them run on the instance clock, so they also run against a server storeproof
//! does not manage.

use serde_json::json;

use super::scenario::*;
use super::{scenario_check, CheckDef};
use harness::contract::Contract::Rate;
use harness::Level::{Must, Should};

const TTL: i64 = 1000;
const WINDOW: i64 = 1000;

pub(super) fn checks() -> Vec<CheckDef> {
    vec![
        scenario_check(
            "conformance.rate.slots-limit",
            Must,
            Rate,
            "slots are granted while fewer than limit are live, then full with the earliest expiry as retry_at",
            || {
                vec![
                    acquire("a", "p", 2, TTL),
                    at(10),
                    acquire("b", "p", 2, TTL),
                    acquire("c", "p", 2, TTL),
                    rread("a", "p"),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.full-retry-at-live-slot",
            Must,
            Rate,
            "full names the earliest LIVE slot's expiry as retry_at, never a slot that already expired (the limit lowered after it did)",
            || {
                vec![
                    acquire("a", "p", 2, 100),
                    acquire("b", "p", 2, TTL),
                    at(150),
                    acquire("c", "p", 1, TTL),
                    rread("c", "p"),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.slot-expiry",
            Must,
            Rate,
            "a crashed holder's slot comes back at clock_ms + ttl: full one millisecond before, granted at the instant",
            || {
                vec![
                    acquire("a", "p", 1, TTL),
                    at(TTL - 1),
                    acquire("b", "p", 1, TTL),
                    rread("b", "p"),
                    at(TTL),
                    rread("b", "p"),
                    acquire("b", "p", 1, TTL),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.release-slot",
            Must,
            Rate,
            "releasing a live slot frees it once; a second release or an unknown slot answers unknown",
            || {
                vec![
                    acquire("a", "p", 1, TTL),
                    acquire("b", "p", 1, TTL),
                    release_slot("a", "p", 1),
                    release_slot("a", "p", 1),
                    release_unknown_slot("a", "p", "no-such-slot"),
                    acquire("b", "p", 1, TTL),
                    rread("a", "p"),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.release-expired-slot",
            Must,
            Rate,
            "releasing a slot that already expired answers unknown and frees nothing else",
            || {
                vec![
                    acquire("a", "p", 2, TTL),
                    at(TTL / 2),
                    acquire("b", "p", 2, TTL),
                    at(TTL),
                    release_slot("a", "p", 1),
                    rread("a", "p"),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.window-limit",
            Must,
            Rate,
            "hits are allowed with the right remaining count up to limit per window, then limited until the oldest leaves",
            || {
                vec![
                    hit("a", "p", 3, WINDOW),
                    at(100),
                    hit("b", "p", 3, WINDOW),
                    hit("a", "p", 3, WINDOW),
                    at(200),
                    hit("b", "p", 3, WINDOW),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.window-slides",
            Must,
            Rate,
            "a hit counts in (now − window, now]: limited one millisecond before it leaves, allowed at the instant",
            || {
                vec![
                    hit("a", "p", 1, WINDOW),
                    at(WINDOW - 1),
                    hit("a", "p", 1, WINDOW),
                    at(WINDOW),
                    hit("a", "p", 1, WINDOW),
                    at(2 * WINDOW - 1),
                    hit("a", "p", 1, WINDOW),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.limited-hits-not-counted",
            Must,
            Rate,
            "a limited hit does not count: it never pushes the window's end further away",
            || {
                vec![
                    hit("a", "p", 1, WINDOW),
                    at(500),
                    hit("a", "p", 1, WINDOW),
                    hit("a", "p", 1, WINDOW),
                    at(WINDOW),
                    hit("a", "p", 1, WINDOW),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.pause-blocks",
            Must,
            Rate,
            "while paused, acquire and hit answer paused with the pause's end; at its end both work again",
            || {
                vec![
                    pause("a", "p", 500),
                    acquire("b", "p", 5, TTL),
                    hit("b", "p", 5, WINDOW),
                    rread("b", "p"),
                    at(499),
                    hit("b", "p", 5, WINDOW),
                    at(500),
                    acquire("b", "p", 5, TTL),
                    hit("b", "p", 5, WINDOW),
                    rread("b", "p"),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.pause-only-lengthens",
            Must,
            Rate,
            "a shorter pause never shortens a longer one; a longer one extends it",
            || {
                vec![
                    pause("a", "p", 1000),
                    pause("b", "p", 200),
                    at(300),
                    hit("b", "p", 5, WINDOW),
                    pause("b", "p", 2000),
                    at(1500),
                    acquire("a", "p", 5, TTL),
                    rread("a", "p"),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.providers-independent",
            Must,
            Rate,
            "slots, hits and pauses of one provider never affect another",
            || {
                vec![
                    acquire("a", "p1", 1, TTL),
                    hit("a", "p1", 1, WINDOW),
                    pause("a", "p1", 5000),
                    acquire("a", "p2", 1, TTL),
                    hit("a", "p2", 1, WINDOW),
                    rread("a", "p1"),
                    rread("a", "p2"),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.instance-clock-rules",
            Must,
            Rate,
            "rate limits are decided on the instance clock (clock_ms), not on server time",
            || {
                vec![
                    acquire("a", "p", 1, TTL),
                    acquire("b", "p", 1, TTL).skewed(TTL - 1),
                    acquire("b", "p", 1, TTL).skewed(TTL),
                    hit("a", "q", 1, WINDOW).skewed(-WINDOW),
                    hit("b", "q", 1, WINDOW).skewed(-1),
                    hit("b", "q", 1, WINDOW),
                    pause("a", "r", 100),
                    hit("b", "r", 1, WINDOW).skewed(100),
                ]
            },
        ),
        scenario_check(
            "conformance.rate.odd-ids",
            Must,
            Rate,
            "providers and holders with unicode, `a:{b}`, `*` and 1 KiB ids work like any other",
            || {
                let long = "z".repeat(1024);
                let mut s = vec![];
                for id in ["ünï→漢字", "a:{b}", "*", long.as_str()] {
                    s.push(acquire_as("a", id, id, 1, TTL));
                    s.push(acquire("b", id, 1, TTL));
                    s.push(hit("b", id, 1, WINDOW));
                    s.push(release_slot("b", id, 1));
                    s.push(rread("b", id));
                }
                s
            },
        ),
        scenario_check(
            "conformance.rate.bad-input",
            Must,
            Rate,
            "empty ids, limit < 1, durations ≤ 0 or over a year, wrong types and missing fields are answered bad_request and change nothing",
            || {
                let mut s = vec![acquire("a", "p", 1, TTL), hit("a", "p", 2, WINDOW)];
                s.extend(bad_inputs(
                    "a",
                    "rate.acquire_slot",
                    json!({"provider": "p", "holder": "b", "limit": 5, "ttl_ms": TTL}),
                ));
                s.push(raw(
                    "a",
                    "rate.acquire_slot",
                    json!({"provider": "p", "holder": "b", "limit": 0, "ttl_ms": TTL}),
                ));
                s.extend(bad_inputs(
                    "a",
                    "rate.release_slot",
                    json!({"provider": "p", "slot": "1"}),
                ));
                s.extend(bad_inputs(
                    "a",
                    "rate.hit",
                    json!({"provider": "p", "limit": 5, "window_ms": WINDOW}),
                ));
                s.push(raw(
                    "a",
                    "rate.hit",
                    json!({"provider": "p", "limit": -1, "window_ms": WINDOW}),
                ));
                s.extend(bad_inputs(
                    "a",
                    "rate.pause",
                    json!({"provider": "p", "until_ms": 5}),
                ));
                s.push(raw("a", "rate.pause", json!({"provider": "p", "until_ms": -5})));
                s.extend(bad_inputs("a", "rate.read", json!({"provider": "p"})));
                s.push(rread("a", "p"));
                s.push(hit("a", "p", 2, WINDOW));
                s
            },
        ),
        pause_survives_idle(),
        super::special_check(
            "conformance.rate.races",
            Must,
            Rate,
            "two acquires of the last slot, and two hits of the last place in a window, each race in every interleaving of their Redis commands: the limit holds",
            super::special::Special::RateRaces,
        ),
        super::special_check(
            "conformance.rate.old-hits-forgotten",
            Should,
            Rate,
            "hits no window of up to a year can count any more cost nothing: a provider hit 100 times and once more a year later costs about what one hit costs (MEMORY USAGE)",
            super::special::Special::OldHitsForgotten,
        ),
    ]
}

/// A pause ending a year ahead is still in force a day, and a millisecond,
/// before its end, and over at its end. The clocks move together, so a store
/// that keeps the pause with a TTL of at least `until_ms − clock_ms` passes;
/// one whose pause records expire sooner (a "safety" TTL) does not.
fn pause_survives_idle() -> CheckDef {
    const DAY_MS: i64 = 86_400_000;
    let mut def = scenario_check(
        "conformance.rate.pause-survives-idle",
        Must,
        Rate,
        "a pause ending a year ahead is still in force a day and a millisecond before its end (acquire and hit answer paused, read shows it), and over at its end",
        || {
            vec![
                pause("a", "p", YEAR_MS),
                at(DAY_MS),
                rread("b", "p"),
                at(YEAR_MS - DAY_MS),
                acquire("b", "p", 5, TTL),
                hit("b", "p", 5, WINDOW),
                rread("b", "p"),
                at(YEAR_MS - 1),
                acquire("b", "p", 5, TTL),
                at(YEAR_MS),
                acquire("b", "p", 5, TTL),
                rread("b", "p"),
            ]
        },
    );
    // Rate limits decide on the instance clock, but a pause kept with a
    // Redis TTL is lost only as the server's clock moves: only on a server
    // whose clock storeproof moves is the idle year really spent.
    def.spec.needs = harness::Needs::ManagedServer;
    def
}
