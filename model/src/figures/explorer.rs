//! The explorer's figures.

use serde::{Deserialize, Serialize};

/// What one exploration measured: the exhaustive search per skew of the
/// second clock, then the seeded walks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExplorerFigures {
    /// One row per second-clock skew searched, in search order.
    pub per_skew: Vec<SkewFigures>,
    /// The search depth: every schedule of two instances this many steps deep.
    pub depth: usize,
    /// Seeded walks of three instances.
    pub walks: usize,
    /// Steps taken by all walks together.
    pub walk_steps: usize,
    /// Seconds the walks took.
    pub walk_seconds: f64,
    /// A digest of every walk's schedule (hex): the same seed gives the same.
    pub walk_digest: String,
    /// The seed of every walk.
    pub seed: u64,
    /// Seconds the exploration took (search and walks).
    pub seconds: f64,
    /// Transitions computed, by every world together.
    pub transitions: u64,
    /// Redis round trips made, by every world together.
    pub round_trips: u64,
    /// Seconds the suite took as the run saw it (set by the suite's run,
    /// absent from a bare exploration's figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<f64>,
    /// Walks that ended before their last step at a state that broke a
    /// property (such a state has no successors).
    #[serde(default)]
    pub walks_cut: usize,
    /// What the transition cache answered and how much of it was checked
    /// against the real server.
    #[serde(default)]
    pub cache: CacheFigures,
    /// Steps of an operation's own connection (`MULTI`, a queued command,
    /// `TIME`, …) taken as soon as they were next, costing no depth: the
    /// explorer's partial-order reduction (0: the store sent none).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub fused_steps: u64,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// The transition cache (server state, time and input to reply and keys
/// after): how many commands and ticks it answered without the server, and
/// the seeded sample of its entries sent to the server again to check that
/// the same input gives the same reply and keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheFigures {
    /// Commands and ticks answered from the cache, the server untouched.
    pub answered: u64,
    /// Cache entries sent to the real server again (a seeded sample).
    pub verified: u64,
    /// Of those, the ones whose reply or keys after differed from the
    /// entry (the server is then not deterministic for that input: the
    /// harness's trouble, and the exploration is not decided).
    pub differed: u64,
    /// The first difference, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<String>,
}

impl ExplorerFigures {
    /// An empty row for the search under second-clock skew `skew_ms`
    /// (the search fills in the rest).
    pub fn skew_row(skew_ms: i64) -> SkewFigures {
        SkewFigures {
            skew_ms,
            ..SkewFigures::default()
        }
    }
}

impl Default for SkewFigures {
    /// A lease row with every figure zero.
    fn default() -> Self {
        SkewFigures {
            contract: lease(),
            skew_ms: 0,
            instances: 2,
            symmetric_merges: 0,
            depth: 0,
            states: 0,
            unique_states: 0,
            max_depth: 0,
            transitions: 0,
            seconds: 0.0,
            transitions_per_second: 0.0,
            round_trips_per_transition: 0.0,
            zombie_renew_reached: false,
            zombie_release_reached: false,
            queue_claim_race_reached: false,
            queue_complete_race_reached: false,
            rate_slot_race_reached: false,
            rate_hit_race_reached: false,
            full_refusals: 0,
            violating_states_cut: 0,
            shallowest_cut: None,
            shift_checked: 0,
            absolute_times: false,
            shift_failure: None,
            symmetry_failure: None,
            memory_checked: 0,
            memory_failure: None,
            drawn_values: 0,
            drawn_merges: 0,
            whole_operations_states: 0,
            drawn_failure: None,
        }
    }
}

/// The instances of a row saved before rows counted theirs.
fn two() -> usize {
    2
}

/// The contract of a row saved before rows named theirs.
fn lease() -> String {
    "lease".to_string()
}

