//! Rate bounds (docs/PROTOCOL.md §4.4) with ambiguous outcomes counted both
//! ways: never more than `limit` live slots per provider, never more than
//! `limit` allowed hits in any window, no slot or hit granted while paused.
//!
//! **Clock.** Rate limits decide on the instance clock each request carries:
//! the `clock_ms` of its invoke event. A slot acquired at `c` with `ttl_ms`
//! is live for a later request whose clock is below `c + ttl_ms`; a hit at
//! `c` counts for a later hit at `now` when `now − window_ms < c ≤ now`; a
//! pause until `u` is in force for a request whose clock is below `u`.
//! Clocks may be skewed: each request is judged on its own clock, as the
//! store must.
//!
//! **Only what every resolution of the unknowns shows.** A violation is
//! reported only when it holds in every way of resolving the operations
//! whose outcome is unknown (an `info` completion, or none) and every order
//! of the concurrent ones:
//! - a grant (`acquired` / `allowed`) is judged against the grants that
//!   *completed before it was sent* (so they took effect before it);
//!   concurrent grants are not counted, since they may come after it;
//! - an acquire or hit whose outcome is unknown counts as not taken;
//! - a slot counts as live only if no `rate.release_slot` of it (with any
//!   outcome but a certain refusal) was sent before the grant completed,
//!   since such a release may have come first;
//! - a pause counts only once a reply named it (`paused {until_ms}` from
//!   `rate.pause`, or from an acquire or hit it refused) before the grant
//!   was sent; a pause whose reply was lost is not counted.
//!
//! Overlapping grants are judged as a group: a set of grants each of which,
//! if ordered before another, counts against it (for slots: live on the
//! other's clock and not possibly released before the other completed; for
//! hits: inside the other's window), with the pairs ordered by real time
//! (one completed before the other was sent) only checked that way round.
//! Whatever order the store chose, the last of them saw all the others; if
//! they outnumber the largest limit any of them named, that is a violation.
//! The groups are grown greedily, so this is sound, not complete: some
//! overloads go unseen.

use std::collections::{BTreeMap, HashMap};

use model::contract::{Reply, Request};
use model::History;

use crate::ops::{operations, End, Op};
pub use model::findings::rate::{RateBounds, RateViolation};

impl Op<'_> {
    fn provider(&self) -> &str {
        match &self.request {
            Request::RateAcquireSlot { provider, .. }
            | Request::RateReleaseSlot { provider, .. }
            | Request::RateHit { provider, .. }
            | Request::RatePause { provider, .. }
            | Request::RateRead { provider } => provider,
            _ => "",
        }
    }
}

/// Rate operations of `history` that parse, paired with their completions.
fn rate_ops(history: &History) -> Vec<Op<'_>> {
    operations(history, |request| request.op().starts_with("rate."))
}

