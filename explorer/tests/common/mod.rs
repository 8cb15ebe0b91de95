//! What the explorer's tests of stores of other designs share: the error a
//! failed command of such a store answers, its own connection to the
//! server, and the verdict reading every one of them makes.

#![allow(dead_code)] // each test crate uses its own part of it

use explorer::ExplorerOutcome;
use harness::contract::{ErrorKind, StoreError};
use harness::{CheckResult, Verdict};
use redis::aio::MultiplexedConnection;

/// A failed command as the contract names it: `store_full` for a full
/// server's `OOM`, else `unavailable`.
pub fn failed(e: redis::RedisError) -> StoreError {
    match e.code() {
        Some("OOM") => StoreError::new(ErrorKind::StoreFull, e.to_string()),
        _ => StoreError::new(ErrorKind::Unavailable, e.to_string()),
    }
}

/// A connection of the store's own to `url` (the instance's gate).
pub async fn connection(url: &str) -> Result<MultiplexedConnection, StoreError> {
    redis::Client::open(url)
        .map_err(failed)?
        .get_multiplexed_async_connection()
        .await
        .map_err(failed)
}

/// The check `id` of `outcome`.
pub fn check<'a>(outcome: &'a ExplorerOutcome, id: &str) -> &'a CheckResult {
    outcome
        .checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

/// Every check passed, the races included: a take of several commands
/// reaches them in the search of whole operations.
pub fn passes(outcome: &ExplorerOutcome) {
    for c in &outcome.checks {
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
}
