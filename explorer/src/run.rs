//! One exploration: exhaustive BFS of two instances for every skew, then
//! seeded walks of three; their findings as checks, counterexamples and
//! figures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use harness::contract::Contract;
use harness::counterexample::Answer;
use harness::evidence::{Evidence, ExplorerEvidence};
use harness::figures::ExplorerFigures;
use harness::gate::drive::instance_name;
use harness::server::{ServerKind, VIRTUAL_EPOCH_MS};
use harness::store::StoreFactory;
use harness::History;
use harness::{CheckResult, Verdict};

use crate::model::{drop_world, LeaseModel};
use crate::property::Property;
use crate::search::{search, Pool, Searched, ShiftCheck};
use crate::state::{Action, Op, State, Tick};
use crate::walk::{play, rng_for, shrink, walk};
use crate::world::{request, Shared, Speed};

/// The largest number of instances any exploration uses: every world has a
/// gate for each.
pub const MAX_INSTANCES: usize = 3;

/// The server time every search and walk starts at: 379 ms past a whole
/// second (so off every whole second and minute). Under the relative
/// reading of times every state before the first operation is taken as
/// the initial one, so a first operation always runs at this instant; at a
/// whole second a store that reads time in whole seconds (the milliseconds
/// dropped) would answer as if it did not, and escape.
pub const START_MS: i64 = VIRTUAL_EPOCH_MS + 379;

/// How big an exploration is.
#[derive(Debug, Clone)]
pub struct ExplorerConfig {
    /// BFS depth: every schedule of two instances this many steps deep
    /// (the lease's searches).
    pub depth: usize,
    /// The queue's searches' depth: its state space grows faster (two
    /// children, claims and completions), so it has a depth of its own.
    pub queue_depth: usize,
    /// The rate limits' searches' depth (slots, hits and pauses on skewed
    /// clocks), likewise their own.
    pub rate_depth: usize,
    /// The depth of the exhaustive searches of three instances (clocks 0,
    /// 0 and each skew), on every contract explored (0: none).
    pub three_depth: usize,
    /// Take a state met again as a renaming of instances of one clock
    /// (their holder names swapped in every key and belief) as the state
    /// kept: fewer states, the same verdicts for a store that treats holder
    /// names alike, which nothing proves of a store brought to it (only a
    /// seeded sample of the merges is checked, one step ahead). Off by
    /// default: it halves only the searches whose two clocks agree.
    pub symmetry: bool,
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
    /// Stop at the first violation (`certify --fail-fast`): the search of
    /// that skew ends with the level that broke it, and the other skews and
    /// the walks not yet run are not explored (the checks say which, and
    /// none that is not failed passes).
    pub fail_fast: bool,
    /// Restore the server only when a command must reach it and it does
    /// not hold the state already (the same states; fewer round trips).
    pub skip_restore: bool,
    /// The transition cache shared by every skew, keyed by server state,
    /// time and command bytes (the same states; off only to measure it, or
    /// to prove it changes nothing).
    pub cache: bool,
    /// Keep an adapter declared `stateless` that does not offer
    /// `reconnect` after an operation abandoned between two commands (its
    /// held command refused, its connection in step), instead of starting
    /// a new process (the same states and verdicts; off only to measure it).
    pub keep_after_abandon: bool,
    /// Keep an adapter process that may remember between operations on
    /// trial (as if it kept nothing), with `memory_checks_per_level` of each
    /// search level's steps computed again to check it; off: each of its
    /// operations starts on a fresh process (the same verdicts).
    pub trial: bool,
    /// How many of each search level's steps (a sample drawn with `seed`)
    /// are computed again on processes kept with another history, when a
    /// process is kept on trial; of each contract's first sample at depth 2
    /// or more, one step also on fresh processes. Any difference and the search is
    /// run again with a fresh process per operation.
    pub memory_checks_per_level: usize,
    /// Also lose one write's reply a schedule, anywhere ([`Action::Lose`]):
    /// the operation runs on after its connection closed, and its answer
    /// (a retry's included) is judged; `unavailable` ends it unanswered.
    pub lost_replies: bool,
    /// One transition cache entry in this many (a sample seeded with
    /// `seed`) is sent to the real server again when next used, which must
    /// give the same reply and keys after (0: none).
    pub cache_check_one_in: u64,
    /// How many of each search level's merges of states that differ in
    /// absolute time (a sample drawn with `seed`) have the successors of
    /// both computed and compared: any difference and the search is run
    /// again on absolute times (0: none checked).
    pub shift_checks_per_level: usize,
    /// The contracts explored, each with searches and walks of its own
    /// (those of [`crate::EXPLORED`]; the suite passes the ones the store
    /// claims).
    pub contracts: Vec<Contract>,
    /// The kind of server the searches' worlds start: the run's
    /// (`certify --server`, given by the suite from its subject); `None`
    /// for the default binary.
    pub server: Option<ServerKind>,
}

impl Default for ExplorerConfig {
    fn default() -> Self {
        ExplorerConfig {
            depth: 8,
            queue_depth: 6,
            rate_depth: 5,
            three_depth: 0,
            symmetry: false,
            walks: 200,
            walk_steps: 20,
            seed: 0,
            threads: 1,
            skews: crate::skews(),
            absolute_times: false,
            fail_fast: false,
            skip_restore: true,
            cache: true,
            keep_after_abandon: true,
            trial: true,
            memory_checks_per_level: 8,
            lost_replies: false,
            cache_check_one_in: 16,
            shift_checks_per_level: 8,
            contracts: vec![Contract::Lease],
            server: None,
        }
    }
}

impl ExplorerConfig {
    /// The depth of `contract`'s searches.
    pub fn depth_of(&self, contract: Contract) -> usize {
        match contract {
            Contract::Queue => self.queue_depth,
            Contract::Rate => self.rate_depth,
            _ => self.depth,
        }
    }

