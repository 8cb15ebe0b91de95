//! One exploration: exhaustive BFS of two instances for every skew, then
//! seeded walks of three; their findings as checks, counterexamples and
//! figures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use harness::contract::Contract;
use harness::figures::ExplorerFigures;
use harness::server::ServerKind;
use harness::store::StoreFactory;
use harness::History;

use crate::model::{drop_world, LeaseModel};
use crate::property::Property;
use crate::search::{search, Pool, Searched, ShiftCheck};
use crate::state::{Action, Op, State};
use crate::walk::{play, rng_for, walk};
use crate::world::{Shared, Speed};

pub(crate) mod config;
mod replay;
pub use config::{ExplorerConfig, ExplorerOutcome, ExplorerPart, Savings};
mod verdicts;
use replay::replay_path;
pub use replay::{replay_schedule, replay_schedule_on};
use verdicts::*;

static RUNS: AtomicU64 = AtomicU64::new(1);

pub use crate::state::START_MS;
pub use crate::world::MAX_INSTANCES;

pub use harness::counterexample::{
    ExplorerCounterexample as Counterexample, ExplorerStep, ExplorerTag,
};
pub use harness::explore::Schedule;

/// Explores `factory`'s lease store; `progress` gets a line per finished part.
pub fn explore(
    factory: Arc<dyn StoreFactory>,
    opt_out: Option<String>,
    prefix: String,
    config: &ExplorerConfig,
    progress: &mut dyn FnMut(&str),
) -> ExplorerOutcome {
    explore_part(
        factory,
        opt_out,
        prefix,
        config,
        &ExplorerPart::default(),
        progress,
    )
}

