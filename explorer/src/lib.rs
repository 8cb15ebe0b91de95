//! The interleaving explorer (docs/CONTRACTS.md §2.2): model-checks two and
//! three instances of the lease store, the child queue and the rate limits,
//! each instance with its own clock, against the real server.
//!
//! A step is one Redis command delivered (through the instance's gate), a
//! move of server time, or an instance crashing for good. The state holds
//! the server's keyspace under the prefix and its virtual time, every
//! instance (skew, what it believes it holds, its operation in progress as
//! the commands already delivered), and the ghost record of every
//! acknowledged grant; the fingerprint reads times relative to now.
//!
//! Every module is private; the crate root re-exports what `certify`,
//! `bench`, `replay` and the tests use.
//!
//! ```rust
//! use explorer::{skews, Property, LEASE_MS};
//!
//! // The first instance's clock is the server's; the second's is skewed by
//! // each of these in turn.
//! assert_eq!(skews().len(), 7);
//! assert!(skews().contains(&0) && skews().contains(&(-10 * LEASE_MS)));
//!
//! // What the search looks for, each property feeding one check.
//! let p = Property::from_name("one-live-holder").unwrap();
//! assert_eq!(p.id(), "explorer.one-live-holder");
//! assert_eq!(p.check().level, harness::Level::Must);
//! ```
//!
//! - `state`: the state, the actions and the fingerprint, and the
//!   transition cache every skew shares (server keyspace, time and command
//!   bytes to reply and keys after: the server's answer depends on nothing
//!   else, so a store that ignores its caller's clock pays for one skew);
//! - `model`: the model (possible actions, steps) and each thread's world;
//! - `search`: the exhaustive search, level by level on a pool of worlds;
//! - `world`: restore, deliver one action's command, snapshot, on a real
//!   server: the runner, which hands every outcome to `judge`; it touches
//!   the server only when a command must reach it, restores only when the
//!   server does not hold the state already, and answers a command from
//!   the cache when the store sends the bytes it is expected to;
//! - `local`: the world of a store with no Redis wire (`builtin:sqlite`):
//!   its copy on a file of its own, a step one whole operation;
//! - `judge`: the checker, pure functions from a step's outcome (the state
//!   before, the instance, the operation, its answer, what was known when
//!   it was invoked) to beliefs, the ghost, violations and races reached;
//! - `walk`: seeded walks of three instances and shrinking;
//! - `run`: both, for every skew, turned into checks, figures and
//!   counterexamples (the schedule, its steps and its operations as a typed
//!   [`harness::History`]);
//! - `property`: what is looked for, each named once with its check;
//! - `suite`: the explorer as a [`harness::Suite`], what `certify` runs.

mod cache;
mod drawn;
mod fused;
mod judge;
mod local;
mod model;
mod moves;
mod property;
mod queue;
mod queue_ghost;
mod rate;
mod rate_ghost;
mod reading;
mod run;
mod scope;
mod search;
mod state;
mod suite;
mod symmetry;
mod unordered;
mod walk;
mod world;

pub use property::Property;
pub use run::{
    explore, explore_part, replay_schedule, replay_schedule_on, Counterexample, ExplorerConfig,
    ExplorerOutcome, ExplorerPart, Schedule, START_MS,
};
pub use state::{Action, Op, State, Tick};
pub use suite::ExplorerSuite;

/// The lease length every exploration uses (ms).
pub const LEASE_MS: i64 = 1000;
/// The tree every exploration fights over.
const TREE: &str = "t";
/// The relative reading of times takes two states as one only when every
/// time in one is the other's shifted by a whole number of these (ms): a
/// store that reads time in milliseconds or in whole seconds (the
/// milliseconds dropped, `EXPIREAT`, `EX`) answers such states alike, so the
/// merge loses nothing for it. A shift by less than a second could: a store
/// on a whole-second clock escaped a search that merged the state half a
/// lease in with the initial one (issue 40, item 6).
pub const SHIFT_GRAIN_MS: i64 = 1000;
/// Beyond this far in the past of every instance's clock a time can no
/// longer matter (20 leases, more than any lease, claim, slot or window
/// the explorer asks for): the fingerprint collapses it
/// ([`state::State::far_past_ms`] adds the largest skew).
const FAR_PAST_MS: i64 = 20 * LEASE_MS;

/// The second clock's skews (docs/CONTRACTS.md §2.2): 0, ± lease/2, ± lease,
/// ± 10 × lease.
pub fn skews() -> Vec<i64> {
    vec![
        0,
        LEASE_MS / 2,
        -LEASE_MS / 2,
        LEASE_MS,
        -LEASE_MS,
        10 * LEASE_MS,
        -10 * LEASE_MS,
    ]
}

/// The most skews one run may search (each is a search of its own).
pub const MAX_SKEWS: usize = 16;
/// The largest skew a run may ask for (ms): an hour, far past any lease.
pub const MAX_SKEW_MS: i64 = 3_600_000;

/// The skews of `certify --skews`: comma-separated milliseconds, each
/// within ±[`MAX_SKEW_MS`], none twice, 1 to [`MAX_SKEWS`] of them; else
/// what is wrong, in words a user can act on.
pub fn parse_skews(text: &str) -> Result<Vec<i64>, String> {
    let mut out: Vec<i64> = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let ms: i64 = part.parse().map_err(|_| {
            format!("{part:?} is not a whole number of milliseconds (e.g. --skews 0,500,-1000)")
        })?;
        if ms.abs() > MAX_SKEW_MS {
            return Err(format!(
                "{ms} ms is more than an hour either way (at most ±{MAX_SKEW_MS})"
            ));
        }
        if out.contains(&ms) {
            return Err(format!("the skew {ms} ms is given twice"));
        }
        out.push(ms);
    }
    if out.len() > MAX_SKEWS {
        return Err(format!(
            "{} skews: at most {MAX_SKEWS} (each is a search of its own)",
            out.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skews_are_read_as_milliseconds_and_bad_ones_refused_with_the_reason() {
        assert_eq!(parse_skews("0, 500,-1000"), Ok(vec![0, 500, -1000]));
        assert_eq!(parse_skews("-10000"), Ok(vec![-10_000]));
        for (bad, says) in [
            ("", "not a whole number"),
            ("0,,5", "not a whole number"),
            ("1.5", "not a whole number"),
            ("0,0", "given twice"),
            ("3600001", "more than an hour"),
            ("-3600001", "more than an hour"),
        ] {
            let e = parse_skews(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let seventeen: Vec<String> = (0..17).map(|i| i.to_string()).collect();
        assert!(parse_skews(&seventeen.join(","))
            .unwrap_err()
            .contains("at most 16"));
    }
}
