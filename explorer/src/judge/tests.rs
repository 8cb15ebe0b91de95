//! Unit tests of `judge`.

//! Hand-written states and answers, each judged once: for every property
//! an input that must pass and one that must fail.

use super::*;
use crate::state::Pending;
use crate::world::request;

const START: i64 = 1_000_000;

/// Two idle instances, the second `skew` ms off, at `START`.
fn two(skew: i64) -> State {
    State::initial(START, &[0, skew])
}

fn grant(instance: usize, epoch: i64, valid_until: i64) -> Grant {
    Grant {
        instance,
        epoch,
        valid_until,
        may_hold_until: valid_until,
        released: false,
    }
}

/// Instance `i` in flight with `op`, invoked in `state` as it is now.
fn in_flight(state: &mut State, i: usize, op: Op) {
    state.insts[i].pending = Some(Pending::started(op, invoked(state, i, op)));
}

/// The state after instance `i`'s `op`, invoked with `inv`, is answered
/// `out` in `state`.
fn answer_with(
    state: &State,
    i: usize,
    op: Op,
    out: Result<Reply, StoreError>,
    inv: Invoked,
) -> State {
    let mut next = state.clone();
    answered(&mut next, i, op, &request(state, i, op), &out, inv);
    next
}

/// The state after instance `i`'s `op`, invoked in `state` itself (an
/// operation of one command), is answered `out`.
fn answer(state: &State, i: usize, op: Op, out: Result<Reply, StoreError>) -> State {
    answer_with(state, i, op, out, invoked(state, i, op))
}

fn granted(epoch: i64) -> Result<Reply, StoreError> {
    Ok(Reply::Granted {
        epoch,
        expires_at_ms: START + LEASE_MS,
    })
}

/// `busy` in `state`, naming instance b's epoch 1, expiring when its grant
/// promised if that is still ahead, else a millisecond from now.
fn busy(state: &State) -> Result<Reply, StoreError> {
    let promised = state.ghost.iter().find(|g| g.epoch == 1);
    busy_until(
        promised
            .map(|g| g.valid_until)
            .filter(|t| *t > state.now)
            .unwrap_or(state.now + 1),
    )
}

/// `busy` naming instance b's epoch 1, expiring at `at`.
fn busy_until(at: i64) -> Result<Reply, StoreError> {
    Ok(Reply::Busy {
        holder: crate::state::holder(1).into(),
        epoch: 1,
        expires_at_ms: at,
    })
}

/// `next` broke nothing when `ok`, else `explorer.answered` alone.
fn answered_unless(next: &State, ok: bool, at: i64) {
    if ok {
        assert!(next.violations.is_empty(), "{at}: {:?}", next.violations);
    } else {
        assert_eq!(only(next), vec![Property::Answered], "{at}");
    }
}

fn only(state: &State) -> Vec<Property> {
    state.violations.iter().map(|(p, _)| *p).collect()
}

#[test]
fn a_take_of_a_free_tree_is_granted_and_believed() {
    let next = answer(&two(0), 0, Op::Take, granted(1));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert_eq!(next.insts[0].held, Some(1));
    assert_eq!(next.ghost.len(), 1);
    assert_eq!(next.ghost[0].valid_until, START + LEASE_MS);
    assert!(next.harness_error.is_none());
}

#[test]
fn a_take_answered_later_than_asked_may_hold_until_a_lease_after_its_answer() {
    // b's take of two commands was asked at START and decided (answered)
    // 5 ms later: the store may count the lease from its answer.
    let mut s = two(0);
    let inv = invoked(&s, 1, Op::Take);
    s.now = START + 5;
    let next = answer_with(&s, 1, Op::Take, granted(1), inv);
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert_eq!(next.ghost[0].valid_until, START + LEASE_MS);
    assert_eq!(next.ghost[0].may_hold_until, START + 5 + LEASE_MS);
    // a is refused after b's promise but within what the store may
    // rightly hold: mutual exclusion, not a stuck tree.
    let mut within = next.clone();
    within.now = START + LEASE_MS + 1;
    let refused = answer(&within, 0, Op::Take, busy(&within));
    assert!(refused.violations.is_empty(), "{:?}", refused.violations);
    // Refused after that too: the tree is stuck.
    let mut after = next;
    after.now = START + 5 + LEASE_MS + 1;
    let refused = answer(&after, 0, Op::Take, busy(&after));
    assert_eq!(only(&refused), vec![Property::NoTreeStuck]);
}

