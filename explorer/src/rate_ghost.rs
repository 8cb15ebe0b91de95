//! What the rate limits' instances were told (the ghost of the rate limits
//! under the explorer): data the state keeps and hashes, with no judgement
//! of its own ([`crate::rate`] judges answers against it).

use std::hash::{Hash, Hasher};

use crate::LEASE_MS;

/// A slot's length, in ms of the acquirer's clock.
pub(crate) const SLOT_TTL_MS: i64 = LEASE_MS;

/// The window's length, in ms of the hitting instance's clock.
pub(crate) const WINDOW_MS: i64 = LEASE_MS;

/// An acknowledged slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlotGrant {
    /// The instance it was granted to.
    pub instance: usize,
    /// The slot id the store answered.
    pub slot: String,
    /// The clock its acquire decided on.
    pub clock_ms: i64,
    /// Its place among every acknowledgement of the rate limits.
    pub seq: usize,
    /// How many acknowledgements came before its acquire was invoked.
    pub after: usize,
    /// Its release was acknowledged.
    pub released: bool,
    /// A release of it was cut short by a crash (it may be gone).
    pub maybe_released: bool,
}

impl SlotGrant {
    /// Its expiry on its acquirer's clock.
    pub(crate) fn expires(&self) -> i64 {
        self.clock_ms + SLOT_TTL_MS
    }
}

/// An acknowledged (allowed) hit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct HitAck {
    /// The instance that hit.
    pub instance: usize,
    /// The clock it was recorded at.
    pub t: i64,
    /// Its place among every acknowledgement.
    pub seq: usize,
    /// How many acknowledgements came before it was invoked.
    pub after: usize,
}

/// An acknowledged pause.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PauseAck {
    /// The instance that paused.
    pub instance: usize,
    /// The end it asked for.
    pub asked: i64,
    /// The end the store answered as recorded.
    pub recorded: i64,
    /// Its place among every acknowledgement.
    pub seq: usize,
}

/// What the rate limits' instances were told, and what a crash may have left.
#[derive(Debug, Clone, Default)]
pub(crate) struct RateGhost {
    /// Acknowledgements so far (each grant, pause and release answered).
    pub acks: usize,
    /// Every acknowledged slot, oldest first.
    pub slots: Vec<SlotGrant>,
    /// Every allowed hit, oldest first.
    pub hits: Vec<HitAck>,
    /// Every acknowledged pause, oldest first.
    pub pauses: Vec<PauseAck>,
    /// Expiries of slots an acquire a crash cut short may have written.
    pub maybe_slots: Vec<i64>,
    /// Times of hits a crash cut short may have recorded.
    pub maybe_hits: Vec<i64>,
    /// Ends of pauses a crash cut short may have recorded, with the instance.
    pub maybe_pauses: Vec<(usize, i64)>,
    /// Two acquires raced for the last slot.
    pub slot_race_reached: bool,
    /// Two hits raced for the last place in a window.
    pub hit_race_reached: bool,
    /// The last acquire that took the last free slot: its instance and
    /// server time (another instance's acquire answered at the same instant
    /// raced it, whichever went first).
    pub last_acquire: Option<(usize, i64)>,
    /// The last hit that took the last place in its window, likewise.
    pub last_hit: Option<(usize, i64)>,
    /// The latest clock any rate operation answered or cut short carried:
    /// a slot whose expiry it reached may have been forgotten (PROTOCOL
    /// 4.4: it expired on that caller's clock).
    pub max_clock: Option<i64>,
}

impl RateGhost {
    /// Hashes what the ghost knows, times relative to now through `rel`;
    /// a time no judgement can tell from any other earlier one (before the
    /// `horizon`, [`crate::state::State::rate_horizon`]) is hashed as ended.
    pub(crate) fn hash_at<H: Hasher>(
        &self,
        now: i64,
        horizon: i64,
        rel: &dyn Fn(i64) -> i64,
        h: &mut H,
    ) {
        let live = |t: i64| (t > horizon).then(|| rel(t));
        let counted = |t: i64| (t > horizon - WINDOW_MS).then(|| rel(t));
        self.acks.hash(h);
        for s in &self.slots {
            s.instance.hash(h);
            s.slot.hash(h);
            s.seq.hash(h);
            s.after.hash(h);
            s.released.hash(h);
            s.maybe_released.hash(h);
            live(s.expires()).hash(h);
            // The acquire's own clock, for the concurrent pair rule: it
            // matters only while the slot could still be live.
            live(s.expires()).map(|_| rel(s.clock_ms)).hash(h);
        }
        for x in &self.hits {
            (x.instance, x.seq, x.after).hash(h);
            counted(x.t).hash(h);
        }
        for p in &self.pauses {
            (p.instance, p.seq).hash(h);
            live(p.asked).hash(h);
            live(p.recorded).hash(h);
        }
        for t in &self.maybe_slots {
            live(*t).hash(h);
        }
        for t in &self.maybe_hits {
            counted(*t).hash(h);
        }
        for (i, t) in &self.maybe_pauses {
            (i, live(*t)).hash(h);
        }
        self.slot_race_reached.hash(h);
        self.hit_race_reached.hash(h);
        crate::reading::acted_now(self.last_acquire, now).hash(h);
        crate::reading::acted_now(self.last_hit, now).hash(h);
        self.max_clock.and_then(live).hash(h);
    }
}
