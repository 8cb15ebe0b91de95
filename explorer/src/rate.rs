//! The rate limits under the explorer: what their instances may do, the
//! requests they send, and the checker of their answers (pure: no world, no
//! I/O), as [`crate::queue`] is for the child queue.
//!
//! The rate contract decides on the caller's clock (`clock_ms`), never on
//! server time, and the instances' clocks disagree by their skews. Every
//! bound is therefore judged on the clock of the instance whose operation
//! decided it (docs/PROTOCOL.md 4.4, "When clocks disagree"): a grant at
//! clock `n` counts the slots granted before it that are live at `n` (their
//! expiry, on their own acquirer's clock, after `n`), and the hits granted
//! before it with a time in `(n − window, n]`. "Before" is what was
//! acknowledged before the operation was invoked; what was acknowledged
//! while it was in flight is concurrent with it, and the store may have
//! ordered the two either way: a pair breaks a bound only if in both orders
//! the later one counted the other (exact for the limit of one the explorer
//! uses).

use model::contract::{Reply, Request};
use model::history::instance_name;

use crate::property::Property;
use crate::state::{Op, State};
use crate::LEASE_MS;

/// The explored provider.
pub(crate) const PROVIDER: &str = "p";

/// The most live slots: one, so that two acquires race for the last slot.
pub(crate) const SLOT_LIMIT: i64 = 1;

/// The most hits in a window: one, so that two hits race for its last place.
pub(crate) const HIT_LIMIT: i64 = 1;

/// How far ahead of its clock an instance pauses the provider.
pub(crate) const PAUSE_MS: i64 = LEASE_MS / 2;

pub(crate) use crate::rate_ghost::{HitAck, PauseAck, SlotGrant, SLOT_TTL_MS, WINDOW_MS};

/// The operations idle instance `i` may start, in a fixed order: acquire
/// (holding no slot) or release the slot it holds, hit, pause (once: a
/// second pause of one instance only repeats what skews already vary), and
/// read.
pub(crate) fn possible(state: &State, i: usize, out: &mut Vec<Op>) {
    match state.insts[i].slot {
        None => out.push(Op::Acquire),
        Some(_) => out.push(Op::ReleaseSlot),
    }
    out.push(Op::Hit);
    let paused = state.rate.pauses.iter().any(|p| p.instance == i)
        || state.rate.maybe_pauses.iter().any(|(j, _)| *j == i);
    if !paused {
        out.push(Op::Pause);
    }
    out.push(Op::RateRead);
}

/// The request instance `i` sends for rate operation `op` in `state`.
pub(crate) fn request(state: &State, i: usize, op: Op) -> Request {
    let provider = PROVIDER.to_string();
    let clock = state.now + state.insts[i].skew_ms;
    match op {
        Op::ReleaseSlot => Request::RateReleaseSlot {
            provider,
            slot: state.insts[i].slot.clone().unwrap_or_default(),
        },
        Op::Hit => Request::RateHit {
            provider,
            limit: HIT_LIMIT,
            window_ms: WINDOW_MS,
        },
        Op::Pause => Request::RatePause {
            provider,
            until_ms: clock + PAUSE_MS,
        },
        Op::RateRead => Request::RateRead { provider },
        _ => Request::RateAcquireSlot {
            provider,
            holder: crate::state::holder(i).to_string(),
            limit: SLOT_LIMIT,
            ttl_ms: SLOT_TTL_MS,
        },
    }
}

/// The nearest future server instant at which some live instance's clock
/// reaches a slot's expiry, a hit's leaving its window, or a pause's end.
pub(crate) fn nearest_expiry(state: &State) -> Option<i64> {
    let r = &state.rate;
    let ends: Vec<i64> = r
        .slots
        .iter()
        .filter(|s| !s.released)
        .map(|s| s.expires())
        .chain(r.maybe_slots.iter().copied())
        .chain(r.hits.iter().map(|x| x.t + WINDOW_MS))
        .chain(r.maybe_hits.iter().map(|t| t + WINDOW_MS))
        .chain(r.pauses.iter().map(|p| p.recorded))
        .chain(r.maybe_pauses.iter().map(|(_, t)| *t))
        .collect();
    state
        .insts
        .iter()
        .filter(|i| !i.crashed)
        .flat_map(|i| ends.iter().map(move |e| e - i.skew_ms))
        .filter(|t| *t > state.now)
        .min()
}

