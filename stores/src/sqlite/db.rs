//! The synchronous core: one connection, every operation one `BEGIN
//! IMMEDIATE` transaction that reads the lease under the write lock.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::durable_file;
use harness::contract::{LeaseView, Reply, StoreError};

use super::{
    CallOutcome, CallRecord, DurableEffect, DurableState, EffectOutcome, EffectRecord, FenceReason,
    FinishOutcome, LeaseEvent, LogEntry, SqliteClock,
};

/// How long a transaction waits for another instance's write lock.
/// How the store names itself in errors.
const WHAT: &str = "sqlite store";

/// Leases are never deleted, so a tree's epoch only grows
/// (docs/PROTOCOL.md §4.2). Every table is keyed by `namespace` (the instance's
/// prefix) so that runs sharing one file stay apart. `lease_log.seq` and
/// `fenced_effect.seq` are drawn from one counter ([`next_seq`]), so the file
/// itself says whether an effect was written before or after a grant.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS lease (
    namespace TEXT NOT NULL,
    tree TEXT NOT NULL,
    holder TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    released INTEGER NOT NULL,
    PRIMARY KEY (namespace, tree)
);
CREATE TABLE IF NOT EXISTS lease_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    tree TEXT NOT NULL,
    event TEXT NOT NULL,
    holder TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    previous_holder TEXT,
    previous_epoch INTEGER
);
CREATE TABLE IF NOT EXISTS fenced_effect (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    tree TEXT NOT NULL,
    effect TEXT NOT NULL,
    holder TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    payload TEXT NOT NULL,
    applied_at_ms INTEGER NOT NULL,
    UNIQUE (namespace, tree, effect)
);
CREATE TABLE IF NOT EXISTS outbound_call (
    namespace TEXT NOT NULL,
    call TEXT NOT NULL,
    tree TEXT NOT NULL,
    holder TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    begun_at_ms INTEGER NOT NULL,
    response TEXT,
    finished_at_ms INTEGER,
    PRIMARY KEY (namespace, call)
);
CREATE TABLE IF NOT EXISTS kept_execution (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    tree TEXT NOT NULL,
    execution TEXT NOT NULL,
    UNIQUE (namespace, tree, execution)
);
";

/// A tree's lease row.
#[derive(Debug, Clone)]
struct Rec {
    holder: String,
    epoch: i64,
    expires_at_ms: i64,
    released: bool,
}

impl Rec {
    /// Unreleased and unexpired at `now` (a lease ends *at* its expiry).
    fn live(&self, now: i64) -> bool {
        !self.released && now < self.expires_at_ms
    }
}

/// One instance's connection and the clock it reads server time from.
pub(super) struct Db {
    conn: Connection,
    ns: String,
    clock: SqliteClock,
    /// The sabotage knob (see `SqliteStoreFactory::with_fence_outside_transaction`):
    /// `Some` splits `effect.apply` into a read and a later write.
    fence_pause: Option<Duration>,
}

impl Db {
    /// Opens (creating if missing) the database at `path` in WAL mode with
    /// `synchronous=FULL`, so an acknowledged write survives a power cut.
    pub(super) fn open(path: &Path, ns: &str, clock: SqliteClock) -> Result<Db, StoreError> {
        let conn = durable_file::open(path, WHAT)?;
        conn.execute_batch(SCHEMA).map_err(sqlite_error)?;
        Ok(Db {
            conn,
            ns: ns.to_string(),
            clock,
            fence_pause: None,
        })
    }

    /// The same connection, its `effect.apply` fenced outside the write's
    /// transaction with `pause` between them when `Some` (sabotage only).
    pub(super) fn with_fence_pause(mut self, pause: Option<Duration>) -> Db {
        self.fence_pause = pause;
        self
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction with server time read
    /// after the write lock is held, and commits it. Any failure rolls back.
    fn immediate<T>(
        &mut self,
        f: impl FnOnce(&Transaction<'_>, &str, i64) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let Db {
            conn, ns, clock, ..
        } = self;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite_error)?;
        let now = clock.now_ms();
        let out = f(&tx, ns, now).map_err(sqlite_error)?;
        tx.commit().map_err(sqlite_error)?;
        Ok(out)
    }

