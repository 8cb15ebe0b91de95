//! The sequential model of the child execution queue (docs/PROTOCOL.md §4.3).

use std::collections::BTreeMap;

use super::lease_model::mismatch;
use super::{ChildState, ChildView, Judgement, Reply, Request};

/// One child as the contract sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildRecord {
    /// Queued, claimed or done.
    pub state: ChildState,
    /// Its depth as saved; deeper children are claimed first.
    pub depth: i64,
    /// Its payload as saved, handed to every claimer.
    pub payload: String,
    /// The last claimer, kept after the child is done.
    pub claimer: Option<String>,
    /// How many times it has been claimed (0 until the first claim).
    pub attempt: i64,
    /// When the current claim ends, in server time ms (0 before the first claim).
    pub claim_expires_at_ms: i64,
    /// Server time of the save: the longest waiting are claimed first.
    pub saved_at_ms: i64,
    /// Save order, breaking ties between saves at the same server time.
    pub seq: u64,
}

impl ChildRecord {
    /// Queued, or claimed with a claim that has run out at `now_ms`.
    pub fn claimable(&self, now_ms: i64) -> bool {
        match self.state {
            ChildState::Queued => true,
            ChildState::Claimed => now_ms >= self.claim_expires_at_ms,
            ChildState::Done => false,
        }
    }
}

/// The queue contract run sequentially on server time. Every reply is
/// determined, so `judge` demands equality.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueModel {
    /// Child id → its record; done children are kept.
    pub children: BTreeMap<String, ChildRecord>,
    next_seq: u64,
}

impl QueueModel {
    /// The reply to `req` at server time `now_ms`, and its effect. Requests of
    /// other contracts answer `None` and change nothing.
    pub fn apply(&mut self, req: &Request, now_ms: i64) -> Option<Reply> {
        Some(match req {
            Request::QueueSave {
                child,
                depth,
                payload,
            } => {
                if let Some(c) = self.children.get(child) {
                    return Some(Reply::Exists { state: c.state });
                }
                self.next_seq += 1;
                self.children.insert(
                    child.clone(),
                    ChildRecord {
                        state: ChildState::Queued,
                        depth: *depth,
                        payload: payload.clone(),
                        claimer: None,
                        attempt: 0,
                        claim_expires_at_ms: 0,
                        saved_at_ms: now_ms,
                        seq: self.next_seq,
                    },
                );
                Reply::Saved {}
            }
            Request::QueueClaim {
                instance,
                claim_ttl_ms,
            } => {
                // The order: deepest first, then longest waiting, then save order.
                let first = self
                    .children
                    .iter()
                    .filter(|(_, c)| c.claimable(now_ms))
                    .min_by_key(|(_, c)| (-c.depth, c.saved_at_ms, c.seq))
                    .map(|(id, _)| id.clone());
                let Some(id) = first else {
                    return Some(Reply::Empty {});
                };
                let c = self.children.get_mut(&id)?;
                c.state = ChildState::Claimed;
                c.claimer = Some(instance.clone());
                c.attempt += 1;
                c.claim_expires_at_ms = now_ms + claim_ttl_ms;
                Reply::Claimed {
                    child: id,
                    depth: c.depth,
                    payload: c.payload.clone(),
                    attempt: c.attempt,
                }
            }
            Request::QueueComplete {
                child,
                instance,
                attempt,
            } => match self.children.get_mut(child) {
                Some(c)
                    if c.state == ChildState::Claimed
                        && c.claimer.as_ref() == Some(instance)
                        && c.attempt == *attempt
                        && now_ms < c.claim_expires_at_ms =>
                {
                    c.state = ChildState::Done;
                    Reply::Completed {}
                }
                Some(c) => Reply::NotClaimer {
                    claimer: c.claimer.clone(),
                    attempt: Some(c.attempt),
                },
                None => Reply::NotClaimer {
                    claimer: None,
                    attempt: None,
                },
            },
            Request::QueueRead { child } => {
                Reply::Child(self.children.get(child).map(|c| ChildView {
                    state: c.state,
                    claimer: c.claimer.clone(),
                    attempt: c.attempt,
                    depth: c.depth,
                }))
            }
            _ => return None,
        })
    }