    /// The flag that sets the depth of `contract`'s searches.
    pub fn depth_flag(contract: Contract) -> &'static str {
        match contract {
            Contract::Queue => "--queue-depth",
            Contract::Rate => "--rate-depth",
            _ => "--depth",
        }
    }

    /// How its worlds compute transitions.
    fn speed(&self) -> Speed {
        Speed {
            skip_restore: self.skip_restore,
            cache: self.cache,
            keep_after_abandon: self.keep_after_abandon,
            trial: self.trial,
        }
    }
}

/// The part of an exploration one shard of a run explores (`--shard`):
/// the default is the whole. Walk `n` keeps its seed and draws its clocks
/// from every skew of the config, so the parts of all shards together are
/// exactly the whole exploration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExplorerPart {
    /// The skews searched, as indices into [`ExplorerConfig::skews`]
    /// (`None`: every skew).
    pub search: Option<Vec<usize>>,
    /// The walks run, by number (`None`: `0..walks`).
    pub walks: Option<std::ops::Range<usize>>,
}

impl ExplorerPart {
    /// Whether the skew at `index` is searched.
    fn searches(&self, index: usize) -> bool {
        self.search.as_ref().is_none_or(|s| s.contains(&index))
    }

    /// The walks run under `config`.
    fn walk_numbers(&self, config: &ExplorerConfig) -> std::ops::Range<usize> {
        match &self.walks {
            Some(r) => r.start.min(config.walks)..r.end.min(config.walks),
            None => 0..config.walks,
        }
    }

    /// The part in words, for the checks' reasons: `None` for the whole.
    fn describe(&self, config: &ExplorerConfig) -> Option<String> {
        if *self == ExplorerPart::default() {
            return None;
        }
        let skews: Vec<String> = config
            .skews
            .iter()
            .enumerate()
            .filter(|(i, _)| self.searches(*i))
            .map(|(_, s)| format!("{s:+}"))
            .collect();
        let walks = self.walk_numbers(config);
        Some(format!(
            "this shard's part: the search under second clock {} ms of {} skews, walks {}..{} of {} (seed {})",
            if skews.is_empty() { "none".to_string() } else { skews.join(", ") },
            config.skews.len(),
            walks.start,
            walks.end,
            config.walks,
            config.seed
        ))
    }
}

/// What an exploration found.
pub struct ExplorerOutcome {
    /// One result per explorer check ([`Property::ALL`] order): the
    /// properties and the races reached.
    pub checks: Vec<CheckResult>,
    /// The explorer's figures for the report's `stats`: schedules, states,
    /// depth, seconds, walks and seed.
    pub figures: ExplorerFigures,
    /// How the work was saved (for `storeproof bench`).
    pub savings: Savings,
    /// What `fail_fast` left unexplored, in words (`None`: everything
    /// asked for was explored).
    pub not_explored: Option<String>,
}

/// The work the speed settings saved in one exploration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Savings {
    /// Commands answered from the transition cache, with no round trip.
    pub cache_answers: u64,
    /// Steps computed from what the store did before given the same
    /// request, clock and replies: no call to the store, no round trip.
    pub behaviour_answers: u64,
    /// Commands found in the cache once sent (no read back after them).
    pub cache_hits: u64,
    /// Restores skipped: the server already held the state.
    pub restores_skipped: u64,
    /// Transitions the cache holds at the end.
    pub cache_entries: usize,
    /// Instances made fresh (reconnected, or new) before an operation,
    /// because their client may remember earlier operations.
    pub refreshes: u64,
    /// Operations abandoned between two commands whose adapter process
    /// was not kept (a new one connected for the instance's next step).
    pub abandoned_processes: u64,
    /// Adapter processes started to run an operation again where it first
    /// sends a command, to learn what it draws per process (a fresh one
    /// draws anew; see `Drawn`).
    pub probe_processes: u64,
}

pub use harness::counterexample::{
    ExplorerCounterexample as Counterexample, ExplorerStep, ExplorerTag,
};
pub use harness::explore::Schedule;

/// A violation found, with where.
struct Finding {
    property: Property,
    message: String,
    found_in: String,
    schedule: Schedule,
    steps: Vec<ExplorerStep>,
    history: History,
    /// Re-running the schedule broke the property again.
    replays: bool,
}

static RUNS: AtomicU64 = AtomicU64::new(1);

fn describe(a: &Action) -> String {
    let n = |i: &usize| instance_name(*i);
    match a {
        Action::Start(i, op) => format!(
            "{}: {}",
            n(i),
            match op {
                Op::Take => "take".to_string(),
                Op::Renew => "renew".to_string(),
                Op::Release => "release".to_string(),
                Op::Read => "read".to_string(),
                Op::Save(k) => format!("save {}", crate::queue::child_name(*k)),
                Op::Claim => "claim".to_string(),
                Op::Complete => "complete".to_string(),
                Op::QueueRead => format!("read {}", crate::queue::child_name(0)),
                Op::Acquire => format!("acquire a slot of {}", crate::rate::PROVIDER),
                Op::ReleaseSlot => "release its slot".to_string(),
                Op::Hit => format!("hit {}", crate::rate::PROVIDER),
                Op::Pause => format!("pause {} (clock + lease/2)", crate::rate::PROVIDER),
                Op::RateRead => format!("read {}", crate::rate::PROVIDER),
            }
        ),
        Action::Continue(i) => format!("{}: next command", n(i)),
        Action::Lose(i, op) => format!(
            "{}: {}, its reply lost (connection closed)",
            n(i),
            describe(&Action::Start(*i, *op))
                .split_once(": ")
                .map_or(String::new(), |(_, what)| what.to_string())
        ),
        Action::Crash(i) => format!("{}: crashes for good", n(i)),
        Action::Fill => "the server fills up (maxmemory): writes refused".into(),
        Action::Free => "room is given back: writes accepted again".into(),
        Action::Tick(t) => match t {
            Tick::NearestExpiry(d) => format!("time → nearest expiry {d:+} ms"),
            Tick::HalfLease => "time + lease/2".into(),
            Tick::Lease => "time + lease".into(),
            Tick::LongPause => "time + 100 leases (long pause)".into(),
        },
    }
}

