//! Unit tests of `queue`.

//! Hand-written queue states and answers, each judged once: for each
//! property an answer that must pass and one that must fail.

use super::*;
use crate::judge;

const START: i64 = 1_000_000;

/// The state after instance `i`'s `op`, invoked and answered now (an
/// operation of one command), answered `reply`.
fn answer(state: &State, i: usize, op: Op, reply: Reply) -> State {
    let mut next = state.clone();
    let inv = judge::invoked(state, i, op);
    let req = request(state, i, op);
    judge::answered(&mut next, i, op, &req, &Ok(reply), inv);
    next
}

fn claimed(k: u8, attempt: i64) -> Reply {
    Reply::Claimed {
        child: child_name(k),
        depth: depth_of(k),
        payload: format!("p{k}"),
        attempt,
    }
}

/// Two idle instances; child `c0` saved by `a`.
fn saved() -> State {
    let s = State::initial(START, &[0, 0]);
    answer(&s, 0, Op::Save(0), Reply::Saved {})
}

fn at(mut s: State, t: i64) -> State {
    s.now = t;
    s
}

/// A claim ending at the very instant of now is where a complete races
/// its expiry: never read like one that ended before (which all read
/// alike).
#[test]
fn a_claim_ending_now_is_told_apart_from_one_that_ended() {
    let s = answer(&saved(), 0, Op::Claim, claimed(0, 1));
    let now = START + 5_000;
    let ending = |t: i64| {
        let mut q = s.queue.clone();
        q.claims[0].valid_until = t;
        q.claims[0].may_hold_until = t;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        q.hash_at(now, &|x| x - now, &mut h);
        std::hash::Hasher::finish(&h)
    };
    assert_ne!(ending(now), ending(now - 5));
    assert_eq!(ending(now - 5), ending(now - 50));
    assert_ne!(ending(now), ending(now + 5));
}

#[test]
fn a_second_live_claim_of_one_child_breaks_one_claim_holder() {
    let s = answer(&saved(), 0, Op::Claim, claimed(0, 1));
    assert!(s.violations.is_empty(), "{:?}", s.violations);
    // b claims the child while a's claim is live.
    let twice = answer(&s, 1, Op::Claim, claimed(0, 2));
    assert!(twice.broke(Property::QueueOneClaimHolder));
    // Once a's claim ran out, b's claim is the next attempt: fine.
    let later = answer(&at(s, START + CLAIM_MS), 1, Op::Claim, claimed(0, 2));
    assert!(later.violations.is_empty(), "{:?}", later.violations);
}

#[test]
fn a_stale_or_expired_completion_accepted_breaks_complete_only_live() {
    let s = answer(&saved(), 0, Op::Claim, claimed(0, 1));
    let ok = answer(&s, 0, Op::Complete, Reply::Completed {});
    assert!(ok.violations.is_empty(), "{:?}", ok.violations);
    // Asked at the claim's expiry instant: the claim has ended.
    let expired = answer(
        &at(s.clone(), START + CLAIM_MS),
        0,
        Op::Complete,
        Reply::Completed {},
    );
    assert!(expired.broke(Property::QueueCompleteOnlyLive));
    // Another claim was granted (after a's ran out) before a completed.
    let taken = answer(&at(s, START + CLAIM_MS), 1, Op::Claim, claimed(0, 2));
    let stale = answer(&taken, 0, Op::Complete, Reply::Completed {});
    assert!(stale.broke(Property::QueueCompleteOnlyLive));
    let refused = answer(
        &taken,
        0,
        Op::Complete,
        Reply::NotClaimer {
            claimer: Some("b".into()),
            attempt: Some(2),
        },
    );
    assert!(refused.violations.is_empty(), "{:?}", refused.violations);
}

#[test]
fn a_done_child_handed_out_again_breaks_done_never_claimed() {
    let s = answer(&saved(), 0, Op::Claim, claimed(0, 1));
    let done = answer(&s, 0, Op::Complete, Reply::Completed {});
    let again = answer(
        &at(done.clone(), START + 10 * CLAIM_MS),
        1,
        Op::Claim,
        claimed(0, 2),
    );
    assert!(again.broke(Property::QueueDoneNeverClaimed));
    let empty = answer(
        &at(done, START + 10 * CLAIM_MS),
        1,
        Op::Claim,
        Reply::Empty {},
    );
    assert!(empty.violations.is_empty(), "{:?}", empty.violations);
}

#[test]
fn an_empty_claim_while_a_saved_child_is_ready_breaks_no_save_lost() {
    let lost = answer(&saved(), 1, Op::Claim, Reply::Empty {});
    assert!(lost.broke(Property::QueueNoSaveLost));
    // Held by a live claim: empty is right.
    let s = answer(&saved(), 0, Op::Claim, claimed(0, 1));
    let held = answer(&s, 1, Op::Claim, Reply::Empty {});
    assert!(held.violations.is_empty(), "{:?}", held.violations);
    // Its claim ran out (by the store's reading too): offered again.
    let gone = answer(&at(s, START + CLAIM_MS), 1, Op::Claim, Reply::Empty {});
    assert!(gone.broke(Property::QueueNoSaveLost));
}