/// The exhaustive search under one skew of the second clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkewFigures {
    /// The contract explored (`lease`, `queue`, `rate`).
    #[serde(default = "lease")]
    pub contract: String,
    /// The second clock's offset from server time (ms).
    pub skew_ms: i64,
    /// How many instances the search ran: two (clocks `0` and the skew),
    /// or three (`0`, `0` and the skew).
    #[serde(default = "two")]
    pub instances: usize,
    /// States the symmetry between instances of one clock took as one
    /// (met again as an image of a state kept, by a renaming of those
    /// instances): 0 when the search did not fold them.
    #[serde(default)]
    pub symmetric_merges: usize,
    /// The depth searched to.
    pub depth: usize,
    /// States generated, the initial one and duplicates included.
    pub states: usize,
    /// Distinct states (by fingerprint).
    pub unique_states: usize,
    /// The deepest level that held a new state.
    pub max_depth: usize,
    /// Transitions computed.
    pub transitions: u64,
    /// Seconds the search took (to the millisecond).
    pub seconds: f64,
    /// Transitions per second, rounded.
    pub transitions_per_second: f64,
    /// Redis round trips per transition, to the hundredth.
    pub round_trips_per_transition: f64,
    /// A zombie renew after a takeover was reached.
    pub zombie_renew_reached: bool,
    /// A zombie release after a takeover was reached.
    pub zombie_release_reached: bool,
    /// Two claims racing for the last ready child were reached.
    #[serde(default)]
    pub queue_claim_race_reached: bool,
    /// A claim racing a completion at the claim's expiry was reached.
    #[serde(default)]
    pub queue_complete_race_reached: bool,
    /// Two acquires racing for the last slot were reached.
    #[serde(default)]
    pub rate_slot_race_reached: bool,
    /// Two hits racing for the last place in a window were reached.
    #[serde(default)]
    pub rate_hit_race_reached: bool,
    /// Transitions that ended an operation with `store_full`: how often
    /// the full server met a write (each refusal judged).
    #[serde(default)]
    pub full_refusals: usize,
    /// States that broke a property before the depth ran out: each had no
    /// successors, so the schedules through it were not followed further.
    #[serde(default)]
    pub violating_states_cut: usize,
    /// The least depth of such a state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shallowest_cut: Option<usize>,
    /// Merges of two states that differ in absolute time (or in a time
    /// collapsed as far past) whose successors were computed for both to
    /// check that they agree (a seeded sample).
    #[serde(default)]
    pub shift_checked: usize,
    /// The states were told apart by absolute time: the relative reading
    /// merged two states that went on differently (the search was run again
    /// on absolute times, and this row is that search's).
    #[serde(default)]
    pub absolute_times: bool,
    /// Why the relative reading was given up, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift_failure: Option<String>,
    /// Why the folding of renamed instances was given up, if it was (two
    /// states it took as one went on differently; this row is the search
    /// run again without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symmetry_failure: Option<String>,
    /// Steps of adapter processes kept on trial between operations computed
    /// again, on processes with another history or fresh ones, to check
    /// that what they remember changes nothing (a seeded sample; 0 for a
    /// store whose clients keep nothing).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub memory_checked: usize,
    /// Why processes that may remember were no longer kept, if they were
    /// not (this row is the search run again with a fresh process per
    /// operation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_failure: Option<String>,
    /// Values the store drew at random (a uuid per operation, say), learnt
    /// by the end of this search: states that differ only by a renaming
    /// of them are one (0 for a store that draws nothing).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub drawn_values: usize,
    /// States taken as one by that renaming alone (met again with other
    /// drawn values).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub drawn_merges: usize,
    /// Unique states of the search of whole operations (each operation's
    /// commands back to back, spending one step), run when the search of
    /// single commands left a race unreached (0: not run).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub whole_operations_states: usize,
    /// Why reading drawn values up to a renaming was given up, if it was
    /// (two states it took as one went on differently; this row is the
    /// search run again reading every byte).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drawn_failure: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
