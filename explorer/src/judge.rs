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

pub(crate) use crate::state::Invoked;

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

/// The epoch instance `i` names when it renews or releases a lease it does
/// not hold (a stranger: its holder name is not the lease's): the newest
/// epoch acknowledged as granted, when that was granted to another
/// instance. `None` when `i` holds a lease (its renew and release name
/// that), when nothing was granted, or when the newest grant was its own (a
/// release of it cut short may not have landed: the lease may still be
/// its, and a renew rightly succeed).
///
/// `acked_before` is how many grants were acknowledged when the operation
/// was invoked: the epoch it names is fixed then (a re-run of it sends the
/// same commands while later grants come and go).
pub(crate) fn stranger_epoch(state: &State, i: usize, acked_before: usize) -> Option<i64> {
    if state.insts.get(i)?.held.is_some() {
        return None;
    }
    let known = &state.ghost[..acked_before.min(state.ghost.len())];
    let newest = known.iter().max_by_key(|g| g.epoch)?;
    (newest.instance != i).then_some(newest.epoch)
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
        Some(Op::Take) => until = Some(next.now + LEASE_MS),
        // A stranger's renew (it held nothing) cannot have kept a lease.
        Some(Op::Renew) if next.insts[i].held.is_none() => {}
        Some(Op::Renew) => {
            let later = next.now + LEASE_MS;
            until = Some(later);
            // It may have renewed the lease it held: the record may now
            // expire as late as a lease from now.
            for g in unreleased_held(next, i) {
                g.may_hold_until = g.may_hold_until.max(later);
            }
        }
        Some(Op::Release) => {
            // It had asked to release: it gave its lease up then, though the
            // store may still hold it for the rest of its promise.
            for g in unreleased_held(next, i) {
                g.released = true;
                until = until.max(Some(g.may_hold_until));
            }
        }
        Some(op) if op.contract() == Contract::Rate => crate::rate::crashed(next, i, op, clock_ms),
        Some(op) => crate::queue::crashed(next, i, op),
        None => {}
    }
    next.unacked_until = next.unacked_until.max(until);
}

