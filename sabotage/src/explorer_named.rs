//! The named sabotages the explorer (and fault suite) must catch (see
//! [`crate::named`]): one per explorer property or fault check that no
//! other named sabotage was caught by (issue 11).

mod extra_command;
mod fail_open;

use std::sync::Arc;

use crate::{builtin, lua, Caught, How, Named};
use extra_command::{extra_command, Extra};

/// What `explorer.*-race-reached` says when only the depth kept the race
/// away (explorer/src/run.rs): the read-back sabotages' cause.
const DEEPER: &str = "a deeper search (--depth) is needed";

/// What `explorer.exploration-complete` says of a store whose commands
/// change on re-run (explorer/src/world.rs): the wall-clock stamp's cause.
const NOT_DETERMINISTIC: &str = "the store is not deterministic";

/// This group's sabotages, in report order.
pub(crate) const NAMED: &[Named] = &[
    lua(
        "release-drops-expiry",
        "its release deletes the record's expires_at field instead of marking the lease released, so the next take (or read) of the tree compares tonumber(nil) and the script raises an error instead of answering",
        "an unlock that HDELs the lock's expiry field while the acquire script still compares tonumber() of it, so every acquire after an unlock fails with 'attempt to compare nil with number'",
        "explorer.answered",
        "lease_release.lua",
        "redis.call('HSET', key, 'released', '1')",
        "redis.call('HDEL', key, 'expires_at')",
    ),
    Named {
        name: "read-back-renew",
        breaks: "its take and its renew read the lease record and its remaining time back (HGETALL, PTTL) after their script, three commands each where the protocol asks for one EVALSHA, so a take, a move of time and the takeover's take are seven steps: a search six deep cannot even start the zombie's renew",
        real_bug: "lock clients that GET the lock key and its PTTL after the acquire or extend to check that they own it and for how long (a read-your-write check in the client), tripling the round trips of every acquire and extend",
        caught_by: "explorer.zombie-renew-race-reached",
        caught_when: Caught::Undecided(DEEPER),
        how: How::Store(|w, _| {
            Arc::new(extra_command(
                builtin(w),
                Extra::ReadBack(&["lease.take", "lease.renew"]),
                "read-back-renew",
            ))
        }),
    },
    Named {
        name: "read-back-release",
        breaks: "its take and its release read the lease record and its remaining time back (HGETALL, PTTL) after their script, three commands each where the protocol asks for one EVALSHA, so a take, a move of time and the takeover's take are seven steps: a search six deep cannot even start the zombie's release",
        real_bug: "lock clients that GET the lock key and its PTTL after the acquire or the unlock to check what they did (a read-your-write check in the client), two extra round trips on every acquire and release",
        caught_by: "explorer.zombie-release-race-reached",
        caught_when: Caught::Undecided(DEEPER),
        how: How::Store(|w, _| {
            Arc::new(extra_command(
                builtin(w),
                Extra::ReadBack(&["lease.take", "lease.release"]),
                "read-back-release",
            ))
        }),
    },
    Named {
        name: "wall-clock-stamp",
        breaks: "before each lease operation it publishes an event stamped with the machine's wall clock and a counter kept in process memory, neither of which is the server state or the clock it is given, so the same operation from the same state sends different commands on every run",
        real_bug: "lock clients that stamp their requests or lock values with the host's own System.currentTimeMillis() and an in-process counter, so what they send depends on which machine runs them and when, not on the lock's state",
        caught_by: "explorer.exploration-complete",
        caught_when: Caught::Undecided(NOT_DETERMINISTIC),
        how: How::Store(|w, _| {
            Arc::new(extra_command(
                builtin(w),
                Extra::WallClockStamp,
                "wall-clock-stamp",
            ))
        }),
    },
    Named {
        name: "rate-fails-open",
        breaks: "when its rate-limit call fails or its reply is lost it grants the slot or the hit anyway, so a refusal the limiter made (full, limited) whose reply was lost comes back as a grant beyond the limit",
        real_bug: "the fail-open rate limiter that lets a request through whenever the Redis call errors or times out, so limits stop holding exactly when Redis is slow or unreachable",
        caught_by: "faults.rate-bounds",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(fail_open::fail_open(builtin(w)))),
    },
];