#[test]
fn one_live_holder_fails_on_a_second_grant_while_the_first_is_live() {
    // a's take was invoked before b's grant was acknowledged (concurrent
    // with it: no epoch order is owed), and b's lease is still live.
    let mut s = two(0);
    let inv = invoked(&s, 0, Op::Take);
    s.ghost.push(grant(1, 1, START + 500));
    let next = answer_with(&s, 0, Op::Take, granted(2), inv);
    assert_eq!(only(&next), vec![Property::OneLiveHolder]);
    let why = next.violation(Property::OneLiveHolder).unwrap();
    assert!(
        why.contains("a (epoch 2") && why.contains("b (epoch 1"),
        "{why}"
    );
}

#[test]
fn one_live_holder_passes_once_the_first_lease_ran_out() {
    let mut s = two(0);
    let inv = invoked(&s, 0, Op::Take);
    s.ghost.push(grant(1, 1, START));
    let next = answer_with(&s, 0, Op::Take, granted(2), inv);
    assert!(next.violations.is_empty(), "{:?}", next.violations);
}

#[test]
fn one_live_holder_passes_while_the_first_holder_is_releasing() {
    // b asked to release: it no longer relies on its lease.
    let mut s = two(0);
    s.ghost.push(grant(1, 1, START + 500));
    s.insts[1].held = Some(1);
    in_flight(&mut s, 1, Op::Release);
    let next = answer(&s, 0, Op::Take, granted(2));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
}

#[test]
fn one_live_holder_fails_on_a_renew_that_outlives_a_concurrent_grant() {
    // a renews its expired epoch 1; b was granted epoch 2 while a's
    // renew was in flight (not a zombie: not known before it asked).
    let mut s = two(0);
    s.ghost.push(grant(0, 1, START));
    s.insts[0].held = Some(1);
    let inv = invoked(&s, 0, Op::Take);
    s.ghost.push(grant(1, 2, START + 800));
    let renewed = Ok(Reply::Renewed {
        expires_at_ms: START + LEASE_MS,
    });
    let next = answer_with(&s, 0, Op::Renew, renewed.clone(), inv);
    assert_eq!(only(&next), vec![Property::OneLiveHolder]);
    assert!(!next.zombie_renew_reached);
    assert_eq!(next.ghost[0].valid_until, START + LEASE_MS);
    // Without b's grant the renew is just a renew.
    let mut alone = two(0);
    alone.ghost.push(grant(0, 1, START + 100));
    alone.insts[0].held = Some(1);
    let next = answer(&alone, 0, Op::Renew, renewed);
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert_eq!(next.insts[0].held, Some(1));
}

#[test]
fn epoch_monotonic_fails_on_an_epoch_not_above_an_earlier_grant() {
    let mut s = two(0);
    s.ghost.push(Grant {
        released: true,
        ..grant(1, 3, START + 500)
    });
    let next = answer(&s, 0, Op::Take, granted(3));
    assert_eq!(only(&next), vec![Property::EpochMonotonic]);
    let next = answer(&s, 0, Op::Take, granted(2));
    assert!(next.broke(Property::EpochMonotonic));
    let next = answer(&s, 0, Op::Take, granted(4));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
}

#[test]
fn epoch_monotonic_owes_no_order_to_a_grant_acknowledged_in_flight() {
    let mut s = two(0);
    let inv = invoked(&s, 0, Op::Take);
    s.ghost.push(Grant {
        released: true,
        ..grant(1, 3, START + 500)
    });
    let next = answer_with(&s, 0, Op::Take, granted(2), inv);
    assert!(next.violations.is_empty(), "{:?}", next.violations);
}

/// a believes it holds epoch 1; b was granted epoch 2 before a asks.
fn superseded() -> State {
    let mut s = two(0);
    s.ghost.push(grant(0, 1, START - 1));
    s.ghost.push(grant(1, 2, START + 900));
    s.insts[0].held = Some(1);
    s.insts[1].held = Some(2);
    s
}

