//! The model: N instances on the lease store against the real server. A
//! step is a pure function of (state, action): it runs on a world (a server
//! of its own), restored to the state's snapshot first. The exhaustive
//! search gives each worker thread a world of a pool ([`crate::search`]);
//! walks, shrinking and replays use a world of the calling thread's own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use harness::contract::Contract;

use crate::fused::{Upcoming, FREE_COMMANDS};
use crate::judge::discovers;
use crate::property::Property;
use crate::state::{Action, Op, Pending, State, Tick};
use crate::world::{idle, nearest_expiry, Shared, World};

thread_local! {
    /// This thread's worlds, one per exploration (by run id).
    static WORLDS: RefCell<HashMap<u64, World>> = RefCell::new(HashMap::new());
}

/// Runs `f` on this thread's world of exploration `run`, starting it if needed.
pub fn with_world<R>(
    run: u64,
    shared: &Arc<Shared>,
    instances: usize,
    f: impl FnOnce(&mut World) -> R,
) -> Result<R, String> {
    WORLDS.with(|worlds| {
        let mut worlds = worlds.borrow_mut();
        let world = match worlds.entry(run) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(World::new(shared.clone(), instances)?)
            }
        };
        Ok(f(world))
    })
}

/// Stops this thread's world of exploration `run` (its server and gates).
pub fn drop_world(run: u64) {
    WORLDS.with(|worlds| {
        worlds.borrow_mut().remove(&run);
    });
}

/// The lease store with its instances, as the search and the walks see it.
pub struct LeaseModel {
    /// Which exploration this is: each thread keeps one world per run id.
    pub run: u64,
    /// The store, prefix and counters every world of the exploration shares.
    pub shared: Arc<Shared>,
    /// One clock skew per instance.
    pub skews: Vec<i64>,
    /// Server time of the initial state (virtual, ms).
    pub start_ms: i64,
    /// No action after this many steps (the search depth).
    pub max_steps: usize,
    /// Fingerprint absolute times (to measure the relative reading).
    pub absolute_times: bool,
    /// The contract whose operations the instances start.
    pub contract: Contract,
    /// Fold states that differ by a renaming of instances of one clock
    /// (see [`crate::symmetry`]).
    pub symmetric: bool,
    /// Offer [`Action::Lose`]: one write a schedule whose reply is lost.
    pub lost_replies: bool,
    /// Start every operation of an adapter process that may remember on a
    /// fresh one, even while the exploration keeps such processes on trial
    /// (to confirm a counterexample, or check the trial).
    pub fresh_processes: bool,
    /// Run the store on every step: none computed from what it did before
    /// given the same request, clock and replies (a trial checked, a
    /// counterexample confirmed).
    pub recompute: bool,
    /// Whole operations: an operation in flight runs to its answer, its
    /// commands back to back, before anything else happens, and its
    /// commands after the first spend no depth. The schedules of a store
    /// of one command an operation; for a store of several, the races
    /// between whole operations that the interleaved search, which spends
    /// a step on every command, cannot reach within its depth.
    pub whole_operations: bool,
}