/// Instance `i` crashes between two commands of its rate operation `op`:
/// what it was doing may hold on the store, though nobody was told.
pub(crate) fn crashed(next: &mut State, i: usize, op: Op, clock_ms: i64) {
    let slot = next.insts[i].slot.take();
    let r = &mut next.rate;
    r.max_clock = r.max_clock.max(Some(clock_ms));
    match op {
        Op::Acquire => r.maybe_slots.push(clock_ms + SLOT_TTL_MS),
        Op::Hit => r.maybe_hits.push(clock_ms),
        Op::Pause => r.maybe_pauses.push((i, clock_ms + PAUSE_MS)),
        Op::ReleaseSlot => {
            for s in r.slots.iter_mut() {
                if s.instance == i && Some(&s.slot) == slot.as_ref() && !s.released {
                    s.maybe_released = true;
                }
            }
        }
        _ => {}
    }
}

/// The latest clock a rate operation other than instance `i`'s own in
/// flight carried: answered, cut short, or in flight (it may come first).
fn latest_clock(state: &State, i: usize) -> Option<i64> {
    state
        .insts
        .iter()
        .enumerate()
        .filter(|(j, o)| *j != i && !o.crashed)
        .filter_map(|(_, o)| o.pending.as_ref())
        .filter(|p| p.op.contract() == model::contract::Contract::Rate)
        .map(|p| p.clock_ms)
        .chain(state.rate.max_clock)
        .max()
}

/// Whether slot `s` surely still holds its place for instance `i`'s
/// decision at clock `n`: live at `n` and at every clock an operation on
/// the provider carried before (once a caller's clock passed its expiry
/// the store may have forgotten it), and no release of it answered, in
/// flight or cut short.
fn holds(state: &State, i: usize, s: &SlotGrant, n: i64) -> bool {
    s.expires() > n.max(latest_clock(state, i).unwrap_or(n))
        && !s.released
        && !s.maybe_released
        && !state.insts.get(s.instance).is_some_and(|o| {
            o.slot.as_ref() == Some(&s.slot)
                && o.pending.as_ref().is_some_and(|p| p.op == Op::ReleaseSlot)
        })
}

/// Whether a hit recorded at `t` is counted by a decision at clock `n`.
fn counts(t: i64, n: i64) -> bool {
    t > n - WINDOW_MS && t <= n
}

/// Every pause end some pause invoked so far may have recorded: those
/// answered, those a crash cut short, and those in flight (other than
/// instance `i`'s own operation).
fn pause_ends(state: &State, i: usize) -> Vec<i64> {
    let r = &state.rate;
    r.pauses
        .iter()
        .map(|p| p.asked)
        .chain(r.maybe_pauses.iter().map(|(_, t)| *t))
        .chain(state.insts.iter().enumerate().filter_map(|(j, o)| {
            o.pending
                .as_ref()
                .filter(|p| j != i && p.op == Op::Pause)
                .map(|p| p.clock_ms + PAUSE_MS)
        }))
        .collect()
}

/// The latest pause acknowledged before an operation invoked after
/// `after` acknowledgements.
fn pause_before(state: &State, after: usize) -> Option<i64> {
    state
        .rate
        .pauses
        .iter()
        .filter(|p| p.seq < after)
        .map(|p| p.recorded)
        .max()
}

/// A `paused {until}` answer to instance `i`'s operation deciding at clock
/// `n`: the pause must be in force at `n`, be one some pause asked for, and
/// be no shorter than one acknowledged before.
fn judge_paused(next: &mut State, i: usize, what: &str, until: i64, n: i64, after: usize) {
    let name = instance_name(i);
    let asked = pause_ends(next, i);
    if until <= n {
        next.violate(
            Property::RateRefusedOnlyWhenDue,
            format!("instance {name}'s {what} at clock {n} was refused as paused until {until}, which had already passed on its clock"),
        );
    }
    if !asked.contains(&until) {
        next.violate(
            Property::RatePauseOnlyLengthens,
            format!(
                "instance {name}'s {what} answered a pause until {until}, which no pause asked for"
            ),
        );
    }
    if let Some(before) = pause_before(next, after).filter(|b| until < *b) {
        next.violate(
            Property::RatePauseOnlyLengthens,
            format!("instance {name}'s {what} answered a pause until {until}, but a pause until {before} had been acknowledged before it asked"),
        );
    }
}

