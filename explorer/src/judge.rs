//! The explorer's checker: pure functions (no world, no I/O) from what
//! happened in a step to the next state's judgement: every instance's
//! belief, the ghost record of acknowledged grants, the properties broken,
//! the races reached and the harness's own trouble. The world only delivers
//! commands and hands their outcome here; given the same inputs these give
//! the same next state, which is what the unit tests below pin on
//! hand-written states.

use model::contract::{Contract, ErrorKind, Reply, Request, StoreError};
use model::history::instance_name;

use crate::property::Property;
use crate::state::{Action, Grant, Op, State};
use crate::LEASE_MS;

/// What an operation was invoked with, for judging its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Invoked {
    /// The instance clock it was invoked with.
    pub clock_ms: i64,
    /// How many grants had been acknowledged when it was invoked.
    pub acked_before: usize,
    /// Someone else may have held the tree at some instant since.
    pub contended: bool,
    /// The server was full at some instant since it was invoked.
    pub full_seen: bool,
    /// The keys' digest when it was invoked, while only its own commands
    /// have touched the server since.
    pub quiet_since: Option<u64>,
    /// The keys as the fingerprint read them then ([`crate::state::keys_print`]).
    pub quiet_print: u64,
}

/// What is known when instance `i` invokes an operation in `state`: its
/// clock (read once: it keeps it until it answers), the grants acknowledged
/// so far, and whether someone else may hold the tree.
pub(crate) fn invoked(state: &State, i: usize, op: Op) -> Invoked {
    Invoked {
        clock_ms: state.now + state.insts[i].skew_ms,
        acked_before: match op.contract() {
            Contract::Queue => state.queue.acks,
            Contract::Rate => state.rate.acks,
            _ => state.ghost.len(),
        },
        contended: contended_in(state, i, op.contract()),
        full_seen: state.full,
        quiet_since: Some(crate::state::keys_digest(&state.keys)),
        quiet_print: crate::state::keys_print(state),
    }
}

/// Whether another instance than `i` may change what `contract`'s next
/// answer to `i` may rightly be (see each contract's `contended`).
fn contended_in(state: &State, i: usize, contract: Contract) -> bool {
    match contract {
        Contract::Queue => crate::queue::contended(state, i),
        // A rate refusal is judged on what is in flight when it is answered
        // (`rate::answered`), not on what was at some instant since.
        Contract::Rate => false,
        _ => contended(state, i),
    }
}

/// The grants live at server time now: unreleased, promised beyond now,
/// and not being released (a holder that asked to release has stopped
/// relying on its lease, whether or not the store has answered yet).
pub(crate) fn live_grants(state: &State) -> impl Iterator<Item = &Grant> {
    state.ghost.iter().filter(move |g| {
        !g.released
            && g.valid_until > state.now
            && !state.insts.get(g.instance).is_some_and(|i| {
                i.held == Some(g.epoch) && i.pending.as_ref().is_some_and(|p| p.op == Op::Release)
            })
    })
}

/// Whether someone other than instance `i` may hold the tree now: an
/// unreleased grant promised beyond now, a take or renew of another
/// instance in flight, or one a crash interrupted that may still hold.
/// A take refused then is mutual exclusion, not a stuck tree.
pub(crate) fn contended(state: &State, i: usize) -> bool {
    state
        .ghost
        .iter()
        .any(|g| !g.released && g.may_hold_until > state.now)
        || state.unacked_until.is_some_and(|t| t > state.now)
        || state.insts.iter().enumerate().any(|(j, o)| {
            j != i
                && !o.crashed
                && matches!(o.pending.as_ref().map(|p| p.op), Some(Op::Take | Op::Renew))
        })
}

/// After any step: an operation still in flight remembers whether someone
/// else may have held the tree at any instant since it was invoked, and
/// whether a key its connection watches was modified.
pub(crate) fn stepped(next: &mut State) {
    let State { insts, keys, .. } = next;
    for inst in insts.iter_mut() {
        if let Some(p) = inst.pending.as_mut() {
            p.watch.stepped(keys);
        }
    }
    for j in 0..next.insts.len() {
        let Some(contract) = next.insts[j].pending.as_ref().map(|p| p.op.contract()) else {
            continue;
        };
        let contended = contended_in(next, j, contract);
        let full = next.full;
        if let Some(p) = next.insts[j].pending.as_mut() {
            p.contended |= contended;
            p.full_seen |= full;
        }
    }
}