/// Explores `part` of the exploration `config` describes: its skews'
/// searches and its walks, each exactly as the whole exploration runs
/// them. The figures hold only the part's rows and walks.
pub fn explore_part(
    factory: Arc<dyn StoreFactory>,
    opt_out: Option<String>,
    prefix: String,
    config: &ExplorerConfig,
    part: &ExplorerPart,
    progress: &mut dyn FnMut(&str),
) -> ExplorerOutcome {
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let shared = Shared::checking_on(
        factory,
        prefix,
        opt_out,
        config.speed(),
        config.seed,
        config.cache_check_one_in,
        config.server.clone(),
    );
    let mut findings: Vec<Finding> = Vec::new();
    // What fail-fast left out, part by part.
    let mut not_explored: Vec<String> = Vec::new();
    // `--fail-fast` stops at a violation of a property the run asks about.
    let broke = |findings: &[Finding]| {
        findings.iter().any(|f| {
            f.property != Property::HarnessOk
                && crate::search::stops_on(&config.stop_on, f.property)
        })
    };
    let fail_fast = config.fail_fast.then_some(&config.stop_on[..]);
    let mut per_skew = Vec::new();
    // (search, race, skew): the races a search never reached.
    let mut unreached: Vec<(usize, Property, i64)> = Vec::new();
    let started = Instant::now();

    // One world per checker thread, kept for every skew.
    let mut pool = match Pool::new(&shared, config.threads, MAX_INSTANCES) {
        Ok(pool) => Some(pool),
        Err(e) => {
            findings.push(Finding {
                property: Property::HarnessOk,
                message: format!("the exploration's servers could not start: {e}"),
                found_in: "the exhaustive search's set-up".into(),
                schedule: Schedule {
                    skews: vec![],
                    actions: vec![],
                },
                steps: Vec::new(),
                history: History::default(),
                replays: false,
            });
            None
        }
    };
    let mut skews_left_out: Vec<String> = Vec::new();
    // The operations the store answered `unsupported`, first message kept.
    let mut unsupported: Vec<(Op, String)> = Vec::new();
    let mut saw_unsupported = |said: &[(Op, String)]| {
        for (op, message) in said {
            if !unsupported.iter().any(|(o, _)| o == op) {
                unsupported.push((*op, message.clone()));
            }
        }
    };
    let mut walks_cut = 0;
    // Skew by skew, each skew's contracts together: the order a merge of
    // shards (each a set of skews) rebuilds.
    // Two instances first, then three (at their own depth).
    let sizes: Vec<usize> = if config.three_depth > 0 {
        vec![2, 3]
    } else {
        vec![2]
    };
    let searches: Vec<(Contract, usize, i64, usize)> = config
        .skews
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            let sizes = sizes.clone();
            sizes
                .into_iter()
                .flat_map(move |n| config.contracts.iter().map(move |c| (*c, i, *s, n)))
        })
        .collect();
    // Searched in order; a search whose processes kept on trial proved to
    // remember sends the earlier searches that trusted such processes
    // back here, to be searched again on fresh ones (their rows keep
    // their places: `rows` is by search).
    let mut queue: std::collections::VecDeque<usize> = (0..searches.len()).collect();
    let mut rows: std::collections::BTreeMap<usize, harness::figures::SkewFigures> =
        Default::default();
    // Searches that kept processes on trial, trusted, and passed on them.
    let mut trusted_trials: Vec<usize> = Vec::new();
    // Why a search is searched again, by search.
    let mut redone: std::collections::HashMap<usize, String> = Default::default();
    while let Some(k) = queue.pop_front() {
        let (contract, index, skew, instances) = searches[k];
        if !part.searches(index) {
            continue;
        }
        if shared.factory.adapter_failure().is_some() {
            // The store's adapter failed (it exited, hung, or wrote
            // garbage): no later search can say anything of the store.
            not_explored.push(format!(
                "the searches from second clock {skew:+} ms on (the store's adapter failed)"
            ));
            break;
        }

        // The races are the two-instance search's to reach: three
        // instances, at a depth of their own, look for violations only.
        let races = if instances == 3 {
            &[][..]
        } else {
            Property::races(contract)
        };
        // How the search is named in the checks' reasons and the progress.
        let three = if instances == 3 {
            ", three instances"
        } else {
            ""
        };
        if config.fail_fast && broke(&findings) {
            skews_left_out.push(if config.contracts.len() > 1 || instances == 3 {
                format!("{skew:+} ms ({}{three})", contract.name())
            } else {
                format!("{skew:+} ms")
            });
            for race in races {
                unreached.push((k, *race, skew));
            }
            continue;
        }
        let Some(pool) = pool.as_mut() else {
            // Nothing was explored: nothing was reached.
            for race in races {
                unreached.push((k, *race, skew));
            }
            continue;
        };
        let trusted_before = shared.speed.trial && shared.trusts_memory();
        let kept_before = shared.kept_on_trial.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let trips0 = shared.round_trips.load(Ordering::Relaxed);
        let trans0 = shared.transitions.load(Ordering::Relaxed);
        let mut model = LeaseModel {
            run,
            shared: shared.clone(),
            skews: if instances == 3 {
                vec![0, 0, skew]
            } else {
                vec![0, skew]
            },
            start_ms: START_MS,
            max_steps: if instances == 3 {
                config.three_depth
            } else {
                config.depth_of(contract)
            },
            absolute_times: config.absolute_times,
            contract,
            symmetric: config.symmetry,
            lost_replies: config.lost_replies,
            fresh_processes: false,
            recompute: false,
            whole_operations: false,
        };
        let shift = ShiftCheck {
            seed: config.seed ^ (index as u64),
            per_level: config.shift_checks_per_level,
            memory_per_level: config.memory_checks_per_level,
        };
        let mut searched = search(&model, pool, fail_fast, shift);
        let mut shift_checked = searched.shift_checked;
        let mut memory_checked = searched.memory_checked;
        let (mut shift_failure, mut symmetry_failure, mut memory_failure) = (None, None, None);
        let mut drawn_failure = None;
        loop {
            if searched.memory_failure.is_none() {
                searched.memory_failure = unconfirmed(&model, &searched, &findings);
            }
            if let Some(why) = searched.memory_failure.take() {
                // A process kept on trial remembered something that
                // mattered: from now on each operation of such a process
                // starts on a fresh one.
                progress(&format!(
                    "explorer: second clock {skew:+} ms{three}: {why}; searching again with a fresh adapter process per operation"
                ));
                memory_failure = Some(why);
            } else if let Some(why) = searched.symmetry_failure.take() {
                // The store is not symmetric in its holders (it hashes or
                // orders them): every state is its own.
                progress(&format!(
                    "explorer: second clock {skew:+} ms{three}: {why}; searching again without folding renamed instances"
                ));
                model.symmetric = false;
                symmetry_failure = Some(why);
            } else if let Some(why) = searched.drawn_failure.take() {
                // The store does not treat what it draws as opaque: every
                // byte of every state counts, in this search and later ones.
                progress(&format!(
                    "explorer: second clock {skew:+} ms{three}: {why}; searching again reading every drawn value as its bytes"
                ));
                model.shared.drawn.values().turn_off();
                drawn_failure = Some(why);
            } else if let Some(why) = searched.shift_failure.take() {
                // The store's answers do not shift with every time: under
                // this skew its states are told apart by absolute time.
                // Each skew decides for itself, so a shard's rows are the
                // whole run's.
                progress(&format!(
                    "explorer: second clock {skew:+} ms{three}: {why}; searching again on absolute times"
                ));
                model.absolute_times = true;
                shift_failure = Some(why);
            } else {
                break;
            }
            searched = search(&model, pool, fail_fast, shift);
            shift_checked += searched.shift_checked;
            memory_checked += searched.memory_checked;
        }
        // Races the interleaved search left unreached: sought again among
        // schedules of whole operations, as deep in operations.
        let whole = whole_operations(&model, pool, fail_fast, shift, races, &searched);
        if let Some(w) = &whole {
            progress(&format!(
                "explorer: {}, second clock {skew:+} ms{three}: a race unreached in {} steps of single commands; whole operations, {} steps deep: {} states ({} unique)",
                contract.name(),
                model.max_steps,
                model.max_steps,
                w.states,
                w.unique_states
            ));
        }
        saw_unsupported(&searched.unsupported);
        if let Some(level) = searched.stopped_at {
            not_explored.push(format!(
                "the search under second clock {skew:+} ms{three} past depth {level} (of {}; --fail-fast)",
                model.max_steps
            ));
        }
        let found_in = format!(
            "exhaustive search of the {} contract{three}, second clock {skew:+} ms",
            contract.name()
        );
        let whole_model = whole.as_ref().map(|_| model.with_whole_operations());
        let found = [(&model, Some(&searched), found_in.clone())]
            .into_iter()
            .chain(
                whole_model
                    .as_ref()
                    .map(|m| (m, whole.as_ref(), format!("{found_in}, whole operations"))),
            );
        for (m, s, found_in) in found {
            let Some(s) = s else { continue };
            for property in Property::always(contract)
                .iter()
                .copied()
                .chain([Property::HarnessOk])
            {
                let Some(d) = s.discoveries.get(&property) else {
                    continue;
                };
                if findings.iter().any(|f| f.property == property) {
                    continue;
                }
                findings.push(finding(m, property, &d.actions, &d.state, found_in.clone()));
            }
        }
        for race in races {
            let reached = |s: &Searched| s.discoveries.contains_key(race);
            if !reached(&searched) && !whole.as_ref().is_some_and(reached) {
                unreached.push((k, *race, skew));
            }
        }
        if trusted_before && !shared.trusts_memory() {
            // What this search found out undoes the trust earlier searches
            // passed on: each is searched again on fresh processes.
            let why = memory_failure
                .clone()
                .unwrap_or_else(|| "a process kept on trial remembered".into());
            for j in trusted_trials.drain(..) {
                rows.remove(&j);
                unreached.retain(|(by, ..)| *by != j);
                redone.insert(j, why.clone());
                queue.push_back(j);
            }
        } else if trusted_before && shared.kept_on_trial.load(Ordering::Relaxed) > kept_before {
            trusted_trials.push(k);
        }
        let secs = t0.elapsed().as_secs_f64();
        let transitions = shared.transitions.load(Ordering::Relaxed) - trans0;
        let trips = shared.round_trips.load(Ordering::Relaxed) - trips0;
        let mut row = ExplorerFigures::skew_row(skew);
        row.contract = contract.name().to_string();
        row.queue_claim_race_reached = searched.discoveries.contains_key(&Property::QueueClaimRace);
        row.queue_complete_race_reached = searched
            .discoveries
            .contains_key(&Property::QueueCompleteRace);
        row.rate_slot_race_reached = searched.discoveries.contains_key(&Property::RateSlotRace);
        row.rate_hit_race_reached = searched.discoveries.contains_key(&Property::RateHitRace);
        row.full_refusals = searched.full_refusals;
        row.depth = model.max_steps;
        row.instances = instances;
        row.symmetric_merges = searched.symmetric_merges;
        row.states = searched.states;
        row.unique_states = searched.unique_states;
        row.max_depth = searched.max_depth;
        row.transitions = transitions;
        row.seconds = millis(secs);
        row.transitions_per_second = (transitions as f64 / secs.max(1e-9)).round();
        row.round_trips_per_transition = if transitions > 0 {
            ((trips as f64 / transitions as f64) * 100.0).round() / 100.0
        } else {
            0.0
        };
        row.zombie_renew_reached = searched
            .discoveries
            .contains_key(&Property::ZombieRenewRace);
        row.shift_checked = shift_checked;
        row.memory_checked = memory_checked;
        row.memory_failure = memory_failure.or_else(|| {
            redone.get(&k).map(|why| {
                format!(
                    "a later search showed that what a process kept on trial remembered mattered ({why}): this search ran again with a fresh adapter process per operation"
                )
            })
        });
        row.absolute_times = model.absolute_times;
        row.shift_failure = shift_failure;
        row.symmetry_failure = symmetry_failure;
        row.drawn_failure = drawn_failure;
        row.whole_operations_states = whole.as_ref().map_or(0, |w| w.unique_states);
        row.drawn_merges = searched.drawn_merges;
        row.drawn_values = model.shared.drawn.values().len();
        row.violating_states_cut = searched.violating_states_cut;
        row.shallowest_cut = searched.shallowest_cut;
        row.zombie_release_reached = searched
            .discoveries
            .contains_key(&Property::ZombieReleaseRace);
        progress(&format!(
            "explorer: {}{three}, second clock {skew:+} ms: {} states ({} unique), depth {}, {:.1}s",
            contract.name(),
            row.states,
            row.unique_states,
            row.max_depth,
            secs
        ));
        rows.insert(k, row);
    }
    per_skew.extend(rows.into_values());
    if !skews_left_out.is_empty() {
        not_explored.push(format!(
            "the search under second clock {}",
            skews_left_out.join(", ")
        ));
    }
    // Stop the pool's servers before the walks start theirs.
    drop(pool);

    // Seeded walks of three instances, skews drawn from the same set.
    let t0 = Instant::now();
    let mut walk_steps = 0usize;
    // A digest of every walk's schedule: the same seed must give the same one.
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    let walks = part.walk_numbers(config);
    let mut walks_run = 0;
    let walk_runs: Vec<(Contract, usize)> = config
        .contracts
        .iter()
        .flat_map(|c| walks.clone().map(move |n| (*c, n)))
        .collect();
    for (contract, n) in walk_runs {
        if config.fail_fast && broke(&findings) {
            not_explored.push(if config.contracts.len() > 1 {
                format!(
                    "walks {n}..{} of seed {} ({})",
                    walks.end,
                    config.seed,
                    contract.name()
                )
            } else {
                format!("walks {n}..{} of seed {}", walks.end, config.seed)
            });
            break;
        }
        walks_run += 1;
        let mut rng = rng_for(config.seed, n);
        let pick = |rng: &mut rand::rngs::StdRng| {
            use rand::RngExt;
            config.skews[rng.random_range(0..config.skews.len())]
        };
        let skews = vec![0, pick(&mut rng), pick(&mut rng)];
        let model = LeaseModel {
            run,
            shared: shared.clone(),
            skews,
            start_ms: START_MS,
            max_steps: usize::MAX,
            absolute_times: false,
            contract,
            symmetric: false,
            lost_replies: config.lost_replies,
            fresh_processes: false,
            recompute: false,
            whole_operations: false,
        };
        let w = walk(&model, config.walk_steps, &mut rng);
        walk_steps += w.actions.len();
        saw_unsupported(&w.last.unsupported);
        if w.last.stopped_by_violation() && w.actions.len() < config.walk_steps {
            walks_cut += 1;
        }
        std::hash::Hash::hash(&(&w.skews, &w.actions), &mut digest);
        let broken: Vec<Property> = w
            .last
            .violations
            .iter()
            .map(|(p, _)| *p)
            .chain(w.last.harness_error.as_ref().map(|_| Property::HarnessOk))
            .collect();
        for property in broken {
            if findings.iter().any(|f| f.property == property) {
                continue;
            }
            let found_in = format!(
                "walk {n} of seed {} ({} contract)",
                config.seed,
                contract.name()
            );
            findings.push(finding(&model, property, &w.actions, &w.last, found_in));
        }
    }
    let walk_secs = t0.elapsed().as_secs_f64();
    progress(&format!(
        "explorer: {} seeded walks of three instances ({walk_steps} steps), seed {}, {:.1}s",
        walks_run, config.seed, walk_secs
    ));
    drop_world(run);

    let total_secs = started.elapsed().as_secs_f64();
    let figures = ExplorerFigures {
        per_skew,
        depth: config.depth,
        walks: walks_run,
        walk_steps,
        walk_seconds: millis(walk_secs),
        walk_digest: format!("{:016x}", std::hash::Hasher::finish(&digest)),
        seed: config.seed,
        seconds: millis(total_secs),
        transitions: shared.transitions.load(Ordering::Relaxed),
        round_trips: shared.round_trips.load(Ordering::Relaxed),
        wall_seconds: None,
        walks_cut,
        ..ExplorerFigures::default()
    };
    let mut figures = figures;
    figures.fused_steps = shared.fused_steps.load(Ordering::Relaxed);
    figures.cache.answered = shared.cache_answers.load(Ordering::Relaxed);
    figures.cache.verified = shared.cache_checked.load(Ordering::Relaxed);
    figures.cache.differed = shared.cache_differed.load(Ordering::Relaxed);
    figures.cache.first_difference = shared.first_difference.lock().ok().and_then(|d| d.clone());
    if figures.cache.differed > 0 && !findings.iter().any(|f| f.property == Property::HarnessOk) {
        // The server answered an input differently from the answer cached
        // for it: the states reached through cached answers may not be the
        // server's, so nothing that held is known to hold.
        findings.push(Finding {
            property: Property::HarnessOk,
            message: format!(
                "the server did not repeat itself: {} of the {} cached outcomes compared with the server's for the same input in the same state differed (first: {})",
                figures.cache.differed,
                figures.cache.verified,
                figures.cache.first_difference.as_deref().unwrap_or("not recorded")
            ),
            found_in: "the transition cache's check against the server".into(),
            schedule: Schedule {
                skews: vec![],
                actions: vec![],
            },
            steps: Vec::new(),
            history: History::default(),
            replays: false,
        });
    }
    // A store with no Redis wire is explored an operation a step: say so
    // wherever the scope is written.
    let step = (!shared.factory.keeps_state_in_redis()).then_some(crate::local::ONE_OPERATION);
    let not_explored = (!not_explored.is_empty()).then(|| not_explored.join("; "));
    if let Some(cut) = &not_explored {
        progress(&format!("explorer: stopped early; not explored: {cut}"));
    }
    let savings = Savings {
        cache_answers: shared.cache_answers.load(Ordering::Relaxed),
        behaviour_answers: shared.behaviour_answers.load(Ordering::Relaxed),
        cache_hits: shared.cache_hits.load(Ordering::Relaxed),
        restores_skipped: shared.restores_skipped.load(Ordering::Relaxed),
        cache_entries: shared.cache.len(),
        refreshes: shared.refreshes.load(Ordering::Relaxed),
        abandoned_processes: shared.abandoned_processes.load(Ordering::Relaxed),
        probe_processes: shared.probe_processes.load(Ordering::Relaxed),
        store_runs: shared.store_runs.load(Ordering::Relaxed),
        live_steps: shared.live_steps.load(Ordering::Relaxed),
    };
    ExplorerOutcome {
        checks: checks(
            &findings,
            &unreached
                .iter()
                .map(|(_, race, skew)| (*race, *skew))
                .collect::<Vec<_>>(),
            &figures,
            config,
            &Context {
                step,
                part: part.describe(config).as_deref(),
                cut: not_explored.as_deref(),
                adapter_failed: shared.factory.adapter_failure().as_deref(),
                unsupported: &unsupported,
                filled: step.is_none(),
            },
        ),
        figures,
        savings,
        not_explored,
    }
}

/// The search of whole operations ([`LeaseModel::whole_operations`]) for
/// `races` that `searched`, the interleaved search of `model`, left
/// unreached: `None` when it reached them all, stopped early (fail fast,
/// the harness's trouble) or ran whole operations already. A store of one
/// command an operation reaches in the interleaved search whatever this
/// one would, so only a store of several pays for it.
fn whole_operations(
    model: &LeaseModel,
    pool: &mut Pool,
    fail_fast: Option<&[Property]>,
    shift: ShiftCheck,
    races: &[Property],
    searched: &Searched,
) -> Option<Searched> {
    let unreached = races.iter().any(|r| !searched.discoveries.contains_key(r));
    let stopped = searched.stopped_at.is_some()
        || searched.discoveries.contains_key(&Property::HarnessOk)
        || crate::search::stops_fast(fail_fast, model.contract, &searched.discoveries);
    if !unreached || stopped || model.whole_operations {
        return None;
    }
    Some(search(
        &model.with_whole_operations(),
        pool,
        fail_fast,
        shift,
    ))
}

/// Seconds to the millisecond, as the figures show them.
pub(crate) fn millis(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests;
