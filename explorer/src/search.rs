//! The exhaustive search: breadth-first, one level at a time, with the
//! transitions of a level shared out among worker threads (each with a world
//! of its own) and merged back in a fixed order.
//!
//! Why level by level. The remaining depth budget is part of a state's
//! future (`max_steps - steps`) but not of its fingerprint, so deduplication
//! is only sound if every state is first met at its least depth: then no
//! copy of it met later, with a smaller budget, can reach anything the first
//! could not. A plain FIFO queue guarantees that with one thread; a work-
//! stealing checker with several threads does not (stateright's BFS found
//! 13764 unique states with 4 threads where 1 thread found 13779: a state
//! first reached by a longer path kept its smaller budget and the shorter
//! path was dropped as a duplicate). Here level `d + 1` is built only from
//! the whole of level `d`, so by induction every state is met first at its
//! least depth whatever the number of threads. The merge walks the level's
//! transitions in the order one thread would, so the states, the counts and
//! the first discovery of every property are the same for any `threads`.
//! (Keying the dedupe on state + budget would be complete too, but explores
//! the same state once per depth it is met at.)
//!
//! When operations run whole ([`LeaseModel::whole_operations`]) an
//! operation's later commands spend no budget, so a level is one action,
//! not one unit of budget, and a state can be met again at a deeper level
//! with more budget left (fewer choices, more commands: an operation that
//! took more commands on that path). Such a state is explored again from
//! there (`Searched::budget_revisits`); one met again with no more budget
//! left is merged as before. When every action spends a step, levels and
//! budget are one and nothing is revisited.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::judge::discovers;
use crate::model::LeaseModel;
use crate::property::Property;
use crate::state::{Action, Op, State};
use crate::symmetry::Symmetry;
use crate::world::{Shared, World};

/// The first state met for a property, and the path to it.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The actions from the initial state.
    pub actions: Vec<Action>,
    /// The state they led to.
    pub state: State,
}

/// What a search found.
#[derive(Debug, Default)]
pub struct Searched {
    /// States generated, the initial one included (duplicates too).
    pub states: usize,
    /// Distinct states (by fingerprint).
    pub unique_states: usize,
    /// The deepest level that holds a new state.
    pub max_depth: usize,
    /// The first discovery of each property met, in level order.
    pub discoveries: BTreeMap<Property, Discovery>,
    /// New states that broke a property before the depth ran out: each
    /// got no successors, so the schedules through it stop there.
    pub violating_states_cut: usize,
    /// The least depth of such a state.
    pub shallowest_cut: Option<usize>,
    /// Merged pairs of states that differ in absolute time whose
    /// successors were computed for both and compared (the seeded sample).
    pub shift_checked: usize,
    /// Two merged states went on differently: the relative reading of
    /// times is not sound for this store, in words. The search stopped at
    /// that level (it is to be run again on absolute times).
    pub shift_failure: Option<String>,
    /// States met again as a renaming of a state kept (instances of one
    /// clock swapped): merged by the symmetry, not explored twice.
    pub symmetric_merges: usize,
    /// Two states the symmetry took as one went on differently: the store
    /// is not symmetric in its holders, in words. The search stopped at
    /// that level (it is to be run again without the folding).
    pub symmetry_failure: Option<String>,
    /// The operations the store answered `unsupported`, with its first
    /// message, in the order first met.
    pub unsupported: Vec<(Op, String)>,
    /// Transitions that ended an operation with `store_full` (the full
    /// server met a write): the refusals judged.
    pub full_refusals: usize,
    /// The search stopped after this level, at a violation (fail fast):
    /// the deeper levels were not explored.
    pub stopped_at: Option<usize>,
    /// Steps of processes kept on trial computed again and compared (on
    /// processes with another history, or fresh ones).
    pub memory_checked: usize,
    /// A process kept on trial did otherwise than another would, in words:
    /// the search stopped at that level (it is to be run again with a
    /// fresh process per operation).
    pub memory_failure: Option<String>,
    /// States met again with other values the store drew at random (and
    /// nothing else apart): taken as one ([`crate::drawn`]).
    pub drawn_merges: usize,
    /// Two states taken as one up to drawn values went on differently,
    /// in words: the search stopped at that level (it is to be run again
    /// reading every byte).
    pub drawn_failure: Option<String>,
    /// States met again with more of the depth budget left than when they
    /// were kept (only when operations run whole: their commands spend
    /// none): explored again from there, so nothing within it is lost.
    pub budget_revisits: usize,
}