/// After `action`: the operations in flight whose keys something other
/// than their own commands may have touched (another instance's command, a
/// move of time) no longer know what their refusal must leave.
pub(crate) fn touched(next: &mut State, action: Action) {
    let by = match action {
        Action::Start(i, _) | Action::Continue(i) | Action::Lose(i, _) => Some(i),
        Action::Tick(_) => None,
        Action::Crash(_) | Action::Fill | Action::Free => return,
    };
    for (j, inst) in next.insts.iter_mut().enumerate() {
        if Some(j) != by {
            if let Some(p) = inst.pending.as_mut() {
                p.quiet_since = None;
            }
        }
    }
}

/// Instance `i` crashes for good, between two of its commands: what it was
/// doing may still hold on the store, though nobody was told.
pub(crate) fn crashed(next: &mut State, i: usize) {
    let cut = next.insts[i].pending.as_ref().map(|p| (p.op, p.clock_ms));
    if let Some((op, clock_ms)) = cut {
        cut_short(next, i, op, clock_ms);
    }
    next.insts[i].crashed = true;
    next.insts[i].pending = None;
    next.insts[i].held = None;
}

/// Instance `i`'s operation `op` (invoked with `clock_ms`) ended without
/// an answer, its reply lost: it may have taken effect, or not. The
/// instance lives on and may retry it, as client libraries do; what it
/// believes is what it would after a crash (no lease, claim or slot it
/// was not sure of).
pub(crate) fn ended_unanswered(next: &mut State, i: usize, op: Op, clock_ms: i64) {
    cut_short(next, i, op, clock_ms);
    next.insts[i].pending = None;
    if matches!(op, Op::Take | Op::Release) {
        next.insts[i].held = None;
    }
}

/// What instance `i`'s operation `op`, cut short (a crash, a lost reply),
/// may still have done on the store, though nobody was told.
fn cut_short(next: &mut State, i: usize, op: Op, clock_ms: i64) {
    // A take or renew cut short may have written its lease already, valid
    // for at most a lease from now: until then a refusal is that lease, not
    // a stuck tree.
    let mut until = None;
    match Some(op) {
        Some(Op::Take | Op::Renew) => until = Some(next.now + LEASE_MS),
        Some(Op::Release) => {
            // It had asked to release: it gave its lease up then, though the
            // store may still hold it for the rest of its promise.
            let held = next.insts[i].held;
            for g in next.ghost.iter_mut() {
                if g.instance == i && Some(g.epoch) == held && !g.released {
                    g.released = true;
                    until = until.max(Some(g.may_hold_until));
                }
            }
        }
        Some(op) if op.contract() == Contract::Rate => crate::rate::crashed(next, i, op, clock_ms),
        Some(op) => crate::queue::crashed(next, i, op),
        None => {}
    }
    next.unacked_until = next.unacked_until.max(until);
}

