//! A world: one managed server, a gate and a store client per instance, and
//! the runtime that drives them. `step` is the explorer's transition: restore
//! the server to a state's snapshot, apply one action, snapshot back. Given
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

use crate::property::Property;
use crate::state::{Action, Grant, Inst, KeyDump, Note, Op, Pending, State, Tick};
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
    inner: Inner,
    runtime: tokio::runtime::Runtime,
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
    /// Starts a server and one gate per instance.
    pub fn new(shared: Arc<Shared>, instances: usize) -> Result<World, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))?;
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
            inner: Inner {
                shared,
                clients: (0..instances).map(|_| None).collect(),
                gates,
                admin,
                server,
            },
            runtime,
        })
    }

    /// The next state after `action` in `state`. Never fails: a harness
    /// problem is recorded in the state (`harness_error`).
    pub fn step(&mut self, state: &State, action: Action) -> State {
        self.inner
            .shared
            .transitions
            .fetch_add(1, Ordering::Relaxed);
        let mut next = state.clone();
        next.note = Note::default();
        next.steps += 1;
        if next.harness_error.is_some() {
            return next;
        }
        if let Err(e) = self
            .runtime
            .block_on(self.inner.step_async(&mut next, action))
        {
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
            Action::Crash(i) => {
                // A take or renew cut short may have written its lease
                // already, valid for at most a lease from now: until then a
                // refusal is that lease, not a stuck tree.
                let mut until = None;
                match next.insts[i].pending.as_ref().map(|p| p.op) {
                    Some(Op::Take | Op::Renew) => until = Some(next.now + LEASE_MS),
                    Some(Op::Release) => {
                        // It had asked to release: it gave its lease up
                        // then, though the store may still hold it for the
                        // rest of its promise.
                        let held = next.insts[i].held;
                        for g in next.ghost.iter_mut() {
                            if g.instance == i && Some(g.epoch) == held && !g.released {
                                g.released = true;
                                until = until.max(Some(g.valid_until));
                            }
                        }
                    }
                    _ => {}
                }
                next.unacked_until = next.unacked_until.max(until);
                next.insts[i].crashed = true;
                next.insts[i].pending = None;
                next.insts[i].held = None;
            }
            Action::Start(i, op) => {
                // The instance clock is read once, when the operation is
                // invoked: it keeps it until it answers.
                let started = Pending {
                    op,
                    clock_ms: next.now + next.insts[i].skew_ms,
                    acked_before: next.ghost.len(),
                    contended: next.contended(i),
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
        // An operation still in flight remembers whether someone else may
        // have held the tree at any instant since it was invoked.
        for j in 0..next.insts.len() {
            let contended = next.contended(j);
            if let Some(p) = next.insts[j].pending.as_mut() {
                p.contended |= contended;
            }
        }
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
        let invoked = Invoked {
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
                self.answered(next, i, op, &req, out, vec![], invoked);
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
                self.answered(next, i, op, &req, out, text, invoked);
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

    /// Records an operation's answer: the instance's belief, the ghost, the
    /// properties it may break and the races it reaches, judged against
    /// what was known when it was invoked (`invoked`).
    #[allow(clippy::too_many_arguments)]
    fn answered(
        &self,
        next: &mut State,
        i: usize,
        op: Op,
        req: &Request,
        out: Result<Reply, StoreError>,
        commands: Vec<String>,
        invoked: Invoked,
    ) {
        let Invoked {
            clock_ms,
            acked_before,
            contended,
        } = invoked;
        // A holder counts its lease from when it asked (all it can know):
        // the server time the operation was invoked at, which is now for an
        // operation of one command.
        let asked_at = clock_ms - next.insts[i].skew_ms;
        next.note = Note {
            commands,
            answer: Some(match &out {
                Ok(r) => serde_json::to_value(r).unwrap_or_default(),
                Err(e) => json!({"error": e}),
            }),
        };
        let now = next.now;
        let held = next.insts[i].held;
        // Only grants acknowledged before this operation was invoked come
        // before it; one acknowledged while it was in flight is concurrent
        // with it (the store may have ordered them either way).
        let before = &next.ghost[..acked_before.min(next.ghost.len())];
        let max_epoch = before.iter().map(|g| g.epoch).max().unwrap_or(0);
        // Its epoch was superseded: another instance was granted a newer one.
        let zombie = held.is_some_and(|e| before.iter().any(|g| g.epoch > e && g.instance != i));
        match op {
            Op::Renew if zombie => next.zombie_renew_reached = true,
            Op::Release if zombie => next.zombie_release_reached = true,
            _ => {}
        }
        let name = instance_name(i);
        match (op, out) {
            (_, Err(e)) if e.kind == ErrorKind::AdapterFailed => {
                // The harness lost the instance (its process died, hung or
                // wrote no answer): nothing is known of the store's answer.
                next.harness_error = Some(format!(
                    "instance {name}'s {} got no answer: {}",
                    req.op(),
                    e.message
                ));
            }
            (_, Err(e)) => {
                next.violate(
                    Property::Answered,
                    format!("instance {name}'s {} answered the error {e}", req.op()),
                );
            }
            (Op::Take, Ok(Reply::Granted { epoch, .. })) => {
                if epoch <= max_epoch {
                    next.violate(
                        Property::EpochMonotonic,
                        format!("instance {name} was granted epoch {epoch}, but epoch {max_epoch} had been granted before it asked"),
                    );
                }
                next.ghost.push(Grant {
                    instance: i,
                    epoch,
                    valid_until: asked_at + LEASE_MS,
                    released: false,
                });
                next.insts[i].held = Some(epoch);
                let live: Vec<&Grant> = next.live_grants().collect();
                if live.len() > 1 {
                    let who: Vec<String> = live
                        .iter()
                        .map(|g| {
                            format!(
                                "{} (epoch {}, promised until {})",
                                instance_name(g.instance),
                                g.epoch,
                                g.valid_until
                            )
                        })
                        .collect();
                    next.violate(
                        Property::OneLiveHolder,
                        format!(
                            "two live holders at server time {now}: {}",
                            who.join(" and ")
                        ),
                    );
                }
            }
            (Op::Take, Ok(Reply::Busy { .. })) => {
                let promised = next
                    .ghost
                    .iter()
                    .filter(|g| !g.released)
                    .map(|g| g.valid_until)
                    .chain(next.unacked_until)
                    .max();
                // If someone else may have held the tree at any instant
                // since the take was invoked (a live lease, another take in
                // flight), refusing is mutual exclusion: the property is
                // about trees whose holders are gone (crashed, or their
                // leases ran out). The schedule that crashes the one in
                // flight is explored too. Busy strictly after every promise
                // ran out: the tree is stuck.
                if !contended && promised.is_none_or(|p| now > p) {
                    let why = match promised {
                        Some(p) => format!("every lease had run out, the last at server time {p}"),
                        None if next.ghost.is_empty() => {
                            "no lease had ever been granted and no take was in flight".to_string()
                        }
                        None => "every lease granted had been released".to_string(),
                    };
                    next.violate(
                        Property::NoTreeStuck,
                        format!("instance {name}'s take at server time {now} was refused (busy) although no lease was live: {why}"),
                    );
                }
            }
            (Op::Renew, Ok(Reply::Renewed { .. })) => {
                if zombie {
                    next.violate(
                        Property::ZombieRefused,
                        format!(
                            "instance {name} renewed epoch {} after a newer epoch was granted",
                            held.unwrap_or(0)
                        ),
                    );
                }
                for g in next.ghost.iter_mut() {
                    if g.instance == i && Some(g.epoch) == held {
                        g.valid_until = asked_at + LEASE_MS;
                    }
                }
                let live: Vec<&Grant> = next.live_grants().collect();
                if live.len() > 1 {
                    next.violate(
                        Property::OneLiveHolder,
                        format!(
                            "instance {name}'s renew left two live holders at server time {now}"
                        ),
                    );
                }
            }
            (Op::Renew, Ok(_)) => next.insts[i].held = None,
            (Op::Release, Ok(Reply::Released {})) => {
                if zombie {
                    next.violate(
                        Property::ZombieRefused,
                        format!(
                            "instance {name} released epoch {} after a newer epoch was granted",
                            held.unwrap_or(0)
                        ),
                    );
                }
                for g in next.ghost.iter_mut() {
                    if g.instance == i && Some(g.epoch) == held {
                        g.released = true;
                    }
                }
                next.insts[i].held = None;
            }
            (Op::Release, Ok(_)) => next.insts[i].held = None,
            (_, Ok(_)) => {}
        }
    }
}

/// What an operation was invoked with, for judging its answer.
#[derive(Clone, Copy)]
struct Invoked {
    /// The instance clock it was invoked with.
    clock_ms: i64,
    /// How many grants had been acknowledged when it was invoked.
    acked_before: usize,
    /// Someone else may have held the tree at some instant since.
    contended: bool,
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

/// The nearest future instant a promised lease ends.
pub fn nearest_expiry(state: &State) -> Option<i64> {
    state
        .ghost
        .iter()
        .filter(|g| !g.released && g.valid_until > state.now)
        .map(|g| g.valid_until)
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
