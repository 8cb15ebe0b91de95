//! Replies: every outcome of every operation, in the wire shape of SPEC §6
//! (exactly one key names the outcome, except `rate.read`).

use serde::{Deserialize, Serialize};

use super::Request;

/// A lease record as `lease.read` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseView {
    /// The holder of the latest grant, even once it is released or expired.
    pub holder: String,
    /// The latest epoch granted for the tree.
    pub epoch: i64,
    /// When the latest grant ends (or ended), in server time ms.
    pub expires_at_ms: i64,
    /// Unexpired on server time and not released.
    pub live: bool,
}

/// The state of a child in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildState {
    /// Saved and waiting for its first claim.
    Queued,
    /// Held by a claim; claimable again once that claim expires on server time.
    Claimed,
    /// Completed by its current claim; never claimed or re-queued again.
    Done,
}

/// A child as `queue.read` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildView {
    /// Where the child is: queued, claimed or done.
    pub state: ChildState,
    /// The instance that claimed it last, kept once it is done; null if never claimed.
    pub claimer: Option<String>,
    /// How many times it has been claimed (0 until the first claim).
    pub attempt: i64,
    /// Its depth as saved; deeper children are claimed first.
    pub depth: i64,
}

/// Every successful outcome of every operation. Which outcomes an operation
/// may give is [`Reply::answers`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// `lease.take`: the tree was free, released or expired; the caller now
    /// holds it under a new epoch.
    Granted {
        /// The new epoch, greater than every earlier grant's for the tree.
        epoch: i64,
        /// When the lease ends: server now + `ttl_ms`, in server time ms.
        expires_at_ms: i64,
    },
    /// `lease.take`: the lease is live: its holder, epoch and expiry; nothing
    /// changed.
    Busy {
        /// The live holder; may be the caller itself after a lost reply.
        holder: String,
        /// The live lease's epoch, which that holder may adopt.
        epoch: i64,
        /// When the live lease ends, in server time ms.
        expires_at_ms: i64,
    },
    /// `lease.renew`: holder and epoch matched a live lease, which now runs to
    /// a new expiry.
    Renewed {
        /// The new expiry: server now + `ttl_ms`, in server time ms.
        expires_at_ms: i64,
    },
    /// `lease.renew`: the lease is someone else's, another epoch, released or
    /// expired; nothing changed.
    Lost {
        /// The current live holder, or null when no lease is live.
        holder: Option<String>,
        /// The current live epoch, or null when no lease is live.
        epoch: Option<i64>,
    },
    /// `lease.release`: holder and epoch matched; the tree is free and keeps
    /// its epoch. `rate.release_slot`: the live slot was handed back.
    Released {},
    /// `lease.release`: holder or epoch did not match, or it was already
    /// released; nothing changed and a newer epoch was not touched.
    NotHeld {},
    /// `lease.read`: the tree's record, or null when it was never taken.
    Lease(Option<LeaseView>),
    /// `lease.keep_execution`: the execution id is kept in the durable store.
    Kept {},
    /// `lease.kept_executions`: the execution ids kept for the tree.
    Executions(Vec<String>),
    /// `queue.save`: the child was unknown and is now queued.
    Saved {},
    /// `queue.save`: the id is already known; the child is left as it is.
    Exists {
        /// The known child's current state (a claimed or done child is never
        /// re-queued).
        state: ChildState,
    },
    /// `queue.claim`: the first claimable child in order, now claimed by the
    /// caller.
    Claimed {
        /// The claimed child's id.
        child: String,
        /// Its depth as saved.
        depth: i64,
        /// Its payload as saved.
        payload: String,
        /// This claim's number, one more than the last; `queue.complete` must
        /// name it.
        attempt: i64,
    },
    /// `queue.claim`: no child is queued or has an expired claim.
    Empty {},
    /// `queue.complete`: the caller's claim was current and unexpired; the
    /// child is done.
    Completed {},
    /// `queue.complete`: that claim is not the child's current, unexpired
    /// claim; nothing changed.
    NotClaimer {
        /// The child's latest claimer, or null when it has none or is unknown.
        claimer: Option<String>,
        /// The child's latest attempt, or null when the child is unknown.
        attempt: Option<i64>,
    },
    /// `queue.read`: the child's record, or null when the id is unknown.
    Child(Option<ChildView>),
    /// `rate.acquire_slot`: fewer than `limit` slots were live; the caller
    /// now holds a new one.
    Acquired {
        /// The new slot's id, to hand back with `rate.release_slot`.
        slot: String,
    },
    /// `rate.acquire_slot`: `limit` slots are live; nothing changed.
    Full {
        /// When the first live slot expires, on the instance clock (ms).
        retry_at_ms: i64,
    },
    /// `rate.pause`: the pause now in force. `rate.acquire_slot` and
    /// `rate.hit`: refused because the provider is paused; nothing changed.
    Paused {
        /// When the pause ends, on the instance clock (ms).
        until_ms: i64,
    },
    /// `rate.release_slot`: no live slot has that id; nothing changed.
    Unknown {},
    /// `rate.hit`: fewer than `limit` hits were in the window; this one is
    /// counted.
    Allowed {
        /// How many more hits the window allows after this one.
        remaining: i64,
    },
    /// `rate.hit`: `limit` hits are already in the window; this one is not
    /// counted.
    Limited {
        /// When the oldest counted hit leaves the window, on the instance
        /// clock (ms).
        retry_at_ms: i64,
    },
    /// `rate.read`: the one reply without an outcome key.
    #[serde(untagged)]
    RateState {
        /// How many slots are live on the instance clock.
        slots_in_use: i64,
        /// When the pause in force ends (instance clock, ms), or null when
        /// not paused.
        paused_until_ms: Option<i64>,
    },
}

