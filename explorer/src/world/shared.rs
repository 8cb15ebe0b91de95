//! What every world of one exploration shares: the store, the prefix, the
//! caches and how transitions are computed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use harness::server::ServerKind;
use harness::store::StoreFactory;

use crate::cache::TransitionCache;

/// The largest number of instances any exploration uses: every world has a
/// gate for each.
pub const MAX_INSTANCES: usize = 3;

/// How a world computes its transitions (issue 12's speed). Every setting
/// gives the same next states; only the work differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Speed {
    /// Restore the server only when a command must reach it and it does
    /// not already hold the state (a tick, a crash or an answer without a
    /// command never touch it). Off: restore before and snapshot after
    /// every transition, as before issue 12.
    pub skip_restore: bool,
    /// Share a transition cache by server state, time and command bytes
    /// among every skew and world, and answer a command the store is
    /// guessed to send from it without the server.
    pub cache: bool,
    /// Keep a `stateless` adapter without `reconnect` after an abandoned
    /// operation (its held command was refused, its connection stays in
    /// step). Off: a new process per abandoned operation.
    pub keep_after_abandon: bool,
    /// Keep an adapter process that may remember ([`StoreClient::remembers`])
    /// between operations "on trial": as if it kept nothing, until a step
    /// shows otherwise ([`Shared::distrust`]). Off: each operation of such a
    /// process starts on one as `reconnect`, or a new process, leaves it.
    pub trial: bool,
}

impl Speed {
    /// Everything on.
    pub const FAST: Speed = Speed {
        skip_restore: true,
        cache: true,
        keep_after_abandon: true,
        trial: true,
    };

    /// Whether the server is touched only when a command must reach it.
    pub(in crate::world) fn lazy(self) -> bool {
        self.skip_restore || self.cache
    }
}

/// What every world shares: the store, its opt-out, the key prefix.
pub struct Shared {
    /// Connects the instances to the store under test.
    pub factory: Arc<dyn StoreFactory>,
    /// Every key of the exploration starts with it.
    pub prefix: String,
    /// The opt-out passed to the store in its hello, if any.
    pub opt_out: Option<String>,
    /// Redis round trips made by all worlds (restore, steps, snapshots).
    pub round_trips: AtomicU64,
    /// Transitions computed by all worlds.
    pub transitions: AtomicU64,
    /// How transitions are computed.
    pub speed: Speed,
    /// The transition cache every skew and world of the exploration shares.
    pub(crate) cache: TransitionCache,
    /// Commands answered from the cache, with no round trip.
    pub cache_answers: AtomicU64,
    /// Steps computed from what the store did before given the same
    /// request, clock and replies, and the command's cached outcome: no
    /// call to the store, no round trip.
    pub behaviour_answers: AtomicU64,
    /// Steps of an operation's own connection taken at once, costing no
    /// depth ([`crate::fused`]).
    pub fused_steps: AtomicU64,
    /// Commands found in the cache once the store sent them (they still
    /// went to the server, the snapshot after was saved).
    pub cache_hits: AtomicU64,
    /// Restores skipped: the server already held the state.
    pub restores_skipped: AtomicU64,
    /// Instances made fresh before an operation because their client may
    /// remember earlier ones ([`StoreClient::remembers`]).
    pub refreshes: AtomicU64,
    /// Operations abandoned between two commands whose adapter process was
    /// not kept (it remembers and cannot reconnect, it failed, or it sent
    /// more than the refused command): a new process each.
    pub abandoned_processes: AtomicU64,
    /// Processes started to probe an operation again ([`crate::run::Savings`]).
    pub probe_processes: AtomicU64,
    /// Operations run on the store from their first command (earlier
    /// replies replayed), and steps that went on with a live one.
    pub store_runs: AtomicU64,
    pub live_steps: AtomicU64,
    /// Cached outcomes compared with what the server did for the same
    /// input in the same state (the seeded sample, and every entry met
    /// again when its input went to the server anyway).
    pub cache_checked: AtomicU64,
    /// Of those, the ones that differed.
    pub cache_differed: AtomicU64,
    /// Adapter processes kept on trial are still trusted to keep nothing
    /// between operations that matters ([`Speed::trial`]).
    memory_trusted: std::sync::atomic::AtomicBool,
    /// Why they stopped being trusted, in words.
    memory_distrusted: std::sync::Mutex<Option<String>>,
    /// Operations started on a process kept on trial (it had answered an
    /// earlier one, and may remember it).
    pub kept_on_trial: AtomicU64,
    /// The contracts whose searches checked processes kept on trial
    /// against fresh ones (one step each: a fresh process may cost a
    /// process start, the checks on kept ones cost a step).
    pub(crate) fresh_checked: std::sync::Mutex<Vec<harness::contract::Contract>>,
    /// The first difference, in words.
    pub first_difference: std::sync::Mutex<Option<String>>,
    /// The kind of server every world starts: the run's (`certify
    /// --server`); `None` for the default binary.
    pub server: Option<ServerKind>,
    /// What the store draws at random, learnt ([`crate::drawn`]).
    pub(crate) drawn: crate::drawn::Drawn,
}

