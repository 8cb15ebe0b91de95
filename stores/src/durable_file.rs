//! A SQLite file opened the one way every durable store of storeproof
//! opens it (the kept executions beside the Redis stores, the SQLite
//! fencing set): parent directory created, a busy timeout, WAL journaling
//! (refused if the file system will not do it) and `synchronous=FULL`, so
//! an acknowledged write survives a power cut. Errors name `what`.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};

use harness::contract::{ErrorKind, StoreError};

/// How long a write waits for another instance's lock before it is given
/// up as `unavailable`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating if missing) the SQLite file at `path` for `what` (e.g.
/// `sqlite store`), durable as the module says.
pub(crate) fn open(path: &Path, what: &str) -> Result<Connection, StoreError> {
    // A fresh run directory may not exist yet; the file itself SQLite creates.
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            StoreError::new(
                ErrorKind::Unavailable,
                format!("{what}: cannot create {}: {e}", parent.display()),
            )
        })?;
    }
    let conn = Connection::open(path).map_err(|e| error(what, e))?;
    // The busy timeout first: switching to WAL and creating tables take
    // locks another instance may hold right now.
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| error(what, e))?;
    let mode: Option<String> = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .optional()
        .map_err(|e| error(what, e))?;
    if !mode
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("wal"))
    {
        return Err(StoreError::new(
            ErrorKind::Unavailable,
            format!(
                "{what}: {} refused WAL journaling (journal_mode is {mode:?})",
                path.display()
            ),
        ));
    }
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(|e| error(what, e))?;
    Ok(conn)
}

/// A SQLite error of `what` as the store answers it: a full disk is
/// `store_full` (the transaction rolled back: nothing was written);
/// anything else (a lock held past the busy timeout, I/O) leaves the
/// outcome unknown.
pub(crate) fn error(what: &str, e: rusqlite::Error) -> StoreError {
    let kind = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => ErrorKind::StoreFull,
        _ => ErrorKind::Unavailable,
    };
    StoreError::new(kind, format!("{what}: {e}"))
}
