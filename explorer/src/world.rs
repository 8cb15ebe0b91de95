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
use harness::gate::{Fault, Gate, Mode};
use harness::keyspace;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::{Hello, StoreClient, StoreFactory};
use redis::aio::MultiplexedConnection;
use serde_json::json;

use crate::judge;
use crate::local::Local;
use crate::state::{Action, Inst, KeyDump, Note, Op, Pending, State, Tick};
use crate::{LEASE_MS, TREE};

/// The snapshot script (see `snapshot.lua`).
static SNAPSHOT: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(include_str!("snapshot.lua")));

/// A key's content as the fingerprint reads it: hash fields sorted, a zset
/// as (member, score) pairs, everything else in order.
fn logical(kind: &str, items: Vec<Vec<u8>>) -> serde_json::Value {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match kind {
        "hash" => {
            let map: std::collections::BTreeMap<String, String> = items
                .chunks(2)
                .filter(|c| c.len() == 2)
                .map(|c| (text(&c[0]), text(&c[1])))
                .collect();
            json!({"hash": map})
        }
        "zset" => json!({"zset": items
            .chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| vec![text(&c[0]), text(&c[1])])
            .collect::<Vec<_>>()}),
        other => json!({ other: items.iter().map(|i| text(i)).collect::<Vec<_>>() }),
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
}

impl Shared {
    /// What every world of one exploration shares, with its counters at zero.
    pub fn new(
        factory: Arc<dyn StoreFactory>,
        prefix: String,
        opt_out: Option<String>,
    ) -> Arc<Shared> {
        Arc::new(Shared {
            factory,
            prefix,
            opt_out,
            round_trips: AtomicU64::new(0),
            transitions: AtomicU64::new(0),
        })
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
    gates: Vec<Gate>,
    admin: MultiplexedConnection,
    server: ManagedServer,
}

/// The request instance `i` sends for `op` in `state`.
pub fn request(state: &State, i: usize, op: Op) -> Request {
    let holder = instance_name(i).to_string();
    let epoch = state.insts[i].held.unwrap_or(0);
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
            let server = ManagedServer::start(ServerOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            let mut gates = Vec::new();
            for _ in 0..instances {
                gates.push(
                    Gate::start(&server.url())
                        .await
                        .map_err(|e| e.to_string())?,
                );
            }
            let admin = server.admin().await.map_err(|e| e.to_string())?;
            Ok::<_, String>((server, gates, admin))
        })?;
        Ok(World {
            inner: Backend::Redis(Box::new(Inner {
                shared: shared.clone(),
                clients: (0..instances).map(|_| None).collect(),
                gates,
                admin,
                server,
            })),
            shared,
            runtime,
        })
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
            Backend::Redis(inner) => self.runtime.block_on(inner.step_async(&mut next, action)),
            Backend::Local(local) => self.runtime.block_on(local.step_async(&mut next, action)),
        };
        if let Err(e) = stepped {
            next.harness_error = Some(e);
        }
        next
    }
}

impl Inner {
    async fn step_async(&mut self, next: &mut State, action: Action) -> Result<(), String> {
        self.restore(next).await?;
        match action {
            Action::Tick(t) => {
                next.now = tick_target(next, t);
                if let Some(c) = self.server.clock() {
                    c.set_ms(next.now);
                }
            }
            Action::Crash(i) => judge::crashed(next, i),
            Action::Start(i, op) => {
                // The instance clock is read once, when the operation is
                // invoked: it keeps it until it answers.
                let judge::Invoked {
                    clock_ms,
                    acked_before,
                    contended,
                } = judge::invoked(next, i);
                let started = Pending {
                    op,
                    clock_ms,
                    acked_before,
                    contended,
                    delivered: Vec::new(),
                };
                self.deliver(next, i, started).await?
            }
            Action::Continue(i) => {
                let Some(p) = next.insts[i].pending.take() else {
                    return Err(format!(
                        "instance {} has nothing to continue",
                        instance_name(i)
                    ));
                };
                self.deliver(next, i, p).await?;
            }
        }
        judge::stepped(next);
        self.snapshot(next).await
    }

