//! The stateright model: N instances on the lease store against the real
//! server. `next_state` is a pure function of (state, action): it runs on a
//! world of the calling thread's own (a server from the pool: one per checker
//! thread plus the caller), restored to the state's snapshot first.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use stateright::{Model, Property};

use crate::state::{Action, Op, State, Tick};
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

/// The properties every exploration checks, with the check ids they feed.
pub const ALWAYS: [&str; 5] = [
    "one-live-holder",
    "epoch-monotonic",
    "zombie-refused",
    "no-tree-stuck",
    "answered",
];

/// The lease store with its instances, as stateright sees it.
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
}

impl LeaseModel {
    /// Every action possible in `state`, in a fixed order.
    pub fn possible(&self, state: &State, out: &mut Vec<Action>) {
        if state.harness_error.is_some()
            || !state.violations.is_empty()
            || state.steps >= self.max_steps
        {
            return;
        }
        let crashed = state.insts.iter().filter(|i| i.crashed).count();
        for (i, inst) in state.insts.iter().enumerate() {
            if inst.crashed {
                continue;
            }
            if inst.pending.is_some() {
                out.push(Action::Continue(i));
            } else if idle(inst) {
                match inst.held {
                    None => out.push(Action::Start(i, Op::Take)),
                    Some(_) => {
                        out.push(Action::Start(i, Op::Renew));
                        out.push(Action::Start(i, Op::Release));
                    }
                }
                out.push(Action::Start(i, Op::Read));
            }
            // Keep one instance alive: someone must be able to take over.
            if crashed + 1 < state.insts.len() {
                out.push(Action::Crash(i));
            }
        }
        if nearest_expiry(state).is_some() {
            for d in [-1, 0, 1] {
                out.push(Action::Tick(Tick::NearestExpiry(d)));
            }
        }
        out.push(Action::Tick(Tick::HalfLease));
        out.push(Action::Tick(Tick::Lease));
        out.push(Action::Tick(Tick::LongPause));
    }

    /// The next state, computed on this thread's world.
    pub fn step(&self, state: &State, action: Action) -> State {
        // Every world has a gate per possible instance: a world serves both
        // the two-instance search and the three-instance walks.
        match with_world(self.run, &self.shared, crate::run::MAX_INSTANCES, |w| {
            w.step(state, action)
        }) {
            Ok(next) => next,
            Err(e) => {
                let mut next = state.clone();
                next.harness_error = Some(e);
                next
            }
        }
    }
}

impl Model for LeaseModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let mut init = State::initial(self.start_ms, &self.skews);
        init.absolute_times = self.absolute_times;
        vec![init]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        self.possible(state, actions);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        // Never None: the simulation checker rebuilds wrong paths otherwise.
        Some(self.step(last, action))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("one-live-holder", |_, s: &State| {
                !s.broke("one-live-holder")
            }),
            Property::always("epoch-monotonic", |_, s: &State| {
                !s.broke("epoch-monotonic")
            }),
            Property::always("zombie-refused", |_, s: &State| !s.broke("zombie-refused")),
            Property::always("no-tree-stuck", |_, s: &State| !s.broke("no-tree-stuck")),
            Property::always("answered", |_, s: &State| !s.broke("answered")),
            Property::always("harness-ok", |_, s: &State| s.harness_error.is_none()),
            Property::sometimes("zombie-renew-after-takeover", |_, s: &State| {
                s.zombie_renew_reached
            }),
            Property::sometimes("zombie-release-after-takeover", |_, s: &State| {
                s.zombie_release_reached
            }),
        ]
    }
}
