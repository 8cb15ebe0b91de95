//! A world for a store with no Redis wire (`builtin:sqlite`, whose
//! `keeps_state_in_redis()` is false): the store's copy on a database file
//! of this world's own ([`StoreFactory::sqlite_copy`]), reading server time
//! from a manual clock the world sets per state, as the Redis world moves
//! its server's virtual clock.
//!
//! A step is one whole operation: the store sends no Redis commands and each
//! operation is one transaction, so there is nothing between its parts to
//! interleave. The state is the lease rows of the explored prefix (each a
//! [`KeyDump`], so the fingerprint reads its expiry relative to now, as it
//! reads a Redis key's) and server time; restore and snapshot write and read
//! those rows ([`LeaseRows`]). The judge, the search and the properties are
//! the Redis world's.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use harness::contract::ErrorKind;
use harness::gate::drive::instance_name;
use harness::server::{mark_owned, DIR_PREFIX};
use harness::store::{Hello, StoreClient, StoreFactory};
use serde_json::json;
use stores::sqlite::{LeaseRow, LeaseRows, ManualClock, SqliteClock};

use crate::judge;
use crate::moves::{answered, request, tick_target};
use crate::state::{Action, KeyDump, Logical, State};
use crate::world::shared::Shared;

/// What every step of such a world is, for the report.
pub const ONE_OPERATION: &str =
    "a step is one operation: the store sends no Redis commands, each operation is one transaction";

/// Worlds made by this process: each gets a directory of its own.
static WORLDS: AtomicU64 = AtomicU64::new(0);

/// A directory of this world's own, removed when it goes (and reaped as a
/// dead run's if this process is killed first).
struct OwnDir(PathBuf);

impl OwnDir {
    fn create() -> Result<OwnDir, String> {
        // Memory when there is some: the copy's durability is not what is
        // explored, and a transaction's sync then costs nothing.
        let shm = PathBuf::from("/dev/shm");
        let base = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        let n = WORLDS.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{DIR_PREFIX}explorer-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let own = OwnDir(dir);
        mark_owned(&own.0).map_err(|e| format!("cannot mark {}: {e}", own.0.display()))?;
        Ok(own)
    }
}

impl Drop for OwnDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The store's copy, its clock, its rows and its instances.
pub struct Local {
    // Field order is drop order: clients and rows close their connections
    // before the directory goes.
    shared: Arc<Shared>,
    clients: Vec<Option<Box<dyn StoreClient>>>,
    rows: LeaseRows,
    store: Arc<dyn StoreFactory>,
    clock: ManualClock,
    _dir: OwnDir,
}

impl Local {
    /// The store's copy on a file of its own, with `instances` instances to
    /// connect. Fails when the store offers no copy.
    pub fn new(shared: Arc<Shared>, instances: usize) -> Result<Local, String> {
        let dir = OwnDir::create()?;
        let path = dir.0.join("store.db");
        let clock = ManualClock::new(0);
        let store = shared
            .factory
            .sqlite_copy(&path, SqliteClock::Manual(clock.clone()))
            .ok_or_else(|| {
                format!(
                    "{} keeps its state outside Redis and offers no copy of itself to explore",
                    shared.factory.spec()
                )
            })?;
        let rows = LeaseRows::open(&path, &shared.prefix).map_err(|e| e.to_string())?;
        Ok(Local {
            shared,
            clients: (0..instances).map(|_| None).collect(),
            rows,
            store,
            clock,
            _dir: dir,
        })
    }

    fn rt(&self) {
        self.shared.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    /// Applies `action` to `next` (a copy of the state it starts from).
    pub async fn step_async(&mut self, next: &mut State, action: Action) -> Result<(), String> {
        self.restore(next)?;
        match action {
            Action::Tick(t) => {
                next.now = tick_target(next, t);
                self.clock.set_ms(next.now);
            }
            Action::Crash(i) => judge::crashed(next, i),
            Action::Start(i, op) => {
                let invoked = judge::invoked(next, i, op);
                let req = request(next, i, op);
                let mut client = self.client(i, invoked.clock_ms).await?;
                self.rt();
                let out = client.call(&req.to_call(), invoked.clock_ms).await;
                // A dead adapter answers every later call with its failure:
                // the next state starts from a fresh instance.
                if !matches!(&out, Err(e) if e.kind == ErrorKind::AdapterFailed) {
                    self.clients[i] = Some(client);
                }
                let what = vec![format!("one transaction: {}", req.op())];
                answered(next, i, op, &req, out, what, invoked);
            }
            Action::Fill | Action::Free => {
                return Err(format!(
                    "a copy of a store with no Redis wire has no server to fill: {ONE_OPERATION}"
                ))
            }
            Action::Lose(i, _) => {
                return Err(format!(
                    "instance {}'s reply cannot be lost: a copy of a store with no Redis wire has no connection to close ({ONE_OPERATION})",
                    instance_name(i)
                ))
            }
            Action::Continue(i) => {
                return Err(format!(
                    "instance {} has nothing to continue: {ONE_OPERATION}",
                    instance_name(i)
                ))
            }
        }
        judge::stepped(next);
        self.snapshot(next)
    }

    /// Puts the copy into `state`: its lease rows and its time.
    fn restore(&mut self, state: &State) -> Result<(), String> {
        self.clock.set_ms(state.now);
        let rows = state
            .keys
            .iter()
            .map(|k| serde_json::from_slice::<LeaseRow>(&k.dump))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("restore failed: a lease row of the state does not read: {e}"))?;
        self.rt();
        self.rows
            .replace(&rows)
            .map_err(|e| format!("restore failed: {e}"))
    }

    /// Reads the copy's lease rows back into `state`.
    fn snapshot(&mut self, state: &mut State) -> Result<(), String> {
        self.rt();
        let rows = self
            .rows
            .read()
            .map_err(|e| format!("snapshot failed: {e}"))?;
        state.keys = rows
            .into_iter()
            .map(|r| {
                let dump = serde_json::to_vec(&r)
                    .map_err(|e| format!("snapshot failed: a lease row does not write: {e}"))?;
                Ok(KeyDump::new(
                    r.tree.clone().into_bytes(),
                    dump,
                    None,
                    // Epochs are small numbers, the expiry an instant: the
                    // fingerprint reads the latter relative to now.
                    Logical::Json(json!({"lease": {
                        "holder": r.holder,
                        "epoch": r.epoch,
                        "expires_at_ms": r.expires_at_ms,
                        "released": r.released,
                    }})),
                ))
            })
            .collect::<Result<_, String>>()?;
        Ok(())
    }

    /// Instance `i`'s client, taken out for one call (connected if it has none).
    async fn client(&mut self, i: usize, now: i64) -> Result<Box<dyn StoreClient>, String> {
        if let Some(c) = self.clients[i].take() {
            return Ok(c);
        }
        let hello = Hello {
            instance: crate::symmetry::holder(i).into(),
            redis_url: String::new(),
            prefix: self.shared.prefix.clone(),
            opt_out: self.shared.opt_out.clone(),
        };
        let (_, client) = self
            .store
            .connect(&hello, now)
            .await
            .map_err(|e| format!("instance {} could not connect: {e}", instance_name(i)))?;
        Ok(client)
    }
}
