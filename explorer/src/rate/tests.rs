//! Unit tests of `rate`.

//! Hand-written states and answers, each judged once: for every rate
//! property an answer that must pass and one that must fail.

use super::*;
use crate::judge;

const START: i64 = 1_000_000;

fn two(skew: i64) -> State {
    State::initial(START, &[0, skew])
}

/// Instance `i` starts `op` in `state` and is answered `reply` at once.
fn one(state: &State, i: usize, op: Op, reply: Reply) -> State {
    let mut next = state.clone();
    let req = request(state, i, op);
    let inv = judge::invoked(state, i, op);
    judge::answered(&mut next, i, op, &req, &Ok(reply), inv);
    next
}

fn acquired(slot: &str) -> Reply {
    Reply::Acquired { slot: slot.into() }
}

#[test]
fn a_second_live_slot_breaks_the_limit_and_a_slot_after_expiry_does_not() {
    let s = one(&two(0), 0, Op::Acquire, acquired("1"));
    assert_eq!(s.insts[0].slot.as_deref(), Some("1"));
    let both = one(&s, 1, Op::Acquire, acquired("2"));
    assert!(both.broke(Property::RateSlotLimit), "{:?}", both.violations);
    let mut later = s.clone();
    later.now += SLOT_TTL_MS;
    let after_expiry = one(&later, 1, Op::Acquire, acquired("2"));
    assert!(
        after_expiry.violations.is_empty(),
        "{:?}",
        after_expiry.violations
    );
    // On the judging instance's clock: b, a lease behind, still sees
    // a's slot live a lease later.
    let mut lagging = one(&two(-SLOT_TTL_MS), 0, Op::Acquire, acquired("1"));
    lagging.now += SLOT_TTL_MS;
    let granted = one(&lagging, 1, Op::Acquire, acquired("2"));
    assert!(granted.broke(Property::RateSlotLimit));
}

#[test]
fn full_with_no_live_slot_is_refused_without_cause() {
    let s = one(
        &two(0),
        0,
        Op::Acquire,
        Reply::Full {
            retry_at_ms: START + 1,
        },
    );
    assert!(s.broke(Property::RateRefusedOnlyWhenDue));
    let held = one(&two(0), 0, Op::Acquire, acquired("1"));
    let full = one(
        &held,
        1,
        Op::Acquire,
        Reply::Full {
            retry_at_ms: START + SLOT_TTL_MS,
        },
    );
    assert!(full.violations.is_empty(), "{:?}", full.violations);
}

#[test]
fn two_hits_in_a_window_break_the_limit_and_a_later_clock_is_not_counted() {
    let s = one(&two(0), 0, Op::Hit, Reply::Allowed { remaining: 0 });
    let twice = one(&s, 1, Op::Hit, Reply::Allowed { remaining: 0 });
    assert!(twice.broke(Property::RateHitLimit));
    // b's clock is behind a's hit: a hit recorded with a later clock is
    // not counted (docs/PROTOCOL.md §4.4), so b's hit is allowed.
    let s = one(&two(-10), 0, Op::Hit, Reply::Allowed { remaining: 0 });
    let behind = one(&s, 1, Op::Hit, Reply::Allowed { remaining: 0 });
    assert!(behind.violations.is_empty(), "{:?}", behind.violations);
    let limited = one(&two(0), 0, Op::Hit, Reply::Limited { retry_at_ms: START });
    assert!(limited.broke(Property::RateRefusedOnlyWhenDue));
}

