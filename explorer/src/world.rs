//! A world: one managed server, a gate and a store client per instance, and
//! the runtime that drives them. `step` is the explorer's transition: restore
//! the server to a state's snapshot, apply one action, snapshot back; what
//! the action's outcome means is [`crate::judge`]'s to say. Given
//! the same state and action it gives the same next state on any world, which
//! is what lets the search run a transition on whichever world is free, and
//! a replay or a shrink re-run a schedule on a world of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use harness::contract::{ErrorKind, Reply, Request, StoreError};
use harness::gate::drive::{
    instance_name, next_step, start_operation, Operation, Step, STEP_TIMEOUT,
};
use harness::gate::{Fault, FaultRule, Gate, Held, Mode};
use harness::keyspace;
use harness::server::{ManagedServer, ServerKind, ServerOptions};
use harness::store::{Hello, StoreClient, StoreFactory};
use redis::aio::MultiplexedConnection;

use crate::cache::{
    keyspace_of, BehaviourKey, GuessKey, Input, Keyspace, Next, Outcome, TransitionCache,
};
use crate::drawn::Probe;
use crate::judge;
use crate::local::Local;
use crate::reading::logical;
use crate::state::{Action, Inst, KeyDump, Note, Op, Pending, State, Tick};
use crate::{LEASE_MS, TREE};

mod deliver;

/// The snapshot script (see `snapshot.lua`).
static SNAPSHOT: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(include_str!("snapshot.lua")));

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
    fn lazy(self) -> bool {
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
    fn checked(&self, difference: Option<String>) {
        self.cache_checked.fetch_add(1, Ordering::Relaxed);
        if let Some(d) = difference {
            self.cache_differed.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut first) = self.first_difference.lock() {
                first.get_or_insert(d);
            }
        }
    }
}

/// One server and its instances, and the runtime that drives them.
pub struct World {
    // Field order is drop order: the clients, gates and server go before
    // the runtime that drives them.
    inner: Backend,
    shared: Arc<Shared>,
    runtime: tokio::runtime::Runtime,
}

/// What a world drives: a Redis server through gates (a step is one
/// command), or a store with no Redis wire on a copy of its own (a step is
/// one operation, see [`crate::local`]).
enum Backend {
    Redis(Box<Inner>),
    Local(Box<Local>),
}

struct Inner {
    shared: Arc<Shared>,
    clients: Vec<Option<Box<dyn StoreClient>>>,
    /// Per instance: its client answered an operation since it connected
    /// or last reconnected (what it remembers may be another branch's).
    used: Vec<bool>,
    /// Per instance: its client may remember and was kept on trial after
    /// an operation ([`Speed::trial`]): it is not fresh.
    on_trial: Vec<bool>,
    /// Every operation of a client that may remember starts on a fresh
    /// one, trial or not (a counterexample confirmed, a trial checked).
    fresh: bool,
    /// Every step runs the store, none is computed from what it did before
    /// (a trial checked, a counterexample confirmed).
    recompute: bool,
    gates: Vec<Gate>,
    admin: MultiplexedConnection,
    server: ManagedServer,
    /// The keyspace the server holds now, known exactly (it was restored,
    /// or read back holding nothing else); `None`: unknown.
    holds: Option<Keyspace>,
    /// The server is full now (`maxmemory` 1 byte).
    full: bool,
    /// The step now running is a probe's second run ([`crate::drawn`]):
    /// it probes no further.
    probing: bool,
}

/// The request instance `i` sends for `op` invoked now in `state`.
pub fn request(state: &State, i: usize, op: Op) -> Request {
    request_as_invoked(state, i, op, state.ghost.len())
}