/// A pool of worlds, one per worker thread, kept for a whole exploration
/// (starting a server costs more than a level of a small search).
pub struct Pool {
    worlds: Vec<World>,
}

impl Pool {
    /// Starts `threads` worlds (at least one), each with `instances` gates.
    pub fn new(shared: &Arc<Shared>, threads: usize, instances: usize) -> Result<Pool, String> {
        let worlds = (0..threads.max(1))
            .map(|_| World::new(shared.clone(), instances))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Pool { worlds })
    }
}

/// How the merges the relative reading of times makes are checked: up to
/// `per_level` of each level's, drawn with `seed`.
#[derive(Debug, Clone, Copy)]
pub struct ShiftCheck {
    /// The seed of the sample (the run's).
    pub seed: u64,
    /// How many merges of each level are checked (0: none).
    pub per_level: usize,
    /// How many of each level's steps are computed again while adapter
    /// processes are kept on trial ([`crate::world::Speed::trial`]): on
    /// processes with another history, and the first sample at depth 2 or
    /// more of each contract's searches on fresh ones too (0: none).
    pub memory_per_level: usize,
}

/// A state met again (by fingerprint) that differs from the one kept in
/// absolute time: the duplicate and its path, and where the kept one is.
struct Merge {
    /// The two differ by a renaming of instances, not only in time.
    symmetric: bool,
    /// The two differ only by a renaming of values the store drew.
    drawn: bool,
    state: State,
    path: Vec<Action>,
    kept_level: usize,
    kept_index: usize,
}

/// Whether `kept`'s successors, computed again, differ from `first` (its
/// successors computed once) while values the store drew are read up to a
/// renaming: then the store does not treat them as opaque.
fn draws_matter(
    model: &LeaseModel,
    pool: &mut Pool,
    symmetry: &Symmetry,
    kept: &(State, Vec<Action>),
    first: &[State],
) -> bool {
    let values = model.shared.drawn.values();
    if values.len() == 0 || !values.on() {
        return false;
    }
    let mut actions = Vec::new();
    model.possible(&kept.0, &mut actions);
    let jobs: Vec<(usize, Action)> = actions.iter().map(|a| (0, *a)).collect();
    // Every step on the store: a step from the store's recorded
    // behaviour would repeat the values it drew then.
    let again = run_level(
        &model.recomputing(),
        pool,
        std::slice::from_ref(kept),
        &jobs,
    );
    again.len() != first.len()
        || again.iter().zip(first).any(|(x, y)| {
            x.harness_error.is_none() && symmetry.fingerprint(x) != symmetry.fingerprint(y)
        })
}

/// What a step did, in words, for a merge that went on differently.
fn went_on(state: &State) -> String {
    // A script's text says nothing here, and its arguments are at the end.
    let short = |c: &String| -> String {
        let chars: Vec<char> = c.chars().collect();
        if chars.len() <= 160 {
            return c.clone();
        }
        let head: String = chars[..40].iter().collect();
        let tail: String = chars[chars.len() - 100..].iter().collect();
        format!("{head}…{tail}")
    };
    let sent = if state.note.commands.is_empty() {
        "sent nothing".to_string()
    } else {
        let commands: Vec<String> = state.note.commands.iter().map(short).collect();
        format!("sent `{}`", commands.join("`, `"))
    };
    match &state.note.answer {
        Some(answer) => format!("{sent} and answered {answer:?}"),
        None => sent,
    }
}

/// What a merge that went on differently took as one.
struct MergeKind {
    symmetric: bool,
    drawn: bool,
}

/// The fingerprint of `state` on absolute times, nothing collapsed.
fn absolute(state: &State) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    state.hash_with(&mut h, false, i64::MAX);
    h.finish()
}