#[test]
fn a_pause_only_lengthens_and_nothing_is_granted_while_it_holds() {
    let paused = one(
        &two(0),
        0,
        Op::Pause,
        Reply::Paused {
            until_ms: START + PAUSE_MS,
        },
    );
    assert!(paused.violations.is_empty(), "{:?}", paused.violations);
    let granted = one(&paused, 1, Op::Acquire, acquired("1"));
    assert!(granted.broke(Property::RateNothingWhilePaused));
    let hit = one(&paused, 1, Op::Hit, Reply::Allowed { remaining: 0 });
    assert!(hit.broke(Property::RateNothingWhilePaused));
    let refused = one(
        &paused,
        1,
        Op::Hit,
        Reply::Paused {
            until_ms: START + PAUSE_MS,
        },
    );
    assert!(refused.violations.is_empty(), "{:?}", refused.violations);
    // b's clock is 10 ms behind: it asks for an earlier end; the store
    // must answer the later one recorded.
    let mut skewed = one(
        &two(-10),
        0,
        Op::Pause,
        Reply::Paused {
            until_ms: START + PAUSE_MS,
        },
    );
    let kept = one(
        &skewed,
        1,
        Op::Pause,
        Reply::Paused {
            until_ms: START + PAUSE_MS,
        },
    );
    assert!(kept.violations.is_empty(), "{:?}", kept.violations);
    skewed = one(
        &skewed,
        1,
        Op::Pause,
        Reply::Paused {
            until_ms: START - 10 + PAUSE_MS,
        },
    );
    assert!(skewed.broke(Property::RatePauseOnlyLengthens));
    let read = one(
        &paused,
        1,
        Op::RateRead,
        Reply::RateState {
            slots_in_use: 0,
            paused_until_ms: None,
        },
    );
    assert!(read.broke(Property::RatePauseOnlyLengthens));
}

#[test]
fn two_acquires_at_one_instant_reach_the_race() {
    let s = one(&two(0), 0, Op::Acquire, acquired("1"));
    let raced = one(
        &s,
        1,
        Op::Acquire,
        Reply::Full {
            retry_at_ms: START + SLOT_TTL_MS,
        },
    );
    assert!(raced.rate.slot_race_reached);
    let mut later = s.clone();
    later.now += 1;
    let not = one(
        &later,
        1,
        Op::Acquire,
        Reply::Full {
            retry_at_ms: START + SLOT_TTL_MS,
        },
    );
    assert!(!not.rate.slot_race_reached);
}

#[test]
fn a_read_that_misses_a_live_slot_breaks_answered() {
    let read = |s: &State, in_use: i64| {
        one(
            s,
            1,
            Op::RateRead,
            Reply::RateState {
                slots_in_use: in_use,
                paused_until_ms: None,
            },
        )
    };
    let s = one(&two(0), 0, Op::Acquire, acquired("1"));
    assert!(read(&s, 0).broke(Property::RateAnswered));
    assert!(read(&s, 1).violations.is_empty());
    // Released, or run out on the reader's clock: none is sure.
    let released = one(&s, 0, Op::ReleaseSlot, Reply::Released {});
    assert!(read(&released, 0).violations.is_empty());
    let mut later = s.clone();
    later.now += SLOT_TTL_MS;
    assert!(read(&later, 0).violations.is_empty());
    // Being released while the read runs: either count is right.
    let mut releasing = s.clone();
    let inv = judge::invoked(&s, 0, Op::ReleaseSlot);
    releasing.insts[0].pending = Some(crate::state::Pending::started(Op::ReleaseSlot, inv));
    assert!(read(&releasing, 0).violations.is_empty());
}

/// Once a faster clock passed a slot's expiry the store may forget it: a
/// lagging reader may then count it gone, but not before a call carried
/// such a clock.
#[test]
fn a_read_on_a_lagging_clock_may_miss_a_slot_a_faster_clock_saw_expire() {
    let s = one(&two(-SLOT_TTL_MS / 2), 1, Op::Acquire, acquired("1"));
    let mut later = s.clone();
    later.now += SLOT_TTL_MS - SLOT_TTL_MS / 4;
    let read = |s: &State| {
        one(
            s,
            1,
            Op::RateRead,
            Reply::RateState {
                slots_in_use: 0,
                paused_until_ms: None,
            },
        )
    };
    // b's slot expires at its clock START + 500; b reads at START + 250.
    assert!(read(&later).broke(Property::RateAnswered));
    // a's hit carried clock START + 750, past that expiry.
    let hit = one(&later, 0, Op::Hit, Reply::Allowed { remaining: 0 });
    let missed = read(&hit);
    assert!(missed.violations.is_empty(), "{:?}", missed.violations);
}