impl Shared {
    /// What every world of one exploration shares, with its counters at
    /// zero, computing transitions at full speed on the default binary.
    #[cfg(test)]
    pub fn new(
        factory: Arc<dyn StoreFactory>,
        prefix: String,
        opt_out: Option<String>,
    ) -> Arc<Shared> {
        Shared::checking_on(factory, prefix, opt_out, Speed::FAST, 0, 0, None)
    }

    /// What every world of one exploration shares, with its counters at
    /// zero: transitions computed at `speed`, one cache entry in `one_in`
    /// (a sample seeded with `seed`) sent to the server again when next
    /// used, to check that the same input gives the same reply and keys (0:
    /// none), every world on a server of `server`'s kind (the default
    /// binary when `None`).
    pub fn checking_on(
        factory: Arc<dyn StoreFactory>,
        prefix: String,
        opt_out: Option<String>,
        speed: Speed,
        seed: u64,
        one_in: u64,
        server: Option<ServerKind>,
    ) -> Arc<Shared> {
        Arc::new(Shared {
            factory,
            prefix,
            opt_out,
            round_trips: AtomicU64::new(0),
            transitions: AtomicU64::new(0),
            speed,
            cache: TransitionCache::checking(seed, one_in),
            cache_answers: AtomicU64::new(0),
            behaviour_answers: AtomicU64::new(0),
            fused_steps: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            restores_skipped: AtomicU64::new(0),
            refreshes: AtomicU64::new(0),
            abandoned_processes: AtomicU64::new(0),
            probe_processes: AtomicU64::new(0),
            store_runs: AtomicU64::new(0),
            live_steps: AtomicU64::new(0),
            cache_checked: AtomicU64::new(0),
            cache_differed: AtomicU64::new(0),
            memory_trusted: std::sync::atomic::AtomicBool::new(speed.trial),
            memory_distrusted: std::sync::Mutex::new(None),
            kept_on_trial: AtomicU64::new(0),
            fresh_checked: std::sync::Mutex::new(Vec::new()),
            first_difference: std::sync::Mutex::new(None),
            server,
            drawn: crate::drawn::Drawn::default(),
        })
    }

    /// Whether adapter processes that may remember are still kept between
    /// operations on trial.
    pub fn trusts_memory(&self) -> bool {
        self.memory_trusted.load(Ordering::Relaxed)
    }

    /// A process kept on trial did otherwise than a fresh one would
    /// (`why`): from now on every operation of a process that may remember
    /// starts on a fresh one. The first reason is kept.
    pub fn distrust(&self, why: String) {
        self.memory_trusted.store(false, Ordering::Relaxed);
        if let Ok(mut first) = self.memory_distrusted.lock() {
            first.get_or_insert(why);
        }
    }

    /// Why processes that may remember are no longer kept, if they are not.
    pub fn distrusted(&self) -> Option<String> {
        self.memory_distrusted.lock().ok().and_then(|w| w.clone())
    }

    /// Counts one cached outcome compared with the server's; `difference`
    /// is how they differed, if they did (never kept silently: the
    /// exploration is then not decided).
    pub(in crate::world) fn checked(&self, difference: Option<String>) {
        self.cache_checked.fetch_add(1, Ordering::Relaxed);
        if let Some(d) = difference {
            self.cache_differed.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut first) = self.first_difference.lock() {
                first.get_or_insert(d);
            }
        }
    }
}
