//! The SQLite fencing set (`builtin:sqlite`, docs/CONTRACTS.md §1.4): the
//! reference durable backend. A lease store with the contract of
//! docs/PROTOCOL.md §4.2, fenced effects, outbound calls begun at most once,
//! and the lease log, all in one SQLite file (WAL, `synchronous=FULL`), every
//! instance its own connection.
//!
//! - **Server time** is the [`SqliteClock`] the factory was built with, read
//!   inside each transaction after its write lock is taken; the caller's
//!   `clock_ms` is never used.
//! - Every operation is one `BEGIN IMMEDIATE` transaction: the lease is read
//!   under the write lock, so an effect, a call or a take sees the lease as
//!   it is at its own commit, whichever instance reached the lock first.
//! - Leases are never deleted: a tree's epoch only grows.

#[cfg(test)]
mod clock_follow_tests;
mod db;
mod rows;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use harness::contract::{Call, Contract, ErrorKind, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};

use db::Db;
pub use harness::store::{ManualClock, SqliteClock};
pub use rows::{LeaseRow, LeaseRows};

/// The name the store reports in its hello.
pub const STORE_NAME: &str = "storeproof-sqlite";

// The store's outcomes and its durable account are pure data, judged by
// checkers that must not depend on SQLite: they live in the model crate.
pub use model::observed::{
    CallOutcome, CallRecord, DurableEffect, DurableState, EffectOutcome, EffectRecord, FenceReason,
    FinishOutcome, LeaseEvent, LogEntry,
};

/// Makes instances of the SQLite store (`builtin:sqlite`) on one file.
#[derive(Debug, Clone)]
pub struct SqliteStoreFactory {
    path: PathBuf,
    clock: SqliteClock,
    fence_pause: Option<Duration>,
}

impl SqliteStoreFactory {
    /// A factory whose instances share the database at `path` (created if
    /// missing; one file per run) and read server time from `clock`.
    pub fn new(path: PathBuf, clock: SqliteClock) -> Self {
        SqliteStoreFactory {
            path,
            clock,
            fence_pause: None,
        }
    }

    /// A BROKEN store, for the sabotage set only (`sabotage:fence-outside-transaction`):
    /// `effect.apply` reads and checks the lease in one transaction, waits
    /// `pause`, then writes the effect in another, so the lease can be taken
    /// over between the check and the write and a zombie's effect lands
    /// after the newer grant. Every other operation is unchanged.
    pub fn with_fence_outside_transaction(mut self, pause: Duration) -> Self {
        self.fence_pause = Some(pause);
        self
    }

    /// Every effect and lease log entry under `prefix`, numbered in the
    /// file's one sequence (see [`DurableState`]).
    pub async fn durable_state_of(&self, prefix: &str) -> Result<DurableState, StoreError> {
        let (path, ns, clock) = (self.path.clone(), prefix.to_owned(), self.clock.clone());
        blocking(move || Db::open(&path, &ns, clock)?.durable_state()).await
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The server clock (move a manual one with [`SqliteClock::as_manual`]).
    pub fn clock(&self) -> &SqliteClock {
        &self.clock
    }

    fn info() -> StoreInfo {
        StoreInfo {
            name: STORE_NAME.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            contracts: vec![Contract::Lease, Contract::Fenced],
        }
    }

    /// Connects one instance with its own connection, typed, for the fenced
    /// effects and calls. `hello.prefix` keeps runs sharing a file apart;
    /// `redis_url` and `opt_out` are not used (the file is always durable).
    pub async fn connect_sqlite(&self, hello: &Hello) -> Result<SqliteStoreClient, StoreError> {
        let (path, ns, clock) = (self.path.clone(), hello.prefix.clone(), self.clock.clone());
        let pause = self.fence_pause;
        let db = blocking(move || Ok(Db::open(&path, &ns, clock)?.with_fence_pause(pause))).await?;
        Ok(SqliteStoreClient {
            db: Arc::new(Mutex::new(db)),
        })
    }
}

#[async_trait]
impl StoreFactory for SqliteStoreFactory {
    fn spec(&self) -> String {
        "builtin:sqlite".to_string()
    }

    fn keeps_state_in_redis(&self) -> bool {
        // Everything is in the SQLite file; the hello's Redis server is unused.
        false
    }

    async fn connect(
        &self,
        hello: &Hello,
        _clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let client = self.connect_sqlite(hello).await?;
        Ok((Self::info(), Box::new(client)))
    }

    async fn durable_state(&self, prefix: &str) -> Result<Option<DurableState>, StoreError> {
        self.durable_state_of(prefix).await.map(Some)
    }