/// The request instance `i` sends for `op` in `state`, invoked when
/// `acked_before` grants had been acknowledged (an operation in flight
/// sends what it was invoked with).
pub fn request_as_invoked(state: &State, i: usize, op: Op, acked_before: usize) -> Request {
    let holder = crate::symmetry::holder(i).to_string();
    // A holder names its epoch; an instance holding nothing renews or
    // releases another's (`judge::stranger_epoch`), as a client with a
    // wrong token would.
    let epoch = state.insts[i]
        .held
        .or_else(|| crate::judge::stranger_epoch(state, i, acked_before))
        .unwrap_or(0);
    match op {
        Op::Take => Request::LeaseTake {
            tree: TREE.into(),
            holder,
            ttl_ms: LEASE_MS,
        },
        Op::Renew => Request::LeaseRenew {
            tree: TREE.into(),
            holder,
            epoch,
            ttl_ms: LEASE_MS,
        },
        Op::Release => Request::LeaseRelease {
            tree: TREE.into(),
            holder,
            epoch,
        },
        Op::Read => Request::LeaseRead { tree: TREE.into() },
        Op::Save(_) | Op::Claim | Op::Complete | Op::QueueRead => {
            crate::queue::request(state, i, op)
        }
        Op::Acquire | Op::ReleaseSlot | Op::Hit | Op::Pause | Op::RateRead => {
            crate::rate::request(state, i, op)
        }
    }
}

impl World {
    /// Starts a server and one gate per instance; for a store that keeps
    /// its state outside Redis, its copy on a file of the world's own.
    pub fn new(shared: Arc<Shared>, instances: usize) -> Result<World, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))?;
        if !shared.factory.keeps_state_in_redis() {
            return Ok(World {
                inner: Backend::Local(Box::new(Local::new(shared.clone(), instances)?)),
                shared,
                runtime,
            });
        }
        let (server, gates, admin) = runtime.block_on(async {
            let server =
                ManagedServer::start(ServerOptions::default().on_server(shared.server.as_ref()))
                    .await
                    .map_err(|e| e.to_string())?;
            let mut gates = Vec::new();
            for _ in 0..instances {
                let gate = Gate::start(&server.url())
                    .await
                    .map_err(|e| e.to_string())?;
                // The server is restored between commands and earlier
                // commands are answered from a recording: a transaction
                // must be kept at the gate to survive both.
                gate.emulate_transactions(true);
                gates.push(gate);
            }
            let admin = server.admin().await.map_err(|e| e.to_string())?;
            Ok::<_, String>((server, gates, admin))
        })?;
        Ok(World {
            inner: Backend::Redis(Box::new(Inner {
                shared: shared.clone(),
                clients: (0..instances).map(|_| None).collect(),
                used: vec![false; instances],
                on_trial: vec![false; instances],
                fresh: false,
                recompute: false,
                gates,
                admin,
                server,
                holds: None,
                full: false,
                probing: false,
            })),
            shared,
            runtime,
        })
    }

    /// Has every later step start an operation of a client that may
    /// remember on a fresh one (`true`), or keep such a client on trial
    /// while the exploration trusts it (`false`, the default).
    pub fn set_fresh(&mut self, fresh: bool) {
        if let Backend::Redis(inner) = &mut self.inner {
            inner.fresh = fresh;
        }
    }

    /// Has every later step run the store (`true`), or let a step be
    /// computed from what the store did before given the same request,
    /// clock and replies (`false`, the default, with the cache on).
    pub fn set_recompute(&mut self, recompute: bool) {
        if let Backend::Redis(inner) = &mut self.inner {
            inner.recompute = recompute;
        }
    }

    /// The next state after `action` in `state`. Never fails: a harness
    /// problem is recorded in the state (`harness_error`).
    pub fn step(&mut self, state: &State, action: Action) -> State {
        self.shared.transitions.fetch_add(1, Ordering::Relaxed);
        let mut next = state.clone();
        next.note = Note::default();
        next.steps += 1;
        if next.harness_error.is_some() {
            return next;
        }
        let stepped = match &mut self.inner {
            Backend::Redis(inner) => {
                let stepped = self.runtime.block_on(inner.step_async(&mut next, action));
                if stepped.is_err() {
                    // Whatever reached the server is unknown now.
                    inner.holds = None;
                }
                stepped
            }
            Backend::Local(local) => self.runtime.block_on(local.step_async(&mut next, action)),
        };
        if let Err(e) = stepped {
            next.harness_error = Some(e);
        }
        judge::touched(&mut next, action);
        next
    }
}

