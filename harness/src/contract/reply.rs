//! Replies: every outcome of every operation, in the wire shape of SPEC §6
//! (exactly one key names the outcome, except `rate.read`).

use serde::{Deserialize, Serialize};

use super::Request;

/// A lease record as `lease.read` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseView {
    pub holder: String,
    pub epoch: i64,
    pub expires_at_ms: i64,
    /// Unexpired on server time and not released.
    pub live: bool,
}

/// The state of a child in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildState {
    Queued,
    Claimed,
    Done,
}

/// A child as `queue.read` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildView {
    pub state: ChildState,
    pub claimer: Option<String>,
    pub attempt: i64,
    pub depth: i64,
}

/// Every successful outcome of every operation. Which outcomes an operation
/// may give is [`Reply::answers`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Granted {
        epoch: i64,
        expires_at_ms: i64,
    },
    Busy {
        holder: String,
        epoch: i64,
        expires_at_ms: i64,
    },
    Renewed {
        expires_at_ms: i64,
    },
    Lost {
        holder: Option<String>,
        epoch: Option<i64>,
    },
    Released {},
    NotHeld {},
    Lease(Option<LeaseView>),
    Kept {},
    Executions(Vec<String>),
    Saved {},
    Exists {
        state: ChildState,
    },
    Claimed {
        child: String,
        depth: i64,
        payload: String,
        attempt: i64,
    },
    Empty {},
    Completed {},
    NotClaimer {
        claimer: Option<String>,
        attempt: Option<i64>,
    },
    Child(Option<ChildView>),
    Acquired {
        slot: String,
    },
    Full {
        retry_at_ms: i64,
    },
    Paused {
        until_ms: i64,
    },
    Unknown {},
    Allowed {
        remaining: i64,
    },
    Limited {
        retry_at_ms: i64,
    },
    /// `rate.read`: the one reply without an outcome key.
    #[serde(untagged)]
    RateState {
        slots_in_use: i64,
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
