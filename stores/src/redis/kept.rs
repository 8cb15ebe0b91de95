//! The kept execution ids of a Redis lease store, kept in SQLite.
//!
//! docs/PROTOCOL.md §4.2: a Redis lease store never writes kept executions to
//! Redis (a Redis that is not durable enough must not be able to lose them); it
//! hands them to a durable store it was constructed with. This is that store:
//! one table in a SQLite file, shared by every instance through its own
//! connection (WAL so readers do not block the writer, a busy timeout so
//! concurrent writers wait instead of failing, `synchronous=FULL` so an
//! acknowledged keep survives a power cut).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection};

use crate::durable_file;
use harness::contract::{ErrorKind, StoreError};

/// How long a write waits for another instance's write to finish.
/// How the kept executions name themselves in errors.
const WHAT: &str = "kept executions (SQLite)";

/// One instance's handle on the kept executions.
///
/// The connection sits behind a `Mutex` and every call runs on
/// `tokio::task::spawn_blocking`: SQLite calls block (fsync, waiting out the
/// busy timeout) and must not stall the async worker that also drives other
/// instances, and a blocking task needs an owned, `Send` handle — hence
/// `Arc<Mutex<Connection>>`. Calls of one instance are sequential, so the
/// mutex is never contended in practice.
#[derive(Clone)]
pub struct KeptExecutions {
    conn: Arc<Mutex<Connection>>,
    namespace: String,
}

impl KeptExecutions {
    /// Opens (creating if missing) the database at `path`. `namespace` (the
    /// instance's key prefix) keeps runs that share one file apart, as the
    /// prefix keeps them apart in Redis.
    pub async fn open(path: PathBuf, namespace: &str) -> Result<Self, StoreError> {
        let conn = blocking(move || open_db(&path)).await?;
        Ok(KeptExecutions {
            conn: Arc::new(Mutex::new(conn)),
            namespace: namespace.to_string(),
        })
    }

    /// Keeps `execution` for `tree`; keeping it again changes nothing.
    pub async fn keep(&self, tree: &str, execution: &str) -> Result<(), StoreError> {
        let (conn, ns, tree, execution) = (
            self.conn.clone(),
            self.namespace.clone(),
            tree.to_string(),
            execution.to_string(),
        );
        blocking(move || {
            let conn = lock(&conn);
            conn.execute(
                "INSERT OR IGNORE INTO kept_execution (namespace, tree, execution) \
                 VALUES (?1, ?2, ?3)",
                params![ns, tree, execution],
            )
            .map_err(sqlite_error)?;
            Ok(())
        })
        .await
    }

    /// The executions kept for `tree`, in the order they were first kept.
    pub async fn list(&self, tree: &str) -> Result<Vec<String>, StoreError> {
        let (conn, ns, tree) = (self.conn.clone(), self.namespace.clone(), tree.to_string());
        blocking(move || {
            let conn = lock(&conn);
            let mut stmt = conn
                .prepare_cached(
                    "SELECT execution FROM kept_execution \
                     WHERE namespace = ?1 AND tree = ?2 ORDER BY seq",
                )
                .map_err(sqlite_error)?;
            let rows = stmt
                .query_map(params![ns, tree], |row| row.get::<_, String>(0))
                .map_err(sqlite_error)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(sqlite_error)
        })
        .await
    }
}

fn open_db(path: &Path) -> Result<Connection, StoreError> {
    let conn = durable_file::open(path, WHAT)?;
    // seq orders executions by when they were first kept; the unique
    // constraint makes keeping idempotent.
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS kept_execution (
             seq INTEGER PRIMARY KEY AUTOINCREMENT,
             namespace TEXT NOT NULL,
             tree TEXT NOT NULL,
             execution TEXT NOT NULL,
             UNIQUE (namespace, tree, execution)
         );",
    )
    .map_err(sqlite_error)?;
    Ok(conn)
}

/// Runs a SQLite call off the async workers (see [`KeptExecutions`]).
async fn blocking<T, F>(f: F) -> Result<T, StoreError>
where
    F: FnOnce() -> Result<T, StoreError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        StoreError::new(
            ErrorKind::Unavailable,
            format!("kept executions: the SQLite task failed: {e}"),
        )
    })?
}

fn lock(conn: &Mutex<Connection>) -> std::sync::MutexGuard<'_, Connection> {
    // A poisoned lock means an earlier SQLite call panicked; the connection
    // itself is still consistent (SQLite rolls back an unfinished statement).
    conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A SQLite error of the kept executions, as the store answers it.
fn sqlite_error(e: rusqlite::Error) -> StoreError {
    durable_file::error(WHAT, e)
}
