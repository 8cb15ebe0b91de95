//! One exploration: exhaustive BFS of two instances for every skew, then
//! seeded walks of three; their findings as checks, counterexamples and
//! figures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use harness::check::{CheckResult, Level, Verdict};
use harness::server::VIRTUAL_EPOCH_MS;
use harness::store::StoreFactory;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::{drop_world, LeaseModel, ALWAYS};
use crate::search::{search, Pool};
use crate::state::{Action, Op, State, Tick};
use crate::walk::{play, rng_for, shrink, walk};
use crate::world::Shared;

/// The largest number of instances any exploration uses: every world has a
/// gate for each.
pub const MAX_INSTANCES: usize = 3;

/// How big an exploration is.
#[derive(Debug, Clone)]
pub struct ExplorerConfig {
    /// BFS depth: every schedule of two instances this many steps deep.
    pub depth: usize,
    /// Seeded walks of three instances.
    pub walks: usize,
    /// Steps per walk.
    pub walk_steps: usize,
    /// The seed of every walk (printed in the report).
    pub seed: u64,
    /// Checker threads (each with its own server).
    pub threads: usize,
    /// The second clock's skews.
    pub skews: Vec<i64>,
    /// Fingerprint absolute times instead of times relative to now (only to
    /// measure how many states the relative reading saves).
    pub absolute_times: bool,
}

impl Default for ExplorerConfig {
    fn default() -> Self {
        ExplorerConfig {
            depth: 8,
            walks: 200,
            walk_steps: 20,
            seed: 0,
            threads: 1,
            skews: crate::skews(),
            absolute_times: false,
        }
    }
}

/// A replayable schedule: the instances' skews and the actions in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// One instance clock offset from server time per instance, in ms.
    pub skews: Vec<i64>,
    /// The steps in order, from the initial state.
    pub actions: Vec<Action>,
}

/// What an exploration found.
pub struct ExplorerOutcome {
    /// One result per explorer check: the properties and the races reached.
    pub checks: Vec<CheckResult>,
    /// The explorer's figures for the report's `stats`: schedules, states,
    /// depth, seconds, walks and seed.
    pub stats: Value,
}

/// A violation found, with where.
struct Finding {
    property: String,
    message: String,
    found_in: String,
    schedule: Schedule,
    steps: Value,
    /// Re-running the schedule broke the property again.
    replays: bool,
}

static RUNS: AtomicU64 = AtomicU64::new(1);

fn describe(a: &Action) -> String {
    let n = |i: &usize| ["a", "b", "c", "d"].get(*i).copied().unwrap_or("x");
    match a {
        Action::Start(i, op) => format!(
            "{}: {}",
            n(i),
            match op {
                Op::Take => "take",
                Op::Renew => "renew",
                Op::Release => "release",
                Op::Read => "read",
            }
        ),
        Action::Continue(i) => format!("{}: next command", n(i)),
        Action::Crash(i) => format!("{}: crashes for good", n(i)),
        Action::Tick(t) => match t {
            Tick::NearestExpiry(d) => format!("time → nearest expiry {d:+} ms"),
            Tick::HalfLease => "time + lease/2".into(),
            Tick::Lease => "time + lease".into(),
            Tick::LongPause => "time + 100 leases (long pause)".into(),
        },
    }
}

/// The steps of a path as the report shows them.
fn render(start: &State, path: &[(Action, State)]) -> Value {
    let mut steps = vec![json!({"step": 0, "server_ms": start.now, "what": "start"})];
    for (k, (a, s)) in path.iter().enumerate() {
        steps.push(json!({
            "step": k + 1,
            "what": describe(a),
            "server_ms": s.now,
            "commands": s.note.commands,
            "answer": s.note.answer,
        }));
    }
    Value::Array(steps)
}

/// What happened, in words: the violation's message, or the harness's
/// trouble for `harness-ok`.
fn violation_of(state: &State, property: &str) -> String {
    let found = if property == "harness-ok" {
        state.harness_error.clone()
    } else {
        state
            .violations
            .iter()
            .find(|(p, _)| p == property)
            .map(|(_, m)| m.clone())
    };
    found.unwrap_or_else(|| format!("{property} was not broken (no message recorded)"))
}

