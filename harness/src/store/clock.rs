//! The SQLite store's "server time" (docs/CONTRACTS.md §1.4: the database's
//! clock).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::server::VirtualClock;

/// A clock that tests and the harness's virtual time set by hand. Clones
/// share one reading, so the handle a test keeps moves the time every
/// instance of the store sees.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock that reads `start_ms` until it is set or advanced.
    pub fn new(start_ms: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(start_ms)))
    }

    /// The current reading, in ms.
    pub fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Sets the reading to `ms`. Going back is allowed (the store does not
    /// clamp), so a test can put a clock wherever it needs.
    pub fn set_ms(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }

    /// Moves the reading forward by `by_ms` and answers the new reading.
    pub fn advance_ms(&self, by_ms: i64) -> i64 {
        self.0.fetch_add(by_ms, Ordering::SeqCst) + by_ms
    }
}

/// Where the SQLite store reads server time. It is read inside each lease
/// transaction, after the write lock is taken, so the order of server time
/// readings is the order of the transactions.
#[derive(Debug, Clone)]
pub enum SqliteClock {
    /// The machine's wall clock (ms since the Unix epoch). Every instance of
    /// a store shares one file on one machine, so this is the database's clock.
    System,
    /// A clock set by hand (tests).
    Manual(ManualClock),
    /// The virtual wall clock of a managed Redis server, read on every
    /// transaction: when storeproof moves that server's time, the store's
    /// time moves with it, to the millisecond, so one clock rules the
    /// harness's scenarios whichever store is certified.
    Virtual(Arc<VirtualClock>),
}

impl SqliteClock {
    /// A manual clock reading `start_ms`. Keep [`SqliteClock::as_manual`] (or
    /// a clone of this value) to move it.
    pub fn manual(start_ms: i64) -> Self {
        SqliteClock::Manual(ManualClock::new(start_ms))
    }

    /// The manual clock's handle, or `None` for the system and virtual clocks.
    pub fn as_manual(&self) -> Option<&ManualClock> {
        match self {
            SqliteClock::Manual(m) => Some(m),
            SqliteClock::System | SqliteClock::Virtual(_) => None,
        }
    }

    /// The clock the store reads when certified beside a server whose time
    /// storeproof controls: that server's virtual clock when it has one (so
    /// expiries are judged to the millisecond), the system clock otherwise.
    pub fn following(server_clock: Option<Arc<VirtualClock>>) -> Self {
        server_clock.map_or(SqliteClock::System, SqliteClock::Virtual)
    }

    /// The current server time, in ms. A system clock before 1970 reads 0.
    pub fn now_ms(&self) -> i64 {
        match self {
            SqliteClock::Manual(m) => m.now_ms(),
            SqliteClock::Virtual(v) => v.now_ms(),
            SqliteClock::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn virtual_clock(dir: &tempfile::TempDir) -> Arc<VirtualClock> {
        Arc::new(VirtualClock::create(&dir.path().join("clock")).unwrap())
    }

    #[test]
    fn a_clock_following_the_server_reads_its_virtual_time_as_it_moves() {
        let dir = tempfile::tempdir().unwrap();
        let server = virtual_clock(&dir);
        let clock = SqliteClock::following(Some(server.clone()));
        server.set_ms(1_234);
        assert_eq!(clock.now_ms(), 1_234);
        server.advance_ms(1);
        assert_eq!(clock.now_ms(), 1_235);
        assert!(clock.as_manual().is_none());
        // No server clock to follow: the machine's.
        assert!(matches!(SqliteClock::following(None), SqliteClock::System));
    }
}