/// Checks the rate bounds on the rate operations of `history`.
pub fn check(history: &History) -> RateBounds {
    let ops = rate_ops(history);
    let mut by_provider: BTreeMap<&str, Vec<&Op<'_>>> = BTreeMap::new();
    for op in &ops {
        by_provider.entry(op.provider()).or_default().push(op);
    }
    let mut violations = Vec::new();
    let mut unknown = Vec::new();
    let mut pauses_named = 0;
    for (provider, ops) in by_provider {
        // Acquires answered `acquired`: (op, slot id, ttl).
        let acquired: Vec<(&Op<'_>, &str, i64)> = ops
            .iter()
            .filter_map(|op| match (&op.request, op.reply()) {
                (Request::RateAcquireSlot { ttl_ms, .. }, Some(Reply::Acquired { slot })) => {
                    Some((*op, slot.as_str(), *ttl_ms))
                }
                _ => None,
            })
            .collect();
        let allowed: Vec<&Op<'_>> = ops
            .iter()
            .filter(|op| {
                matches!(
                    (&op.request, op.reply()),
                    (Request::RateHit { .. }, Some(Reply::Allowed { .. }))
                )
            })
            .copied()
            .collect();
        // Releases that may have happened: slot → their invoke events.
        let mut releases: HashMap<&str, Vec<usize>> = HashMap::new();
        // Pauses a reply named: (completion event, until).
        let mut pauses: Vec<(usize, i64)> = Vec::new();
        for op in &ops {
            if let Request::RateReleaseSlot { slot, .. } = &op.request {
                if !matches!(op.end, End::Refused | End::Declined) {
                    releases.entry(slot).or_default().push(op.invoke);
                }
            }
            if let End::Reply(at, Reply::Paused { until_ms }) = op.end {
                pauses.push((at, *until_ms));
                pauses_named += 1;
            }
            if matches!(
                op.request,
                Request::RateAcquireSlot { .. } | Request::RateHit { .. }
            ) && matches!(op.end, End::Unknown)
            {
                unknown.push(op.invoke);
            }
        }

        for &(a, _, _) in &acquired {
            let Request::RateAcquireSlot { limit, .. } = a.request else {
                continue;
            };
            let live: Vec<usize> = acquired
                .iter()
                .filter(|&&(s, slot, ttl)| {
                    s.completed_at() < a.invoke
                        && a.clock_ms < s.clock_ms.saturating_add(ttl)
                        && !releases
                            .get(slot)
                            .is_some_and(|r| r.iter().any(|&inv| inv < a.completed_at()))
                })
                .map(|(s, _, _)| s.invoke)
                .collect();
            if live.len() as i64 >= limit {
                violations.push(RateViolation::TooManySlots {
                    provider: provider.to_string(),
                    acquire: a.invoke,
                    clock_ms: a.clock_ms,
                    limit,
                    live,
                });
            }
        }

        for h in &allowed {
            let Request::RateHit {
                limit, window_ms, ..
            } = h.request
            else {
                continue;
            };
            let counted: Vec<usize> = allowed
                .iter()
                .filter(|g| {
                    g.completed_at() < h.invoke
                        && g.clock_ms <= h.clock_ms
                        && g.clock_ms > h.clock_ms.saturating_sub(window_ms)
                })
                .map(|g| g.invoke)
                .collect();
            if counted.len() as i64 >= limit {
                violations.push(RateViolation::TooManyHits {
                    provider: provider.to_string(),
                    hit: h.invoke,
                    clock_ms: h.clock_ms,
                    limit,
                    window_ms,
                    counted,
                });
            }
        }

        let slot_counts = |s: &(&Op<'_>, &str, i64), a: &(&Op<'_>, &str, i64)| {
            let (s, slot, ttl) = *s;
            a.0.clock_ms < s.clock_ms.saturating_add(ttl)
                && !releases
                    .get(slot)
                    .is_some_and(|r| r.iter().any(|&inv| inv < a.0.completed_at()))
        };
        let slot_limit = |a: &(&Op<'_>, &str, i64)| match a.0.request {
            Request::RateAcquireSlot { limit, .. } => limit,
            _ => i64::MAX,
        };
        let op_of = |a: &(&Op<'_>, &str, i64)| (a.0.invoke, a.0.completed_at());
        let groups = together(&acquired, op_of, slot_counts, slot_limit);
        let before = violations.len();
        for (grants, limit) in groups {
            violations.push(RateViolation::TooManyTogether {
                provider: provider.to_string(),
                op: "rate.acquire_slot".into(),
                grants,
                limit,
            });
        }
        let hit_counts = |g: &&Op<'_>, h: &&Op<'_>| match h.request {
            Request::RateHit { window_ms, .. } => {
                g.clock_ms <= h.clock_ms && g.clock_ms > h.clock_ms.saturating_sub(window_ms)
            }
            _ => false,
        };
        let hit_limit = |h: &&Op<'_>| match h.request {
            Request::RateHit { limit, .. } => limit,
            _ => i64::MAX,
        };
        for (grants, limit) in together(
            &allowed,
            |h| (h.invoke, h.completed_at()),
            hit_counts,
            hit_limit,
        ) {
            violations.push(RateViolation::TooManyTogether {
                provider: provider.to_string(),
                op: "rate.hit".into(),
                grants,
                limit,
            });
        }
        // A group with a grant already blamed alone adds nothing new.
        let alone: Vec<usize> = violations[..before]
            .iter()
            .filter_map(|v| match v {
                RateViolation::TooManySlots { acquire, .. } => Some(*acquire),
                RateViolation::TooManyHits { hit, .. } => Some(*hit),
                _ => None,
            })
            .collect();
        let mut k = before;
        while k < violations.len() {
            let covered = matches!(&violations[k],
                RateViolation::TooManyTogether { grants, .. }
                    if grants.iter().any(|g| alone.contains(g)));
            if covered {
                violations.remove(k);
            } else {
                k += 1;
            }
        }

        let grants = acquired.iter().map(|&(a, _, _)| a).chain(allowed);
        for g in grants {
            // A pause only lengthens: the longest one known by then decides.
            let pause = pauses
                .iter()
                .filter(|&&(at, _)| at < g.invoke)
                .max_by_key(|&&(at, until)| (until, std::cmp::Reverse(at)));
            if let Some(&(pause_event, until_ms)) = pause {
                if g.clock_ms < until_ms {
                    violations.push(RateViolation::GrantedWhilePaused {
                        provider: provider.to_string(),
                        grant: g.invoke,
                        clock_ms: g.clock_ms,
                        until_ms,
                        pause_event,
                    });
                }
            }
        }
    }
    unknown.sort_unstable();
    RateBounds {
        violations,
        unknown,
        pauses: pauses_named,
    }
}

/// Groups of grants that overload whatever order the store chose: grown
/// greedily from each grant not yet in a group, in invoke order. `counts(g,
/// h)`: `g`, ordered before `h`, counts against `h`. Returns each group's
/// invoke events and the largest limit named in it. `span(g)`: its
/// invoke and completion events.
fn together<T>(
    grants: &[T],
    span: impl Fn(&T) -> (usize, usize),
    counts: impl Fn(&T, &T) -> bool,
    limit: impl Fn(&T) -> i64,
) -> Vec<(Vec<usize>, i64)> {
    // Could `g` precede `h`, and then does it count? And the other way.
    let fits = |g: &T, h: &T| {
        let ((g_inv, g_done), (h_inv, h_done)) = (span(g), span(h));
        let g_first = g_done < h_inv;
        let h_first = h_done < g_inv;
        (h_first || counts(g, h)) && (g_first || counts(h, g))
    };
    let mut out = Vec::new();
    let mut used = vec![false; grants.len()];
    for seed in 0..grants.len() {
        if used[seed] {
            continue;
        }
        let mut group = vec![seed];
        let mut most = limit(&grants[seed]);
        for j in 0..grants.len() {
            if (group.len() as i64) > most {
                break;
            }
            if j == seed || !group.iter().all(|&m| fits(&grants[m], &grants[j])) {
                continue;
            }
            group.push(j);
            most = most.max(limit(&grants[j]));
        }
        if (group.len() as i64) > most {
            for &m in &group {
                used[m] = true;
            }
            let mut events: Vec<usize> = group.iter().map(|&m| span(&grants[m]).0).collect();
            events.sort_unstable();
            out.push((events, most));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::contract::{Call, ErrorKind, StoreError};
    use serde_json::json;

    const P: &str = "p";

    #[derive(Default)]
    struct H(History);

    impl H {
        fn inv(&mut self, who: &str, op: &str, args: serde_json::Value, clock: i64) -> usize {
            let call = Call {
                op: op.into(),
                args,
            };
            self.0.invoke(who, &call, None, clock);
            self.0.events.len() - 1
        }
        fn acquire(&mut self, who: &str, limit: i64, clock: i64) -> usize {
            let args = json!({"provider": P, "holder": who, "limit": limit, "ttl_ms": 100});
            self.inv(who, "rate.acquire_slot", args, clock)
        }
        fn release(&mut self, who: &str, slot: &str, clock: i64) -> usize {
            let args = json!({"provider": P, "slot": slot});
            self.inv(who, "rate.release_slot", args, clock)
        }
        fn hit(&mut self, who: &str, limit: i64, clock: i64) -> usize {
            let args = json!({"provider": P, "limit": limit, "window_ms": 1000});
            self.inv(who, "rate.hit", args, clock)
        }
        fn pause(&mut self, who: &str, until: i64, clock: i64) -> usize {
            let args = json!({"provider": P, "until_ms": until});
            self.inv(who, "rate.pause", args, clock)
        }
        fn ok(&mut self, who: &str, op: &str, reply: Reply) -> &mut Self {
            self.0.complete(who, op, &Ok(reply), None, 0);
            self
        }
        fn acquired(&mut self, who: &str, slot: &str) -> &mut Self {
            let r = Reply::Acquired { slot: slot.into() };
            self.ok(who, "rate.acquire_slot", r)
        }
        fn allowed(&mut self, who: &str) -> &mut Self {
            self.ok(who, "rate.hit", Reply::Allowed { remaining: 0 })
        }
        fn lost(&mut self, who: &str, op: &str) -> &mut Self {
            let e = StoreError::new(ErrorKind::Unavailable, "reply lost");
            self.0.complete(who, op, &Err(e), None, 0);
            self
        }
    }

    #[test]
    fn slots_within_the_limit_pass() {
        let mut h = H::default();
        h.acquire("a", 2, 0);
        h.acquired("a", "s1");
        h.acquire("b", 2, 10);
        h.acquired("b", "s2");
        h.acquire("c", 2, 20);
        h.ok("c", "rate.acquire_slot", Reply::Full { retry_at_ms: 100 });
        // Released, then acquired again.
        h.release("a", "s1", 30);
        h.ok("a", "rate.release_slot", Reply::Released {});
        h.acquire("c", 2, 40);
        h.acquired("c", "s3");
        // Expired on the instance clock (s2 ends at 110): not live at 110.
        h.acquire("d", 2, 110);
        h.acquired("d", "s4");
        let v = check(&h.0);
        assert!(v.holds(), "{v:?}");
    }

    #[test]
    fn a_slot_beyond_the_limit_fails() {
        let mut h = H::default();
        let a = h.acquire("a", 2, 0);
        h.acquired("a", "s1");
        let b = h.acquire("b", 2, 10);
        h.acquired("b", "s2");
        let c = h.acquire("c", 2, 20);
        h.acquired("c", "s3");
        assert_eq!(
            check(&h.0).violations,
            vec![RateViolation::TooManySlots {
                provider: P.into(),
                acquire: c,
                clock_ms: 20,
                limit: 2,
                live: vec![a, b]
            }]
        );
        // A clock behind the others still sees their slots live.
        let mut h = H::default();
        h.acquire("a", 1, 1000);
        h.acquired("a", "s1");
        h.acquire("b", 1, 500);
        h.acquired("b", "s2");
        assert!(!check(&h.0).holds());
    }

    #[test]
    fn unknown_acquires_and_releases_are_not_blamed() {
        // An acquire whose reply was lost counts as not taken.
        let mut h = H::default();
        h.acquire("a", 1, 0);
        h.lost("a", "rate.acquire_slot");
        let b = h.acquire("b", 1, 10);
        h.acquired("b", "s2");
        let v = check(&h.0);
        assert!(v.holds(), "{v:?}");
        assert_eq!(v.unknown, vec![0]);
        assert!(!v.unknown.contains(&b));

        // A release whose reply was lost may have freed the slot.
        let mut h = H::default();
        h.acquire("a", 1, 0);
        h.acquired("a", "s1");
        h.release("a", "s1", 5);
        h.lost("a", "rate.release_slot");
        h.acquire("b", 1, 10);
        h.acquired("b", "s2");
        assert!(check(&h.0).holds());

        // Overlapping acquires whose order decides: if a's came first, b's
        // clock (200) saw a's slot expired (at 100); only b-then-a would
        // overload, and the store may have ordered them a-then-b.
        let mut h = H::default();
        h.acquire("a", 1, 0);
        h.acquire("b", 1, 200);
        h.acquired("a", "s1").acquired("b", "s2");
        assert!(check(&h.0).holds(), "{:?}", check(&h.0));
    }

    #[test]
    fn overlapping_grants_that_overload_in_every_order_fail() {
        let mut h = H::default();
        let a = h.acquire("a", 1, 0);
        let b = h.acquire("b", 1, 10);
        h.acquired("a", "s1").acquired("b", "s2");
        assert_eq!(
            check(&h.0).violations,
            vec![RateViolation::TooManyTogether {
                provider: P.into(),
                op: "rate.acquire_slot".into(),
                grants: vec![a, b],
                limit: 1
            }]
        );
        // Three overlapping hits against a limit of two.
        let mut h = H::default();
        let x = h.hit("a", 2, 0);
        let y = h.hit("b", 2, 0);
        h.allowed("a");
        let z = h.hit("a", 2, 0);
        h.allowed("b").allowed("a");
        assert_eq!(
            check(&h.0).violations,
            vec![RateViolation::TooManyTogether {
                provider: P.into(),
                op: "rate.hit".into(),
                grants: vec![x, y, z],
                limit: 2
            }]
        );
        // Two of them are within the limit.
        let mut h = H::default();
        h.hit("a", 2, 0);
        h.hit("b", 2, 0);
        h.allowed("a").allowed("b");
        assert!(check(&h.0).holds());
    }

    #[test]
    fn hits_beyond_the_window_limit_fail_and_within_pass() {
        let mut h = H::default();
        let first = h.hit("a", 2, 0);
        h.allowed("a");
        let second = h.hit("a", 2, 500);
        h.allowed("a");
        h.hit("a", 2, 600);
        h.ok("a", "rate.hit", Reply::Limited { retry_at_ms: 1000 });
        // The first hit left the window (1000 - 1000 < 0 is false).
        let fourth = h.hit("a", 2, 1000);
        h.allowed("a");
        assert!(check(&h.0).holds(), "{:?}", check(&h.0));
        let third = h.hit("b", 2, 1200);
        h.allowed("b");
        assert_eq!(
            check(&h.0).violations,
            vec![RateViolation::TooManyHits {
                provider: P.into(),
                hit: third,
                clock_ms: 1200,
                limit: 2,
                window_ms: 1000,
                counted: vec![second, fourth]
            }]
        );
        assert_ne!(first, third);
    }

    #[test]
    fn a_release_answered_malformed_may_have_freed_its_slot() {
        let mut h = H::default();
        h.acquire("a", 1, 0);
        h.acquired("a", "s1");
        h.release("a", "s1", 5);
        let e = StoreError::new(ErrorKind::MalformedReply, "`released` is not an object");
        h.0.complete("a", "rate.release_slot", &Err(e), None, 0);
        h.acquire("b", 1, 10);
        h.acquired("b", "s2");
        assert!(check(&h.0).holds(), "{:?}", check(&h.0));
        // An acquire answered malformed is an unknown outcome.
        let mut h = H::default();
        let a = h.acquire("a", 1, 0);
        let e = StoreError::new(ErrorKind::MalformedReply, "`acquired.slot` missing");
        h.0.complete("a", "rate.acquire_slot", &Err(e), None, 0);
        assert_eq!(check(&h.0).unknown, vec![a]);
    }

    #[test]
    fn an_unknown_hit_is_not_counted() {
        let mut h = H::default();
        h.hit("a", 1, 0);
        h.lost("a", "rate.hit");
        h.hit("b", 1, 10);
        h.allowed("b");
        h.hit("c", 1, 20); // never completed
        let v = check(&h.0);
        assert!(v.holds(), "{v:?}");
        assert_eq!(v.unknown, vec![0, 4]);
    }

    #[test]
    fn a_grant_while_a_known_pause_is_in_force_fails() {
        let mut h = H::default();
        h.pause("a", 500, 0);
        h.ok("a", "rate.pause", Reply::Paused { until_ms: 500 });
        let hit = h.hit("b", 10, 100);
        h.allowed("b");
        let acq = h.acquire("c", 10, 200);
        h.acquired("c", "s1");
        let v = check(&h.0);
        assert_eq!(v.pauses, 1);
        let grants: Vec<usize> = v
            .violations
            .iter()
            .map(|x| match x {
                RateViolation::GrantedWhilePaused {
                    grant, pause_event, ..
                } => {
                    assert_eq!(*pause_event, 1);
                    *grant
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(grants, vec![acq, hit]);
    }

    #[test]
    fn a_pause_over_or_not_known_is_not_blamed() {
        // Over on the granting request's clock.
        let mut h = H::default();
        h.pause("a", 500, 0);
        h.ok("a", "rate.pause", Reply::Paused { until_ms: 500 });
        h.hit("b", 10, 500);
        h.allowed("b");
        assert!(check(&h.0).holds());
        // The pause's reply was lost: it may not have happened.
        let mut h = H::default();
        h.pause("a", 500, 0);
        h.lost("a", "rate.pause");
        h.hit("b", 10, 100);
        h.allowed("b");
        assert!(check(&h.0).holds());
        // Concurrent with the pause: the hit may have come first.
        let mut h = H::default();
        h.pause("a", 500, 0);
        h.hit("b", 10, 100);
        h.ok("a", "rate.pause", Reply::Paused { until_ms: 500 });
        h.allowed("b");
        assert!(check(&h.0).holds());
        // But a `paused` refusal names a pause as well as rate.pause does.
        h.hit("c", 10, 200);
        h.ok("c", "rate.hit", Reply::Paused { until_ms: 500 });
        h.acquire("c", 10, 300);
        h.acquired("c", "s1");
        assert!(!check(&h.0).holds());
    }

    #[test]
    fn providers_are_judged_apart() {
        let mut h = H::default();
        h.acquire("a", 1, 0);
        h.acquired("a", "s1");
        let args = json!({"provider": "q", "holder": "b", "limit": 1, "ttl_ms": 100});
        h.inv("b", "rate.acquire_slot", args, 10);
        h.acquired("b", "s2");
        assert!(check(&h.0).holds());
    }
}