/// The steps of a path as the report shows them.
fn render(start: &State, path: &[(Action, State)]) -> Vec<ExplorerStep> {
    let mut steps = vec![ExplorerStep {
        step: 0,
        what: "start".into(),
        server_ms: start.now,
        commands: None,
        answer: None,
    }];
    for (k, (a, s)) in path.iter().enumerate() {
        steps.push(ExplorerStep {
            step: k + 1,
            what: describe(a),
            server_ms: s.now,
            commands: Some(s.note.commands.clone()),
            answer: Some(s.note.answer.as_ref().map_or(Answer::Nothing, Answer::of)),
        });
    }
    steps
}

/// The operations of a path as a history. The invocation's call is the
/// request the world sent (it follows from the state the operation started
/// in); the completion is the answer the step that finished it recorded.
fn history_of(start: &State, path: &[(Action, State)]) -> History {
    let mut history = History::default();
    let mut before = start;
    for (action, after) in path {
        // The instance whose operation this step started or continued, with
        // the call and the clock it was invoked with.
        let ran = match *action {
            Action::Start(i, op) => {
                let call = request(before, i, op).to_call();
                let clock_ms = before.now + before.insts[i].skew_ms;
                history.invoke(instance_name(i), &call, Some(before.now), clock_ms);
                Some((i, call.op, clock_ms))
            }
            Action::Continue(i) => before.insts[i]
                .pending
                .as_ref()
                .map(|p| (i, request(before, i, p.op).op().to_string(), p.clock_ms)),
            Action::Lose(i, op) => match before.insts[i].pending.as_ref() {
                Some(p) => Some((i, request(before, i, p.op).op().to_string(), p.clock_ms)),
                None => {
                    let call = request(before, i, op).to_call();
                    let clock_ms = before.now + before.insts[i].skew_ms;
                    history.invoke(instance_name(i), &call, Some(before.now), clock_ms);
                    Some((i, call.op, clock_ms))
                }
            },
            Action::Tick(_) | Action::Crash(_) | Action::Fill | Action::Free => None,
        };
        if let (Some((i, op, clock_ms)), Some(outcome)) = (ran, after.note.answer.as_ref()) {
            history.complete(instance_name(i), &op, outcome, Some(after.now), clock_ms);
        }
        before = after;
    }
    history
}

/// What happened, in words: the violation's message, or the harness's
/// trouble for [`Property::HarnessOk`].
fn violation_of(state: &State, property: Property) -> String {
    let found = match property {
        Property::HarnessOk => state.harness_error.as_deref(),
        p => state.violation(p),
    };
    found.map_or_else(
        || format!("{property} was not broken (no message recorded)"),
        str::to_string,
    )
}

/// A discovery made into a finding. A violation is shrunk, and the shrunk
/// schedule must break the property again when re-run from the start on a
/// world of its own; if the discovered schedule does not, the finding says
/// so (`replays: false`) and is not a verdict on the store. The harness's
/// trouble is reported as found.
fn finding(
    model: &LeaseModel,
    property: Property,
    actions: &[Action],
    found: &State,
    found_in: String,
) -> Finding {
    let schedule = |actions: Vec<Action>| Schedule {
        skews: model.skews.clone(),
        actions,
    };
    let shrunk = if property == Property::HarnessOk {
        None
    } else {
        shrink(model, actions, property)
    };
    // The schedule shown is re-run with a fresh process per operation:
    // what an adapter process kept on trial remembered is never blamed.
    let fresh = model.with_fresh_processes();
    let shrunk = shrunk.and_then(|(shrunk, last)| {
        let on_fresh = replay_path(&fresh, &shrunk);
        (model.fresh_processes || !model.shared.speed.trial || on_fresh.0.broke(property))
            .then_some((shrunk, last, on_fresh))
    });
    match shrunk {
        Some((shrunk, last, (_, steps, history))) => {
            let found_in = if shrunk.len() < actions.len() {
                format!("{found_in}, shrunk from {} steps", actions.len())
            } else {
                found_in
            };
            Finding {
                property,
                message: violation_of(&last, property),
                found_in,
                schedule: schedule(shrunk),
                steps,
                history,
                replays: true,
            }
        }
        None => {
            let (_, steps, history) = replay_path(&fresh, actions);
            Finding {
                property,
                message: violation_of(found, property),
                found_in,
                schedule: schedule(actions.to_vec()),
                steps,
                history,
                replays: property == Property::HarnessOk,
            }
        }
    }
}