#[test]
fn zombie_refused_fails_when_a_superseded_renew_succeeds() {
    let renewed = Ok(Reply::Renewed {
        expires_at_ms: START + LEASE_MS,
    });
    let next = answer(&superseded(), 0, Op::Renew, renewed);
    assert!(next.broke(Property::ZombieRefused), "{:?}", next.violations);
    assert!(next.zombie_renew_reached);
}

#[test]
fn zombie_refused_passes_when_a_superseded_renew_is_lost() {
    let lost = Ok(Reply::Lost {
        holder: Some(crate::state::holder(1).into()),
        epoch: Some(2),
    });
    let next = answer(&superseded(), 0, Op::Renew, lost);
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert_eq!(next.insts[0].held, None);
    // The race was reached, whatever the answer.
    assert!(next.zombie_renew_reached);
    assert!(!next.zombie_release_reached);
}

#[test]
fn zombie_refused_fails_when_a_superseded_release_succeeds() {
    let next = answer(&superseded(), 0, Op::Release, Ok(Reply::Released {}));
    assert_eq!(only(&next), vec![Property::ZombieRefused]);
    assert!(next.zombie_release_reached);
    // b's newer grant is untouched in the ghost.
    assert!(!next.ghost[1].released);
}

#[test]
fn zombie_refused_passes_when_a_superseded_release_is_not_held() {
    let next = answer(&superseded(), 0, Op::Release, Ok(Reply::NotHeld {}));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert!(next.zombie_release_reached);
    assert!(!next.zombie_renew_reached);
    assert_eq!(next.insts[0].held, None);
}

#[test]
fn a_release_of_ones_own_epoch_is_no_zombie_and_ends_its_grant() {
    let mut s = two(0);
    s.ghost.push(grant(0, 1, START + 500));
    s.insts[0].held = Some(1);
    let next = answer(&s, 0, Op::Release, Ok(Reply::Released {}));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert!(!next.zombie_release_reached);
    assert!(next.ghost[0].released);
    assert_eq!(next.insts[0].held, None);
}

/// b holds nothing; a was granted epoch 1, live.
fn a_holds_b_does_not() -> State {
    let mut s = two(0);
    s.ghost.push(grant(0, 1, START + 500));
    s.insts[0].held = Some(1);
    s
}

#[test]
fn an_instance_holding_nothing_names_the_newest_epoch_when_it_is_anothers() {
    let s = a_holds_b_does_not();
    assert_eq!(stranger_epoch(&s, 1, 1), Some(1));
    assert_eq!(
        stranger_epoch(&s, 0, 1),
        None,
        "a holder names its own epoch"
    );
    let Request::LeaseRenew { holder, epoch, .. } = request(&s, 1, Op::Renew) else {
        panic!("a renew")
    };
    assert_eq!((holder.as_str(), epoch), (crate::state::holder(1), 1));
    // Nothing granted yet, or the newest grant its own (a release of it
    // cut short may not have landed): no epoch to name.
    assert_eq!(stranger_epoch(&two(0), 1, 0), None);
    let mut own = a_holds_b_does_not();
    own.insts[0].held = None;
    assert_eq!(stranger_epoch(&own, 0, 1), None);
    // In flight, it names what was known when it was invoked: a grant
    // acknowledged since does not change its commands on a re-run.
    let mut later = a_holds_b_does_not();
    later.ghost.push(grant(0, 2, START + 900));
    assert_eq!(stranger_epoch(&later, 1, 1), Some(1));
    assert_eq!(stranger_epoch(&later, 1, 2), Some(2));
    let Request::LeaseRelease { epoch, .. } =
        crate::world::request_as_invoked(&later, 1, Op::Release, 1)
    else {
        panic!("a release")
    };
    assert_eq!(epoch, 1);
}