    pub(super) fn take(
        &mut self,
        tree: &str,
        holder: &str,
        ttl_ms: i64,
    ) -> Result<Reply, StoreError> {
        self.immediate(|tx, ns, now| {
            let prev = read_lease(tx, ns, tree)?;
            if let Some(r) = prev.as_ref().filter(|r| r.live(now)) {
                // A live lease, even the caller's own: it may adopt that epoch.
                return Ok(Reply::Busy {
                    holder: r.holder.clone(),
                    epoch: r.epoch,
                    expires_at_ms: r.expires_at_ms,
                });
            }
            let epoch = prev.as_ref().map_or(0, |r| r.epoch) + 1;
            let expires_at_ms = now.saturating_add(ttl_ms);
            let (event, previous) = match &prev {
                Some(r) if !r.released => (LeaseEvent::Takeover, Some(r)),
                _ => (LeaseEvent::Grant, None),
            };
            tx.execute(
                "INSERT INTO lease (namespace, tree, holder, epoch, expires_at_ms, released) \
                 VALUES (?1, ?2, ?3, ?4, ?5, 0) \
                 ON CONFLICT (namespace, tree) DO UPDATE SET holder = excluded.holder, \
                 epoch = excluded.epoch, expires_at_ms = excluded.expires_at_ms, released = 0",
                params![ns, tree, holder, epoch, expires_at_ms],
            )?;
            append_log(
                tx,
                ns,
                &LogEntry {
                    seq: 0,
                    tree: tree.to_string(),
                    event,
                    holder: holder.to_string(),
                    epoch,
                    at_ms: now,
                    expires_at_ms,
                    previous_holder: previous.map(|r| r.holder.clone()),
                    previous_epoch: previous.map(|r| r.epoch),
                },
            )?;
            Ok(Reply::Granted {
                epoch,
                expires_at_ms,
            })
        })
    }

    pub(super) fn renew(
        &mut self,
        tree: &str,
        holder: &str,
        epoch: i64,
        ttl_ms: i64,
    ) -> Result<Reply, StoreError> {
        self.immediate(|tx, ns, now| {
            let Some(r) = read_lease(tx, ns, tree)?.filter(|r| r.live(now)) else {
                // An expired or released lease is never renewed, even if
                // nobody took it.
                return Ok(Reply::Lost {
                    holder: None,
                    epoch: None,
                });
            };
            if r.holder != holder || r.epoch != epoch {
                return Ok(Reply::Lost {
                    holder: Some(r.holder),
                    epoch: Some(r.epoch),
                });
            }
            let expires_at_ms = now.saturating_add(ttl_ms);
            tx.execute(
                "UPDATE lease SET expires_at_ms = ?3 WHERE namespace = ?1 AND tree = ?2",
                params![ns, tree, expires_at_ms],
            )?;
            append_log(
                tx,
                ns,
                &LogEntry {
                    seq: 0,
                    tree: tree.to_string(),
                    event: LeaseEvent::Renew,
                    holder: holder.to_string(),
                    epoch,
                    at_ms: now,
                    expires_at_ms,
                    previous_holder: None,
                    previous_epoch: None,
                },
            )?;
            Ok(Reply::Renewed { expires_at_ms })
        })
    }

    pub(super) fn release(
        &mut self,
        tree: &str,
        holder: &str,
        epoch: i64,
    ) -> Result<Reply, StoreError> {
        self.immediate(|tx, ns, now| {
            // As the Redis store: a matching release of an expired (not yet
            // taken over) lease is still `released`; the epoch is kept.
            let Some(r) = read_lease(tx, ns, tree)?
                .filter(|r| !r.released && r.holder == holder && r.epoch == epoch)
            else {
                return Ok(Reply::NotHeld {});
            };
            tx.execute(
                "UPDATE lease SET released = 1 WHERE namespace = ?1 AND tree = ?2",
                params![ns, tree],
            )?;
            append_log(
                tx,
                ns,
                &LogEntry {
                    seq: 0,
                    tree: tree.to_string(),
                    event: LeaseEvent::Release,
                    holder: r.holder,
                    epoch: r.epoch,
                    at_ms: now,
                    expires_at_ms: r.expires_at_ms,
                    previous_holder: None,
                    previous_epoch: None,
                },
            )?;
            Ok(Reply::Released {})
        })
    }