    fn sqlite_copy(&self, path: &Path, clock: SqliteClock) -> Option<Arc<dyn StoreFactory>> {
        Some(Arc::new(SqliteStoreFactory {
            path: path.to_path_buf(),
            clock,
            fence_pause: self.fence_pause,
        }))
    }
}

/// One instance of the SQLite store: its own connection.
///
/// The connection sits behind a `Mutex` and every call runs on
/// `spawn_blocking`: SQLite blocks (fsync, waiting out another instance's
/// lock) and must not stall the async workers driving other instances.
#[derive(Clone)]
pub struct SqliteStoreClient {
    db: Arc<Mutex<Db>>,
}

impl SqliteStoreClient {
    async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut Db) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let db = self.db.clone();
        blocking(move || {
            // A poisoned lock means an earlier call panicked; SQLite rolled
            // its transaction back, so the connection is still consistent.
            let mut db = db.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut db)
        })
        .await
    }

    /// `effect.apply {tree, holder, epoch, effect, payload}`: records the
    /// effect only if `holder` holds the live lease at `epoch` at this
    /// transaction's server time, the lease read under the write lock.
    pub async fn apply_effect(
        &self,
        tree: &str,
        holder: &str,
        epoch: i64,
        effect: &str,
        payload: &str,
    ) -> Result<EffectOutcome, StoreError> {
        check_ids(
            &[("tree", tree), ("holder", holder), ("effect", effect)],
            epoch,
        )?;
        let (t, h, e, p) = (
            tree.to_owned(),
            holder.to_owned(),
            effect.to_owned(),
            payload.to_owned(),
        );
        self.run(move |db| db.apply_effect(&t, &h, epoch, &e, &p))
            .await
    }

    /// The effects applied for `tree`, in the order applied.
    pub async fn effects(&self, tree: &str) -> Result<Vec<EffectRecord>, StoreError> {
        let t = tree.to_owned();
        self.run(move |db| db.effects(&t)).await
    }

    /// `call.begin {tree, holder, epoch, call}`: fenced as
    /// [`Self::apply_effect`]; a call id is begun at most once.
    pub async fn begin_call(
        &self,
        tree: &str,
        holder: &str,
        epoch: i64,
        call: &str,
    ) -> Result<CallOutcome, StoreError> {
        check_ids(&[("tree", tree), ("holder", holder), ("call", call)], epoch)?;
        let (t, h, c) = (tree.to_owned(), holder.to_owned(), call.to_owned());
        self.run(move |db| db.begin_call(&t, &h, epoch, &c)).await
    }

    /// `call.finish {call, response}`: fenced on the lease of the holder and
    /// epoch that began the call; the first response stands.
    pub async fn finish_call(
        &self,
        call: &str,
        response: &str,
    ) -> Result<FinishOutcome, StoreError> {
        check_ids(&[("call", call)], 0)?;
        let (c, r) = (call.to_owned(), response.to_owned());
        self.run(move |db| db.finish_call(&c, &r)).await
    }

    /// The call as recorded, or `None` when never begun.
    pub async fn call_record(&self, call: &str) -> Result<Option<CallRecord>, StoreError> {
        let c = call.to_owned();
        self.run(move |db| db.call_record(&c)).await
    }

    /// The lease log of `tree`: every grant, takeover, renew and release, in
    /// the order they happened.
    pub async fn lease_log(&self, tree: &str) -> Result<Vec<LogEntry>, StoreError> {
        let t = tree.to_owned();
        self.run(move |db| db.lease_log(&t)).await
    }
}

#[async_trait]
impl StoreClient for SqliteStoreClient {
    async fn call(&mut self, call: &Call, _clock_ms: i64) -> Result<Reply, StoreError> {
        // Bad input is refused before anything is touched.
        let req = Request::parse(call)?;
        if !matches!(req.contract(), Contract::Lease | Contract::Fenced) {
            return Err(StoreError::new(
                ErrorKind::Unsupported,
                format!(
                    "{}: the SQLite store offers only the lease contract and its fencing set",
                    req.op()
                ),
            ));
        }
        self.run(move |db| match &req {
            Request::LeaseTake {
                tree,
                holder,
                ttl_ms,
            } => db.take(tree, holder, *ttl_ms),
            Request::LeaseRenew {
                tree,
                holder,
                epoch,
                ttl_ms,
            } => db.renew(tree, holder, *epoch, *ttl_ms),
            Request::LeaseRelease {
                tree,
                holder,
                epoch,
            } => db.release(tree, holder, *epoch),
            Request::LeaseRead { tree } => db.read(tree),
            Request::LeaseKeepExecution { tree, execution } => db.keep(tree, execution),
            Request::LeaseKeptExecutions { tree } => db.kept(tree),
            Request::EffectApply {
                tree,
                holder,
                epoch,
                effect,
                payload,
            } => db
                .apply_effect(tree, holder, *epoch, effect, payload)
                .map(EffectOutcome::into_reply),
            Request::CallBegin {
                tree,
                holder,
                epoch,
                call,
            } => db
                .begin_call(tree, holder, *epoch, call)
                .map(CallOutcome::into_reply),
            Request::CallFinish { call, response } => db
                .finish_call(call, response)
                .map(FinishOutcome::into_reply),
            other => Err(StoreError::new(
                ErrorKind::Unsupported,
                format!(
                    "{}: the SQLite store offers only the lease contract and its fencing set",
                    other.op()
                ),
            )),
        })
        .await
    }
}

/// The value rules of docs/PROTOCOL.md §4.1 for the fencing operations: ids
/// non-empty, epochs not negative.
fn check_ids(ids: &[(&str, &str)], epoch: i64) -> Result<(), StoreError> {
    let mut problems: Vec<String> = ids
        .iter()
        .filter(|(_, v)| v.is_empty())
        .map(|(name, _)| format!("{name} must be a non-empty string"))
        .collect();
    if epoch < 0 {
        problems.push(format!("epoch must be a whole number, got {epoch}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(StoreError::new(ErrorKind::BadRequest, problems.join("; ")))
    }
}

/// Runs a SQLite call off the async workers (see [`SqliteStoreClient`]).
async fn blocking<T, F>(f: F) -> Result<T, StoreError>
where
    F: FnOnce() -> Result<T, StoreError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        StoreError::new(
            ErrorKind::Unavailable,
            format!("sqlite store: the SQLite task failed: {e}"),
        )
    })?
}