/// The fingerprint of `state` with every drawn value as its bytes.
fn bytes(state: &State) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    state.hash_bytes(&mut h);
    h.finish()
}

/// Every state `model` reaches within its `max_steps`, level by level; with
/// `fail_fast`, only the levels up to the first that breaks a property it
/// names (any, when it names none)
/// (that level whole, so the discovery is the one the full search makes).
///
/// With times read relative to now (not `model.absolute_times`), two states
/// that differ only by a shift of every time are one: sound only for a store
/// whose answers shift with them. `shift` has a seeded sample of each
/// level's such merges checked: the successors of both states, under every
/// action, must fingerprint alike. When they do not, the search stops there
/// with [`Searched::shift_failure`] set.
pub fn search(
    model: &LeaseModel,
    pool: &mut Pool,
    fail_fast: Option<&[Property]>,
    shift: ShiftCheck,
) -> Searched {
    let symmetry = Symmetry::of(&model.skews, model.symmetric);
    let init = model.initial();
    let mut out = Searched {
        states: 1,
        unique_states: 1,
        ..Searched::default()
    };
    // Every state kept, by fingerprint: where it is (level, index).
    let mut seen: HashMap<u64, (usize, usize)> = HashMap::new();
    seen.insert(symmetry.fingerprint(&init), (0, 0));
    note(&mut out, &init, &[]);
    // Every level so far but the current one (the merges refer to them).
    let mut levels: Vec<Vec<(State, Vec<Action>)>> = Vec::new();
    let mut level: Vec<(State, Vec<Action>)> = vec![(init, Vec::new())];
    let mut depth = 0;
    // The trial was checked on fresh processes for this contract.
    let mut fresh_checked = model
        .shared
        .fresh_checked
        .lock()
        .map_or(true, |done| done.contains(&model.contract));
    let trusted_at_start = model.shared.trusts_memory();
    while !level.is_empty() {
        // Every transition of the level, in the order one thread would take.
        let mut jobs: Vec<(usize, Action)> = Vec::new();
        let mut actions = Vec::new();
        for (k, (state, _)) in level.iter().enumerate() {
            actions.clear();
            model.possible(state, &mut actions);
            jobs.extend(actions.iter().map(|a| (k, *a)));
        }
        if jobs.is_empty() {
            break;
        }
        let trial0 = model.shared.kept_on_trial.load(Ordering::Relaxed);
        let chained = run_level_chained(model, pool, &level, &jobs, true);
        let (nexts, chains): (Vec<State>, Vec<Vec<Action>>) = chained.into_iter().unzip();
        depth += 1;
        if !model.fresh_processes && model.shared.speed.trial {
            let kept = model.shared.kept_on_trial.load(Ordering::Relaxed) > trial0;
            let trusted = model.shared.trusts_memory();
            if trusted && kept && shift.memory_per_level > 0 {
                let fresh = !fresh_checked && depth >= 2;
                let (checked, fresh_done) =
                    check_memory(model, pool, &level, &jobs, &nexts, shift, depth, fresh);
                out.memory_checked += checked;
                if fresh_done {
                    fresh_checked = true;
                    if let Ok(mut done) = model.shared.fresh_checked.lock() {
                        done.push(model.contract);
                    }
                }
            }
            if trusted_at_start && !model.shared.trusts_memory() {
                // Every state of this search may rest on what a process
                // remembered: it is searched again.
                out.memory_failure = model.shared.distrusted();
                break;
            }
        }
        let mut next_level: Vec<(State, Vec<Action>)> = Vec::new();
        let mut merges: Vec<Merge> = Vec::new();
        // With no value read as drawn, the fingerprint reads every byte:
        // no merge can be a renaming's, and no state is hashed twice.
        let reads_drawn = {
            let values = model.shared.drawn.values();
            values.len() > 0 && values.on()
        };
        for (((k, action), next), chain) in jobs.into_iter().zip(nexts).zip(chains) {
            out.states += 1;
            // Counted before the merge: a clean refusal leads back to a
            // state met already.
            if matches!(&next.note.answer, Some(Err(e)) if e.kind == harness::contract::ErrorKind::StoreFull)
            {
                out.full_refusals += 1;
            }
            let fingerprint = symmetry.fingerprint(&next);
            let met = seen.get(&fingerprint).copied();
            let kept_at = met.map(|(kept_level, kept_index)| {
                if kept_level == depth {
                    &next_level[kept_index].0
                } else if kept_level + 1 == depth {
                    &level[kept_index].0
                } else {
                    &levels[kept_level][kept_index].0
                }
            });
            let revisit = kept_at.is_some_and(|kept| next.steps < kept.steps);
            if revisit {
                out.budget_revisits += 1;
            }
            if let (Some(kept), Some((kept_level, kept_index)), false) = (kept_at, met, revisit) {
                let symmetric = symmetry.folds() && kept.fingerprint() != next.fingerprint();
                if symmetric {
                    out.symmetric_merges += 1;
                }
                // Only a merge of states with successors (a budget left, no
                // violation, no trouble) loses anything, and only one the
                // absolute reading, or no renaming, would not make.
                let checking = shift.per_level > 0;
                let goes_on = !next.stops();
                let shifted = !model.absolute_times && absolute(kept) != absolute(&next);
                // A merge the renaming of drawn values made (a shift in
                // time too, or not) is that renaming's to answer for.
                let drawn = !symmetric && reads_drawn && bytes(kept) != bytes(&next);
                if drawn {
                    out.drawn_merges += 1;
                }
                if checking
                    && next.steps < model.max_steps
                    && goes_on
                    && (shifted || symmetric || drawn)
                {
                    let mut path = level[k].1.clone();
                    path.push(action);
                    path.extend_from_slice(&chain);
                    merges.push(Merge {
                        symmetric,
                        drawn,
                        state: next,
                        path,
                        kept_level,
                        kept_index,
                    });
                }
                continue;
            }
            seen.insert(fingerprint, (depth, next_level.len()));
            if !revisit {
                out.unique_states += 1;
            }
            out.max_depth = depth;
            if next.stopped_by_violation() && next.steps < model.max_steps {
                // No successors (see `LeaseModel::possible`): what the other
                // properties were checked on ends here.
                out.violating_states_cut += 1;
                out.shallowest_cut = Some(out.shallowest_cut.map_or(depth, |d| d.min(depth)));
            }
            let mut path = level[k].1.clone();
            path.push(action);
            path.extend_from_slice(&chain);
            note(&mut out, &next, &path);
            next_level.push((next, path));
        }
        levels.push(std::mem::replace(&mut level, next_level));
        if !merges.is_empty() {
            let kept = |m: &Merge| -> &(State, Vec<Action>) {
                if m.kept_level == depth {
                    &level[m.kept_index]
                } else {
                    &levels[m.kept_level][m.kept_index]
                }
            };
            let sample = sampled(merges.len(), shift, depth);
            let pairs: Vec<(&(State, Vec<Action>), &Merge)> = sample
                .into_iter()
                .map(|i| (kept(&merges[i]), &merges[i]))
                .collect();
            let (checked, failure) = check_merges(model, pool, &symmetry, &pairs);
            out.shift_checked += checked;
            if let Some((merge, why)) = failure {
                if merge.symmetric {
                    out.symmetry_failure = Some(why);
                } else if merge.drawn {
                    out.drawn_failure = Some(why);
                } else {
                    out.shift_failure = Some(why);
                }
                break;
            }
        }
        // The harness's trouble (a store that is not deterministic, a server
        // that stopped answering): the exploration cannot go on, and every
        // check it would decide is undecided now; the level that showed it
        // is the last (what it found before stands).
        if out.discoveries.contains_key(&Property::HarnessOk) {
            break;
        }
        let broken = stops_fast(fail_fast, model.contract, &out.discoveries);
        if broken && !level.is_empty() && depth < model.max_steps {
            out.stopped_at = Some(depth);
            break;
        }
    }
    out
}