impl Inner {
    async fn step_async(&mut self, next: &mut State, action: Action) -> Result<(), String> {
        let lazy = self.shared.speed.lazy();
        if !lazy {
            self.restore(next).await?;
        }
        match action {
            Action::Tick(t) if lazy => {
                let to = tick_target(next, t);
                self.tick(next, to).await?;
            }
            Action::Tick(t) => {
                next.now = tick_target(next, t);
                if let Some(c) = self.server.clock() {
                    c.set_ms(next.now);
                }
            }
            Action::Crash(i) => judge::crashed(next, i),
            // The server is made to match when a command must reach it
            // (`ensure`, `restore`): no round trip now.
            Action::Fill => next.full = true,
            Action::Free => next.full = false,
            Action::Start(i, op) => {
                // The instance clock is read once, when the operation is
                // invoked: it keeps it until it answers.
                let started = Pending::started(op, judge::invoked(next, i, op));
                self.deliver(next, i, started, true).await?
            }
            Action::Continue(i) => {
                let Some(p) = next.insts[i].pending.take() else {
                    return Err(format!(
                        "instance {} has nothing to continue",
                        instance_name(i)
                    ));
                };
                self.deliver(next, i, p, true).await?;
            }
            Action::Lose(i, op) => {
                let lost = match next.insts[i].pending.take() {
                    Some(p) => p,
                    None => Pending::started(op, judge::invoked(next, i, op)),
                };
                next.lost_reply = true;
                self.deliver_lost(next, i, lost).await?;
                // The next state always comes from the server: read back.
                judge::stepped(next);
                return Ok(());
            }
        }
        judge::stepped(next);
        if lazy {
            // Every path above left the keys after in `next`.
            return Ok(());
        }
        self.snapshot(next).await.map(|_| ())
    }

    /// Moves server time to `to` (lazy speed). Keys that all outlive `to`,
    /// their fields' own expiries included, are unchanged, whatever the
    /// server (an expiry strictly after an instant is alive at it): no
    /// round trip. Otherwise the server says
    /// which expired, once per keyspace, time and target (the cache).
    async fn tick(&mut self, next: &mut State, to: i64) -> Result<(), String> {
        if !next.keys.iter().any(|k| k.expires_by(to)) {
            next.now = to;
            return Ok(());
        }
        let input = Input::Tick { to };
        let cache = self.shared.speed.cache;
        let mut check = None;
        if cache {
            if let Some(hit) = self.shared.cache.get(&next.keys, next.now, &input) {
                if self
                    .shared
                    .cache
                    .claim_check(&next.keys, next.now, &input, &hit)
                {
                    // In the sample: the server moves its time again.
                    check = Some(hit);
                } else {
                    self.shared.cache_answers.fetch_add(1, Ordering::Relaxed);
                    next.keys = hit.keys.clone();
                    next.now = to;
                    return Ok(());
                }
            }
        }
        let before = next.keys.clone();
        let from = next.now;
        self.ensure(next).await?;
        next.now = to;
        if let Some(c) = self.server.clock() {
            c.set_ms(to);
        }
        let clean = self.snapshot(next).await?;
        if let Some(hit) = check.filter(|_| clean) {
            self.shared.checked(
                hit.differs(None, Some(&next.keys))
                    .map(|d| format!("a tick from server time {from} to {to}: {d}")),
            );
        }
        if cache && clean {
            self.shared
                .cache
                .put(&before, from, input, Outcome::new(None, next.keys.clone()));
        }
        Ok(())
    }

    /// Puts the server into `state` unless it holds it already (with
    /// `skip_restore`): its time always, its keys when they differ.
    async fn ensure(&mut self, state: &State) -> Result<(), String> {
        if let Some(c) = self.server.clock() {
            c.set_ms(state.now);
        }
        let wanted = keyspace_of(&state.keys);
        if self.shared.speed.skip_restore && self.holds.as_ref() == Some(&wanted) {
            // Every key it holds is alive at the state's time: the state
            // was read back (or ticked) with them alive then.
            self.shared.restores_skipped.fetch_add(1, Ordering::Relaxed);
            return self.make_full(state.full).await;
        }
        self.holds = None;
        self.restore(state).await?;
        self.holds = Some(wanted);
        Ok(())
    }