/// A grant to instance `i` deciding at clock `n`: nothing is granted while
/// a pause acknowledged before it is in force.
fn judge_not_paused(next: &mut State, i: usize, what: &str, n: i64, after: usize) {
    if let Some(until) = pause_before(next, after).filter(|u| *u > n) {
        let name = instance_name(i);
        next.violate(
            Property::RateNothingWhilePaused,
            format!("instance {name}'s {what} at clock {n} was granted, but a pause until {until} had been acknowledged before it asked"),
        );
    }
}

/// Instance `i`'s rate operation `op` (sent as `req`) was answered `reply`;
/// it decided at clock `invoked.clock_ms`, invoked after
/// `invoked.acked_before` acknowledgements. Updates the instance's belief
/// and the ghost, and records what the answer breaks and the races it
/// reaches.
pub(crate) fn answered(
    next: &mut State,
    i: usize,
    op: Op,
    req: &Request,
    reply: &Reply,
    invoked: crate::state::Invoked,
) {
    judge_answer(next, i, op, req, reply, invoked);
    // Recorded after judging: the answer's own clock is not before it.
    next.rate.max_clock = next.rate.max_clock.max(Some(invoked.clock_ms));
}

/// [`answered`]'s judgement of one answer.
fn judge_answer(
    next: &mut State,
    i: usize,
    op: Op,
    req: &Request,
    reply: &Reply,
    invoked: crate::state::Invoked,
) {
    let n = invoked.clock_ms;
    let after = invoked.acked_before;
    let now = next.now;
    let name = instance_name(i);
    let seq = next.rate.acks;
    match (op, reply) {
        (Op::Acquire, Reply::Acquired { slot }) => {
            judge_not_paused(next, i, "acquire", n, after);
            let state: &State = next;
            let before: Vec<&SlotGrant> = state
                .rate
                .slots
                .iter()
                .filter(|s| s.seq < after && holds(state, i, s, n))
                .collect();
            let expires = n + SLOT_TTL_MS;
            // A slot granted while this acquire was in flight: in either
            // order the later one counted the earlier as live.
            let latest = latest_clock(state, i).unwrap_or(n);
            let concurrent = state.rate.slots.iter().find(|s| {
                s.seq >= after && holds(state, i, s, n) && expires > s.clock_ms.max(latest)
            });
            let free_before = before.is_empty();
            if before.len() as i64 >= SLOT_LIMIT {
                let who: Vec<String> = before
                    .iter()
                    .map(|s| {
                        format!(
                            "{}'s slot {:?} (until {})",
                            instance_name(s.instance),
                            s.slot,
                            s.expires()
                        )
                    })
                    .collect();
                next.violate(
                    Property::RateSlotLimit,
                    format!("instance {name}'s acquire at clock {n} was granted slot {slot:?}, but {} live at that clock had been granted before it asked (limit {SLOT_LIMIT})", who.join(" and ")),
                );
            } else if let Some(s) = concurrent {
                let other = instance_name(s.instance);
                let msg = format!("instance {name}'s acquire at clock {n} and instance {other}'s at clock {} were both granted (slots {slot:?} and {:?}) while they ran together, though each is live at the other's clock (limit {SLOT_LIMIT})", s.clock_ms, s.slot);
                next.violate(Property::RateSlotLimit, msg);
            }
            note_race(next, i, Op::Acquire, free_before);
            if free_before {
                next.rate.last_acquire = Some((i, now));
            }
            next.rate.acks += 1;
            next.rate.slots.push(SlotGrant {
                instance: i,
                slot: slot.clone(),
                clock_ms: n,
                seq,
                after,
                released: false,
                maybe_released: false,
            });
            next.insts[i].slot = Some(slot.clone());
        }
        (Op::Acquire, Reply::Full { .. }) => {
            let state: &State = next;
            let free_before = !state
                .rate
                .slots
                .iter()
                .any(|s| s.seq < after && holds(state, i, s, n));
            note_race(next, i, Op::Acquire, free_before);
            let state: &State = next;
            let maybe_live = state
                .rate
                .slots
                .iter()
                .any(|s| s.expires() > n && !s.released)
                || state
                    .rate
                    .slots
                    .iter()
                    .any(|s| s.expires() > n && s.released && s.seq >= after)
                || state.rate.maybe_slots.iter().any(|t| *t > n);
            if !in_flight(next, i, Op::Acquire) && !maybe_live {
                next.violate(
                    Property::RateRefusedOnlyWhenDue,
                    format!("instance {name}'s acquire at clock {n} was refused (full), but no slot could be live at that clock"),
                );
            }
        }
        (Op::Acquire | Op::Hit, Reply::Paused { until_ms }) => {
            let what = if op == Op::Hit { "hit" } else { "acquire" };
            judge_paused(next, i, what, *until_ms, n, after);
        }
        (Op::Hit, Reply::Allowed { .. }) => {
            judge_not_paused(next, i, "hit", n, after);
            let state: &State = next;
            let before: Vec<&HitAck> = state
                .rate
                .hits
                .iter()
                .filter(|x| x.seq < after && counts(x.t, n))
                .collect();
            let concurrent = state
                .rate
                .hits
                .iter()
                .find(|x| x.seq >= after && counts(x.t, n) && counts(n, x.t));
            let free_before = before.is_empty();
            if before.len() as i64 >= HIT_LIMIT {
                let when: Vec<String> = before
                    .iter()
                    .map(|x| format!("{}'s at clock {}", instance_name(x.instance), x.t))
                    .collect();
                next.violate(
                    Property::RateHitLimit,
                    format!("instance {name}'s hit at clock {n} was allowed, but {} had been allowed before it asked, in its window of {WINDOW_MS} ms (limit {HIT_LIMIT})", when.join(" and ")),
                );
            } else if let Some(x) = concurrent {
                let other = instance_name(x.instance);
                next.violate(
                    Property::RateHitLimit,
                    format!("instance {name}'s hit at clock {n} and instance {other}'s at clock {} were both allowed while they ran together, though each falls in the other's window (limit {HIT_LIMIT})", x.t),
                );
            }
            note_race(next, i, Op::Hit, free_before);
            if free_before {
                next.rate.last_hit = Some((i, now));
            }
            next.rate.acks += 1;
            next.rate.hits.push(HitAck {
                instance: i,
                t: n,
                seq,
                after,
            });
        }
        (Op::Hit, Reply::Limited { .. }) => {
            let state: &State = next;
            let free_before = !state
                .rate
                .hits
                .iter()
                .any(|x| x.seq < after && counts(x.t, n));
            note_race(next, i, Op::Hit, free_before);
            let state: &State = next;
            let maybe_counted = state.rate.hits.iter().any(|x| counts(x.t, n))
                || state.rate.maybe_hits.iter().any(|t| counts(*t, n));
            if !in_flight(next, i, Op::Hit) && !maybe_counted {
                next.violate(
                    Property::RateRefusedOnlyWhenDue,
                    format!("instance {name}'s hit at clock {n} was limited, but no allowed hit could fall in its window of {WINDOW_MS} ms"),
                );
            }
        }
        (Op::Pause, Reply::Paused { until_ms }) => {
            let asked = match req {
                Request::RatePause { until_ms, .. } => *until_ms,
                _ => n + PAUSE_MS,
            };
            let until = *until_ms;
            let mut ends = pause_ends(next, i);
            ends.push(asked);
            if until < asked {
                next.violate(
                    Property::RatePauseOnlyLengthens,
                    format!("instance {name}'s pause until {asked} answered the pause until {until}: shorter than it asked"),
                );
            } else if !ends.contains(&until) {
                next.violate(
                    Property::RatePauseOnlyLengthens,
                    format!("instance {name}'s pause until {asked} answered the pause until {until}, which no pause asked for"),
                );
            } else if let Some(before) = pause_before(next, after).filter(|b| until < *b) {
                next.violate(
                    Property::RatePauseOnlyLengthens,
                    format!("instance {name}'s pause until {asked} answered the pause until {until}, but a pause until {before} had been acknowledged before it asked: the pause was shortened"),
                );
            }
            next.rate.acks += 1;
            next.rate.pauses.push(PauseAck {
                instance: i,
                asked,
                recorded: until,
                seq,
            });
        }
        (Op::ReleaseSlot, Reply::Released {} | Reply::Unknown {}) => {
            let slot = next.insts[i].slot.take();
            if matches!(reply, Reply::Released {}) {
                next.rate.acks += 1;
                for s in next.rate.slots.iter_mut() {
                    if s.instance == i && Some(&s.slot) == slot.as_ref() {
                        s.released = true;
                    }
                }
            }
        }
        (
            Op::RateRead,
            Reply::RateState {
                slots_in_use,
                paused_until_ms,
            },
        ) => {
            let state: &State = next;
            let could = state
                .rate
                .slots
                .iter()
                .filter(|s| s.expires() > n && !(s.released && s.seq < after))
                .count()
                + state.rate.maybe_slots.iter().filter(|t| **t > n).count()
                + state
                    .insts
                    .iter()
                    .filter(|o| o.pending.as_ref().is_some_and(|p| p.op == Op::Acquire))
                    .count();
            if *slots_in_use > could as i64 {
                next.violate(
                    Property::RateSlotLimit,
                    format!("instance {name}'s read at clock {n} counted {slots_in_use} live slots, but at most {could} could be live at that clock"),
                );
            }
            let surely = surely_live(next, i, n, after);
            if *slots_in_use < surely as i64 {
                next.violate(
                    Property::RateAnswered,
                    format!("instance {name}'s read at clock {n} counted {slots_in_use} live slots, but {surely} granted before it asked are live at that clock, none of them released"),
                );
            }
            if let Some(before) = pause_before(next, after).filter(|b| *b > n) {
                if paused_until_ms.is_none_or(|p| p < before) {
                    let read = paused_until_ms
                        .map_or("no pause".to_string(), |p| format!("a pause until {p}"));
                    next.violate(
                        Property::RatePauseOnlyLengthens,
                        format!("instance {name}'s read at clock {n} answered {read}, but a pause until {before} had been acknowledged before it asked"),
                    );
                }
            }
        }
        (op, reply) => {
            next.violate(
                Property::RateAnswered,
                format!(
                    "instance {name}'s {} answered {}, which it never answers",
                    op.wire(),
                    reply.outcome()
                ),
            );
        }
    }
}

