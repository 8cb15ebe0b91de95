//! The named sabotages the explorer (and fault suite) must catch (see
//! [`crate::named`]): one per explorer property or fault check that no
//! other named sabotage was caught by (issue 11).

mod extra_command;
mod fail_open;

use std::sync::Arc;

use crate::{builtin, lua, Caught, How, Named};
use extra_command::{extra_command, Extra};

/// What `explorer.exploration-complete` says of a store whose commands
/// change on re-run (explorer/src/world.rs): the wall-clock stamp's cause.
const NOT_DETERMINISTIC: &str = "the store is not deterministic";

/// Not a sabotage: the built-in store whose `ops` also read the lease
/// record and its remaining time back (`HGETALL`, `PTTL`) after their
/// script, as lock clients with a read-your-write check do. It is correct,
/// three commands an operation: the explorer must reach the takeover races
/// anyway (in its search of whole operations) and pass it. It was a named
/// sabotage "caught" by those races left undecided, when the explorer's
/// depth counted commands.
pub fn read_back(
    workdir: &std::path::Path,
    ops: &'static [&'static str],
) -> Arc<dyn harness::store::StoreFactory> {
    Arc::new(extra_command(
        builtin(workdir),
        Extra::ReadBack(ops),
        "read-back",
    ))
}

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
