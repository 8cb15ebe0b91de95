//! The lease rows of one prefix, read and put back whole: how a harness
//! that must restore the store to any earlier state (the explorer) snapshots
//! a SQLite store, as `DUMP`/`RESTORE` snapshot a Redis one.

use std::path::Path;

use rusqlite::{params, Connection, TransactionBehavior};
use serde::{Deserialize, Serialize};

use crate::durable_file;
use harness::contract::StoreError;

/// How the rows' errors name the store.
const WHAT: &str = "sqlite store (lease rows)";

/// One tree's lease as the store keeps it: everything a lease operation
/// reads, so two files with the same rows answer every lease call alike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRow {
    /// The tree.
    pub tree: String,
    /// The last holder granted.
    pub holder: String,
    /// The tree's epoch (it only grows).
    pub epoch: i64,
    /// Server time the lease ends at, ms.
    pub expires_at_ms: i64,
    /// Released by its holder.
    pub released: bool,
}

/// A connection to a SQLite store's file that reads and replaces the lease
/// rows of one prefix. Only the lease rows are state: effects, calls and
/// kept executions are left alone, and the lease log of the prefix (the
/// path to a state, which no lease operation reads) is cleared on replace
/// so a long exploration does not grow the file.
pub struct LeaseRows {
    conn: Connection,
    ns: String,
}

impl LeaseRows {
    /// Opens the store's file at `path` (creating it and its tables if
    /// missing) for the rows under `prefix`. The connection writes without
    /// waiting for the disk: the rows it puts back are a harness's copy,
    /// never an acknowledged write of the store.
    pub fn open(path: &Path, prefix: &str) -> Result<LeaseRows, StoreError> {
        let conn = durable_file::open(path, WHAT)?;
        conn.execute_batch(super::db::SCHEMA).map_err(error)?;
        conn.pragma_update(None, "synchronous", "OFF")
            .map_err(error)?;
        Ok(LeaseRows {
            conn,
            ns: prefix.to_string(),
        })
    }

    /// Every lease row under the prefix, ordered by tree.
    pub fn read(&self) -> Result<Vec<LeaseRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT tree, holder, epoch, expires_at_ms, released FROM lease \
                 WHERE namespace = ?1 ORDER BY tree",
            )
            .map_err(error)?;
        let rows = stmt
            .query_map(params![self.ns], |row| {
                Ok(LeaseRow {
                    tree: row.get(0)?,
                    holder: row.get(1)?,
                    epoch: row.get(2)?,
                    expires_at_ms: row.get(3)?,
                    released: row.get::<_, i64>(4)? != 0,
                })
            })
            .map_err(error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(error)
    }

    /// Makes `rows` the prefix's only lease rows, in one transaction (the
    /// store's instances see the old rows or the new, never a mix).
    pub fn replace(&mut self, rows: &[LeaseRow]) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(error)?;
        tx.execute("DELETE FROM lease WHERE namespace = ?1", params![self.ns])
            .map_err(error)?;
        tx.execute(
            "DELETE FROM lease_log WHERE namespace = ?1",
            params![self.ns],
        )
        .map_err(error)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO lease (namespace, tree, holder, epoch, expires_at_ms, released) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(error)?;
            for r in rows {
                insert
                    .execute(params![
                        self.ns,
                        r.tree,
                        r.holder,
                        r.epoch,
                        r.expires_at_ms,
                        i64::from(r.released)
                    ])
                    .map_err(error)?;
            }
        }
        tx.commit().map_err(error)
    }
}

fn error(e: rusqlite::Error) -> StoreError {
    durable_file::error(WHAT, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::{SqliteClock, SqliteStoreFactory};
    use harness::contract::{Reply, Request};
    use harness::store::{Hello, StoreFactory};

    /// Rows read after a take put back later undo what came after: a second
    /// take is busy again, the epoch it saw is restored; another prefix's
    /// rows are never touched.
    #[tokio::test]
    async fn replaced_rows_are_the_state_the_store_answers_from() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let clock = SqliteClock::manual(1_000);
        let factory = SqliteStoreFactory::new(path.clone(), clock.clone());
        let connect = |prefix: &str| Hello {
            instance: "a".into(),
            redis_url: String::new(),
            prefix: prefix.into(),
            opt_out: None,
        };
        let (_, mut a) = factory.connect(&connect("p:"), 0).await.unwrap();
        let (_, mut other) = factory.connect(&connect("q:"), 0).await.unwrap();
        let take = |h: &str| {
            Request::LeaseTake {
                tree: "t".into(),
                holder: h.into(),
                ttl_ms: 100,
            }
            .to_call()
        };
        let mut rows = LeaseRows::open(&path, "p:").unwrap();
        assert_eq!(rows.read().unwrap(), vec![]);
        a.call(&take("a"), 0).await.unwrap();
        other.call(&take("z"), 0).await.unwrap();
        let after_first = rows.read().unwrap();
        assert_eq!(
            after_first,
            vec![LeaseRow {
                tree: "t".into(),
                holder: "a".into(),
                epoch: 1,
                expires_at_ms: 1_100,
                released: false,
            }]
        );
        clock.as_manual().unwrap().set_ms(2_000);
        let second = a.call(&take("b"), 0).await.unwrap();
        assert!(
            matches!(second, Reply::Granted { epoch: 2, .. }),
            "{second:?}"
        );
        clock.as_manual().unwrap().set_ms(1_050);
        rows.replace(&after_first).unwrap();
        assert_eq!(rows.read().unwrap(), after_first);
        let busy = a.call(&take("b"), 0).await.unwrap();
        assert!(
            matches!(busy, Reply::Busy { epoch: 1, .. }),
            "restored rows must be answered from: {busy:?}"
        );
        rows.replace(&[]).unwrap();
        let fresh = a.call(&take("b"), 0).await.unwrap();
        assert!(
            matches!(fresh, Reply::Granted { epoch: 1, .. }),
            "{fresh:?}"
        );
        let q = LeaseRows::open(&path, "q:").unwrap().read().unwrap();
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].holder, "z");
    }
}
