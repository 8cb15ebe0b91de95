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

/// The exhaustive search under one skew of the second clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkewFigures {
    /// The second clock's offset from server time (ms).
    pub skew_ms: i64,
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
}
