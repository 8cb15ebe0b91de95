//! Seeded random walks of three instances, and the shrinking of a failing
//! walk to a minimal one. Every random choice comes from the printed seed, so
//! the same seed gives the same walks and the same verdicts.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::model::LeaseModel;
use crate::property::Property;
use crate::state::{Action, State};

/// One walk's schedule and where it ended.
pub struct Walk {
    /// One instance clock offset from server time per instance, in ms.
    pub skews: Vec<i64>,
    /// The actions taken, in order.
    pub actions: Vec<Action>,
    /// The state the walk ended in.
    pub last: State,
}

/// Plays `actions` from the initial state, skipping any that is not possible
/// where it comes (shrinking removes steps, which can make later ones moot).
/// Returns the actions actually taken and the final state.
pub fn play(model: &LeaseModel, actions: &[Action]) -> (Vec<Action>, State) {
    let mut state = State::initial(model.start_ms, &model.skews);
    let mut taken = Vec::new();
    let mut possible = Vec::new();
    for a in actions {
        possible.clear();
        model.possible(&state, &mut possible);
        if !possible.contains(a) {
            continue;
        }
        state = model.step(&state, *a);
        taken.push(*a);
        if state.stops() {
            break;
        }
    }
    (taken, state)
}

/// A random walk of at most `steps` steps chosen with `rng`.
pub fn walk(model: &LeaseModel, steps: usize, rng: &mut StdRng) -> Walk {
    let mut state = State::initial(model.start_ms, &model.skews);
    let mut actions = Vec::new();
    let mut possible = Vec::new();
    for _ in 0..steps {
        possible.clear();
        model.possible(&state, &mut possible);
        if possible.is_empty() {
            break;
        }
        let a = possible[rng.random_range(0..possible.len())];
        state = model.step(&state, a);
        actions.push(a);
    }
    Walk {
        skews: model.skews.clone(),
        actions,
        last: state,
    }
}

/// The rng of walk number `n` of a run seeded with `seed`.
pub fn rng_for(seed: u64, n: usize) -> StdRng {
    StdRng::seed_from_u64(seed ^ (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Removes steps from a failing schedule while it still breaks `property`:
/// first halves, then single steps, until no step can go. `None` when the
/// schedule itself no longer breaks it when re-run.
pub fn shrink(
    model: &LeaseModel,
    actions: &[Action],
    property: Property,
) -> Option<(Vec<Action>, State)> {
    let breaks = |candidate: &[Action]| {
        let (taken, last) = play(model, candidate);
        last.broke(property).then_some((taken, last))
    };
    let (mut best, mut last) = breaks(actions)?;
    let mut chunk = best.len() / 2;
    while chunk >= 1 {
        let mut i = 0;
        while i + chunk <= best.len() {
            let mut candidate = best.clone();
            candidate.drain(i..i + chunk);
            match breaks(&candidate) {
                Some((taken, l)) => {
                    best = taken;
                    last = l;
                }
                None => i += 1,
            }
        }
        chunk /= 2;
    }
    Some((best, last))
}