/// Which of a level's `n` merges are checked: all of them if no more than
/// `shift.per_level`, else that many drawn with the seed and the depth.
fn sampled(n: usize, shift: ShiftCheck, depth: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..n).collect();
    if n <= shift.per_level {
        return all;
    }
    let mut rng =
        StdRng::seed_from_u64(shift.seed ^ (depth as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    // A partial Fisher-Yates shuffle: the first `per_level` are the sample.
    for i in 0..shift.per_level {
        let j = rng.random_range(i..n);
        all.swap(i, j);
    }
    all.truncate(shift.per_level);
    all.sort_unstable();
    all
}

/// Computes every successor of both states of each merged pair (kept,
/// met again) and compares them by fingerprint: action by action for a
/// pair that differs in time only, as sets for a pair that differs by a
/// renaming of instances (the renamed state's actions are the kept one's,
/// renamed). Returns how many pairs were compared and, at the first that
/// went on differently, whether it was a renaming, and why in words. A
/// successor with the harness's own trouble proves nothing either way.
fn check_merges(
    model: &LeaseModel,
    pool: &mut Pool,
    symmetry: &Symmetry,
    pairs: &[(&(State, Vec<Action>), &Merge)],
) -> (usize, Option<(MergeKind, String)>) {
    let mut states: Vec<(State, Vec<Action>)> = Vec::new();
    let mut jobs: Vec<(usize, Action)> = Vec::new();
    // The jobs of each pair: the kept state's, then the merged state's.
    let mut spans: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = Vec::new();
    let mut actions = Vec::new();
    for (kept, merge) in pairs {
        let k = states.len();
        states.push((*kept).clone());
        states.push((merge.state.clone(), merge.path.clone()));
        let start = jobs.len();
        actions.clear();
        model.possible(&kept.0, &mut actions);
        jobs.extend(actions.iter().map(|a| (k, *a)));
        let mid = jobs.len();
        actions.clear();
        model.possible(&merge.state, &mut actions);
        jobs.extend(actions.iter().map(|a| (k + 1, *a)));
        spans.push((start..mid, mid..jobs.len()));
    }
    let nexts = run_level(model, pool, &states, &jobs);
    let mut checked = 0;
    for ((kept, merge), (a, b)) in pairs.iter().zip(spans) {
        let (xs, ys) = (&nexts[a.clone()], &nexts[b.clone()]);
        if xs.iter().chain(ys).any(|x| x.harness_error.is_some()) {
            continue;
        }
        let differs = if merge.symmetric {
            let prints = |s: &[State]| {
                let mut v: Vec<u64> = s.iter().map(|x| symmetry.check_print(x)).collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            (prints(xs) != prints(ys)).then(|| "a renaming of instances of one clock".to_string())
        } else {
            let first = xs
                .iter()
                .zip(ys)
                .position(|(x, y)| symmetry.fingerprint(x) != symmetry.fingerprint(y));
            (xs.len() != ys.len() || first.is_some()).then(|| {
                let what = if merge.drawn {
                    "a renaming of the values the store drew"
                } else {
                    "the relative reading of times"
                };
                match first {
                    Some(k) => format!(
                        "{what} (after {:?}, one {} and the other {})",
                        jobs[a.start + k].1,
                        went_on(&xs[k]),
                        went_on(&ys[k])
                    ),
                    None => what.to_string(),
                }
            })
        };
        checked += 1;
        if let Some(what) = differs {
            // A store whose answers depend on what it drew beyond which
            // values are the same goes on differently from one state run
            // twice: that is the renaming's to answer for, whatever merge
            // showed it.
            let unstable = !merge.symmetric && draws_matter(model, pool, symmetry, kept, xs);
            let what = if unstable && !merge.drawn {
                format!("{what}, and the kept state run again went on differently too: a renaming of the values the store drew")
            } else {
                what
            };
            return (
                checked,
                Some((
                    MergeKind {
                        symmetric: merge.symmetric,
                        drawn: merge.drawn || unstable,
                    },
                    format!(
                        "two states {what} took as one went on differently: the state after {:?} (server time {}) and the one after {:?} (server time {})",
                        kept.1, kept.0.now, merge.path, merge.state.now
                    ),
                )),
            );
        }
    }
    (checked, None)
}

/// Computes a seeded sample of a level's steps that ran an operation again
/// (`memory_per_level` of them) on processes kept with another history and,
/// with `fresh`, the first of them on fresh processes too, and compares the
/// states they lead to with the ones the level got: a process kept on trial
/// must do what any other would. A difference makes the exploration stop
/// trusting such processes ([`Shared::distrust`]). Returns how many steps
/// were compared and whether one was on fresh processes.
#[allow(clippy::too_many_arguments)]
fn check_memory(
    model: &LeaseModel,
    pool: &mut Pool,
    level: &[(State, Vec<Action>)],
    jobs: &[(usize, Action)],
    nexts: &[State],
    shift: ShiftCheck,
    depth: usize,
    fresh: bool,
) -> (usize, bool) {
    let runs_operation = |a: &Action| {
        matches!(
            a,
            Action::Start(..) | Action::Continue(_) | Action::Lose(..)
        )
    };
    let candidates: Vec<usize> = (0..jobs.len())
        .filter(|&j| runs_operation(&jobs[j].1) && nexts[j].harness_error.is_none())
        .collect();
    let per_level = ShiftCheck {
        seed: shift.seed ^ 0x6D65_6D6F_7279,
        per_level: shift.memory_per_level,
        memory_per_level: 0,
    };
    let picked: Vec<usize> = sampled(candidates.len(), per_level, depth)
        .into_iter()
        .map(|k| candidates[k])
        .collect();
    if picked.is_empty() {
        return (0, false);
    }
    let again: Vec<(usize, Action)> = picked.iter().map(|&j| jobs[j]).collect();
    // As the search ran them: chained.
    let chained = |m: &LeaseModel, pool: &mut Pool, jobs: &[(usize, Action)]| -> Vec<State> {
        run_level_chained(m, pool, level, jobs, true)
            .into_iter()
            .map(|(s, _)| s)
            .collect()
    };
    let mut compared = vec![(false, chained(&model.recomputing(), pool, &again))];
    if fresh {
        let on_fresh = model.with_fresh_processes();
        compared.push((true, chained(&on_fresh, pool, &again[..1])));
    }
    let mut checked = 0;
    for (on_fresh, states) in &compared {
        for (&j, other) in picked.iter().zip(states) {
            let first = &nexts[j];
            if other.harness_error.is_some() {
                continue;
            }
            checked += 1;
            let answer = |s: &State| format!("{:?}", s.note.answer);
            if absolute(first) != absolute(other)
                || answer(first) != answer(other)
                || first.violations != other.violations
            {
                let (k, action) = jobs[j];
                model.shared.distrust(format!(
                    "the step {action:?} after {:?} went otherwise on {} (commands {:?}, answer {}) than on the process it first ran on (commands {:?}, answer {})",
                    level[k].1,
                    if *on_fresh { "a fresh process" } else { "a process kept with another history" },
                    other.note.commands,
                    answer(other),
                    first.note.commands,
                    answer(first),
                ));
                return (checked, *on_fresh);
            }
        }
    }
    (checked, fresh)
}

/// Records `state` as the discovery of every property it is the first for.
fn note(out: &mut Searched, state: &State, path: &[Action]) {
    for (op, message) in &state.unsupported {
        if !out.unsupported.iter().any(|(o, _)| o == op) {
            out.unsupported.push((*op, message.clone()));
        }
    }
    for property in Property::ALL {
        if discovers(state, property) && !out.discoveries.contains_key(&property) {
            out.discoveries.insert(
                property,
                Discovery {
                    actions: path.to_vec(),
                    state: state.clone(),
                },
            );
        }
    }
}

/// The next state of every job, in job order: each worker takes the next
/// state's jobs not yet taken, on its own world. One world runs every
/// transition of a state, so one that leaves the keys alone (a tick, a
/// crash, a read) lets the next start with no restore.
///
/// One step each, unchained: what a merge is checked on (one step ahead of
/// both states, whose chains could stop apart on what the fingerprint does
/// not hold, a race reached on the way).
fn run_level(
    model: &LeaseModel,
    pool: &mut Pool,
    level: &[(State, Vec<Action>)],
    jobs: &[(usize, Action)],
) -> Vec<State> {
    run_level_chained(model, pool, level, jobs, false)
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

/// [`run_level`], with `chain` each job's next state run on as the search
/// runs it ([`LeaseModel::step_chained`]), with the `Continue`s taken
/// after the job's action.
fn run_level_chained(
    model: &LeaseModel,
    pool: &mut Pool,
    level: &[(State, Vec<Action>)],
    jobs: &[(usize, Action)],
    chain: bool,
) -> Vec<(State, Vec<Action>)> {
    // The jobs of each state, as index ranges (jobs come grouped by state).
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for (j, (k, _)) in jobs.iter().enumerate() {
        match groups.last_mut() {
            Some(g) if jobs[g.start].0 == *k => g.end = j + 1,
            _ => groups.push(j..j + 1),
        }
    }
    let groups = &groups;
    let taken = AtomicUsize::new(0);
    let mut done: Vec<(usize, (State, Vec<Action>))> = std::thread::scope(|scope| {
        let handles: Vec<_> = pool
            .worlds
            .iter_mut()
            .map(|world| {
                let taken = &taken;
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let g = taken.fetch_add(1, Ordering::Relaxed);
                        let Some(group) = groups.get(g) else {
                            break;
                        };
                        for j in group.clone() {
                            let (k, action) = jobs[j];
                            let state = &level[k].0;
                            mine.push((
                                j,
                                if chain {
                                    model.step_chained(world, state, action)
                                } else {
                                    (model.step_on(world, state, action), Vec::new())
                                },
                            ));
                        }
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            // A worker that panicked leaves its jobs undone: they are
            // filled in below as the harness's trouble.
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(j, _)| *j);
    let mut out = Vec::with_capacity(jobs.len());
    let mut done = done.into_iter().peekable();
    for (j, (k, _)) in jobs.iter().enumerate() {
        match done.next_if(|(d, _)| *d == j) {
            Some((_, s)) => out.push(s),
            None => {
                let mut s = level[*k].0.clone();
                s.steps += 1;
                s.harness_error = Some("a checker thread panicked".into());
                out.push((s, Vec::new()));
            }
        }
    }
    out
}

/// Whether `--fail-fast` stops at what was `found`: `fail_fast` holds the
/// properties the run asks about (every one when empty), so a run asking
/// for one check is not stopped by another's violation.
pub(crate) fn stops_fast(
    fail_fast: Option<&[Property]>,
    contract: harness::contract::Contract,
    found: &BTreeMap<Property, Discovery>,
) -> bool {
    let Some(asked) = fail_fast else {
        return false;
    };
    Property::always(contract)
        .iter()
        .filter(|p| stops_on(asked, **p))
        .any(|p| found.contains_key(p))
}

/// Whether `--fail-fast` stops at a violation of `property`, given the
/// properties the run asks about (`asked`; every one when empty).
pub(crate) fn stops_on(asked: &[Property], property: Property) -> bool {
    asked.is_empty() || asked.contains(&property)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merges_checked_are_all_of_a_few_or_a_seeded_sample_of_many() {
        let shift = |seed| ShiftCheck {
            seed,
            per_level: 4,
            memory_per_level: 0,
        };
        assert_eq!(sampled(3, shift(1), 2), vec![0, 1, 2]);
        let a = sampled(100, shift(1), 2);
        assert_eq!(a.len(), 4);
        assert!(a.windows(2).all(|w| w[0] < w[1] && w[1] < 100), "{a:?}");
        // The same seed and level: the same sample; another: another.
        assert_eq!(a, sampled(100, shift(1), 2));
        assert_ne!(a, sampled(100, shift(2), 2));
        assert!(sampled(
            100,
            ShiftCheck {
                seed: 1,
                per_level: 0,
                memory_per_level: 0,
            },
            2
        )
        .is_empty());
    }
}
