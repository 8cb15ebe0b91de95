//! Facts about a Redis server the harness does not manage (`--redis-url`).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{connect, info_field, redact_url, ServerError};

/// Connect and response timeout when probing an external server.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The `CONFIG GET` parameters [`server_settings`] reads, in order.
pub const SETTING_NAMES: [&str; 5] = [
    "appendonly",
    "appendfsync",
    "no-appendfsync-on-rewrite",
    "maxmemory-policy",
    "maxmemory",
];

/// What the harness learned about a server it was pointed at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFacts {
    /// The URL, with any password replaced by `***` (safe for reports).
    pub url: String,
    /// `redis_version` from `INFO server` (or `version` from `HELLO` when
    /// INFO is refused), else `unknown`.
    pub version: String,
}

/// Connects to `url` (2 s connect and response timeout), checks that it
/// answers `PING`, and reads its version.
///
/// `Err(Unreachable)` when nothing answers (closed port, wrong host, bad
/// password, timeout); `Err(InvalidUrl)` when `url` is not a Redis URL. A
/// server that refuses INFO (ACL, renamed command) is still reachable: its
/// version is then taken from `HELLO`, or reported as `unknown`.
pub async fn probe_url(url: &str) -> Result<ServerFacts, ServerError> {
    let shown = redact_url(url);
    if let Err(e) = redis::Client::open(url) {
        return Err(ServerError::InvalidUrl {
            url: shown,
            cause: one_line(&e.to_string()),
        });
    }
    let unreachable = |e: redis::RedisError| ServerError::Unreachable {
        url: shown.clone(),
        cause: one_line(&e.to_string()),
    };
    let mut conn = connect(url, PROBE_TIMEOUT, PROBE_TIMEOUT)
        .await
        .map_err(unreachable)?;
    // A server that refuses PING (NOAUTH…) is not usable either.
    redis::cmd("PING")
        .query_async::<String>(&mut conn)
        .await
        .map_err(unreachable)?;

    let info: redis::RedisResult<String> = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await;
    let mut version = info
        .ok()
        .and_then(|i| info_field(&i, "redis_version").map(str::to_string));
    if version.is_none() {
        // HELLO without a protocol version answers in the current protocol
        // and is in @connection, which ACL users rarely lose.
        let hello: redis::RedisResult<HashMap<String, redis::Value>> =
            redis::cmd("HELLO").query_async(&mut conn).await;
        version = hello.ok().and_then(|h| match h.get("version") {
            Some(v) => redis::from_redis_value_ref::<String>(v).ok(),
            None => None,
        });
    }
    Ok(ServerFacts {
        url: shown,
        version: version.unwrap_or_else(|| "unknown".to_string()),
    })
}

/// The server's durability and eviction settings for the report's
/// `server.settings`: `CONFIG GET` of each of [`SETTING_NAMES`], plus `role`
/// from `INFO replication`. Whatever the server refuses (no CONFIG for this
/// user, renamed commands) is left out rather than guessed.
pub async fn server_settings<C>(conn: &mut C) -> BTreeMap<String, String>
where
    C: redis::aio::ConnectionLike + Send,
{
    let mut settings = BTreeMap::new();
    for name in SETTING_NAMES {
        let reply: redis::RedisResult<HashMap<String, String>> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query_async(conn)
            .await;
        if let Ok(mut pairs) = reply {
            if let Some(value) = pairs.remove(name) {
                settings.insert(name.to_string(), value);
            }
        }
    }
    let replication: redis::RedisResult<String> = redis::cmd("INFO")
        .arg("replication")
        .query_async(conn)
        .await;
    if let Some(role) = replication
        .ok()
        .and_then(|i| info_field(&i, "role").map(str::to_string))
    {
        settings.insert("role".to_string(), role);
    }
    settings
}

/// Error texts can span lines; messages must not.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
