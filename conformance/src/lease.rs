//! Conformance checks of the execution lease contract (docs/PROTOCOL.md §4.2).

use serde_json::json;

use super::scenario::*;
use super::special::Special;
use super::{scenario_check, special_check, CheckDef};
use harness::contract::Contract::Lease;
use harness::Level::{Must, Should};

const TTL: i64 = 1000;

pub(super) fn checks() -> Vec<CheckDef> {
    vec![
        scenario_check(
            "conformance.lease.take-free-tree",
            Must,
            Lease,
            "a take of a tree with no record is granted, expiring at server now + ttl, and reads as live",
            || vec![take("a", "t", TTL), read("a", "t")],
        ),
        scenario_check(
            "conformance.lease.take-busy",
            Must,
            Lease,
            "a take of a live lease answers busy with the holder, epoch and expiry, and changes nothing",
            || vec![take("a", "t", TTL), at(10), take("b", "t", TTL), read("b", "t")],
        ),
        scenario_check(
            "conformance.lease.take-busy-for-own-holder",
            Must,
            Lease,
            "the live holder's own second take answers busy (it may adopt that epoch), not a new grant",
            || vec![take("a", "t", TTL), at(10), take("a", "t", TTL), read("a", "t")],
        ),
        special_check(
            "conformance.lease.take-races",
            Must,
            Lease,
            "two takes of a free tree, two takes of an expired lease, and a take against a renew while the clock reaches the expiry instant, each race in every interleaving of their Redis commands, grant at most one holder",
            Special::TakeRaces,
        ),
        scenario_check(
            "conformance.lease.expiry-before-instant",
            Must,
            Lease,
            "one millisecond before expires_at the lease is live and a take is busy",
            || vec![take("a", "t", TTL), at(TTL - 1), read("b", "t"), take("b", "t", TTL)],
        ),
        scenario_check(
            "conformance.lease.expiry-after-instant",
            Must,
            Lease,
            "one millisecond after expires_at the lease is not live and another take is granted a higher epoch",
            || {
                vec![
                    take("a", "t", TTL),
                    at(TTL + 1),
                    read("b", "t"),
                    take("b", "t", TTL),
                    read("b", "t"),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.expiry-at-instant",
            Should,
            Lease,
            "at exactly expires_at the lease has ended: it reads not live and a take is granted",
            || vec![take("a", "t", TTL), at(TTL), read("b", "t"), take("b", "t", TTL)],
        ),
        scenario_check(
            "conformance.lease.renew-extends",
            Must,
            Lease,
            "a renew by the holder moves the expiry to server now + ttl; the old expiry no longer frees the tree",
            || {
                vec![
                    take("a", "t", TTL),
                    at(500),
                    renew("a", "t", 1, 0, TTL),
                    at(TTL + 1),
                    take("b", "t", TTL),
                    at(500 + TTL - 1),
                    take("b", "t", TTL),
                    at(500 + TTL + 1),
                    take("b", "t", TTL),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.renew-wrong-holder",
            Must,
            Lease,
            "a renew naming another holder answers lost with the current holder and epoch, and changes nothing",
            || {
                vec![
                    take("a", "t", TTL),
                    at(10),
                    renew("b", "t", 1, 0, TTL),
                    read("a", "t"),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.renew-wrong-epoch",
            Must,
            Lease,
            "a renew by the holder naming another epoch answers lost and changes nothing",
            || {
                vec![
                    take("a", "t", TTL),
                    at(10),
                    renew("a", "t", 1, 1, TTL),
                    renew("a", "t", 1, -1, TTL),
                    read("a", "t"),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.renew-after-expiry",
            Must,
            Lease,
            "an expired lease is never renewed, at the expiry instant or later, even if nobody took it",
            || {
                vec![
                    take("a", "t", TTL),
                    at(TTL),
                    renew("a", "t", 1, 0, TTL),
                    at(TTL + 1),
                    renew("a", "t", 1, 0, TTL),
                    read("a", "t"),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.renew-after-release",
            Must,
            Lease,
            "a released lease is never renewed",
            || {
                vec![
                    take("a", "t", TTL),
                    release("a", "t", 1, 0),
                    renew("a", "t", 1, 0, TTL),
                    read("a", "t"),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.release-frees",
            Must,
            Lease,
            "a release by the holder answers released; the tree is free and the next take gets a higher epoch",
            || {
                vec![
                    take("a", "t", TTL),
                    at(10),
                    release("a", "t", 1, 0),
                    read("b", "t"),
                    take("b", "t", TTL),
                    read("b", "t"),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.release-not-held",
            Must,
            Lease,
            "a release naming another holder or epoch, or repeated, answers not_held and changes nothing",
            || {
                vec![
                    take("a", "t", TTL),
                    release("b", "t", 1, 0),
                    release("a", "t", 1, 1),
                    read("a", "t"),
                    release("a", "t", 1, 0),
                    release("a", "t", 1, 0),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.zombie-renew-refused",
            Must,
            Lease,
            "after another instance took over an expired lease, the old holder's renew answers lost with the new holder",
            || {
                vec![
                    take("a", "t", TTL),
                    at(TTL + 1),
                    take("b", "t", TTL),
                    renew("a", "t", 1, 0, TTL),
                    read("b", "t"),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.zombie-release-refused",
            Must,
            Lease,
            "after another instance took over an expired lease, the old holder's release answers not_held and the new lease stays live",
            || {
                vec![
                    take("a", "t", TTL),
                    at(TTL + 1),
                    take("b", "t", TTL),
                    release("a", "t", 1, 0),
                    read("b", "t"),
                    renew("b", "t", 1, 0, TTL),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.epoch-grows",
            Must,
            Lease,
            "across takes, releases and expiries the epoch of a tree only grows",
            || {
                let mut s = vec![];
                for k in 0..4 {
                    let base = k * 10 * TTL;
                    s.push(at(base));
                    s.push(take("a", "t", TTL));
                    s.push(release("a", "t", (2 * k + 1) as usize, 0));
                    s.push(take("b", "t", TTL));
                    s.push(at(base + TTL + 1));
                    s.push(read("a", "t"));
                }
                s
            },
        ),
        scenario_check(
            "conformance.lease.epoch-survives-idle",
            Must,
            Lease,
            "an epoch is remembered after a released tree and an expired one sit idle for 30 days",
            || {
                vec![
                    take("a", "t", TTL),
                    release("a", "t", 1, 0),
                    take("a", "u", TTL),
                    at(30 * 86_400_000),
                    read("b", "t"),
                    read("b", "u"),
                    take("b", "t", TTL),
                    take("b", "u", TTL),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.read-unknown-tree",
            Must,
            Lease,
            "a read of a tree never taken answers null, and so does a release or renew of it",
            || {
                vec![
                    read("a", "never"),
                    renew_literal("a", "never", 1, TTL),
                    release_literal("a", "never", 1),
                    read("a", "never"),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.trees-independent",
            Must,
            Lease,
            "leases of different trees do not affect each other",
            || {
                vec![
                    take("a", "t1", TTL),
                    take("b", "t2", 2 * TTL),
                    release("a", "t1", 1, 0),
                    read("a", "t2"),
                    at(TTL + 1),
                    take("a", "t2", TTL),
                    read("b", "t1"),
                ]
            },
        ),
        scenario_check(
            "conformance.lease.kept-executions",
            Must,
            Lease,
            "kept execution ids are listed per tree, once each, in the order first kept",
            || {
                vec![
                    kept("a", "t"),
                    keep("a", "t", "exec-2"),
                    keep("a", "t", "exec-1"),
                    keep("b", "t", "exec-2"),
                    keep("a", "other", "exec-9"),
                    kept("b", "t"),
                    kept("a", "other"),
                ]
            },
        ),
        special_check(
            "conformance.lease.kept-executions-not-in-redis",
            Must,
            Lease,
            "a kept execution id is found nowhere in Redis: the store hands it to its durable store",
            Special::KeptNotInRedis,
        ),
        scenario_check(
            "conformance.lease.odd-ids",
            Must,
            Lease,
            "trees and holders with unicode, `a:{b}`, `*` and 1 KiB ids work like any other",
            || {
                let long = "x".repeat(1024);
                let mut s = vec![];
                for (i, id) in ["ünï→漢字", "a:{b}", "*", long.as_str()].iter().enumerate() {
                    s.push(take_as("a", id, id, TTL));
                    s.push(read("b", id));
                    s.push(take_as("b", id, "b", TTL));
                    s.push(keep("a", id, id));
                    s.push(kept("a", id));
                    s.push(at(i as i64 + 1));
                }
                s
            },
        ),
        special_check(
            "conformance.lease.odd-ids-inside-prefix",
            Must,
            Lease,
            "with odd tree ids (`*`, `a:{b}`, unicode, 1 KiB) every key the store writes starts with its prefix",
            Special::OddIdsInsidePrefix,
        ),
        scenario_check(
            "conformance.lease.bad-input",
            Must,
            Lease,
            "empty ids, ttl ≤ 0 or over a year, wrong types and missing fields are answered bad_request and change nothing",
            || {
                let mut s = vec![take("a", "t", TTL)];
                s.extend(bad_inputs(
                    "a",
                    "lease.take",
                    json!({"tree": "t", "holder": "b", "ttl_ms": TTL}),
                ));
                s.extend(bad_inputs(
                    "a",
                    "lease.renew",
                    json!({"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": TTL}),
                ));
                s.extend(bad_inputs(
                    "a",
                    "lease.release",
                    json!({"tree": "t", "holder": "a", "epoch": 1}),
                ));
                s.extend(bad_inputs("a", "lease.read", json!({"tree": "t"})));
                s.extend(bad_inputs(
                    "a",
                    "lease.keep_execution",
                    json!({"tree": "t", "execution": "e"}),
                ));
                s.push(raw("a", "lease.steal", json!({"tree": "t"})));
                // Read back through the store, whatever it keeps its state
                // in: the lease as granted, and no execution kept.
                s.push(read("a", "t"));
                s.push(kept("a", "t"));
                s
            },
        ),
        scenario_check(
            "conformance.lease.server-clock-rules",
            Must,
            Lease,
            "an instance clock 30 years ahead or behind changes no lease expiry: server time decides",
            || {
                vec![
                    take("a", "t", TTL).skewed(30 * YEAR_MS),
                    at(TTL - 1),
                    take("b", "t", TTL).skewed(-30 * YEAR_MS),
                    renew("a", "t", 1, 0, TTL).skewed(30 * YEAR_MS),
                    at(2 * TTL - 2),
                    read("b", "t").skewed(30 * YEAR_MS),
                    take("b", "t", TTL).skewed(30 * YEAR_MS),
                    at(2 * TTL),
                    renew("a", "t", 1, 0, TTL).skewed(-30 * YEAR_MS),
                    take("b", "t", TTL).skewed(-30 * YEAR_MS),
                ]
            },
        ),
        special_check(
            super::BYTES_PER_TREE,
            Should,
            Lease,
            "a lease record costs at most 1 KiB of server memory per tree (MEMORY USAGE), for good",
            Special::BytesPerTree,
        ),
    ]
}