impl LeaseModel {
    /// Every action possible in `state`, in a fixed order.
    pub fn possible(&self, state: &State, out: &mut Vec<Action>) {
        if state.stops() {
            return;
        }
        if self.whole_operations {
            if let Some(i) = in_flight(state) {
                out.push(Action::Continue(i));
                return;
            }
        }
        if self.fused(state, out) {
            return;
        }
        if state.steps >= self.max_steps {
            // Past the depth, the operations in flight run to their answers,
            // nothing else happening, their commands in every order: an
            // answer that only the last of several commands gives is judged
            // too (two hits each refused for the other are only known to be
            // wrong once both have answered). Every order, not one: a state
            // folded with its renamings stands for each of them, and each
            // would drain in its own instances' order. A store of one
            // command an operation has none in flight here.
            out.extend(
                (0..state.insts.len())
                    .filter(|i| !state.insts[*i].crashed && state.insts[*i].pending.is_some())
                    .map(Action::Continue),
            );
            return;
        }
        let crashed = state.insts.iter().filter(|i| i.crashed).count();
        for (i, inst) in state.insts.iter().enumerate() {
            if inst.crashed {
                continue;
            }
            let from = out.len();
            if inst.pending.is_some() {
                out.push(Action::Continue(i));
            } else if idle(inst) && self.contract != Contract::Lease {
                let mut ops = Vec::new();
                match self.contract {
                    Contract::Rate => crate::rate::possible(state, i, &mut ops),
                    _ => crate::queue::possible(state, i, &mut ops),
                }
                out.extend(ops.into_iter().map(|op| Action::Start(i, op)));
            } else if idle(inst) {
                match inst.held {
                    None => {
                        out.push(Action::Start(i, Op::Take));
                        // A renew or release by an instance that holds
                        // nothing, naming another's epoch: refused by a
                        // store that compares the holder, not the epoch alone.
                        if crate::judge::stranger_epoch(state, i, state.ghost.len()).is_some() {
                            out.push(Action::Start(i, Op::Renew));
                            out.push(Action::Start(i, Op::Release));
                        }
                    }
                    Some(_) => {
                        out.push(Action::Start(i, Op::Renew));
                        out.push(Action::Start(i, Op::Release));
                        // A take while holding: `busy` while its lease is
                        // live (even the caller's own), a new epoch after.
                        out.push(Action::Start(i, Op::Take));
                    }
                }
                out.push(Action::Start(i, Op::Read));
            }
            if self.loses_replies(state) {
                // Any write's next command may be the one whose reply is
                // lost (a read's loss changes nothing on the server).
                let lost: Vec<Action> = out[from..]
                    .iter()
                    .filter_map(|a| match *a {
                        Action::Start(i, op) if op.writes() => Some(Action::Lose(i, op)),
                        Action::Continue(i) => inst
                            .pending
                            .as_ref()
                            .filter(|p| p.op.writes())
                            .map(|p| Action::Lose(i, p.op)),
                        _ => None,
                    })
                    .collect();
                out.extend(lost);
            }
            // An instance crashes between two commands of an operation. A
            // crash between operations changes nothing on the server and
            // only takes the instance's later actions away: every schedule
            // where it simply never acts again is explored already. Keep
            // one instance alive: someone must be able to take over.
            if crashed + 1 < state.insts.len() && inst.pending.is_some() {
                out.push(Action::Crash(i));
            }
        }
        ticks(state, out);
        // The server fills up between any two commands, and room comes back
        // (a copy of a store with no Redis wire has no server to fill).
        if self.shared.factory.keeps_state_in_redis() {
            out.push(if state.full {
                Action::Free
            } else {
                Action::Fill
            });
        }
    }

    /// The reduction of [`crate::fused`]: when an instance's next command
    /// only its own connection sees, that command is the step, with what
    /// it does not commute with (a fill or free of the server for a queued
    /// command, a move of time for `TIME`) and its own loss offered beside
    /// it. `false` when no instance's next command is such.
    fn fused(&self, state: &State, out: &mut Vec<Action>) -> bool {
        let Some((i, p)) = state.insts.iter().enumerate().find_map(|(i, inst)| {
            let p = inst.pending.as_ref().filter(|_| !inst.crashed)?;
            free(p).then_some((i, p))
        }) else {
            return false;
        };
        out.push(Action::Continue(i));
        if self.loses_replies(state) && p.op.writes() {
            out.push(Action::Lose(i, p.op));
        }
        if state.steps >= self.max_steps {
            return true;
        }
        match p.upcoming {
            Upcoming::Queued if self.shared.factory.keeps_state_in_redis() => {
                out.push(if state.full {
                    Action::Free
                } else {
                    Action::Fill
                });
            }
            Upcoming::Clock => ticks(state, out),
            _ => {}
        }
        true
    }

    /// Whether a reply may be lost from `state` on: asked for, none lost
    /// yet, and a Redis wire to lose it on.
    fn loses_replies(&self, state: &State) -> bool {
        self.lost_replies && !state.lost_reply && self.shared.factory.keeps_state_in_redis()
    }

    /// This model with every operation of a process that may remember
    /// started on a fresh one ([`LeaseModel::fresh_processes`]), every step
    /// on the store.
    pub fn with_fresh_processes(&self) -> LeaseModel {
        LeaseModel {
            fresh_processes: true,
            ..self.recomputing()
        }
    }

    /// This model with every step run on the store
    /// ([`LeaseModel::recompute`]).
    pub fn recomputing(&self) -> LeaseModel {
        LeaseModel {
            run: self.run,
            shared: self.shared.clone(),
            skews: self.skews.clone(),
            start_ms: self.start_ms,
            max_steps: self.max_steps,
            absolute_times: self.absolute_times,
            contract: self.contract,
            symmetric: self.symmetric,
            lost_replies: self.lost_replies,
            fresh_processes: self.fresh_processes,
            recompute: true,
            whole_operations: self.whole_operations,
        }
    }

    /// This model with whole operations ([`LeaseModel::whole_operations`]).
    pub fn with_whole_operations(&self) -> LeaseModel {
        LeaseModel {
            whole_operations: true,
            recompute: self.recompute,
            ..self.recomputing()
        }
    }