/// Why a search that kept adapter processes on trial is not to be trusted:
/// a violation it discovered (and no earlier search did: only the first is
/// `reported`) does not break its property again when its
/// schedule is re-run from the start with a fresh process per operation
/// (what a kept process remembered made it). `None` when every one does,
/// or no process was kept on trial. Such a process is then no longer kept
/// ([`Shared::distrust`]).
fn unconfirmed(
    model: &LeaseModel,
    searched: &crate::search::Searched,
    reported: &[Finding],
) -> Option<String> {
    let shared = &model.shared;
    if !shared.speed.trial
        || !shared.trusts_memory()
        || shared.kept_on_trial.load(Ordering::Relaxed) == 0
    {
        return None;
    }
    let fresh = model.with_fresh_processes();
    for property in Property::always(model.contract) {
        let Some(d) = searched.discoveries.get(property) else {
            continue;
        };
        if reported.iter().any(|f| f.property == *property) {
            // Only a property's first discovery is reported: this one
            // would not be shown, and blames nothing.
            continue;
        }
        let (end, _, _) = replay_path(&fresh, &d.actions);
        if !end.broke(*property) && end.harness_error.is_none() {
            let why = format!(
                "the schedule that broke {property} on processes kept on trial ({} steps) did not break it with a fresh process per operation",
                d.actions.len()
            );
            shared.distrust(why.clone());
            return Some(why);
        }
    }
    None
}

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
    let broke = |findings: &[Finding]| findings.iter().any(|f| f.property != Property::HarnessOk);
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
        let mut searched = search(&model, pool, config.fail_fast, shift);
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
            searched = search(&model, pool, config.fail_fast, shift);
            shift_checked += searched.shift_checked;
            memory_checked += searched.memory_checked;
        }
        // Races the interleaved search left unreached: sought again among
        // schedules of whole operations, as deep in operations.
        let whole = whole_operations(&model, pool, config.fail_fast, shift, races, &searched);
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
                "the search under second clock {skew:+} ms{three} past depth {level} (of {})",
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
        if !w.last.violations.is_empty() && w.actions.len() < config.walk_steps {
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
        progress(&format!(
            "explorer: --fail-fast stopped at the first violation; not explored: {cut}"
        ));
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
                unsupported: &unsupported,
                filled: step.is_none(),
            },
        ),
        figures,
        savings,
        not_explored,
    }
}

/// Seconds to the millisecond, as the figures show them.
/// The search of whole operations ([`LeaseModel::whole_operations`]) for
/// `races` that `searched`, the interleaved search of `model`, left
/// unreached: `None` when it reached them all, stopped early (fail fast,
/// the harness's trouble) or ran whole operations already. A store of one
/// command an operation reaches in the interleaved search whatever this
/// one would, so only a store of several pays for it.
fn whole_operations(
    model: &LeaseModel,
    pool: &mut Pool,
    fail_fast: bool,
    shift: ShiftCheck,
    races: &[Property],
    searched: &Searched,
) -> Option<Searched> {
    let unreached = races.iter().any(|r| !searched.discoveries.contains_key(r));
    let stopped = searched.stopped_at.is_some()
        || searched.discoveries.contains_key(&Property::HarnessOk)
        || (fail_fast
            && Property::always(model.contract)
                .iter()
                .any(|p| searched.discoveries.contains_key(p)));
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

pub(crate) fn millis(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

/// Plays a schedule and renders its steps and its history.
fn replay_path(model: &LeaseModel, actions: &[Action]) -> (State, Vec<ExplorerStep>, History) {
    let mut start = State::initial(model.start_ms, &model.skews);
    start.drawn = Some(model.shared.drawn.values());
    let mut state = start.clone();
    let mut pairs = Vec::new();
    for a in actions {
        state = model.step(&state, *a);
        pairs.push((*a, state.clone()));
    }
    let rendered = render(&start, &pairs);
    let history = history_of(&start, &pairs);
    (state, rendered, history)
}

/// Re-runs a saved schedule on a fresh world; the final state says which
/// properties it broke.
pub fn replay_schedule(
    factory: Arc<dyn StoreFactory>,
    opt_out: Option<String>,
    prefix: String,
    schedule: &Schedule,
) -> (State, Vec<ExplorerStep>) {
    replay_schedule_on(None, factory, opt_out, prefix, schedule)
}

/// [`replay_schedule`] on a server of `server`'s kind (the run's; the
/// default binary when `None`).
pub fn replay_schedule_on(
    server: Option<ServerKind>,
    factory: Arc<dyn StoreFactory>,
    opt_out: Option<String>,
    prefix: String,
    schedule: &Schedule,
) -> (State, Vec<ExplorerStep>) {
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let shared = Shared::checking_on(factory, prefix, opt_out, Speed::FAST, 0, 0, server);
    let model = LeaseModel {
        run,
        shared,
        skews: schedule.skews.clone(),
        start_ms: START_MS,
        max_steps: usize::MAX,
        absolute_times: false,
        // A replay plays the saved actions: which contract's operations an
        // idle instance may start does not matter.
        contract: schedule
            .actions
            .iter()
            .find_map(|a| match a {
                Action::Start(_, op) | Action::Lose(_, op) => Some(op.contract()),
                _ => None,
            })
            .unwrap_or(Contract::Lease),
        symmetric: false,
        lost_replies: schedule
            .actions
            .iter()
            .any(|a| matches!(a, Action::Lose(..))),
        // A replay is the counterexample's proof: nothing a process
        // remembered from another schedule.
        fresh_processes: true,
        recompute: true,
        whole_operations: false,
    };
    let (_, last) = play(&model, &schedule.actions);
    let (_, rendered, _) = replay_path(&model, &schedule.actions);
    drop_world(run);
    (last, rendered)
}

/// The counterexample of `f`, as a check carries it.
fn counterexample(f: &Finding) -> Option<harness::counterexample::Counterexample> {
    Some(harness::counterexample::Counterexample::Explorer(Box::new(
        Counterexample {
            kind: ExplorerTag::ExplorerSchedule,
            property: f.property,
            schedule: f.schedule.clone(),
            steps: f.steps.clone(),
            history: f.history.clone(),
        },
    )))
}

/// What is known of how an exploration ran, beside its findings, that the
/// checks' verdicts and words depend on.
#[derive(Debug, Default)]
struct Context<'a> {
    /// What a step is, for a store with no Redis wire.
    step: Option<&'a str>,
    /// The shard's part, in words (`None`: the whole).
    part: Option<&'a str>,
    /// What fail-fast left out, in words.
    cut: Option<&'a str>,
    /// The operations the store answered `unsupported`, with its message.
    unsupported: &'a [(Op, String)],
    /// The searches filled the server between commands (a store whose
    /// state is on the Redis wire): the `answered` checks also say that a
    /// write refused on the full server changed nothing.
    filled: bool,
}

impl Context<'_> {
    /// The operations of `property` the store does not support, in words
    /// with its message, if any.
    fn unsupported_of(&self, property: Property) -> Option<String> {
        let said: Vec<String> = self
            .unsupported
            .iter()
            .filter(|(op, _)| property.ops().contains(op))
            .map(|(op, message)| format!("{} (\"{message}\")", op_name(*op)))
            .collect();
        (!said.is_empty()).then(|| said.join(", "))
    }
}