#[test]
fn zombie_refused_fails_when_a_renew_or_release_by_a_non_holder_succeeds() {
    let s = a_holds_b_does_not();
    let renewed = Ok(Reply::Renewed {
        expires_at_ms: START + LEASE_MS,
    });
    let next = answer(&s, 1, Op::Renew, renewed);
    assert_eq!(only(&next), vec![Property::ZombieRefused]);
    let why = &next.violations[0].1;
    assert!(
        why.contains("renewed") && why.contains("holds none"),
        "{why}"
    );
    let next = answer(&s, 1, Op::Release, Ok(Reply::Released {}));
    assert_eq!(only(&next), vec![Property::ZombieRefused]);
    assert!(!next.ghost[0].released, "a's grant stands in the ghost");
    // Refused, as the contract says: nothing broken, nothing believed.
    let lost = Ok(Reply::Lost {
        holder: Some(crate::state::holder(0).into()),
        epoch: Some(1),
    });
    let next = answer(&s, 1, Op::Renew, lost);
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert_eq!(next.insts[1].held, None);
    let next = answer(&s, 1, Op::Release, Ok(Reply::NotHeld {}));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert!(!next.zombie_renew_reached && !next.zombie_release_reached);
}

#[test]
fn a_non_holders_renew_cut_short_keeps_no_lease() {
    let mut s = a_holds_b_does_not();
    in_flight(&mut s, 1, Op::Renew);
    crashed(&mut s, 1);
    assert_eq!(s.unacked_until, None, "a stranger's renew holds nothing");
    assert_eq!(s.ghost[0].may_hold_until, START + 500);
}

#[test]
fn a_take_while_holding_is_busy_while_its_lease_is_live_and_a_new_lease_after() {
    // a holds epoch 1, live until START + 500.
    let s = a_holds_b_does_not();
    let own = Ok(Reply::Busy {
        holder: crate::state::holder(0).into(),
        epoch: 1,
        expires_at_ms: START + 500,
    });
    let next = answer(&s, 0, Op::Take, own);
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert_eq!(next.insts[0].held, Some(1), "it still holds its lease");
    // Granted a second lease while its first is live: two live grants.
    let next = answer(&s, 0, Op::Take, granted(2));
    assert_eq!(only(&next), vec![Property::OneLiveHolder]);
    // Once its lease ran out, a new epoch; the old grant is over.
    let mut out = s.clone();
    out.now = START + 600;
    let later = Ok(Reply::Granted {
        epoch: 2,
        expires_at_ms: out.now + LEASE_MS,
    });
    let next = answer(&out, 0, Op::Take, later);
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert_eq!(next.insts[0].held, Some(2));
    assert!(next.ghost[0].released && !next.ghost[1].released);
    // Busy with its own lease run out, nobody else holding: stuck.
    let stale = Ok(Reply::Busy {
        holder: crate::state::holder(0).into(),
        epoch: 1,
        expires_at_ms: START + 500,
    });
    let next = answer(&out, 0, Op::Take, stale);
    assert!(next.broke(Property::NoTreeStuck), "{:?}", next.violations);
}

#[test]
fn the_races_are_not_reached_when_the_newer_grant_came_in_flight() {
    // b's epoch 2 was acknowledged after a's renew and release were
    // invoked: a did not know it was superseded.
    let s = superseded();
    let inv = Invoked {
        acked_before: 1,
        ..invoked(&s, 0, Op::Take)
    };
    let lost = Ok(Reply::Lost {
        holder: None,
        epoch: None,
    });
    let next = answer_with(&s, 0, Op::Renew, lost, inv);
    assert!(!next.zombie_renew_reached);
    let next = answer_with(&s, 0, Op::Release, Ok(Reply::NotHeld {}), inv);
    assert!(!next.zombie_release_reached);
}

#[test]
fn no_tree_stuck_fails_on_a_busy_take_of_a_tree_never_taken() {
    let next = answer(&two(0), 0, Op::Take, busy(&two(0)));
    assert_eq!(only(&next), vec![Property::NoTreeStuck]);
    let why = next.violation(Property::NoTreeStuck).unwrap();
    assert!(why.contains("no lease had ever been granted"), "{why}");
}

#[test]
fn no_tree_stuck_fails_on_a_busy_take_after_every_lease_ran_out() {
    let mut s = two(0);
    s.ghost.push(grant(1, 1, START - 1));
    let next = answer(&s, 0, Op::Take, busy(&s));
    assert!(next.broke(Property::NoTreeStuck));
    // At the very instant it runs out the lease may still hold.
    let mut s = two(0);
    s.ghost.push(grant(1, 1, START));
    let next = answer(&s, 0, Op::Take, busy(&s));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
}