/// The grants of the epoch instance `i` believes it holds, not released.
fn unreleased_held(next: &mut State, i: usize) -> impl Iterator<Item = &mut Grant> {
    let held = next.insts[i].held;
    next.ghost
        .iter_mut()
        .filter(move |g| g.instance == i && Some(g.epoch) == held && !g.released)
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
    // It holds nothing and names another instance's epoch (a stranger).
    let stranger = held.is_none() && matches!(op, Op::Renew | Op::Release);
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
        (
            Op::Take,
            Ok(Reply::Granted {
                epoch,
                expires_at_ms,
            }),
        ) => {
            expiry_from_now(next, i, req, *expires_at_ms, asked_at);
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
            // A take while holding was granted a new lease: the one it held
            // is over (a store grants it only once that one ran out; one
            // granted while it was live broke one-live-holder above).
            if let Some(before) = held.filter(|e| *e != epoch) {
                for g in next.ghost.iter_mut() {
                    if g.instance == i && g.epoch == before {
                        g.released = true;
                    }
                }
            }
        }
        (
            Op::Take,
            Ok(Reply::Busy {
                holder,
                epoch,
                expires_at_ms,
            }),
        ) => {
            named_as_granted(next, i, req, holder, *epoch);
            expiry_as_granted(next, i, req, (*epoch, *expires_at_ms));
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
        (Op::Renew | Op::Release, Ok(Reply::Renewed { .. } | Reply::Released {})) if stranger => {
            next.violate(
                Property::ZombieRefused,
                format!(
                    "instance {name}'s {} of epoch {} answered {}, but that lease is not {name}'s: it was granted to another instance, and {name} holds none",
                    req.op(),
                    epoch_named(req),
                    if op == Op::Renew { "renewed" } else { "released" }
                ),
            );
        }
        (Op::Renew, Ok(Reply::Renewed { expires_at_ms })) => {
            expiry_from_now(next, i, req, *expires_at_ms, asked_at);
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
        (
            Op::Renew,
            Ok(Reply::Lost {
                holder: Some(holder),
                epoch: Some(epoch),
            }),
        ) => {
            named_as_granted(next, i, req, holder, *epoch);
            next.insts[i].held = None;
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
        (Op::Read, Ok(Reply::Lease(view))) => read_judged(next, i, req, view.as_ref(), max_epoch),
        (_, Ok(_)) => {}
    }
}

/// A `busy` or `lost` names the live lease's holder and epoch: when that
/// epoch is one acknowledged as granted, the holder named must be the one
/// it was granted to (an epoch is granted once: a later grant's is higher).
/// An epoch not yet acknowledged (a take in flight) is not judged. A store
/// that reads holder and epoch in separate commands, and answers one
/// lease's holder with another's epoch, is caught here.
fn named_as_granted(next: &mut State, i: usize, req: &Request, holder: &str, epoch: i64) {
    let grants: Vec<usize> = next
        .ghost
        .iter()
        .filter(|g| g.epoch == epoch)
        .map(|g| g.instance)
        .collect();
    if grants.is_empty() || grants.iter().any(|&g| crate::state::holder(g) == holder) {
        return;
    }
    let to = crate::state::holder(grants[0]);
    next.violate(
        Property::Answered,
        format!(
            "instance {}'s {} named {holder:?} as the holder of epoch {epoch}, but epoch {epoch} was granted to {to:?} (instance {})",
            instance_name(i),
            req.op(),
            instance_name(grants[0])
        ),
    );
}

/// A `granted` or `renewed` answer's expiry is the server time of the
/// grant plus the ttl asked for (docs/PROTOCOL.md §4.2), and the grant
/// happened at some instant between asking (`asked_at`) and answering
/// (now): an operation of several commands decides in one of them.
fn expiry_from_now(next: &mut State, i: usize, req: &Request, expires_at_ms: i64, asked_at: i64) {
    let ttl = ttl_of(req);
    let (from, to) = (asked_at + ttl, next.now + ttl);
    if (from..=to).contains(&expires_at_ms) {
        return;
    }
    let when = if asked_at == next.now {
        format!("at server time {asked_at}")
    } else {
        format!(
            "between server times {asked_at} (asked) and {} (answered)",
            next.now
        )
    };
    let mut should = if from == to {
        format!("{from}")
    } else {
        format!("between {from} and {to}")
    };
    let skew = next.insts[i].skew_ms;
    if skew != 0 && (from..=to).contains(&(expires_at_ms - skew)) {
        should.push_str(&format!(
            " ({skew:+} ms off: the instance's clock, which is {skew:+} ms off the server's, not server time)"
        ));
    }
    next.violate_and_go_on(
        Property::Answered,
        format!(
            "instance {}'s {} answered expires_at_ms {expires_at_ms}, but it ran {when}: the expiry is the grant's server time plus ttl_ms {ttl}, so {should}",
            instance_name(i),
            req.op()
        ),
    );
}

/// The ttl `req` asked for (the explorer's lease otherwise).
fn ttl_of(req: &Request) -> i64 {
    match req {
        Request::LeaseTake { ttl_ms, .. } | Request::LeaseRenew { ttl_ms, .. } => *ttl_ms,
        _ => LEASE_MS,
    }
}

/// A `busy` or a live `lease.read` shows the live lease's expiry: when its
/// epoch is an acknowledged grant, no later than the last acknowledged take
/// or renew of it may have set it (`may_hold_until`, while that is ahead:
/// the fingerprint forgets it after), unless a renew of it is in flight.
/// An expiry shown earlier is not judged here: an operation in flight may
/// have read the record before a renew moved it on, and a lease already
/// out when shown is the stuck-tree check's, which allows a store to hold
/// a lease until a ttl after the take that set it was answered (a take of
/// several commands may count its ttl from an earlier instant than that).
fn expiry_as_granted(
    next: &mut State,
    i: usize,
    req: &Request,
    (epoch, expires_at_ms): (i64, i64),
) {
    let Some(g) = next.ghost.iter().find(|g| g.epoch == epoch) else {
        return;
    };
    let renewing = next.insts[g.instance]
        .pending
        .as_ref()
        .is_some_and(|p| p.op == Op::Renew);
    if renewing || g.may_hold_until <= next.now || expires_at_ms <= g.may_hold_until {
        return;
    }
    let why = format!(
        "the last take or renew of it acknowledged to instance {} set it to {} at the latest, and no renew of it was in flight",
        instance_name(g.instance),
        g.may_hold_until
    );
    next.violate_and_go_on(
        Property::Answered,
        format!(
            "instance {}'s {} showed epoch {epoch} expiring at {expires_at_ms}, but {why}",
            instance_name(i),
            req.op()
        ),
    );
}

/// A `lease.read` shows the record as it was at some instant while it ran:
/// its epoch at least every epoch acknowledged as granted before it was
/// invoked (a tree's epoch only grows), and a live record names its holder
/// (the one its epoch was granted to, when that grant is acknowledged) and
/// its expiry. Holder and expiry of a record that is not live are left open
/// (docs/PROTOCOL.md §4.2: a lock-style store cannot know them).
fn read_judged(
    next: &mut State,
    i: usize,
    req: &Request,
    view: Option<&model::contract::LeaseView>,
    granted_before: i64,
) {
    let name = instance_name(i);
    let epoch = view.map(|v| v.epoch);
    if granted_before > 0 && epoch.is_none_or(|e| e < granted_before) {
        let shown = epoch.map_or("no record".to_string(), |e| format!("epoch {e}"));
        next.violate(
            Property::Answered,
            format!(
                "instance {name}'s {} showed {shown}, but epoch {granted_before} had been granted before it asked: a tree's epoch only grows",
                req.op()
            ),
        );
    }
    let Some(view) = view.filter(|v| v.live) else {
        return;
    };
    match (&view.holder, view.expires_at_ms) {
        (Some(holder), Some(expires_at_ms)) => {
            named_as_granted(next, i, req, holder, view.epoch);
            expiry_as_granted(next, i, req, (view.epoch, expires_at_ms));
        }
        _ => next.violate(
            Property::Answered,
            format!(
                "instance {name}'s {} showed a live lease (epoch {}) without its holder or expiry: a live record names both",
                req.op(),
                view.epoch
            ),
        ),
    }
}

/// The property an answer to `op` that is not the contract's breaks.
/// The epoch a renew or release names (0 for any other request).
fn epoch_named(req: &Request) -> i64 {
    match req {
        Request::LeaseRenew { epoch, .. } | Request::LeaseRelease { epoch, .. } => *epoch,
        _ => 0,
    }
}

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
mod tests;
