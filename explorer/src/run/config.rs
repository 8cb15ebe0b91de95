//! What an exploration is asked (its sizes, its part of a sharded run)
//! and what it answers (checks, figures, what the caches saved).

use harness::contract::Contract;
use harness::figures::ExplorerFigures;
use harness::server::ServerKind;
use harness::CheckResult;

use crate::world::Speed;

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
    /// The properties whose violation `fail_fast` stops at: those of the
    /// checks the run asks for (`certify --check`); empty: every one.
    pub stop_on: Vec<crate::Property>,
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
            stop_on: Vec::new(),
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
    pub(super) fn speed(&self) -> Speed {
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
    pub(super) fn searches(&self, index: usize) -> bool {
        self.search.as_ref().is_none_or(|s| s.contains(&index))
    }

    /// The walks run under `config`.
    pub(super) fn walk_numbers(&self, config: &ExplorerConfig) -> std::ops::Range<usize> {
        match &self.walks {
            Some(r) => r.start.min(config.walks)..r.end.min(config.walks),
            None => 0..config.walks,
        }
    }

    /// The part in words, for the checks' reasons: `None` for the whole.
    pub(super) fn describe(&self, config: &ExplorerConfig) -> Option<String> {
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
    /// Steps run on the store's process from the operation's first command
    /// (its earlier replies replayed at the gate).
    pub store_runs: u64,
    /// Steps that went on with the operation the last step left in flight.
    pub live_steps: u64,
}