/// The refusals of a write on the full server that `contract`'s searches
/// judged, summed over its skews; `None` when none of them was searched
/// here (a shard of walks alone).
fn refusals_of(figures: &ExplorerFigures, contract: Contract) -> Option<usize> {
    let rows: Vec<_> = figures
        .per_skew
        .iter()
        .filter(|r| r.contract == contract.name())
        .collect();
    (!rows.is_empty()).then(|| rows.iter().map(|r| r.full_refusals).sum())
}

/// An operation's wire name.
fn op_name(op: Op) -> &'static str {
    op.wire()
}

/// One result per property of the contracts explored, in [`Property::ALL`]
/// order.
fn checks(
    findings: &[Finding],
    unreached: &[(Property, i64)],
    figures: &ExplorerFigures,
    config: &ExplorerConfig,
    context: &Context<'_>,
) -> Vec<CheckResult> {
    let Context {
        step, part, cut, ..
    } = *context;
    let evidence = Evidence::Explorer(Box::new(ExplorerEvidence {
        figures: figures.clone(),
        step: step.map(str::to_string),
    }));
    let scope_of =
        |contract: Option<Contract>| crate::scope::scope(figures, config, contract, step, part);
    // The harness's own trouble: the schedules past it were not explored,
    // so what did not break is not known to hold.
    let harness = findings.iter().find(|f| f.property == Property::HarnessOk);
    // A search that stopped at a violation cannot be asked to reach more.
    let stopped: Vec<&str> = findings
        .iter()
        .filter(|f| f.property != Property::HarnessOk)
        .map(|f| f.property.name())
        .collect();
    // With fail-fast cutting the exploration short, what would pass is
    // only not known to fail: not judged, with what was left out.
    let result = |property: Property, verdict: Verdict, reason: String| {
        // An operation the store does not offer skips the checks about it
        // (PROTOCOL); what it did break with the others still fails.
        let unsupported = context.unsupported_of(property);
        let (verdict, reason) = match (cut, unsupported) {
            (_, Some(ops)) if verdict != Verdict::Fail => (
                Verdict::Skipped,
                format!(
                    "skipped: the store does not support {ops}: it answered `unsupported`, and this check is about {}",
                    property.check().about
                ),
            ),
            (cut, _) => match cut {
            Some(cut) if verdict == Verdict::Pass => (
                Verdict::Skipped,
                format!(
                    "not judged: --fail-fast stopped the exploration at the first violation ({}); not explored: {cut}",
                    stopped.join(", ")
                ),
            ),
            _ => (verdict, reason),
            },
        };
        CheckResult {
            evidence: evidence.clone(),
            ..property.check().result("explorer", verdict, reason)
        }
    };
    Property::ALL
        .into_iter()
        // Only the contracts explored have checks here (the suite settles
        // the others).
        .filter(|p| p.contract().is_none_or(|c| config.contracts.contains(&c)))
        .map(|property| {
            let what = property.check().about;
            // Only a violation of the same contract's search stops it.
            let stopped: Vec<&str> = findings
                .iter()
                .filter(|f| f.property != Property::HarnessOk && f.property.contract() == property.contract())
                .map(|f| f.property.name())
                .collect();
            match property {
                Property::HarnessOk => CheckResult {
                    counterexample: harness.and_then(counterexample),
                    ..result(
                        property,
                        // The harness's trouble is never the store's failure.
                        if harness.is_some() { Verdict::Unknown } else { Verdict::Pass },
                        match harness {
                            Some(f) => format!(
                                "not decided: the exploration could not go on: {} ({})",
                                f.message, f.found_in
                            ),
                            None if !config.cache => format!(
                                "{what}: {} transitions, every one against the server (the transition cache was off)",
                                figures.transitions
                            ),
                            None => format!(
                                "{what}: {} transitions; {} commands and ticks answered from the transition cache, {} cached outcomes compared with the server's for the same input (a seeded sample, one entry in {}, and every entry met again when its input went to the server), none differed",
                                figures.transitions,
                                figures.cache.answered,
                                figures.cache.verified,
                                config.cache_check_one_in
                            ),
                        },
                    )
                },
                p if p.is_race() => {
                    let contract = property.contract().unwrap_or(Contract::Lease);
                    let missing: Vec<String> = unreached
                        .iter()
                        .filter(|(k, _)| *k == property)
                        .map(|(_, skew)| format!("second clock {skew:+} ms"))
                        .collect();
                    // A race never reached is never the store's failure. With
                    // nothing else broken, every takeover the search tried was
                    // granted (a store keeping a tree from a new holder breaks
                    // no-tree-stuck, one answering an error breaks answered), so
                    // the race lay only beyond the depth: its operations take
                    // more commands than the search had steps. That is the
                    // search's limit, so undecided.
                    let verdict = match (missing.is_empty(), stopped.is_empty()) {
                        (true, _) => Verdict::Pass,
                        (false, _) if harness.is_some() => Verdict::Unknown,
                        (false, true) => Verdict::Unknown,
                        (false, false) => Verdict::Skipped,
                    };
                    let reason = if !missing.is_empty() && harness.is_some() {
                        format!(
                            "not decided: the exploration could not go on before it reached {what} under {}",
                            missing.join(", ")
                        )
                    } else if !missing.is_empty() && !stopped.is_empty() {
                        format!(
                            "not judged: the search stopped at the violations of {} before it reached {what}",
                            stopped.join(", ")
                        )
                    } else if missing.is_empty() {
                        format!("{what} was reached under every clock skew")
                    } else {
                        format!(
                            "not decided: the search never reached {what} under {} within {} steps, though nothing it tried kept {}; the store's operations take more commands than that depth allows, so a deeper search ({}) is needed",
                            missing.join(", "),
                            config.depth_of(contract),
                            match contract {
                                Contract::Queue => "a saved child from being claimed",
                                Contract::Rate => "a free slot or window place from being granted",
                                _ => "a tree from a new holder",
                            },
                            ExplorerConfig::depth_flag(contract),
                        )
                    };
                    result(property, verdict, reason)
                }
                _ => {
                    let found = findings.iter().find(|f| f.property == property);
                    // An `answered` check also says a write refused on the
                    // full server changed nothing: decided only if the
                    // searches of its contract met such a refusal.
                    // (A search fail-fast cut short says so instead.)
                    let refusals = (context.filled && property.is_answered() && cut.is_none())
                        .then(|| refusals_of(figures, property.contract().unwrap_or(Contract::Lease)))
                        .flatten();
                    let verdict = match found {
                        Some(f) if f.replays => Verdict::Fail,
                        Some(_) => Verdict::Unknown,
                        None if harness.is_some() => Verdict::Unknown,
                        None if refusals == Some(0) => Verdict::Unknown,
                        None => Verdict::Pass,
                    };
                    let reason = match (found, harness) {
                        (Some(f), _) if f.replays => format!(
                            "{} (found in {}; {} steps)",
                            f.message,
                            f.found_in,
                            f.schedule.actions.len()
                        ),
                        (Some(f), _) => format!(
                            "not decided: {} (found in {}; {} steps), but re-running that schedule from the start did not break it again",
                            f.message,
                            f.found_in,
                            f.schedule.actions.len()
                        ),
                        (None, Some(h)) => format!(
                            "not decided: the exploration could not go on ({}; {}); no schedule explored before that broke it ({what})",
                            h.message, h.found_in
                        ),
                        (None, None) if refusals == Some(0) => format!(
                            "not decided: every operation was answered in {}, but no search met a write on the full server, so that a refused write changes nothing was never tried (a deeper search is needed)",
                            scope_of(property.contract())
                        ),
                        (None, None) => {
                            let judged = match refusals {
                                Some(n) => format!("; {n} refusals of a write on the full server judged"),
                                None => String::new(),
                            };
                            format!("{what}: held in {}{judged}", scope_of(property.contract()))
                        }
                    };
                    CheckResult {
                        counterexample: found.and_then(counterexample),
                        ..result(property, verdict, reason)
                    }
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use harness::contract::{Reply, StoreError};
    use harness::{EventKind, Happened};

    use super::*;
    use crate::state::{Note, Pending};
    use crate::LEASE_MS;

    const START: i64 = 1_000_000;

    /// `after` with the answer `out` recorded, as the step that finished an
    /// operation leaves it.
    fn answering(mut after: State, out: Result<Reply, StoreError>) -> State {
        after.note = Note {
            commands: vec![],
            answer: Some(out),
        };
        after
    }

    #[test]
    fn a_path_becomes_invocations_and_completions_and_a_crash_leaves_one_open() {
        let start = State::initial(START, &[0, 500]);
        let mut path: Vec<(Action, State)> = Vec::new();
        // a takes in one command and is granted epoch 1.
        let mut s = start.clone();
        s.insts[0].held = Some(1);
        let s = answering(
            s,
            Ok(Reply::Granted {
                epoch: 1,
                expires_at_ms: START + 1000,
            }),
        );
        path.push((Action::Start(0, Op::Take), s.clone()));
        // b's take delivers its first command of two.
        let mut s = State {
            note: Note::default(),
            ..s
        };
        s.insts[1].pending = Some(Pending {
            op: Op::Take,
            clock_ms: START + 500,
            acked_before: 1,
            contended: true,
            delivered: vec![],
            full_seen: false,
            quiet_since: None,
            quiet_print: 0,
            watch: Default::default(),
            upcoming: Default::default(),
            deferred: 0,
        });
        path.push((Action::Start(1, Op::Take), s.clone()));
        // Time moves; b's take then answers busy.
        let mut s = State {
            now: START + 500,
            ..s
        };
        path.push((Action::Tick(Tick::HalfLease), s.clone()));
        s.insts[1].pending = None;
        let s = answering(
            s,
            Ok(Reply::Busy {
                holder: "a".into(),
                epoch: 1,
                expires_at_ms: START + 1000,
            }),
        );
        path.push((Action::Continue(1), s.clone()));
        // a starts a renew of epoch 1 and crashes in the middle of it.
        let mut s = State {
            note: Note::default(),
            ..s
        };
        s.insts[0].pending = Some(Pending {
            op: Op::Renew,
            clock_ms: START + 500,
            acked_before: 1,
            contended: false,
            delivered: vec![],
            full_seen: false,
            quiet_since: None,
            quiet_print: 0,
            watch: Default::default(),
            upcoming: Default::default(),
            deferred: 0,
        });
        path.push((Action::Start(0, Op::Renew), s.clone()));
        s.insts[0].pending = None;
        s.insts[0].crashed = true;
        path.push((Action::Crash(0), s));

        let h = history_of(&start, &path);
        let seen: Vec<(&str, EventKind, &str, Option<i64>, i64)> = h
            .events
            .iter()
            .map(|e| {
                (
                    e.instance.as_str(),
                    e.kind(),
                    e.op(),
                    e.server_ms,
                    e.clock_ms,
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("a", EventKind::Invoke, "lease.take", Some(START), START),
                ("a", EventKind::Ok, "lease.take", Some(START), START),
                (
                    "b",
                    EventKind::Invoke,
                    "lease.take",
                    Some(START),
                    START + 500
                ),
                (
                    "b",
                    EventKind::Ok,
                    "lease.take",
                    Some(START + 500),
                    START + 500
                ),
                (
                    "a",
                    EventKind::Invoke,
                    "lease.renew",
                    Some(START + 500),
                    START + 500
                ),
            ]
        );
        // The renew names the epoch a believed it held.
        let Happened::Invoke(call) = &h.events[4].what else {
            panic!("{:?}", h.events[4]);
        };
        assert_eq!(call.args["epoch"], 1);
        assert!(matches!(
            h.events[3].what,
            Happened::Ok {
                reply: Reply::Busy { .. },
                ..
            }
        ));
    }

    fn found(property: Property, replays: bool) -> Finding {
        let mut history = History::default();
        history.invoke(
            "a",
            &request(&State::initial(START, &[0]), 0, Op::Read).to_call(),
            Some(START),
            START,
        );
        Finding {
            property,
            message: format!("{property} broke"),
            found_in: "a test".into(),
            schedule: Schedule {
                skews: vec![0],
                actions: vec![Action::Start(0, Op::Read)],
            },
            steps: Vec::new(),
            history,
            replays,
        }
    }

    fn verdicts(findings: &[Finding], unreached: &[(Property, i64)]) -> Vec<(Property, Verdict)> {
        let figures = ExplorerFigures::default();
        let results = checks(
            findings,
            unreached,
            &figures,
            &ExplorerConfig::default(),
            &Context::default(),
        );
        // The default explores the lease alone: its checks and the harness's.
        let explored: Vec<Property> = Property::ALL
            .into_iter()
            .filter(|p| p.contract().is_none_or(|c| c == Contract::Lease))
            .collect();
        assert_eq!(results.len(), explored.len());
        explored
            .into_iter()
            .zip(results)
            .map(|(p, r)| {
                assert_eq!(r.id, p.id());
                (p, r.verdict)
            })
            .collect()
    }

    #[test]
    fn nothing_found_and_every_race_reached_passes_every_check() {
        let all = verdicts(&[], &[]);
        assert!(all.iter().all(|(_, v)| *v == Verdict::Pass), "{all:?}");
    }

    #[test]
    fn a_violation_that_replays_fails_with_its_history_and_one_that_does_not_is_unknown() {
        let findings = [
            found(Property::OneLiveHolder, true),
            found(Property::EpochMonotonic, false),
        ];
        let figures = ExplorerFigures::default();
        let results = checks(
            &findings,
            &[],
            &figures,
            &ExplorerConfig::default(),
            &Context::default(),
        );
        let of = |p: Property| results.iter().find(|r| r.id == p.id()).unwrap();
        assert_eq!(of(Property::OneLiveHolder).verdict, Verdict::Fail);
        assert_eq!(of(Property::EpochMonotonic).verdict, Verdict::Unknown);
        assert_eq!(of(Property::ZombieRefused).verdict, Verdict::Pass);
        let cx = of(Property::OneLiveHolder)
            .counterexample
            .as_ref()
            .and_then(|c| c.explorer())
            .unwrap();
        assert_eq!(cx.kind, ExplorerTag::ExplorerSchedule);
        assert_eq!(cx.history.events.len(), 1);
        assert_eq!(cx.history.events[0].op(), "lease.read");
    }

    #[test]
    fn the_harness_trouble_is_unknown_never_a_failure() {
        let all = verdicts(
            &[found(Property::HarnessOk, false)],
            &[(Property::ZombieRenewRace, 0)],
        );
        for (p, v) in all {
            let expected = match p {
                Property::ZombieReleaseRace => Verdict::Pass,
                _ => Verdict::Unknown,
            };
            assert_eq!(v, expected, "{p}");
        }
    }

    #[test]
    fn a_race_never_reached_is_undecided_never_the_stores_failure() {
        // Nothing broke, yet the search did not reach the race: only its
        // depth kept it away, so the store is not blamed.
        let unreached = [(Property::ZombieReleaseRace, LEASE_MS)];
        let all = verdicts(&[], &unreached);
        assert!(all.contains(&(Property::ZombieReleaseRace, Verdict::Unknown)));
        assert!(all.contains(&(Property::ZombieRenewRace, Verdict::Pass)));
        assert!(all
            .iter()
            .filter(|(p, _)| *p != Property::ZombieReleaseRace)
            .all(|(_, v)| *v == Verdict::Pass));
        let results = checks(
            &[],
            &unreached,
            &ExplorerFigures::default(),
            &ExplorerConfig::default(),
            &Context::default(),
        );
        let race = results
            .iter()
            .find(|r| r.id == Property::ZombieReleaseRace.id())
            .unwrap();
        assert!(
            race.reason.starts_with("not decided")
                && race.reason.contains("+1000 ms")
                && race.reason.contains("within 8 steps")
                && race.reason.contains("--depth"),
            "{}",
            race.reason
        );
        // A violation that stopped the search still leaves the race unjudged.
        let all = verdicts(&[found(Property::NoTreeStuck, true)], &unreached);
        assert!(all.contains(&(Property::ZombieReleaseRace, Verdict::Skipped)));
        assert!(all.contains(&(Property::NoTreeStuck, Verdict::Fail)));
    }

    /// `answered` also says a write refused on the full server changed
    /// nothing: with the server filled in the searches but no write ever
    /// met it full, that part was never tried, so the check is undecided;
    /// once refusals were judged it passes and counts them. A store with
    /// no server to fill is judged on its answers alone.
    #[test]
    fn answered_is_undecided_until_a_write_met_the_full_server() {
        let with = |refusals: usize, filled: bool| {
            let mut figures = ExplorerFigures::default();
            let mut row = ExplorerFigures::skew_row(0);
            row.contract = "lease".into();
            row.full_refusals = refusals;
            figures.per_skew.push(row);
            let context = Context {
                filled,
                ..Context::default()
            };
            let results = checks(&[], &[], &figures, &ExplorerConfig::default(), &context);
            results
                .into_iter()
                .find(|r| r.id == Property::Answered.id())
                .unwrap()
        };
        let none = with(0, true);
        assert_eq!(none.verdict, Verdict::Unknown, "{}", none.reason);
        assert!(
            none.reason
                .contains("no search met a write on the full server"),
            "{}",
            none.reason
        );
        let some = with(3, true);
        assert_eq!(some.verdict, Verdict::Pass, "{}", some.reason);
        assert!(some.reason.contains("3 refusals"), "{}", some.reason);
        let unfilled = with(0, false);
        assert_eq!(unfilled.verdict, Verdict::Pass, "{}", unfilled.reason);
        // The other properties do not depend on it.
        let results = checks(
            &[],
            &[],
            &ExplorerFigures::default(),
            &ExplorerConfig::default(),
            &Context {
                filled: true,
                ..Context::default()
            },
        );
        let one = results
            .iter()
            .find(|r| r.id == Property::OneLiveHolder.id())
            .unwrap();
        assert_eq!(one.verdict, Verdict::Pass, "{}", one.reason);
    }

    #[test]
    fn an_unsupported_operation_skips_the_checks_about_it_with_the_stores_message() {
        let said = [(Op::Read, "no reads here".to_string())];
        let context = Context {
            unsupported: &said,
            ..Context::default()
        };
        let results = checks(
            &[],
            &[],
            &ExplorerFigures::default(),
            &ExplorerConfig::default(),
            &context,
        );
        let of = |p: Property| results.iter().find(|r| r.id == p.id()).unwrap();
        let answered = of(Property::Answered);
        assert_eq!(answered.verdict, Verdict::Skipped, "{}", answered.reason);
        assert!(
            answered.reason.contains("lease.read") && answered.reason.contains("no reads here"),
            "{}",
            answered.reason
        );
        // The checks that are not about reads are judged.
        for p in [
            Property::OneLiveHolder,
            Property::EpochMonotonic,
            Property::ZombieRefused,
            Property::NoTreeStuck,
            Property::ZombieRenewRace,
            Property::ZombieReleaseRace,
            Property::HarnessOk,
        ] {
            assert_eq!(of(p).verdict, Verdict::Pass, "{p}: {}", of(p).reason);
        }
        // A renew the store does not offer: what broke with the others
        // still fails, what did not is skipped.
        let said = [(Op::Renew, "no renew".to_string())];
        let context = Context {
            unsupported: &said,
            ..Context::default()
        };
        let results = checks(
            &[found(Property::OneLiveHolder, true)],
            &[],
            &ExplorerFigures::default(),
            &ExplorerConfig::default(),
            &context,
        );
        let of = |p: Property| results.iter().find(|r| r.id == p.id()).unwrap();
        assert_eq!(of(Property::OneLiveHolder).verdict, Verdict::Fail);
        assert_eq!(of(Property::ZombieRefused).verdict, Verdict::Skipped);
        assert_eq!(of(Property::ZombieRenewRace).verdict, Verdict::Skipped);
        assert_eq!(of(Property::EpochMonotonic).verdict, Verdict::Pass);
    }

    #[test]
    fn what_held_says_where_schedules_through_a_violation_were_cut() {
        let mut figures = ExplorerFigures {
            walks: 200,
            walks_cut: 3,
            ..ExplorerFigures::default()
        };
        let mut row = ExplorerFigures::skew_row(LEASE_MS);
        row.violating_states_cut = 12;
        row.shallowest_cut = Some(3);
        figures.per_skew.push(row);
        figures.per_skew.push(ExplorerFigures::skew_row(0));
        let results = checks(
            &[found(Property::OneLiveHolder, true)],
            &[],
            &figures,
            &ExplorerConfig::default(),
            &Context::default(),
        );
        let epoch = results
            .iter()
            .find(|r| r.id == Property::EpochMonotonic.id())
            .unwrap();
        assert_eq!(epoch.verdict, Verdict::Pass);
        assert!(
            epoch.reason.contains("held in every schedule explored (")
                && epoch
                    .reason
                    .contains("not followed past it (12 such states")
                && epoch.reason.contains("+1000 ms, the shallowest at depth 3")
                && epoch.reason.contains("3 of the 200 walks ended early"),
            "{}",
            epoch.reason
        );
        // Nothing cut: the plain scope.
        let results = checks(
            &[],
            &[],
            &ExplorerFigures::default(),
            &ExplorerConfig::default(),
            &Context::default(),
        );
        assert!(results
            .iter()
            .all(|r| !r.reason.contains("explored (") && !r.reason.contains("cut")));
    }

    #[test]
    fn a_counterexample_without_a_history_still_reads() {
        let cx = serde_json::json!({
            "kind": "explorer-schedule",
            "property": "one-live-holder",
            "schedule": {"skews": [0, 500], "actions": [{"start": [0, "take"]}]},
            "steps": [],
        });
        let cx: Counterexample = serde_json::from_value(cx).unwrap();
        assert!(cx.history.events.is_empty());
        assert_eq!(cx.property, Property::OneLiveHolder);
    }
}
