//! A world: one managed server, a gate and a store client per instance, and
//! the runtime that drives them. `step` is the explorer's transition: restore
//! the server to a state's snapshot, apply one action, snapshot back; what
//! the action's outcome means is [`crate::judge`]'s to say. Given
//! the same state and action it gives the same next state on any world, which
//! is what lets the search run a transition on whichever world is free, and
//! a replay or a shrink re-run a schedule on a world of its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use harness::contract::{ErrorKind, Reply, Request, StoreError};
use harness::gate::drive::{
    instance_name, next_step, start_operation, Operation, Step, STEP_TIMEOUT,
};
use harness::gate::{Fault, FaultRule, Gate, Held, Mode};
use harness::keyspace;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::{Hello, StoreClient};
use redis::aio::MultiplexedConnection;

use crate::cache::{keyspace_of, BehaviourKey, GuessKey, Input, Keyspace, Next, Outcome};
use crate::drawn::Probe;
use crate::judge;
use crate::local::Local;
use crate::reading::logical;
use crate::state::{Action, KeyDump, Note, Op, Pending, State};

mod deliver;
pub(crate) mod shared;

pub(crate) use crate::moves::answered;
pub use crate::moves::{idle, nearest_expiry, request, request_as_invoked, tick_target};
pub use shared::{Shared, Speed, MAX_INSTANCES};

/// The snapshot script (see `snapshot.lua`).
static SNAPSHOT: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(include_str!("snapshot.lua")));

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
    /// What the probe's first run sent where it was stopped: the second
    /// run, from the same state and replies, must send it again up to
    /// the values drawn ([`deliver::Probed`]).
    probed: Option<deliver::Probed>,
    /// The operation the last step left in flight, its next command held
    /// at the gate: the next step goes on with it if it is that command
    /// from that state, else it is abandoned first ([`deliver::Live`]).
    live: Option<deliver::Live>,
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
                // Lazy expiry only: the world's clock stands at an expiry
                // instant while steps run, and a background cycle that
                // deleted a hash field there (Valkey 9) made the server's
                // content depend on when it ran (`harness::server`).
                ManagedServer::start(
                    ServerOptions::default()
                        .on_server(shared.server.as_ref())
                        .with_lazy_expiry(true),
                )
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
                probed: None,
                live: None,
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
        // The operation left in flight goes on only as this step's command.
        if let Some(live) = self.live.take() {
            match action {
                Action::Continue(i) if live.continues(next, i) => self.live = Some(live),
                _ => self.abandon_live(live).await,
            }
        }
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
            .map(|(name, dump, expire, kind, items)| {
                let logical = logical(&kind, items, &dump);
                KeyDump::new(name, dump, (expire > 0).then_some(expire), logical)
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