    /// What `action` spends of the depth: one step, but none for an
    /// operation's next command when operations run whole.
    ///
    /// A command run free by the reduction of [`crate::fused`] is charged
    /// later, by the operation's next command that costs (or its lost
    /// reply): a schedule that ran it before the depth ran out paid for it
    /// there too. Never when the operation ends first (its answer came
    /// with it, or it crashed): a schedule may have left it to the drain
    /// past the depth, or never run it.
    fn spent(&self, state: &State, action: Action, mut next: State) -> State {
        let (i, lost) = match action {
            Action::Continue(i) => (i, false),
            Action::Lose(i, _) => (i, true),
            _ => return next,
        };
        if self.whole_operations {
            if !lost {
                next.steps = next.steps.saturating_sub(1);
            }
            return next;
        }
        let Some(before) = state.insts[i].pending.as_ref() else {
            return next;
        };
        if !lost && free(before) {
            self.shared.fused_steps.fetch_add(1, Ordering::Relaxed);
            next.steps = next.steps.saturating_sub(1);
            if let Some(p) = next.insts[i].pending.as_mut() {
                p.deferred = before.deferred + 1;
            }
            return next;
        }
        next.steps += before.deferred;
        if let Some(p) = next.insts[i].pending.as_mut() {
            p.deferred = 0;
        }
        next
    }

    /// The initial state: an empty keyspace, one idle instance per skew.
    pub fn initial(&self) -> State {
        let mut init = State::initial(self.start_ms, &self.skews);
        init.absolute_times = self.absolute_times;
        init.drawn = Some(self.shared.drawn.values());
        init
    }

    /// The next state, computed on `world`.
    pub fn step_on(&self, world: &mut World, state: &State, action: Action) -> State {
        world.set_fresh(self.fresh_processes);
        world.set_recompute(self.recompute);
        self.spent(state, action, world.step(state, action))
    }

    /// The next state of `action` on `world`, run on through every state
    /// whose one possible action is an operation's next command: the
    /// `Continue`s taken after `action`, in order.
    ///
    /// Such a state has one successor ([`LeaseModel::possible`]): in a
    /// search of whole operations, any state with an operation in flight;
    /// in the interleaved search, one whose next command only its own
    /// connection sees, with nothing beside it ([`crate::fused`]). Each
    /// step is charged as it would be alone ([`LeaseModel::spent`]), so
    /// chaining them explores exactly the schedules and depths the
    /// one-command steps would, without keeping, fingerprinting and
    /// restoring each state between. The chain stops at a state that
    /// stops the search (a violation, the harness's trouble) or shows a
    /// property `state` did not (a race reached): the search keeps and
    /// records it as before.
    pub fn step_chained(
        &self,
        world: &mut World,
        state: &State,
        action: Action,
    ) -> (State, Vec<Action>) {
        let mut next = self.step_on(world, state, action);
        let mut more = Vec::new();
        let mut offered = Vec::new();
        // A property `state` showed was recorded when it was kept.
        let shown: Vec<bool> = Property::ALL.iter().map(|p| discovers(state, *p)).collect();
        // A bound only against a store that never ends an operation (the
        // gate ends such an operation long before).
        while more.len() < CHAIN_LIMIT {
            let shows = |(p, before): (&Property, &bool)| !before && discovers(&next, *p);
            if next.stops() || Property::ALL.iter().zip(&shown).any(shows) {
                break;
            }
            offered.clear();
            self.possible(&next, &mut offered);
            let [continued @ Action::Continue(_)] = offered[..] else {
                break;
            };
            next = self.step_on(world, &next, continued);
            more.push(continued);
        }
        (next, more)
    }

    /// The next state, computed on this thread's world.
    pub fn step(&self, state: &State, action: Action) -> State {
        // Every world has a gate per possible instance: a world serves both
        // the two-instance search and the three-instance walks.
        match with_world(self.run, &self.shared, crate::world::MAX_INSTANCES, |w| {
            w.set_fresh(self.fresh_processes);
            w.set_recompute(self.recompute);
            w.step(state, action)
        }) {
            Ok(next) => self.spent(state, action, next),
            Err(e) => {
                let mut next = state.clone();
                next.harness_error = Some(e);
                next
            }
        }
    }
}

/// The most commands a chained step runs ([`LeaseModel::step_chained`]);
/// past it the state is kept and the next level goes on.
const CHAIN_LIMIT: usize = 64;

/// The first instance with an operation in flight that has not crashed.
fn in_flight(state: &State) -> Option<usize> {
    state
        .insts
        .iter()
        .position(|i| !i.crashed && i.pending.is_some())
}

/// Whether `p`'s next command runs free ([`crate::fused`]).
fn free(p: &Pending) -> bool {
    p.upcoming != Upcoming::Other && p.delivered.len() < FREE_COMMANDS
}