/// A discovery made into a finding. A violation is shrunk, and the shrunk
/// schedule must break the property again when re-run from the start on a
/// world of its own; if the discovered schedule does not, the finding says
/// so (`replays: false`) and is not a verdict on the store. The harness's
/// trouble is reported as found.
fn finding(
    model: &LeaseModel,
    property: &str,
    actions: &[Action],
    found: &State,
    found_in: String,
) -> Finding {
    let schedule = |actions: Vec<Action>| Schedule {
        skews: model.skews.clone(),
        actions,
    };
    let shrunk = if property == "harness-ok" {
        None
    } else {
        shrink(model, actions, property)
    };
    match shrunk {
        Some((shrunk, last)) => {
            let (_, steps) = replay_path(model, &shrunk);
            let found_in = if shrunk.len() < actions.len() {
                format!("{found_in}, shrunk from {} steps", actions.len())
            } else {
                found_in
            };
            Finding {
                property: property.to_string(),
                message: violation_of(&last, property),
                found_in,
                schedule: schedule(shrunk),
                steps,
                replays: true,
            }
        }
        None => {
            let (_, steps) = replay_path(model, actions);
            Finding {
                property: property.to_string(),
                message: violation_of(found, property),
                found_in,
                schedule: schedule(actions.to_vec()),
                steps,
                replays: property == "harness-ok",
            }
        }
    }
}

/// Explores `factory`'s lease store; `progress` gets a line per finished part.
pub fn explore(
    factory: Arc<dyn StoreFactory>,
    opt_out: Option<String>,
    prefix: String,
    config: &ExplorerConfig,
    progress: &mut dyn FnMut(&str),
) -> ExplorerOutcome {
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let shared = Shared::new(factory, prefix, opt_out);
    let mut findings: Vec<Finding> = Vec::new();
    let mut per_skew = Vec::new();
    // (which race, skew) pairs the search never reached.
    let mut unreached: Vec<(&str, i64)> = Vec::new();
    let started = Instant::now();

    // One world per checker thread, kept for every skew.
    let mut pool = match Pool::new(&shared, config.threads, MAX_INSTANCES) {
        Ok(pool) => Some(pool),
        Err(e) => {
            findings.push(Finding {
                property: "harness-ok".into(),
                message: format!("the exploration's servers could not start: {e}"),
                found_in: "the exhaustive search's set-up".into(),
                schedule: Schedule {
                    skews: vec![],
                    actions: vec![],
                },
                steps: Value::Array(vec![]),
                replays: false,
            });
            None
        }
    };
    for &skew in &config.skews {
        let Some(pool) = pool.as_mut() else {
            // Nothing was explored: nothing was reached.
            unreached.push(("renew", skew));
            unreached.push(("release", skew));
            continue;
        };
        let t0 = Instant::now();
        let trips0 = shared.round_trips.load(Ordering::Relaxed);
        let trans0 = shared.transitions.load(Ordering::Relaxed);
        let model = LeaseModel {
            run,
            shared: shared.clone(),
            skews: vec![0, skew],
            start_ms: VIRTUAL_EPOCH_MS,
            max_steps: config.depth,
            absolute_times: config.absolute_times,
        };
        let searched = search(&model, pool);
        let found_in = format!("exhaustive search, second clock {skew:+} ms");
        for property in ALWAYS.iter().copied().chain(["harness-ok"]) {
            let Some(d) = searched.discoveries.get(property) else {
                continue;
            };
            if findings.iter().any(|f| f.property == property) {
                continue;
            }
            findings.push(finding(
                &model,
                property,
                &d.actions,
                &d.state,
                found_in.clone(),
            ));
        }
        let renew = searched
            .discoveries
            .contains_key("zombie-renew-after-takeover");
        let release = searched
            .discoveries
            .contains_key("zombie-release-after-takeover");
        if !renew {
            unreached.push(("renew", skew));
        }
        if !release {
            unreached.push(("release", skew));
        }
        let secs = t0.elapsed().as_secs_f64();
        let transitions = shared.transitions.load(Ordering::Relaxed) - trans0;
        let trips = shared.round_trips.load(Ordering::Relaxed) - trips0;
        let figures = json!({
            "skew_ms": skew,
            "depth": config.depth,
            "states": searched.states,
            "unique_states": searched.unique_states,
            "max_depth": searched.max_depth,
            "transitions": transitions,
            "seconds": (secs * 1000.0).round() / 1000.0,
            "transitions_per_second": (transitions as f64 / secs.max(1e-9)).round(),
            "round_trips_per_transition": if transitions > 0 { ((trips as f64 / transitions as f64) * 100.0).round() / 100.0 } else { 0.0 },
            "zombie_renew_reached": renew,
            "zombie_release_reached": release,
        });
        progress(&format!(
            "explorer: second clock {skew:+} ms: {} states ({} unique), depth {}, {:.1}s",
            figures["states"], figures["unique_states"], figures["max_depth"], secs
        ));
        per_skew.push(figures);
    }
    // Stop the pool's servers before the walks start theirs.
    drop(pool);

    // Seeded walks of three instances, skews drawn from the same set.
    let t0 = Instant::now();
    let mut walk_steps = 0usize;
    // A digest of every walk's schedule: the same seed must give the same one.
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    for n in 0..config.walks {
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
            start_ms: VIRTUAL_EPOCH_MS,
            max_steps: usize::MAX,
            absolute_times: false,
        };
        let w = walk(&model, config.walk_steps, &mut rng);
        walk_steps += w.actions.len();
        std::hash::Hash::hash(&(&w.skews, &w.actions), &mut digest);
        let broken: Vec<String> = w
            .last
            .violations
            .iter()
            .map(|(p, _)| p.clone())
            .chain(
                w.last
                    .harness_error
                    .as_ref()
                    .map(|_| "harness-ok".to_string()),
            )
            .collect();
        for property in broken {
            if findings.iter().any(|f| f.property == property) {
                continue;
            }
            let found_in = format!("walk {n} of seed {}", config.seed);
            findings.push(finding(&model, &property, &w.actions, &w.last, found_in));
        }
    }
    let walk_secs = t0.elapsed().as_secs_f64();
    progress(&format!(
        "explorer: {} seeded walks of three instances ({walk_steps} steps), seed {}, {:.1}s",
        config.walks, config.seed, walk_secs
    ));
    drop_world(run);

    let total_secs = started.elapsed().as_secs_f64();
    let stats = json!({
        "per_skew": per_skew,
        "walks": config.walks,
        "walk_steps": walk_steps,
        "walk_seconds": (walk_secs * 1000.0).round() / 1000.0,
        "walk_digest": format!("{:016x}", std::hash::Hasher::finish(&digest)),
        "seed": config.seed,
        "depth": config.depth,
        "seconds": (total_secs * 1000.0).round() / 1000.0,
        "transitions": shared.transitions.load(Ordering::Relaxed),
        "round_trips": shared.round_trips.load(Ordering::Relaxed),
    });
    ExplorerOutcome {
        checks: checks(&findings, &unreached, &stats, config),
        stats,
    }
}