/// How many slots surely hold their place at clock `n` ([`holds`]) for
/// instance `i`'s read invoked after `after` acknowledgements: granted
/// before it.
fn surely_live(state: &State, i: usize, n: i64, after: usize) -> usize {
    state
        .rate
        .slots
        .iter()
        .filter(|s| s.seq < after && holds(state, i, s, n))
        .count()
}

/// Whether another instance's `op` is in flight now: it may yet be
/// granted, and come before the answer being judged. One that was in flight
/// and refused is no cause (two hits each refused for the other broke the
/// contract: neither was counted).
fn in_flight(state: &State, i: usize, op: Op) -> bool {
    state
        .insts
        .iter()
        .enumerate()
        .any(|(j, o)| j != i && !o.crashed && o.pending.as_ref().is_some_and(|p| p.op == op))
}

/// Instance `i`'s `op` (an acquire or a hit) was answered: it raced
/// another instance's operation of the same kind for the last free place if
/// that one is in flight while the place was free when this one asked
/// (`free_before`), or took the last place at this very instant (one
/// command each: whichever went first, the other met it).
fn note_race(next: &mut State, i: usize, op: Op, free_before: bool) {
    let now = next.now;
    let overlapped = in_flight(next, i, op);
    let last = if op == Op::Hit {
        next.rate.last_hit
    } else {
        next.rate.last_acquire
    };
    let same_instant = last.is_some_and(|(j, t)| j != i && t == now);
    if (overlapped && free_before) || same_instant {
        if op == Op::Hit {
            next.rate.hit_race_reached = true;
        } else {
            next.rate.slot_race_reached = true;
        }
    }
}

#[cfg(test)]
mod tests;