#[test]
fn answered_fails_on_a_busy_or_lost_naming_another_holder_for_a_granted_epoch() {
    let mut s = two(0);
    s.ghost.push(grant(1, 1, START + LEASE_MS));
    // Epoch 1 is b's: a busy naming it as b's, or naming an epoch not yet
    // acknowledged, says nothing wrong.
    assert!(answer(&s, 0, Op::Take, busy(&s)).violations.is_empty());
    let unacked = Ok(Reply::Busy {
        holder: crate::state::holder(0).into(),
        epoch: 2,
        expires_at_ms: START + LEASE_MS,
    });
    let next = answer(&s, 0, Op::Take, unacked);
    assert!(!next.broke(Property::Answered), "{:?}", next.violations);
    // One lease's holder with another's epoch.
    let torn = Ok(Reply::Busy {
        holder: crate::state::holder(0).into(),
        epoch: 1,
        expires_at_ms: START + LEASE_MS,
    });
    let next = answer(&s, 0, Op::Take, torn);
    assert_eq!(only(&next), vec![Property::Answered]);
    let why = next.violation(Property::Answered).unwrap();
    assert!(
        why.contains("epoch 1 was granted to \"sp_inst_b\""),
        "{why}"
    );
    let lost = |holder: usize| {
        Ok(Reply::Lost {
            holder: Some(crate::state::holder(holder).into()),
            epoch: Some(1),
        })
    };
    s.insts[0].held = Some(1);
    assert!(answer(&s, 0, Op::Renew, lost(1)).violations.is_empty());
    let next = answer(&s, 0, Op::Renew, lost(0));
    assert_eq!(only(&next), vec![Property::Answered]);
    assert_eq!(next.insts[0].held, None);
}

fn read(holder: Option<usize>, epoch: i64, live: bool) -> Result<Reply, StoreError> {
    Ok(Reply::Lease(Some(model::contract::LeaseView {
        holder: holder.map(|h| crate::state::holder(h).to_string()),
        epoch,
        expires_at_ms: holder.map(|_| START + LEASE_MS),
        live,
    })))
}

#[test]
fn answered_fails_on_a_read_behind_an_acknowledged_grant_or_naming_another_holder() {
    let mut s = two(0);
    s.ghost.push(grant(1, 2, START + LEASE_MS));
    // The live lease as granted, or a later one not yet acknowledged.
    assert!(answer(&s, 0, Op::Read, read(Some(1), 2, true))
        .violations
        .is_empty());
    assert!(answer(&s, 0, Op::Read, read(Some(0), 3, true))
        .violations
        .is_empty());
    // Not live: holder and expiry are open.
    assert!(answer(&s, 0, Op::Read, read(None, 2, false))
        .violations
        .is_empty());
    // Behind the grant acknowledged before the read asked, or no record.
    let next = answer(&s, 0, Op::Read, read(Some(1), 1, true));
    assert_eq!(only(&next), vec![Property::Answered]);
    let why = next.violation(Property::Answered).unwrap();
    assert!(
        why.contains("showed epoch 1, but epoch 2 had been granted"),
        "{why}"
    );
    let next = answer(&s, 0, Op::Read, Ok(Reply::Lease(None)));
    assert!(next
        .violation(Property::Answered)
        .unwrap()
        .contains("no record"));
    // Live, but another holder's name, or no holder at all.
    let next = answer(&s, 0, Op::Read, read(Some(0), 2, true));
    assert_eq!(only(&next), vec![Property::Answered]);
    let next = answer(&s, 0, Op::Read, read(None, 2, true));
    assert!(next
        .violation(Property::Answered)
        .unwrap()
        .contains("without its holder"));
    // Nothing granted yet: no record is right.
    let next = answer(&two(0), 0, Op::Read, Ok(Reply::Lease(None)));
    assert!(next.violations.is_empty());
}