#[test]
fn claiming_the_shallower_child_while_the_deeper_is_ready_breaks_claim_order() {
    let both = answer(&saved(), 0, Op::Save(1), Reply::Saved {});
    let wrong = answer(&both, 1, Op::Claim, claimed(0, 1));
    assert!(wrong.broke(Property::QueueClaimOrder));
    let right = answer(&both, 1, Op::Claim, claimed(1, 1));
    assert!(right.violations.is_empty(), "{:?}", right.violations);
}

/// Every child saved, in order, by `a`.
fn all_saved() -> State {
    (1..CHILDREN).fold(saved(), |s, k| answer(&s, 0, Op::Save(k), Reply::Saved {}))
}

#[test]
fn at_one_depth_the_child_saved_first_is_claimed_first() {
    let s = all_saved();
    let later = answer(&s, 1, Op::Claim, claimed(2, 1));
    assert!(later.broke(Property::QueueClaimOrder));
    assert!(
        later.violations[0].1.contains("waited longer"),
        "{:?}",
        later.violations
    );
    let shallow = answer(&s, 1, Op::Claim, claimed(0, 1));
    assert!(shallow.broke(Property::QueueClaimOrder));
    let right = answer(&s, 1, Op::Claim, claimed(1, 1));
    assert!(right.violations.is_empty(), "{:?}", right.violations);
    // With c1 claimed, c2 is next (deeper than c0, though saved later).
    let next = answer(&right, 0, Op::Claim, claimed(2, 1));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
}

#[test]
fn saves_that_ran_together_may_be_claimed_in_either_order() {
    let s = answer(&saved(), 0, Op::Save(1), Reply::Saved {});
    // b's save of c2 was invoked before a's save of c1 was answered: the
    // store may have saved c2 first.
    let mut s = s;
    s.queue.saved[1].as_mut().unwrap().seq = 5;
    s.queue.saved[2] = Some(SaveAck {
        invoked_at: START,
        seq: 4,
        after: 1,
    });
    s.queue.acks = 6;
    let either = answer(&s, 1, Op::Claim, claimed(2, 1));
    assert!(either.violations.is_empty(), "{:?}", either.violations);
}

#[test]
fn a_claim_answering_another_depth_or_payload_breaks_answered() {
    let s = all_saved();
    let wrong = Reply::Claimed {
        child: child_name(1),
        depth: 1,
        payload: "p2".into(),
        attempt: 1,
    };
    let torn = answer(&s, 1, Op::Claim, wrong);
    assert!(torn.broke(Property::QueueAnswered), "{:?}", torn.violations);
}

fn view(state: ChildState, claimer: Option<&str>, attempt: i64) -> Reply {
    Reply::Child(Some(ChildView {
        state,
        claimer: claimer.map(str::to_string),
        attempt,
        depth: depth_of(0),
    }))
}

#[test]
fn a_read_no_order_of_the_operations_explains_breaks_answered() {
    let s = saved();
    let read = |s: &State, r: Reply| answer(s, 1, Op::QueueRead, r);
    assert!(read(&s, view(ChildState::Queued, None, 0))
        .violations
        .is_empty());
    assert!(read(&s, Reply::Child(None)).broke(Property::QueueAnswered));
    // Never claimed, never completed: neither claimed nor done.
    assert!(read(&s, view(ChildState::Queued, None, 1)).broke(Property::QueueAnswered));
    assert!(read(&s, view(ChildState::Done, Some("a"), 1)).broke(Property::QueueAnswered));
    let c = answer(&s, 0, Op::Claim, claimed(0, 1));
    assert!(read(&c, view(ChildState::Claimed, Some("a"), 1))
        .violations
        .is_empty());
    // A claimed child never goes back to queued.
    assert!(read(&c, view(ChildState::Queued, None, 0)).broke(Property::QueueAnswered));
    // Done only once a completion was asked for; then surely done.
    assert!(read(&c, view(ChildState::Done, Some("a"), 1)).broke(Property::QueueAnswered));
    let d = answer(&c, 0, Op::Complete, Reply::Completed {});
    assert!(read(&d, view(ChildState::Done, Some("a"), 1))
        .violations
        .is_empty());
    assert!(read(&d, view(ChildState::Claimed, Some("a"), 1)).broke(Property::QueueAnswered));
}

#[test]
fn two_claims_at_one_instant_with_one_child_ready_reach_the_first_race() {
    let s = answer(&saved(), 0, Op::Claim, claimed(0, 1));
    assert!(!s.queue.claim_race_reached);
    let raced = answer(&s, 1, Op::Claim, Reply::Empty {});
    assert!(raced.queue.claim_race_reached);
    // At the claim's expiry instant, a's completion after b's claim.
    let t = at(s, START + CLAIM_MS);
    let claimed_now = answer(&t, 1, Op::Claim, claimed(0, 2));
    let refused = answer(
        &claimed_now,
        0,
        Op::Complete,
        Reply::NotClaimer {
            claimer: Some("b".into()),
            attempt: Some(2),
        },
    );
    assert!(refused.queue.complete_race_reached);
}