    fn rt(&self) {
        self.shared.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    /// Puts the server into `state`: its keys and its time (one round trip).
    async fn restore(&mut self, state: &State) -> Result<(), String> {
        if let Some(c) = self.server.clock() {
            c.set_ms(state.now);
        }
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
    async fn snapshot(&mut self, state: &mut State) -> Result<(), String> {
        self.rt();
        type Row = (Vec<u8>, Vec<u8>, i64, String, Vec<Vec<u8>>);
        let rows: Vec<Row> = SNAPSHOT
            .arg(keyspace::scan_pattern(&self.shared.prefix))
            .invoke_async(&mut self.admin)
            .await
            .map_err(|e| format!("snapshot failed: {e}"))?;
        let mut keys: Vec<KeyDump> = rows
            .into_iter()
            .map(|(name, dump, expire, kind, items)| KeyDump {
                name,
                dump,
                expire_at: (expire > 0).then_some(expire),
                logical: logical(&kind, items),
            })
            .collect();
        keys.sort_by(|a, b| a.name.cmp(&b.name));
        state.keys = keys;
        Ok(())
    }

    async fn client(&mut self, i: usize, now: i64) -> Result<&mut Box<dyn StoreClient>, String> {
        if self.clients[i].is_none() {
            self.gates[i].set_mode(Mode::PassThrough);
            let hello = Hello {
                instance: instance_name(i).into(),
                redis_url: self.gates[i].url(),
                prefix: self.shared.prefix.clone(),
                opt_out: self.shared.opt_out.clone(),
            };
            let (_, client) = self
                .shared
                .factory
                .connect(&hello, now)
                .await
                .map_err(|e| format!("instance {} could not connect: {e}", instance_name(i)))?;
            self.clients[i] = Some(client);
        }
        self.clients[i]
            .as_mut()
            .ok_or_else(|| "no client".to_string())
    }

    /// Delivers the next command of instance `i`'s operation `op`, whose first
    /// commands `delivered` already reached the server (their effects are in
    /// the restored keyspace): they are answered from the recording.
    async fn deliver(
        &mut self,
        next: &mut State,
        i: usize,
        pending: Pending,
    ) -> Result<(), String> {
        let Pending {
            op,
            clock_ms,
            acked_before,
            contended,
            delivered,
        } = pending;
        let invoked = judge::Invoked {
            clock_ms,
            acked_before,
            contended,
        };
        let req = request(next, i, op);
        let gate = self.gates[i].clone();
        let client = match self.client(i, clock_ms).await {
            Ok(_) => self.clients[i].take().ok_or("no client")?,
            Err(e) => return Err(e),
        };
        gate.clear_recording();
        gate.clear_faults();
        let replayed = delivered.len();
        if delivered.is_empty() {
            gate.set_mode(Mode::Hold);
        } else {
            gate.replay(delivered.clone());
        }
        let mut task = start_operation(client, req.to_call(), clock_ms);
        // Wait for the command to deliver (or for an answer without one).
        let first = next_event(&gate, &mut task).await;
        if let Some(d) = gate.divergence() {
            gate.release_all();
            task.abort();
            return Err(format!(
                "the store is not deterministic: instance {} {d}",
                instance_name(i)
            ));
        }
        let held = match first? {
            Step::Answered(client, out) => {
                // Answered without a scheduled command.
                self.keep(i, client, &out);
                gate.set_mode(Mode::PassThrough);
                answered(next, i, op, &req, out, vec![], invoked);
                return Ok(());
            }
            Step::Held(h) => h,
        };
        self.rt();
        gate.release(held.id).map_err(|e| e.to_string())?;
        if !gate.wait_recorded(replayed + 1, STEP_TIMEOUT).await {
            task.abort();
            return Err(format!(
                "instance {}'s command {} got no reply within {}s",
                instance_name(i),
                held.command,
                STEP_TIMEOUT.as_secs()
            ));
        }
        let exchange = gate
            .recording()
            .last()
            .cloned()
            .ok_or("the gate recorded nothing")?;
        let text = vec![format!("{}", exchange.command)];
        match next_event(&gate, &mut task).await? {
            Step::Answered(client, out) => {
                self.keep(i, client, &out);
                gate.set_mode(Mode::PassThrough);
                answered(next, i, op, &req, out, text, invoked);
            }
            Step::Held(more) => {
                // The operation has more commands: remember what was
                // delivered and abandon this run of it (the held command is
                // reset, never sent; the client reconnects next time).
                let mut delivered = delivered;
                delivered.push(exchange);
                gate.inject(Fault::ResetBeforeSend);
                let _ = gate.release(more.id);
                let _ = tokio::time::timeout(STEP_TIMEOUT, task).await;
                gate.set_mode(Mode::PassThrough);
                next.insts[i].pending = Some(Pending {
                    op,
                    clock_ms,
                    acked_before,
                    contended,
                    delivered,
                });
                next.note = Note {
                    commands: text,
                    answer: None,
                };
            }
        }
        Ok(())
    }

    /// Keeps instance `i`'s client for the next step, unless its adapter
    /// failed: a dead adapter answers every later call with its failure, and
    /// the next state explored on this world must start from a live
    /// instance (a fresh one connects then).
    fn keep(&mut self, i: usize, client: Box<dyn StoreClient>, out: &Result<Reply, StoreError>) {
        let dead = matches!(out, Err(e) if e.kind == ErrorKind::AdapterFailed);
        self.clients[i] = (!dead).then_some(client);
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
        .min()
}

/// Waits until the gate holds a command or the operation answers; a
/// timeout lets every held command go (the operation is abandoned).
async fn next_event(gate: &Gate, task: &mut Operation) -> Result<Step, String> {
    next_step(gate, task).await.map_err(|e| {
        gate.release_all();
        format!("the operation {e}")
    })
}

/// Which instances are idle (can start an operation).
pub fn idle(inst: &Inst) -> bool {
    !inst.crashed && inst.pending.is_none()
}