impl Reply {
    /// The outcome's wire name (`granted`, `busy`, …; `rate_state` for `rate.read`).
    pub fn outcome(&self) -> &'static str {
        match self {
            Reply::Granted { .. } => "granted",
            Reply::Busy { .. } => "busy",
            Reply::Renewed { .. } => "renewed",
            Reply::Lost { .. } => "lost",
            Reply::Released {} => "released",
            Reply::NotHeld {} => "not_held",
            Reply::Lease(_) => "lease",
            Reply::Kept {} => "kept",
            Reply::Executions(_) => "executions",
            Reply::Saved {} => "saved",
            Reply::Exists { .. } => "exists",
            Reply::Claimed { .. } => "claimed",
            Reply::Empty {} => "empty",
            Reply::Completed {} => "completed",
            Reply::NotClaimer { .. } => "not_claimer",
            Reply::Child(_) => "child",
            Reply::Acquired { .. } => "acquired",
            Reply::Full { .. } => "full",
            Reply::Paused { .. } => "paused",
            Reply::Unknown {} => "unknown",
            Reply::Allowed { .. } => "allowed",
            Reply::Limited { .. } => "limited",
            Reply::RateState { .. } => "rate_state",
        }
    }

    /// Whether this outcome is one the request's operation may answer at all
    /// (SPEC §6's table). A reply that is not is malformed, whatever its values.
    pub fn answers(&self, req: &Request) -> bool {
        let allowed: &[&str] = match req {
            Request::LeaseTake { .. } => &["granted", "busy"],
            Request::LeaseRenew { .. } => &["renewed", "lost"],
            Request::LeaseRelease { .. } => &["released", "not_held"],
            Request::LeaseRead { .. } => &["lease"],
            Request::LeaseKeepExecution { .. } => &["kept"],
            Request::LeaseKeptExecutions { .. } => &["executions"],
            Request::QueueSave { .. } => &["saved", "exists"],
            Request::QueueClaim { .. } => &["claimed", "empty"],
            Request::QueueComplete { .. } => &["completed", "not_claimer"],
            Request::QueueRead { .. } => &["child"],
            Request::RateAcquireSlot { .. } => &["acquired", "full", "paused"],
            Request::RateReleaseSlot { .. } => &["released", "unknown"],
            Request::RateHit { .. } => &["allowed", "limited", "paused"],
            Request::RatePause { .. } => &["paused"],
            Request::RateRead { .. } => &["rate_state"],
        };
        allowed.contains(&self.outcome())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes_match_the_spec() {
        let cases = [
            (
                Reply::Granted {
                    epoch: 1,
                    expires_at_ms: 5,
                },
                json!({"granted": {"epoch": 1, "expires_at_ms": 5}}),
            ),
            (Reply::Released {}, json!({"released": {}})),
            (Reply::Lease(None), json!({"lease": null})),
            (
                Reply::Lost {
                    holder: None,
                    epoch: None,
                },
                json!({"lost": {"holder": null, "epoch": null}}),
            ),
            (
                Reply::Executions(vec!["e1".into()]),
                json!({"executions": ["e1"]}),
            ),
            (
                Reply::RateState {
                    slots_in_use: 2,
                    paused_until_ms: None,
                },
                json!({"slots_in_use": 2, "paused_until_ms": null}),
            ),
            (
                Reply::Exists {
                    state: ChildState::Done,
                },
                json!({"exists": {"state": "done"}}),
            ),
        ];
        for (reply, wire) in cases {
            assert_eq!(serde_json::to_value(&reply).unwrap(), wire);
            assert_eq!(serde_json::from_value::<Reply>(wire).unwrap(), reply);
        }
    }

    #[test]
    fn garbage_is_not_a_reply() {
        assert!(serde_json::from_value::<Reply>(json!({"granted": {"epoch": "x"}})).is_err());
        assert!(serde_json::from_value::<Reply>(json!({"weird": {}})).is_err());
    }
}