#[test]
fn no_tree_stuck_passes_while_someone_else_may_hold_the_tree() {
    // A live lease.
    let mut s = two(0);
    s.ghost.push(grant(1, 1, START + 500));
    assert!(answer(&s, 0, Op::Take, busy(&s)).violations.is_empty());
    // Another take in flight.
    let mut s = two(0);
    in_flight(&mut s, 1, Op::Take);
    assert!(answer(&s, 0, Op::Take, busy(&s)).violations.is_empty());
    // One a crash interrupted, for a lease from the crash.
    let mut s = two(0);
    in_flight(&mut s, 1, Op::Take);
    crashed(&mut s, 1);
    assert_eq!(s.unacked_until, Some(START + LEASE_MS));
    assert!(answer(&s, 0, Op::Take, busy(&s)).violations.is_empty());
    // ... but not beyond it.
    s.now = START + LEASE_MS + 1;
    assert!(answer(&s, 0, Op::Take, busy(&s)).broke(Property::NoTreeStuck));
}

#[test]
fn a_crashed_release_gives_its_lease_up_but_may_hold_until_its_promise() {
    let mut s = two(0);
    s.ghost.push(grant(0, 1, START + 700));
    s.insts[0].held = Some(1);
    in_flight(&mut s, 0, Op::Release);
    crashed(&mut s, 0);
    assert!(s.ghost[0].released);
    assert_eq!(s.unacked_until, Some(START + 700));
    assert!(s.insts[0].crashed && s.insts[0].pending.is_none());
    assert_eq!(s.insts[0].held, None);
}

#[test]
fn contention_seen_in_flight_sticks_to_the_operation() {
    let mut s = two(0);
    in_flight(&mut s, 0, Op::Take);
    assert!(!s.insts[0].pending.as_ref().unwrap().contended);
    in_flight(&mut s, 1, Op::Take);
    stepped(&mut s);
    assert!(s.insts[0].pending.as_ref().unwrap().contended);
    // b's take ends: a's take still saw it.
    s.insts[1].pending = None;
    stepped(&mut s);
    assert!(s.insts[0].pending.as_ref().unwrap().contended);
}

#[test]
fn answered_fails_on_an_error_from_the_store() {
    let refused = Err(StoreError::new(ErrorKind::Unavailable, "gone"));
    let next = answer(&two(0), 0, Op::Read, refused);
    assert_eq!(only(&next), vec![Property::Answered]);
    assert!(next.harness_error.is_none());
    assert!(discovers(&next, Property::Answered));
    assert!(!discovers(&next, Property::HarnessOk));
}

#[test]
fn an_unsupported_answer_is_no_violation_and_changes_no_belief() {
    let mut s = two(0);
    s.ghost.push(grant(0, 1, START + 500));
    s.insts[0].held = Some(1);
    let no = || Err(StoreError::new(ErrorKind::Unsupported, "no renew here"));
    let next = answer(&s, 0, Op::Renew, no());
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert!(next.harness_error.is_none());
    assert!(Property::ALL.iter().all(|p| !discovers(&next, *p)));
    assert_eq!(next.insts[0].held, Some(1));
    assert_eq!(next.ghost[0].valid_until, START + 500);
    assert_eq!(
        next.unsupported(),
        &[(Op::Renew, "no renew here".to_string())]
    );
    // Recorded once per operation, and part of the fingerprint.
    let again = answer(&next, 0, Op::Renew, no());
    assert_eq!(again.unsupported().len(), 1);
    assert_ne!(next.fingerprint(), s.fingerprint());
    // A take answered unsupported grants nothing.
    let next = answer(&two(0), 1, Op::Take, no());
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert!(next.ghost.is_empty() && next.insts[1].held.is_none());
}

#[test]
fn answered_passes_on_a_reply() {
    let next = answer(&two(0), 0, Op::Read, Ok(Reply::Lease(None)));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    assert!(!discovers(&next, Property::Answered));
}

#[test]
fn a_dead_adapter_is_the_harness_trouble_not_a_store_failure() {
    let died = Err(StoreError::new(ErrorKind::AdapterFailed, "exited"));
    let next = answer(&two(0), 0, Op::Take, died);
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    let why = next.harness_error.as_deref().unwrap();
    assert!(
        why.contains("instance a") && why.contains("lease.take"),
        "{why}"
    );
    assert!(discovers(&next, Property::HarnessOk));
    assert!(Property::always(Contract::Lease)
        .iter()
        .all(|p| !discovers(&next, *p)));
}