    pub(super) fn read(&mut self, tree: &str) -> Result<Reply, StoreError> {
        self.immediate(|tx, ns, now| {
            Ok(Reply::Lease(read_lease(tx, ns, tree)?.map(|r| LeaseView {
                live: r.live(now),
                holder: Some(r.holder),
                epoch: r.epoch,
                expires_at_ms: Some(r.expires_at_ms),
            })))
        })
    }

    pub(super) fn keep(&mut self, tree: &str, execution: &str) -> Result<Reply, StoreError> {
        self.immediate(|tx, ns, _| {
            tx.execute(
                "INSERT OR IGNORE INTO kept_execution (namespace, tree, execution) \
                 VALUES (?1, ?2, ?3)",
                params![ns, tree, execution],
            )?;
            Ok(Reply::Kept {})
        })
    }

    pub(super) fn kept(&mut self, tree: &str) -> Result<Reply, StoreError> {
        self.immediate(|tx, ns, _| {
            let mut stmt = tx.prepare_cached(
                "SELECT execution FROM kept_execution \
                 WHERE namespace = ?1 AND tree = ?2 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![ns, tree], |row| row.get::<_, String>(0))?;
            Ok(Reply::Executions(rows.collect::<Result<Vec<_>, _>>()?))
        })
    }

    pub(super) fn apply_effect(
        &mut self,
        tree: &str,
        holder: &str,
        epoch: i64,
        effect: &str,
        payload: &str,
    ) -> Result<EffectOutcome, StoreError> {
        if let Some(pause) = self.fence_pause {
            return self.apply_effect_fenced_outside(tree, holder, epoch, effect, payload, pause);
        }
        self.immediate(|tx, ns, now| {
            if effect_known(tx, ns, tree, effect)? {
                return Ok(EffectOutcome::Duplicate);
            }
            if let Err((epoch, reason)) =
                fence(read_lease(tx, ns, tree)?.as_ref(), holder, epoch, now)
            {
                return Ok(EffectOutcome::Fenced { epoch, reason });
            }
            insert_effect(tx, ns, tree, effect, holder, epoch, payload, now)?;
            Ok(EffectOutcome::Applied)
        })
    }

    /// The sabotaged `effect.apply`: the duplicate check and the fence in
    /// one transaction, then `pause`, then the write in another, so the
    /// lease can change between the check and the write. The write is kept
    /// whatever happened meanwhile (a check-then-act bug, not a crash).
    fn apply_effect_fenced_outside(
        &mut self,
        tree: &str,
        holder: &str,
        epoch: i64,
        effect: &str,
        payload: &str,
        pause: Duration,
    ) -> Result<EffectOutcome, StoreError> {
        let checked = self.immediate(|tx, ns, now| {
            if effect_known(tx, ns, tree, effect)? {
                return Ok(Some(EffectOutcome::Duplicate));
            }
            Ok(
                fence(read_lease(tx, ns, tree)?.as_ref(), holder, epoch, now)
                    .err()
                    .map(|(epoch, reason)| EffectOutcome::Fenced { epoch, reason }),
            )
        })?;
        if let Some(refused) = checked {
            return Ok(refused);
        }
        std::thread::sleep(pause);
        self.immediate(|tx, ns, now| {
            if effect_known(tx, ns, tree, effect)? {
                return Ok(EffectOutcome::Duplicate);
            }
            insert_effect(tx, ns, tree, effect, holder, epoch, payload, now)?;
            Ok(EffectOutcome::Applied)
        })
    }

    /// Every effect and lease log entry of this instance's namespace, each
    /// with its position in the file's one sequence.
    pub(super) fn durable_state(&mut self) -> Result<DurableState, StoreError> {
        self.immediate(|tx, ns, _| {
            let mut stmt = tx.prepare_cached(
                "SELECT seq, tree, effect, holder, epoch FROM fenced_effect \
                 WHERE namespace = ?1 ORDER BY seq",
            )?;
            let effects = stmt
                .query_map(params![ns], |row| {
                    Ok(DurableEffect {
                        seq: row.get(0)?,
                        tree: row.get(1)?,
                        effect: row.get(2)?,
                        holder: row.get(3)?,
                        epoch: row.get(4)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut stmt = tx.prepare_cached(
                "SELECT seq, event, holder, epoch, at_ms, expires_at_ms, previous_holder, \
                 previous_epoch, tree FROM lease_log WHERE namespace = ?1 ORDER BY seq",
            )?;
            let log = stmt
                .query_map(params![ns], log_entry)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(DurableState { effects, log })
        })
    }

    pub(super) fn effects(&mut self, tree: &str) -> Result<Vec<EffectRecord>, StoreError> {
        self.immediate(|tx, ns, _| {
            let mut stmt = tx.prepare_cached(
                "SELECT effect, holder, epoch, payload, applied_at_ms FROM fenced_effect \
                 WHERE namespace = ?1 AND tree = ?2 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![ns, tree], |row| {
                Ok(EffectRecord {
                    effect: row.get(0)?,
                    holder: row.get(1)?,
                    epoch: row.get(2)?,
                    payload: row.get(3)?,
                    applied_at_ms: row.get(4)?,
                })
            })?;
            rows.collect()
        })
    }

    pub(super) fn begin_call(
        &mut self,
        tree: &str,
        holder: &str,
        epoch: i64,
        call: &str,
    ) -> Result<CallOutcome, StoreError> {
        self.immediate(|tx, ns, now| {
            if let Some(rec) = read_call(tx, ns, call)? {
                return Ok(CallOutcome::Duplicate { record: rec });
            }
            if let Err((epoch, reason)) =
                fence(read_lease(tx, ns, tree)?.as_ref(), holder, epoch, now)
            {
                return Ok(CallOutcome::Fenced { epoch, reason });
            }
            tx.execute(
                "INSERT INTO outbound_call (namespace, call, tree, holder, epoch, begun_at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![ns, call, tree, holder, epoch, now],
            )?;
            Ok(CallOutcome::Begun)
        })
    }

    pub(super) fn finish_call(
        &mut self,
        call: &str,
        response: &str,
    ) -> Result<FinishOutcome, StoreError> {
        self.immediate(|tx, ns, now| {
            let Some(rec) = read_call(tx, ns, call)? else {
                return Ok(FinishOutcome::NotBegun);
            };
            if let Some(response) = rec.response {
                return Ok(FinishOutcome::AlreadyFinished { response });
            }
            if let Err((epoch, reason)) = fence(
                read_lease(tx, ns, &rec.tree)?.as_ref(),
                &rec.holder,
                rec.epoch,
                now,
            ) {
                return Ok(FinishOutcome::Fenced { epoch, reason });
            }
            tx.execute(
                "UPDATE outbound_call SET response = ?3, finished_at_ms = ?4 \
                 WHERE namespace = ?1 AND call = ?2",
                params![ns, call, response, now],
            )?;
            Ok(FinishOutcome::Finished)
        })
    }

    pub(super) fn call_record(&mut self, call: &str) -> Result<Option<CallRecord>, StoreError> {
        self.immediate(|tx, ns, _| read_call(tx, ns, call))
    }

    pub(super) fn lease_log(&mut self, tree: &str) -> Result<Vec<LogEntry>, StoreError> {
        self.immediate(|tx, ns, _| {
            let mut stmt = tx.prepare_cached(
                "SELECT seq, event, holder, epoch, at_ms, expires_at_ms, previous_holder, \
                 previous_epoch, tree FROM lease_log WHERE namespace = ?1 AND tree = ?2 \
                 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![ns, tree], log_entry)?;
            rows.collect()
        })
    }
}

/// One `lease_log` row selected as `seq, event, holder, epoch, at_ms,
/// expires_at_ms, previous_holder, previous_epoch, tree`.
fn log_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<LogEntry> {
    let event: String = row.get(1)?;
    Ok(LogEntry {
        seq: row.get(0)?,
        tree: row.get(8)?,
        event: LeaseEvent::from_name(&event).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                1,
                rusqlite::types::Type::Text,
                format!("unknown lease log event {event:?}").into(),
            )
        })?,
        holder: row.get(2)?,
        epoch: row.get(3)?,
        at_ms: row.get(4)?,
        expires_at_ms: row.get(5)?,
        previous_holder: row.get(6)?,
        previous_epoch: row.get(7)?,
    })
}

/// Whether `holder` at `epoch` holds the tree's lease live at `now`; if not,
/// the tree's current epoch (0 when never granted) and why.
///
/// Decision: an effect needs the *live* lease, not only the newest epoch. A
/// lease that expired unreleased fences its own holder too, even before
/// anyone takes over, so every applied effect was applied while its holder
/// was the one live holder on server time (one-live-holder extends to
/// effects), and a holder that outlived its ttl must take the lease again.
fn fence(rec: Option<&Rec>, holder: &str, epoch: i64, now: i64) -> Result<(), (i64, FenceReason)> {
    let Some(r) = rec else {
        return Err((0, FenceReason::NoLease));
    };
    if r.epoch > epoch {
        return Err((r.epoch, FenceReason::Superseded));
    }
    if r.epoch != epoch || r.holder != holder {
        return Err((r.epoch, FenceReason::NotHolder));
    }
    if r.released {
        return Err((r.epoch, FenceReason::Released));
    }
    if now >= r.expires_at_ms {
        return Err((r.epoch, FenceReason::Expired));
    }
    Ok(())
}

fn read_lease(tx: &Transaction<'_>, ns: &str, tree: &str) -> rusqlite::Result<Option<Rec>> {
    tx.query_row(
        "SELECT holder, epoch, expires_at_ms, released FROM lease \
         WHERE namespace = ?1 AND tree = ?2",
        params![ns, tree],
        |row| {
            Ok(Rec {
                holder: row.get(0)?,
                epoch: row.get(1)?,
                expires_at_ms: row.get(2)?,
                released: row.get::<_, i64>(3)? != 0,
            })
        },
    )
    .optional()
}

fn read_call(tx: &Transaction<'_>, ns: &str, call: &str) -> rusqlite::Result<Option<CallRecord>> {
    tx.query_row(
        "SELECT tree, holder, epoch, begun_at_ms, response, finished_at_ms FROM outbound_call \
         WHERE namespace = ?1 AND call = ?2",
        params![ns, call],
        |row| {
            Ok(CallRecord {
                call: call.to_string(),
                tree: row.get(0)?,
                holder: row.get(1)?,
                epoch: row.get(2)?,
                begun_at_ms: row.get(3)?,
                response: row.get(4)?,
                finished_at_ms: row.get(5)?,
            })
        },
    )
    .optional()
}

/// The next position in the file's one sequence of lease log entries and
/// effects. Called inside a `BEGIN IMMEDIATE` transaction, so no other
/// writer can draw the same number; the order of the numbers is the order
/// of the commits.
fn next_seq(tx: &Transaction<'_>) -> rusqlite::Result<i64> {
    tx.query_row(
        "SELECT MAX(COALESCE((SELECT MAX(seq) FROM lease_log), 0), \
         COALESCE((SELECT MAX(seq) FROM fenced_effect), 0)) + 1",
        [],
        |row| row.get(0),
    )
}

fn effect_known(
    tx: &Transaction<'_>,
    ns: &str,
    tree: &str,
    effect: &str,
) -> rusqlite::Result<bool> {
    let known: Option<i64> = tx
        .query_row(
            "SELECT 1 FROM fenced_effect WHERE namespace = ?1 AND tree = ?2 AND effect = ?3",
            params![ns, tree, effect],
            |row| row.get(0),
        )
        .optional()?;
    Ok(known.is_some())
}

#[allow(clippy::too_many_arguments)]
fn insert_effect(
    tx: &Transaction<'_>,
    ns: &str,
    tree: &str,
    effect: &str,
    holder: &str,
    epoch: i64,
    payload: &str,
    now: i64,
) -> rusqlite::Result<()> {
    let seq = next_seq(tx)?;
    tx.execute(
        "INSERT INTO fenced_effect \
         (seq, namespace, tree, effect, holder, epoch, payload, applied_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![seq, ns, tree, effect, holder, epoch, payload, now],
    )?;
    Ok(())
}

fn append_log(tx: &Transaction<'_>, ns: &str, e: &LogEntry) -> rusqlite::Result<()> {
    let seq = next_seq(tx)?;
    tx.execute(
        "INSERT INTO lease_log (seq, namespace, tree, event, holder, epoch, at_ms, \
         expires_at_ms, previous_holder, previous_epoch) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            seq,
            ns,
            e.tree,
            e.event.name(),
            e.holder,
            e.epoch,
            e.at_ms,
            e.expires_at_ms,
            e.previous_holder,
            e.previous_epoch
        ],
    )?;
    Ok(())
}

/// A SQLite error of the store, as it answers it.
fn sqlite_error(e: rusqlite::Error) -> StoreError {
    durable_file::error(WHAT, e)
}
