//! The extra connection a sabotaged store opens beside the built-in store's
//! own (to the same URL, so through the same gate).

use harness::contract::{ErrorKind, StoreError};
use redis::aio::MultiplexedConnection;

/// A Redis failure as the store answers it: the outcome is unknown (see
/// [`refused`] for a write the full server refused).
pub(crate) fn unavailable(e: redis::RedisError) -> StoreError {
    StoreError::new(ErrorKind::Unavailable, e.to_string())
}

/// A Redis failure of a write as the store answers it: a write the full
/// server refused (`OOM`) is `store_full`, anything else `unavailable`.
pub(crate) fn refused(e: redis::RedisError) -> StoreError {
    if e.code() == Some("OOM") || e.to_string().contains("OOM command not allowed") {
        StoreError::new(ErrorKind::StoreFull, e.to_string())
    } else {
        unavailable(e)
    }
}

/// A connection to `url` with every script in `scripts` loaded, so each
/// later invocation is one EVALSHA.
pub(crate) async fn open(
    url: &str,
    scripts: &[&redis::Script],
) -> Result<MultiplexedConnection, StoreError> {
    let mut conn = redis::Client::open(url)
        .map_err(unavailable)?
        .get_multiplexed_async_connection()
        .await
        .map_err(unavailable)?;
    for s in scripts {
        s.prepare_invoke()
            .load_async(&mut conn)
            .await
            .map_err(unavailable)?;
    }
    Ok(conn)
}