/// Plays a schedule and renders its steps.
fn replay_path(model: &LeaseModel, actions: &[Action]) -> (State, Value) {
    let start = State::initial(model.start_ms, &model.skews);
    let mut state = start.clone();
    let mut pairs = Vec::new();
    for a in actions {
        state = model.step(&state, *a);
        pairs.push((*a, state.clone()));
    }
    let rendered = render(&start, &pairs);
    (state, rendered)
}

/// Re-runs a saved schedule on a fresh world; the final state says which
/// properties it broke.
pub fn replay_schedule(
    factory: Arc<dyn StoreFactory>,
    opt_out: Option<String>,
    prefix: String,
    schedule: &Schedule,
) -> (State, Value) {
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let shared = Shared::new(factory, prefix, opt_out);
    let model = LeaseModel {
        run,
        shared,
        skews: schedule.skews.clone(),
        start_ms: VIRTUAL_EPOCH_MS,
        max_steps: usize::MAX,
        absolute_times: false,
    };
    let (_, last) = play(&model, &schedule.actions);
    let (_, rendered) = replay_path(&model, &schedule.actions);
    drop_world(run);
    (last, rendered)
}

fn checks(
    findings: &[Finding],
    unreached: &[(&str, i64)],
    stats: &Value,
    config: &ExplorerConfig,
) -> Vec<CheckResult> {
    let about = [
        (
            "one-live-holder",
            "at no server instant do two grants both hold an unexpired, unreleased lease",
        ),
        (
            "epoch-monotonic",
            "every grant's epoch is greater than every earlier grant's",
        ),
        (
            "zombie-refused",
            "a renew or release naming a superseded epoch never succeeds",
        ),
        (
            "no-tree-stuck",
            "once every lease has run out (say its holder crashed), the tree can be taken again",
        ),
        (
            "answered",
            "every operation gets an answer from the store, not an error",
        ),
    ];
    let evidence = json!({"figures": stats});
    let mut out = Vec::new();
    let scope = format!(
        "every schedule of two instances {} steps deep for {} clock skews, and {} seeded walks of three (seed {})",
        config.depth,
        config.skews.len(),
        config.walks,
        config.seed
    );
    // The harness's own trouble: the schedules past it were not explored,
    // so what did not break is not known to hold.
    let harness = findings.iter().find(|f| f.property == "harness-ok");
    let undecided = |what: &str| {
        format!(
            "not decided: the exploration could not go on ({}; {}); no schedule explored before that broke it ({what})",
            harness.map_or("", |h| h.message.as_str()),
            harness.map_or("", |h| h.found_in.as_str())
        )
    };
    for (property, what) in about {
        let found = findings.iter().find(|f| f.property == property);
        out.push(CheckResult {
            outside_claim: false,
            id: format!("explorer.{property}"),
            suite: "explorer".into(),
            level: Level::Must,
            verdict: match found {
                Some(f) if f.replays => Verdict::Fail,
                Some(_) => Verdict::Unknown,
                None if harness.is_some() => Verdict::Unknown,
                None => Verdict::Pass,
            },
            reason: match found {
                Some(f) if f.replays => format!(
                    "{} (found in {}; {} steps)",
                    f.message,
                    f.found_in,
                    f.schedule.actions.len()
                ),
                Some(f) => format!(
                    "not decided: {} (found in {}; {} steps), but re-running that schedule from the start did not break it again",
                    f.message,
                    f.found_in,
                    f.schedule.actions.len()
                ),
                None if harness.is_some() => undecided(what),
                None => format!("{what}: held in {scope}"),
            },
            evidence: evidence.clone(),
            counterexample: found.map(|f| {
                json!({
                    "kind": "explorer-schedule",
                    "property": f.property,
                    "schedule": f.schedule,
                    "steps": f.steps,
                })
            }),
            seconds: 0.0,
        });
    }
    for (id, kind, race) in [
        (
            "explorer.zombie-renew-race-reached",
            "renew",
            "a zombie renew after another instance took over",
        ),
        (
            "explorer.zombie-release-race-reached",
            "release",
            "a zombie release after another instance took over",
        ),
    ] {
        // A search that stopped at a violation cannot be asked to reach more.
        let stopped: Vec<&str> = findings
            .iter()
            .filter(|f| f.property != "harness-ok")
            .map(|f| f.property.as_str())
            .collect();
        let missing: Vec<String> = unreached
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, skew)| format!("second clock {skew:+} ms"))
            .collect();
        out.push(CheckResult {
            outside_claim: false,
            id: id.into(),
            suite: "explorer".into(),
            level: Level::Must,
            verdict: match (missing.is_empty(), stopped.is_empty()) {
                (true, _) => Verdict::Pass,
                (false, _) if harness.is_some() => Verdict::Unknown,
                (false, true) => Verdict::Fail,
                (false, false) => Verdict::Skipped,
            },
            reason: if !missing.is_empty() && harness.is_some() {
                format!(
                    "not decided: the exploration could not go on before it reached {race} under {}",
                    missing.join(", ")
                )
            } else if !missing.is_empty() && !stopped.is_empty() {
                format!(
                    "not judged: the search stopped at the violations of {} before it reached {race}",
                    stopped.join(", ")
                )
            } else if missing.is_empty() {
                format!("{race} was reached under every clock skew")
            } else {
                format!(
                    "the exploration never reached {race} under {}; a deeper search (--depth) is needed",
                    missing.join(", ")
                )
            },
            evidence: evidence.clone(),
            counterexample: None,
            seconds: 0.0,
        });
    }
    out.push(CheckResult {
        outside_claim: false,
        id: "explorer.exploration-complete".into(),
        suite: "explorer".into(),
        level: Level::Must,
        // The harness's trouble is never the store's failure.
        verdict: if harness.is_some() { Verdict::Unknown } else { Verdict::Pass },
        reason: match harness {
            Some(f) => format!("not decided: the exploration could not go on: {} ({})", f.message, f.found_in),
            None => "every transition ran against the real server and re-ran identically".into(),
        },
        evidence,
        counterexample: harness.map(|f| {
            json!({"kind": "explorer-schedule", "property": "harness-ok", "schedule": f.schedule, "steps": f.steps})
        }),
        seconds: 0.0,
    });
    out
}