/// Instance `i`'s operation `op` (sent as `req`) was answered `out`:
/// updates its belief and the ghost, and records the properties the answer
/// breaks and the races it reaches, judged against what was known when it
/// was invoked (`invoked`). An adapter that failed is the harness's trouble
/// (`harness_error`), never a property the store broke.
pub(crate) fn answered(
    next: &mut State,
    i: usize,
    op: Op,
    req: &Request,
    out: &Result<Reply, StoreError>,
    invoked: Invoked,
) {
    let Invoked {
        clock_ms,
        acked_before,
        contended,
        full_seen,
        quiet_since,
        quiet_print: _,
    } = invoked;
    // A holder counts its lease from when it asked (all it can know): the
    // server time the operation was invoked at, which is now for an
    // operation of one command.
    let asked_at = clock_ms - next.insts[i].skew_ms;
    let now = next.now;
    let held = next.insts[i].held;
    // Only grants acknowledged before this operation was invoked come
    // before it; one acknowledged while it was in flight is concurrent with
    // it (the store may have ordered them either way).
    let before = &next.ghost[..acked_before.min(next.ghost.len())];
    let max_epoch = before.iter().map(|g| g.epoch).max().unwrap_or(0);
    // Its epoch was superseded: another instance was granted a newer one.
    let zombie = held.is_some_and(|e| before.iter().any(|g| g.epoch > e && g.instance != i));
    match op {
        Op::Renew if zombie => next.zombie_renew_reached = true,
        Op::Release if zombie => next.zombie_release_reached = true,
        _ => {}
    }
    let name = instance_name(i);
    match (op, out) {
        (_, Err(e)) if e.kind == ErrorKind::AdapterFailed => {
            // The harness lost the instance (its process died, hung or
            // wrote no answer): nothing is known of the store's answer.
            next.harness_error = Some(format!(
                "instance {name}'s {} got no answer: {}",
                req.op(),
                e.message
            ));
        }
        (_, Err(e)) if e.kind == ErrorKind::Unsupported => {
            // PROTOCOL: an operation may answer `unsupported`, which skips
            // the checks about it. Not a violation, and nothing happened:
            // the instance believes what it believed.
            if !next.unsupported.iter().any(|(o, _)| *o == op) {
                next.unsupported.push((op, e.message.clone()));
            }
        }
        (_, Err(e)) if e.kind == ErrorKind::StoreFull && full_seen => {
            // The server was full while it ran: the contract's refusal
            // (docs/PROTOCOL.md §6), which changes nothing. The instance
            // believes what it believed and may retry, as client libraries do.
            // If nothing else touched the server meanwhile, the keys must be as
            // they were; otherwise a store that wrote part of it is caught by
            // what later answers show (a tree stuck, a lost save).
            if quiet_since.is_some_and(|d| d != crate::state::keys_digest(&next.keys)) {
                next.violate(
                    answered_property(op),
                    format!(
                        "instance {name}'s {} was refused as store_full ({}), but it changed the store's keys: a refused write must change nothing",
                        req.op(),
                        e.message
                    ),
                );
            }
        }
        (_, Err(e)) => {
            let property = answered_property(op);
            next.violate(
                property,
                format!("instance {name}'s {} answered the error {e}", req.op()),
            );
        }
        (op, Ok(reply)) if op.contract() == Contract::Queue => {
            crate::queue::answered(next, i, op, reply, asked_at, invoked)
        }
        (op, Ok(reply)) if op.contract() == Contract::Rate => {
            crate::rate::answered(next, i, op, req, reply, invoked)
        }
        (Op::Take, Ok(Reply::Granted { epoch, .. })) => {
            let epoch = *epoch;
            if epoch <= max_epoch {
                next.violate(
                    Property::EpochMonotonic,
                    format!("instance {name} was granted epoch {epoch}, but epoch {max_epoch} had been granted before it asked"),
                );
            }
            next.ghost.push(Grant {
                instance: i,
                epoch,
                valid_until: asked_at + LEASE_MS,
                may_hold_until: now + LEASE_MS,
                released: false,
            });
            next.insts[i].held = Some(epoch);
            let live: Vec<&Grant> = live_grants(next).collect();
            if live.len() > 1 {
                let who: Vec<String> = live
                    .iter()
                    .map(|g| {
                        format!(
                            "{} (epoch {}, promised until {})",
                            instance_name(g.instance),
                            g.epoch,
                            g.valid_until
                        )
                    })
                    .collect();
                next.violate(
                    Property::OneLiveHolder,
                    format!(
                        "two live holders at server time {now}: {}",
                        who.join(" and ")
                    ),
                );
            }
        }
        (Op::Take, Ok(Reply::Busy { .. })) => {
            let promised = next
                .ghost
                .iter()
                .filter(|g| !g.released)
                .map(|g| g.may_hold_until)
                .chain(next.unacked_until)
                .max();
            // If someone else may have held the tree at any instant since
            // the take was invoked (a live lease, another take in flight),
            // refusing is mutual exclusion: the property is about trees
            // whose holders are gone (crashed, or their leases ran out). The
            // schedule that crashes the one in flight is explored too. Busy
            // strictly after every promise ran out: the tree is stuck.
            if !contended && promised.is_none_or(|p| now > p) {
                let why = match promised {
                    Some(p) => format!("every lease had run out, the last at server time {p}"),
                    None if next.ghost.is_empty() => {
                        "no lease had ever been granted and no take was in flight".to_string()
                    }
                    None => "every lease granted had been released".to_string(),
                };
                next.violate(
                    Property::NoTreeStuck,
                    format!("instance {name}'s take at server time {now} was refused (busy) although no lease was live: {why}"),
                );
            }
        }
        (Op::Renew, Ok(Reply::Renewed { .. })) => {
            if zombie {
                next.violate(
                    Property::ZombieRefused,
                    format!(
                        "instance {name} renewed epoch {} after a newer epoch was granted",
                        held.unwrap_or(0)
                    ),
                );
            }
            for g in next.ghost.iter_mut() {
                if g.instance == i && Some(g.epoch) == held {
                    g.valid_until = asked_at + LEASE_MS;
                    g.may_hold_until = now + LEASE_MS;
                }
            }
            if live_grants(next).count() > 1 {
                next.violate(
                    Property::OneLiveHolder,
                    format!("instance {name}'s renew left two live holders at server time {now}"),
                );
            }
        }
        (Op::Renew, Ok(_)) => next.insts[i].held = None,
        (Op::Release, Ok(Reply::Released {})) => {
            if zombie {
                next.violate(
                    Property::ZombieRefused,
                    format!(
                        "instance {name} released epoch {} after a newer epoch was granted",
                        held.unwrap_or(0)
                    ),
                );
            }
            for g in next.ghost.iter_mut() {
                if g.instance == i && Some(g.epoch) == held {
                    g.released = true;
                }
            }
            next.insts[i].held = None;
        }
        (Op::Release, Ok(_)) => next.insts[i].held = None,
        (_, Ok(_)) => {}
    }
}

