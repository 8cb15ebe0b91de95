//! The sequential model of provider rate limits (docs/PROTOCOL.md §4.4), on the
//! instance clock (`clock_ms`).

use std::collections::BTreeMap;

use super::lease_model::mismatch;
use super::{Judgement, Reply, Request};

/// One provider's slots, allowed hits and pause.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderRecord {
    /// slot id → (holder, expires_at_ms).
    pub slots: BTreeMap<String, (String, i64)>,
    /// Times of the allowed hits.
    pub hits: Vec<i64>,
    /// The longest pause ever asked for.
    pub paused_until_ms: Option<i64>,
    next_slot: u64,
}

impl ProviderRecord {
    fn pause_in_force(&self, now_ms: i64) -> Option<i64> {
        self.paused_until_ms.filter(|until| *until > now_ms)
    }
    fn live_slots(&self, now_ms: i64) -> impl Iterator<Item = i64> + '_ {
        self.slots
            .values()
            .map(|(_, exp)| *exp)
            .filter(move |exp| *exp > now_ms)
    }
}

/// The rate-limit contract run sequentially on the instance clock. Slot ids
/// are the store's choice; everything else is determined.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateModel {
    /// Provider → its slots, hits and pause.
    pub providers: BTreeMap<String, ProviderRecord>,
}

impl RateModel {
    /// The canonical reply to `req` at instance clock `now_ms` (slot ids
    /// count 1, 2, 3, …), and its effect. Requests of other contracts answer
    /// `None` and change nothing.
    pub fn apply(&mut self, req: &Request, now_ms: i64) -> Option<Reply> {
        Some(match req {
            Request::RateAcquireSlot {
                provider,
                holder,
                limit,
                ttl_ms,
            } => {
                let p = self.providers.entry(provider.clone()).or_default();
                if let Some(until_ms) = p.pause_in_force(now_ms) {
                    return Some(Reply::Paused { until_ms });
                }
                p.slots.retain(|_, (_, exp)| *exp > now_ms);
                if (p.slots.len() as i64) < *limit {
                    // A fresh id: one adopted from the store may already
                    // be the next number (found by conformance.generated.rate).
                    let mut slot;
                    loop {
                        p.next_slot += 1;
                        slot = p.next_slot.to_string();
                        if !p.slots.contains_key(&slot) {
                            break;
                        }
                    }
                    p.slots
                        .insert(slot.clone(), (holder.clone(), now_ms + ttl_ms));
                    Reply::Acquired { slot }
                } else {
                    Reply::Full {
                        retry_at_ms: p.live_slots(now_ms).min().unwrap_or(now_ms),
                    }
                }
            }
            Request::RateReleaseSlot { provider, slot } => {
                let p = self.providers.entry(provider.clone()).or_default();
                match p.slots.remove(slot) {
                    Some((_, exp)) if exp > now_ms => Reply::Released {},
                    _ => Reply::Unknown {},
                }
            }
            Request::RateHit {
                provider,
                limit,
                window_ms,
            } => {
                let p = self.providers.entry(provider.clone()).or_default();
                if let Some(until_ms) = p.pause_in_force(now_ms) {
                    return Some(Reply::Paused { until_ms });
                }
                let counted: Vec<i64> = p
                    .hits
                    .iter()
                    .copied()
                    .filter(|t| *t > now_ms - window_ms && *t <= now_ms)
                    .collect();
                let count = counted.len() as i64;
                if count < *limit {
                    p.hits.push(now_ms);
                    Reply::Allowed {
                        remaining: limit - count - 1,
                    }
                } else {
                    Reply::Limited {
                        retry_at_ms: counted.iter().min().copied().unwrap_or(now_ms) + window_ms,
                    }
                }
            }
            Request::RatePause { provider, until_ms } => {
                let p = self.providers.entry(provider.clone()).or_default();
                let until = p.paused_until_ms.map_or(*until_ms, |u| u.max(*until_ms));
                p.paused_until_ms = Some(until);
                Reply::Paused { until_ms: until }
            }
            Request::RateRead { provider } => {
                let p = self.providers.get(provider).cloned().unwrap_or_default();
                Reply::RateState {
                    slots_in_use: p.live_slots(now_ms).count() as i64,
                    paused_until_ms: p.pause_in_force(now_ms),
                }
            }
            _ => return None,
        })
    }

