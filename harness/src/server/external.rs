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

pub use model::redact_secrets;

/// `prefix` as a `SCAN MATCH` pattern that matches only itself: glob
/// characters in it are escaped.
fn glob_literal(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Removes every key of the server at `url` whose name starts with
/// `prefix` (`SCAN MATCH <prefix>*`, then `UNLINK`), and nothing else: how a
/// `--redis-url` run leaves a user's server as it found it. Returns how
/// many keys it removed. An empty prefix is refused (it would match all).
pub async fn remove_keys_under(url: &str, prefix: &str) -> Result<u64, ServerError> {
    let shown = redact_url(url);
    let failed = |e: redis::RedisError| ServerError::Unreachable {
        url: shown.clone(),
        cause: one_line(&e.to_string()),
    };
    if prefix.is_empty() {
        return Err(ServerError::InvalidOption {
            reason: "refusing to remove the keys under an empty prefix (that is every key)".into(),
        });
    }
    let mut conn = connect(url, PROBE_TIMEOUT, PROBE_TIMEOUT)
        .await
        .map_err(failed)?;
    let pattern = format!("{}*", glob_literal(prefix));
    let mut cursor: u64 = 0;
    let mut removed = 0u64;
    loop {
        let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .map_err(failed)?;
        // The pattern is exact, but a key is only ever removed when its
        // name starts with the prefix byte for byte.
        let mine: Vec<Vec<u8>> = batch
            .into_iter()
            .filter(|k| k.starts_with(prefix.as_bytes()))
            .collect();
        if !mine.is_empty() {
            let n: u64 = redis::cmd("UNLINK")
                .arg(&mine)
                .query_async(&mut conn)
                .await
                .map_err(failed)?;
            removed += n;
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
    Ok(removed)
}

/// Error texts can span lines; messages must not.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_literal_escapes_glob_characters() {
        assert_eq!(glob_literal("sp:0a:"), "sp:0a:");
        assert_eq!(glob_literal(r"a*b?c[d]e\f"), r"a\*b\?c\[d\]e\\f");
    }
}
