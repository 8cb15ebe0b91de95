//! What the rate-bounds checker found (docs/PROTOCOL.md §4.4).

use serde::{Deserialize, Serialize};

/// What broke a rate bound, with the events involved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum RateViolation {
    /// A slot was acquired while `limit` slots were certainly live.
    TooManySlots {
        /// The provider.
        provider: String,
        /// The invoke event of the acquire answered `acquired`.
        acquire: usize,
        /// Its clock.
        clock_ms: i64,
        /// The limit it named.
        limit: i64,
        /// Invoke events of the acquires whose slots were live then.
        live: Vec<usize>,
    },
    /// A hit was allowed while `limit` allowed hits were in its window.
    TooManyHits {
        /// The provider.
        provider: String,
        /// The invoke event of the hit answered `allowed`.
        hit: usize,
        /// Its clock.
        clock_ms: i64,
        /// The limit it named.
        limit: i64,
        /// The window it named.
        window_ms: i64,
        /// Invoke events of the allowed hits in its window.
        counted: Vec<usize>,
    },
    /// Grants of which, in every order their windows allow, the last one
    /// was granted while all the others counted against it (live slots,
    /// or hits in its window), and they are more than the largest limit
    /// any of them named allows. Found among overlapping grants, which
    /// [`RateViolation::TooManySlots`] and [`RateViolation::TooManyHits`]
    /// leave out.
    TooManyTogether {
        /// The provider.
        provider: String,
        /// `rate.acquire_slot` or `rate.hit`.
        op: String,
        /// Invoke events of the grants.
        grants: Vec<usize>,
        /// The largest limit they named.
        limit: i64,
    },
    /// A slot or hit was granted while a known pause was in force.
    GrantedWhilePaused {
        /// The provider.
        provider: String,
        /// The invoke event of the acquire or hit that was granted.
        grant: usize,
        /// Its clock.
        clock_ms: i64,
        /// When the pause ends.
        until_ms: i64,
        /// The completion event whose reply named that pause.
        pause_event: usize,
    },
}

/// The verdict of the rate bounds: holds when `violations` is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateBounds {
    /// Everything that broke, in history order per kind.
    pub violations: Vec<RateViolation>,
    /// Acquires and hits whose outcome is unknown (counted as not taken).
    pub unknown: Vec<usize>,
    /// Replies that named a pause (`paused {until_ms}`): with none, the
    /// rule "nothing granted while paused" judged nothing.
    #[serde(default)]
    pub pauses: usize,
}

impl RateBounds {
    /// Nothing broke.
    pub fn holds(&self) -> bool {
        self.violations.is_empty()
    }
}

impl super::Findings for RateBounds {
    fn checked(&self, _ops: &[crate::history::Operation<'_>]) -> super::Checked {
        super::Checked::of(self.violations.iter().map(super::blame::of_rate).collect())
    }

    /// The violations, the unknowns counted both ways, and whether the
    /// pause rule judged anything.
    fn summary(&self) -> String {
        let pause_rule = if self.pauses > 0 {
            format!(
                "{} replies named a pause, grants judged against them",
                self.pauses
            )
        } else {
            "no reply named a pause: \"nothing granted while paused\" judged nothing".to_string()
        };
        format!(
            "{} violations, {} unknown outcomes counted both ways; {pause_rule}",
            self.violations.len(),
            self.unknown.len()
        )
    }
}