#[test]
fn discovers_reads_the_races_reached() {
    let s = superseded();
    for race in Property::races(Contract::Lease) {
        assert!(!discovers(&s, *race));
    }
    let lost = Ok(Reply::Lost {
        holder: None,
        epoch: None,
    });
    let next = answer(&s, 0, Op::Renew, lost);
    assert!(discovers(&next, Property::ZombieRenewRace));
    assert!(!discovers(&next, Property::ZombieReleaseRace));
    let next = answer(&s, 0, Op::Release, Ok(Reply::NotHeld {}));
    assert!(discovers(&next, Property::ZombieReleaseRace));
}

#[test]
fn a_grant_or_renewal_expires_a_ttl_after_an_instant_it_ran_at() {
    // Asked at START, answered 5 ms later: any instant between decided it.
    let mut s = two(0);
    let inv = invoked(&s, 0, Op::Take);
    s.now = START + 5;
    for (at, ok) in [
        (START + LEASE_MS - 1, false),
        (START + LEASE_MS, true),
        (START + LEASE_MS + 5, true),
        (START + LEASE_MS + 6, false),
        (START + LEASE_MS / 1000, false), // a ttl read as seconds
    ] {
        let out = Ok(Reply::Granted {
            epoch: 1,
            expires_at_ms: at,
        });
        let next = answer_with(&s, 0, Op::Take, out, inv);
        answered_unless(&next, ok, at);
        if !ok {
            let why = next.violation(Property::Answered).unwrap();
            assert!(why.contains("between 1001000 and 1001005"), "{why}");
        }
    }
    // A renew of one command: exactly a ttl from now.
    let mut s = two(0);
    s.ghost.push(grant(0, 1, START + 500));
    s.insts[0].held = Some(1);
    let renewed = |at| Ok(Reply::Renewed { expires_at_ms: at });
    let next = answer(&s, 0, Op::Renew, renewed(START + LEASE_MS));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    let next = answer(&s, 0, Op::Renew, renewed(START + 500));
    assert_eq!(only(&next), vec![Property::Answered]);
    // An expiry on a skewed caller's clock says so.
    let skewed = two(LEASE_MS);
    let out = Ok(Reply::Granted {
        epoch: 1,
        expires_at_ms: START + 2 * LEASE_MS,
    });
    let next = answer(&skewed, 1, Op::Take, out);
    let why = next.violation(Property::Answered).unwrap();
    assert!(
        why.contains("the instance's clock, which is +1000 ms off"),
        "{why}"
    );
}

#[test]
fn a_busy_shows_the_expiry_its_holders_grant_or_renewal_set() {
    // b holds epoch 1, granted between START - 10 and START - 5.
    let mut s = two(0);
    s.ghost.push(Grant {
        valid_until: START + 990,
        may_hold_until: START + 995,
        ..grant(1, 1, 0)
    });
    for (at, ok) in [
        (START + 990, true),
        (START + 995, true),
        (START + 996, false), // later than any instant it ran at allows
        // Already out when shown: the stuck-tree check's (a take of several
        // commands may have counted its ttl from before it was answered).
        (START, true),
    ] {
        let next = answer(&s, 0, Op::Take, busy_until(at));
        answered_unless(&next, ok, at);
    }
    // b's renew in flight may have moved it later already.
    let mut renewing = s.clone();
    renewing.insts[1].held = Some(1);
    in_flight(&mut renewing, 1, Op::Renew);
    let next = answer(&renewing, 0, Op::Take, busy_until(START + 2000));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    // So may a renew a crash cut short, up to a lease from the crash.
    crashed(&mut renewing, 1);
    assert_eq!(renewing.ghost[0].may_hold_until, START + LEASE_MS);
    let next = answer(&renewing, 0, Op::Take, busy_until(START + LEASE_MS));
    assert!(next.violations.is_empty(), "{:?}", next.violations);
    let next = answer(&renewing, 0, Op::Take, busy_until(START + LEASE_MS + 1));
    assert_eq!(only(&next), vec![Property::Answered]);
}
