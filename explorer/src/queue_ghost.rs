//! What the child queue's instances were told (the ghost of the queue
//! under the explorer): data the state keeps and hashes, with no judgement
//! of its own ([`crate::queue`] judges answers against it).

use std::hash::{Hash, Hasher};

/// The children the explored queue holds, saved in this order: `c0` at
/// depth 0, then `c1` and `c2` at depth 1. Claim order is `c1`, `c2`, `c0`:
/// a store that ignores depth (first saved, first claimed) hands out `c0`
/// first once two are saved, and one that breaks a tie of depth the wrong
/// way (last saved, or by anything but save order) hands out `c2` before
/// `c1`, so both halves of the order are decided.
pub(crate) const CHILDREN: u8 = 3;

/// An acknowledged save (its first: a later one answers `exists`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SaveAck {
    /// When its operation was invoked, server time.
    pub invoked_at: i64,
    /// Its place among every acknowledgement of the queue.
    pub seq: usize,
    /// How many acknowledgements came before it was invoked: a save
    /// acknowledged before that surely took effect before it.
    pub after: usize,
}

/// An acknowledged claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimGrant {
    /// The instance it was granted to.
    pub instance: usize,
    /// The child.
    pub child: u8,
    /// The attempt the store answered.
    pub attempt: i64,
    /// Server time until which the claimer was promised the child: when
    /// it asked, plus the claim's length.
    pub valid_until: i64,
    /// Server time until which the store may rightly still hold the claim:
    /// when it answered, plus the claim's length.
    pub may_hold_until: i64,
    /// Its place among every acknowledgement of the queue.
    pub seq: usize,
    /// How many acknowledgements came before it was asked for: a claim of
    /// the same child acknowledged before that surely came before it.
    pub after: usize,
    /// Its completion was acknowledged.
    pub completed: bool,
}

/// What the queue's instances were told, and what a crash may have left.
#[derive(Debug, Clone, Default)]
pub(crate) struct QueueGhost {
    /// Acknowledgements so far (each save, claim and completion answered).
    pub acks: usize,
    /// Per child, its first acknowledged save.
    pub saved: Vec<Option<SaveAck>>,
    /// Per child, the `seq` of its acknowledged completion.
    pub done: Vec<Option<usize>>,
    /// Per child: a completion of it was cut short by a crash (it may be
    /// done, though nobody was told).
    pub maybe_done: Vec<bool>,
    /// Every acknowledged claim, oldest first.
    pub claims: Vec<ClaimGrant>,
    /// The latest server instant until which a claim a crash cut short may
    /// hold a child (the store may have written it; nobody was told).
    pub unacked_claim_until: Option<i64>,
    /// Two claims raced with one child ready (the first race).
    pub claim_race_reached: bool,
    /// A claim raced a completion at the claim's expiry (the second race).
    pub complete_race_reached: bool,
    /// The last claim answered: its instance and server time (a claim of
    /// another instance answered at the same instant raced it, whichever
    /// went first).
    pub last_claim: Option<(usize, i64)>,
    /// The last completion answered at its claim's expiry instant: its
    /// instance and that instant.
    pub last_expiry_complete: Option<(usize, i64)>,
}

impl QueueGhost {
    /// The ghost of an empty queue.
    pub(crate) fn new() -> QueueGhost {
        QueueGhost {
            saved: vec![None; CHILDREN as usize],
            done: vec![None; CHILDREN as usize],
            maybe_done: vec![false; CHILDREN as usize],
            ..QueueGhost::default()
        }
    }

    /// Hashes what the ghost knows, times relative to `now` through `rel`
    /// (an ended promise is just ended, unless it ends at `now`).
    pub(crate) fn hash_at<H: Hasher>(&self, now: i64, rel: &dyn Fn(i64) -> i64, h: &mut H) {
        self.acks.hash(h);
        for s in &self.saved {
            s.as_ref()
                .map(|s| (rel(s.invoked_at), s.seq, s.after))
                .hash(h);
        }
        crate::reading::acted_now(self.last_claim, now).hash(h);
        crate::reading::acted_now(self.last_expiry_complete, now).hash(h);
        self.done.hash(h);
        self.maybe_done.hash(h);
        for c in &self.claims {
            c.instance.hash(h);
            c.child.hash(h);
            c.attempt.hash(h);
            c.seq.hash(h);
            c.after.hash(h);
            c.completed.hash(h);
            // Ended, ending at this very instant (where a complete races
            // the claim's expiry, see `answered`), or still to end.
            for t in [c.valid_until, c.may_hold_until] {
                t.cmp(&now).hash(h);
                if t > now {
                    rel(t).hash(h);
                }
            }
        }
        self.unacked_claim_until
            .filter(|t| *t > now)
            .map(rel)
            .hash(h);
        self.claim_race_reached.hash(h);
        self.complete_race_reached.hash(h);
    }
}