/// The moves of time possible in `state`.
fn ticks(state: &State, out: &mut Vec<Action>) {
    if nearest_expiry(state).is_some() {
        for d in [-1, 0, 1] {
            out.push(Action::Tick(Tick::NearestExpiry(d)));
        }
    }
    out.push(Action::Tick(Tick::HalfLease));
    out.push(Action::Tick(Tick::Lease));
    out.push(Action::Tick(Tick::LongPause));
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use harness::store::external::ExternalStoreFactory;

    use super::*;

    /// A model of two instances, run `run` (one no exploration of this
    /// process takes), on `command`'s adapter under `prefix`.
    fn model_of(run: u64, command: String, prefix: &str, max_steps: usize) -> LeaseModel {
        let store = Arc::new(ExternalStoreFactory::new(command, std::env::temp_dir()));
        LeaseModel {
            run,
            shared: Shared::new(store, prefix.into(), None),
            skews: vec![0, 0],
            start_ms: crate::state::START_MS,
            max_steps,
            absolute_times: false,
            contract: Contract::Lease,
            symmetric: false,
            lost_replies: false,
            fresh_processes: false,
            recompute: false,
            whole_operations: false,
        }
    }

    /// Instance 0 in the middle of a take whose next command is `upcoming`.
    fn taking(model: &LeaseModel, upcoming: Upcoming) -> State {
        let mut s = model.initial();
        let mut p = Pending::started(Op::Take, crate::judge::invoked(&s, 0, Op::Take));
        p.upcoming = upcoming;
        s.insts[0].pending = Some(p);
        s
    }

    /// The reduction of `crate::fused`: a command only its connection sees
    /// is the only step of any instance, beside what it does not commute
    /// with (a fill of the server for a queued command, time for `TIME`);
    /// it costs nothing until the operation's next command that costs.
    #[test]
    fn a_command_only_its_connection_sees_is_the_step_with_what_it_does_not_commute_with() {
        // The store is never started: only what is offered is asked.
        let model = model_of(80_002, "false".into(), "sp:model-fused:", 4);
        let mut out = Vec::new();
        model.possible(&taking(&model, Upcoming::Other), &mut out);
        assert!(out.contains(&Action::Start(1, Op::Take)), "{out:?}");
        assert!(out.contains(&Action::Crash(0)), "{out:?}");
        for (upcoming, beside) in [
            (Upcoming::Local, vec![]),
            (Upcoming::Queued, vec![Action::Fill]),
            (
                Upcoming::Clock,
                vec![
                    Action::Tick(Tick::HalfLease),
                    Action::Tick(Tick::Lease),
                    Action::Tick(Tick::LongPause),
                ],
            ),
        ] {
            let mut out = Vec::new();
            model.possible(&taking(&model, upcoming), &mut out);
            let mut want = vec![Action::Continue(0)];
            want.extend(beside);
            assert_eq!(out, want, "{upcoming:?}");
        }
        // Free now, charged by the operation's next command that costs.
        let before = taking(&model, Upcoming::Local);
        let mut next = before.clone();
        next.steps += 1;
        let next = model.spent(&before, Action::Continue(0), next);
        assert_eq!(next.steps, 0);
        let deferred = next.insts[0].pending.as_ref().map(|p| p.deferred);
        assert_eq!(deferred, Some(1));
        let mut after = next.clone();
        after.steps += 1;
        if let Some(p) = after.insts[0].pending.as_mut() {
            p.upcoming = Upcoming::Other;
        }
        let mut charged = after.clone();
        charged.steps += 1;
        let charged = model.spent(&after, Action::Continue(0), charged);
        assert_eq!(charged.steps, 3);
        // Unless the operation ended first.
        let mut ended = after.clone();
        ended.insts[0].pending = None;
        let mut crashed = ended.clone();
        crashed.steps += 1;
        assert_eq!(model.spent(&after, Action::Crash(0), crashed).steps, 2);
    }

    /// An adapter that dies is the harness's trouble, naming the instance
    /// and the request, never a property the store broke; and the dead
    /// instance does not outlive the state it died in: the next state
    /// computed on the same world starts from a live instance.
    #[test]
    fn a_dead_adapter_is_harness_trouble_and_the_next_state_has_a_live_instance() {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/adapters/explorer-tests/jedis_like_lock.py");
        // -S: no site packages (the adapter needs none): it starts fast.
        let command = format!(
            "JEDIS_LIKE_DIE_ON=lease.read python3 -S {}",
            script.display()
        );
        let run = 80_001;
        let model = model_of(run, command, "sp:model-dead:", 4);
        let init = model.initial();
        let died = model.step(&init, Action::Start(0, Op::Read));
        let why = died
            .harness_error
            .clone()
            .expect("the adapter's death is harness trouble");
        assert!(
            why.contains("instance a") && why.contains("lease.read"),
            "{why}"
        );
        assert!(died.violations.is_empty(), "{:?}", died.violations);
        let took = model.step(&init, Action::Start(0, Op::Take));
        assert!(took.harness_error.is_none(), "{:?}", took.harness_error);
        assert_eq!(took.insts[0].held, Some(1));
        drop_world(run);
    }
}