    /// Judges a store's reply: it must equal the model's.
    pub fn judge(&mut self, req: &Request, now_ms: i64, observed: &Reply) -> Judgement {
        let mut next = self.clone();
        match next.apply(req, now_ms) {
            None => Judgement::Violates(format!("{} is not a queue operation", req.op())),
            Some(canonical) if &canonical == observed => {
                *self = next;
                Judgement::Agrees
            }
            Some(canonical) => Judgement::Violates(mismatch(&canonical, observed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save(child: &str, depth: i64) -> Request {
        Request::QueueSave {
            child: child.into(),
            depth,
            payload: format!("p-{child}"),
        }
    }
    fn claim(instance: &str) -> Request {
        Request::QueueClaim {
            instance: instance.into(),
            claim_ttl_ms: 100,
        }
    }
    fn claimed(child: &str, depth: i64, attempt: i64) -> Option<Reply> {
        Some(Reply::Claimed {
            child: child.into(),
            depth,
            payload: format!("p-{child}"),
            attempt,
        })
    }

    #[test]
    fn deepest_first_then_longest_waiting_then_save_order() {
        let mut m = QueueModel::default();
        m.apply(&save("shallow-old", 1), 0);
        m.apply(&save("deep-new", 3), 10);
        m.apply(&save("deep-old-b", 3), 5);
        m.apply(&save("deep-old-a", 3), 5);
        assert_eq!(m.apply(&claim("i"), 20), claimed("deep-old-b", 3, 1));
        assert_eq!(m.apply(&claim("i"), 20), claimed("deep-old-a", 3, 1));
        assert_eq!(m.apply(&claim("i"), 20), claimed("deep-new", 3, 1));
        assert_eq!(m.apply(&claim("i"), 20), claimed("shallow-old", 1, 1));
        assert_eq!(m.apply(&claim("i"), 20), Some(Reply::Empty {}));
    }

    #[test]
    fn an_expired_claim_is_claimed_again_with_the_next_attempt() {
        let mut m = QueueModel::default();
        m.apply(&save("c", 0), 0);
        assert_eq!(m.apply(&claim("a"), 0), claimed("c", 0, 1));
        assert_eq!(m.apply(&claim("b"), 99), Some(Reply::Empty {}));
        assert_eq!(m.apply(&claim("b"), 100), claimed("c", 0, 2));
        let late = Request::QueueComplete {
            child: "c".into(),
            instance: "a".into(),
            attempt: 1,
        };
        assert_eq!(
            m.apply(&late, 101),
            Some(Reply::NotClaimer {
                claimer: Some("b".into()),
                attempt: Some(2)
            })
        );
    }

    #[test]
    fn complete_once_and_save_never_requeues() {
        let mut m = QueueModel::default();
        m.apply(&save("c", 0), 0);
        m.apply(&claim("a"), 0);
        let done = Request::QueueComplete {
            child: "c".into(),
            instance: "a".into(),
            attempt: 1,
        };
        assert_eq!(m.apply(&done, 50), Some(Reply::Completed {}));
        assert_eq!(
            m.apply(&done, 51),
            Some(Reply::NotClaimer {
                claimer: Some("a".into()),
                attempt: Some(1)
            })
        );
        assert_eq!(
            m.apply(&save("c", 0), 52),
            Some(Reply::Exists {
                state: ChildState::Done
            })
        );
        assert_eq!(m.apply(&claim("b"), 500), Some(Reply::Empty {}));
    }

    #[test]
    fn a_claim_ends_at_its_expiry_instant() {
        let mut m = QueueModel::default();
        m.apply(&save("c", 0), 0);
        m.apply(&claim("a"), 0);
        let done = Request::QueueComplete {
            child: "c".into(),
            instance: "a".into(),
            attempt: 1,
        };
        assert!(matches!(
            m.apply(&done, 100),
            Some(Reply::NotClaimer { .. })
        ));
    }

    #[test]
    fn judge_demands_equality() {
        let mut m = QueueModel::default();
        m.apply(&save("c", 0), 0);
        assert!(matches!(
            m.judge(&claim("a"), 0, &Reply::Empty {}),
            Judgement::Violates(_)
        ));
        assert_eq!(
            m.judge(&claim("a"), 0, &claimed("c", 0, 1).unwrap()),
            Judgement::Agrees
        );
    }
}