    /// Makes the server full (`maxmemory` 1 byte, under `noeviction`: every
    /// write refused with `OOM`) or gives the room back (no limit), unless
    /// it is so already.
    async fn make_full(&mut self, full: bool) -> Result<(), String> {
        if self.full == full {
            return Ok(());
        }
        self.rt();
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(if full { "1" } else { "0" })
            .query_async::<()>(&mut self.admin)
            .await
            .map_err(|e| format!("cannot set maxmemory: {e}"))?;
        self.full = full;
        Ok(())
    }

    fn rt(&self) {
        self.shared.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    /// Puts the server into `state`: its keys and its time (one round trip).
    async fn restore(&mut self, state: &State) -> Result<(), String> {
        // A key whose expiry is this very instant is alive in Redis (a key
        // is expired once now > its expiry), but `RESTORE … ABSTTL` refuses
        // to create a key whose expiry is not in the future: restored at
        // the instant, a lock set with `PX` that the store still holds would
        // be missing. Restored one millisecond earlier, it is there, and the
        // clock then moves to the state's instant.
        let at_instant = state.keys.iter().any(|k| k.expires_at_instant(state.now));
        if let Some(c) = self.server.clock() {
            c.set_ms(if at_instant { state.now - 1 } else { state.now });
        }
        // RESTORE is a write: the server takes the keys with room, then is
        // made as full as the state says.
        self.make_full(false).await?;
        let restored = self.restore_keys(state).await;
        if let (Some(c), true) = (self.server.clock(), at_instant) {
            c.set_ms(state.now);
        }
        restored?;
        self.make_full(state.full).await
    }

    /// Replaces the server's keys with `state`'s (one round trip).
    async fn restore_keys(&mut self, state: &State) -> Result<(), String> {
        let mut pipe = redis::pipe();
        pipe.cmd("FLUSHALL").arg("SYNC").ignore();
        for k in &state.keys {
            let cmd = pipe
                .cmd("RESTORE")
                .arg(&k.name)
                .arg(k.expire_at.unwrap_or(0))
                .arg(&k.dump)
                .arg("REPLACE");
            if k.expire_at.is_some() {
                cmd.arg("ABSTTL");
            }
            cmd.ignore();
        }
        self.rt();
        pipe.query_async::<()>(&mut self.admin)
            .await
            .map_err(|e| format!("restore failed: {e}"))
    }

    /// Reads every key under the prefix back into `state` (one round trip).
    /// `true` when the server holds nothing else (its whole keyspace is
    /// then known: what [`Inner::holds`] records).
    async fn snapshot(&mut self, state: &mut State) -> Result<bool, String> {
        self.rt();
        self.holds = None;
        type Row = (Vec<u8>, Vec<u8>, i64, String, Vec<Vec<u8>>);
        let (dbsize, rows): (usize, Vec<Row>) = SNAPSHOT
            .arg(keyspace::scan_pattern(&self.shared.prefix))
            .invoke_async(&mut self.admin)
            .await
            .map_err(|e| format!("snapshot failed: {e}"))?;
        let mut keys: Vec<KeyDump> = rows
            .into_iter()
            .map(|(name, dump, expire, kind, items)| KeyDump {
                name,
                logical: logical(&kind, items, &dump),
                dump,
                expire_at: (expire > 0).then_some(expire),
            })
            .collect();
        keys.sort_by(|a, b| a.name.cmp(&b.name));
        // A key outside the prefix (or one expired but not yet removed)
        // makes the server's state more than the keys read back.
        let clean = dbsize == keys.len();
        if clean {
            self.holds = Some(keyspace_of(&keys));
        }
        state.keys = keys;
        Ok(clean)
    }

    /// Instance `i`'s client, ready for a new operation (or a re-run of
    /// one). The explorer's states are the server's keys: a client that may
    /// remember something between operations ([`StoreClient::remembers`])
    /// and answered one since it was fresh may remember another branch's
    /// operations (the server was restored under it), so it is made fresh
    /// first: asked to reconnect, or replaced by a new instance. What such a
    /// store remembers between operations is therefore not explored (the
    /// conformance, fault and crash suites run its processes throughout).
    ///
    /// On trial ([`Speed::trial`]) such a client is kept as if it
    /// remembered nothing, until a step shows that it does
    /// ([`Shared::distrust`]): the search checks a sample of its steps
    /// against fresh processes, a command other than the one it replays
    /// is taken as its memory (never as the store's nondeterminism), and a
    /// counterexample is confirmed on fresh processes.
    async fn client(&mut self, i: usize, now: i64) -> Result<&mut Box<dyn StoreClient>, String> {
        if self.used[i] || self.on_trial[i] {
            self.used[i] = false;
            self.on_trial[i] = false;
            if let Some(client) = self.clients[i].take() {
                if !client.remembers() {
                    self.clients[i] = Some(client);
                } else if self.trial() {
                    self.on_trial[i] = true;
                    self.shared.kept_on_trial.fetch_add(1, Ordering::Relaxed);
                    self.clients[i] = Some(client);
                } else if let Some(client) = self.refreshed(i, client, now).await {
                    self.clients[i] = Some(client);
                }
            }
        }
        if self.clients[i].is_none() {
            self.gates[i].set_mode(Mode::PassThrough);
            let hello = Hello {
                instance: crate::symmetry::holder(i).into(),
                redis_url: self.gates[i].url(),
                prefix: self.shared.prefix.clone(),
                opt_out: self.shared.opt_out.clone(),
            };
            // A process starts when the harness needs one, not at a step
            // of the schedule: its set-up (a `FUNCTION LOAD`, say) runs on
            // a server with room, which is then full again if it was.
            let full = self.full;
            self.make_full(false).await?;
            let connected = self.shared.factory.connect(&hello, now).await;
            self.make_full(full).await?;
            let (_, client) = connected
                .map_err(|e| format!("instance {} could not connect: {e}", instance_name(i)))?;
            self.clients[i] = Some(client);
        }
        self.clients[i]
            .as_mut()
            .ok_or_else(|| "no client".to_string())
    }

    /// Whether a client that may remember is kept between operations now.
    fn trial(&self) -> bool {
        self.shared.speed.trial && !self.fresh && self.shared.trusts_memory()
    }

    /// Instance `i`'s client sent `divergence` where its operation's
    /// replay expected another command. On trial that is what it
    /// remembered (`true`: the exploration stops trusting such processes,
    /// and the step is to run again on a fresh one); otherwise the store is
    /// not deterministic (`false`).
    fn remembered(&mut self, i: usize, divergence: &harness::gate::Divergence) -> bool {
        if !self.on_trial[i] {
            return false;
        }
        self.on_trial[i] = false;
        self.clients[i] = None;
        self.shared.distrust(format!(
            "instance {}'s adapter process, kept from an earlier operation, {divergence} (a fresh one's command is the one replayed)",
            instance_name(i)
        ));
        true
    }
}

/// Records what the step that finished instance `i`'s operation did (for
/// counterexamples) and has the answer judged.
pub(crate) fn answered(
    next: &mut State,
    i: usize,
    op: Op,
    req: &Request,
    out: Result<Reply, StoreError>,
    commands: Vec<String>,
    invoked: judge::Invoked,
) {
    judge::answered(next, i, op, req, &out, invoked);
    next.note = Note {
        commands,
        answer: Some(out),
    };
}

/// Where a tick moves server time.
pub fn tick_target(state: &State, t: Tick) -> i64 {
    match t {
        Tick::NearestExpiry(d) => {
            nearest_expiry(state).map_or(state.now, |e| (e + d as i64).max(state.now))
        }
        Tick::HalfLease => state.now + LEASE_MS / 2,
        Tick::Lease => state.now + LEASE_MS,
        Tick::LongPause => state.now + 100 * LEASE_MS,
    }
}

/// The nearest future instant a promised lease ends, or the store may
/// rightly stop holding one.
pub fn nearest_expiry(state: &State) -> Option<i64> {
    state
        .ghost
        .iter()
        .filter(|g| !g.released)
        .flat_map(|g| [g.valid_until, g.may_hold_until])
        .filter(|t| *t > state.now)
        .chain(crate::queue::nearest_expiry(state))
        .chain(crate::rate::nearest_expiry(state))
        .min()
}

/// Which instances are idle (can start an operation).
pub fn idle(inst: &Inst) -> bool {
    !inst.crashed && inst.pending.is_none()
}