/// The property an answer to `op` that is not the contract's breaks.
fn answered_property(op: Op) -> Property {
    match op.contract() {
        Contract::Queue => Property::QueueAnswered,
        Contract::Rate => Property::RateAnswered,
        _ => Property::Answered,
    }
}

/// Whether `state` is a discovery for `property`: a violation of one that
/// must always hold, the harness's trouble, or a race reached.
pub(crate) fn discovers(state: &State, property: Property) -> bool {
    match property {
        Property::HarnessOk => state.harness_error.is_some(),
        Property::ZombieRenewRace => state.zombie_renew_reached,
        Property::ZombieReleaseRace => state.zombie_release_reached,
        Property::QueueClaimRace => state.queue.claim_race_reached,
        Property::QueueCompleteRace => state.queue.complete_race_reached,
        Property::RateSlotRace => state.rate.slot_race_reached,
        Property::RateHitRace => state.rate.hit_race_reached,
        p => state.broke(p),
    }
}

#[cfg(test)]
mod tests {
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

    fn busy() -> Result<Reply, StoreError> {
        Ok(Reply::Busy {
            holder: "b".into(),
            epoch: 1,
            expires_at_ms: START,
        })
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
        let refused = answer(&within, 0, Op::Take, busy());
        assert!(refused.violations.is_empty(), "{:?}", refused.violations);
        // Refused after that too: the tree is stuck.
        let mut after = next;
        after.now = START + 5 + LEASE_MS + 1;
        let refused = answer(&after, 0, Op::Take, busy());
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
            holder: Some("b".into()),
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
        let next = answer(&two(0), 0, Op::Take, busy());
        assert_eq!(only(&next), vec![Property::NoTreeStuck]);
        let why = next.violation(Property::NoTreeStuck).unwrap();
        assert!(why.contains("no lease had ever been granted"), "{why}");
    }

    #[test]
    fn no_tree_stuck_fails_on_a_busy_take_after_every_lease_ran_out() {
        let mut s = two(0);
        s.ghost.push(grant(1, 1, START - 1));
        let next = answer(&s, 0, Op::Take, busy());
        assert!(next.broke(Property::NoTreeStuck));
        // At the very instant it runs out the lease may still hold.
        let mut s = two(0);
        s.ghost.push(grant(1, 1, START));
        let next = answer(&s, 0, Op::Take, busy());
        assert!(next.violations.is_empty(), "{:?}", next.violations);
    }

    #[test]
    fn no_tree_stuck_passes_while_someone_else_may_hold_the_tree() {
        // A live lease.
        let mut s = two(0);
        s.ghost.push(grant(1, 1, START + 500));
        assert!(answer(&s, 0, Op::Take, busy()).violations.is_empty());
        // Another take in flight.
        let mut s = two(0);
        in_flight(&mut s, 1, Op::Take);
        assert!(answer(&s, 0, Op::Take, busy()).violations.is_empty());
        // One a crash interrupted, for a lease from the crash.
        let mut s = two(0);
        in_flight(&mut s, 1, Op::Take);
        crashed(&mut s, 1);
        assert_eq!(s.unacked_until, Some(START + LEASE_MS));
        assert!(answer(&s, 0, Op::Take, busy()).violations.is_empty());
        // ... but not beyond it.
        s.now = START + LEASE_MS + 1;
        assert!(answer(&s, 0, Op::Take, busy()).broke(Property::NoTreeStuck));
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
}