    /// Judges a store's reply. An acquired slot may have any id that no live
    /// slot of the provider has; the model adopts it.
    pub fn judge(&mut self, req: &Request, now_ms: i64, observed: &Reply) -> Judgement {
        let mut next = self.clone();
        let Some(canonical) = next.apply(req, now_ms) else {
            return Judgement::Violates(format!("{} is not a rate operation", req.op()));
        };
        match (req, &canonical, observed) {
            (_, want, got) if want == got => {
                *self = next;
                Judgement::Agrees
            }
            (
                Request::RateAcquireSlot { provider, .. },
                Reply::Acquired { slot: want },
                Reply::Acquired { slot: got },
            ) => {
                let Some(p) = next.providers.get_mut(provider) else {
                    return Judgement::Violates("provider vanished from the model".into());
                };
                if p.slots.contains_key(got) {
                    return Judgement::Violates(format!(
                        "acquired slot {got:?}, which is already held"
                    ));
                }
                if let Some(v) = p.slots.remove(want) {
                    p.slots.insert(got.clone(), v);
                }
                *self = next;
                Judgement::Agrees
            }
            _ => Judgement::Violates(mismatch(&canonical, observed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquire(limit: i64) -> Request {
        Request::RateAcquireSlot {
            provider: "p".into(),
            holder: "h".into(),
            limit,
            ttl_ms: 100,
        }
    }
    fn hit(limit: i64) -> Request {
        Request::RateHit {
            provider: "p".into(),
            limit,
            window_ms: 1000,
        }
    }

    #[test]
    fn slots_fill_up_and_come_back_when_they_expire() {
        let mut m = RateModel::default();
        assert!(matches!(
            m.apply(&acquire(2), 0),
            Some(Reply::Acquired { .. })
        ));
        assert!(matches!(
            m.apply(&acquire(2), 10),
            Some(Reply::Acquired { .. })
        ));
        assert_eq!(
            m.apply(&acquire(2), 20),
            Some(Reply::Full { retry_at_ms: 100 })
        );
        assert!(matches!(
            m.apply(&acquire(2), 100),
            Some(Reply::Acquired { .. })
        ));
        assert_eq!(
            m.apply(
                &Request::RateRead {
                    provider: "p".into()
                },
                100
            ),
            Some(Reply::RateState {
                slots_in_use: 2,
                paused_until_ms: None
            })
        );
    }

    #[test]
    fn release_frees_a_live_slot_once() {
        let mut m = RateModel::default();
        let Some(Reply::Acquired { slot }) = m.apply(&acquire(1), 0) else {
            panic!("no slot")
        };
        let rel = Request::RateReleaseSlot {
            provider: "p".into(),
            slot,
        };
        assert_eq!(m.apply(&rel, 1), Some(Reply::Released {}));
        assert_eq!(m.apply(&rel, 2), Some(Reply::Unknown {}));
    }

    #[test]
    fn the_window_counts_allowed_hits_in_now_minus_window_to_now() {
        let mut m = RateModel::default();
        assert_eq!(m.apply(&hit(2), 0), Some(Reply::Allowed { remaining: 1 }));
        assert_eq!(m.apply(&hit(2), 500), Some(Reply::Allowed { remaining: 0 }));
        assert_eq!(
            m.apply(&hit(2), 999),
            Some(Reply::Limited { retry_at_ms: 1000 })
        );
        // At 1000 the hit at 0 has left the window (now − window is excluded).
        assert_eq!(
            m.apply(&hit(2), 1000),
            Some(Reply::Allowed { remaining: 0 })
        );
    }

    #[test]
    fn a_pause_only_lengthens_and_blocks_both_kinds() {
        let mut m = RateModel::default();
        let pause = |until_ms| Request::RatePause {
            provider: "p".into(),
            until_ms,
        };
        assert_eq!(
            m.apply(&pause(500), 0),
            Some(Reply::Paused { until_ms: 500 })
        );
        assert_eq!(
            m.apply(&pause(200), 0),
            Some(Reply::Paused { until_ms: 500 })
        );
        assert_eq!(m.apply(&hit(5), 499), Some(Reply::Paused { until_ms: 500 }));
        assert_eq!(
            m.apply(&acquire(5), 499),
            Some(Reply::Paused { until_ms: 500 })
        );
        assert!(matches!(m.apply(&hit(5), 500), Some(Reply::Allowed { .. })));
    }

    #[test]
    fn judge_adopts_the_store_slot_ids_but_refuses_a_duplicate() {
        let mut m = RateModel::default();
        let a = Reply::Acquired { slot: "x".into() };
        assert_eq!(m.judge(&acquire(3), 0, &a), Judgement::Agrees);
        assert!(matches!(
            m.judge(&acquire(3), 1, &a),
            Judgement::Violates(_)
        ));
        let rel = Request::RateReleaseSlot {
            provider: "p".into(),
            slot: "x".into(),
        };
        assert_eq!(m.judge(&rel, 2, &Reply::Released {}), Judgement::Agrees);
    }

    #[test]
    fn an_adopted_slot_id_equal_to_the_next_canonical_one_is_not_overwritten() {
        let mut m = RateModel::default();
        let got = |slot: &str| Reply::Acquired { slot: slot.into() };
        // The store numbers its first slot 2, the model's next own id.
        assert_eq!(m.judge(&acquire(2), 0, &got("2")), Judgement::Agrees);
        assert_eq!(m.judge(&acquire(2), 1, &got("3")), Judgement::Agrees);
        let read = Request::RateRead {
            provider: "p".into(),
        };
        assert_eq!(
            m.apply(&read, 2),
            Some(Reply::RateState {
                slots_in_use: 2,
                paused_until_ms: None
            })
        );
    }
}
