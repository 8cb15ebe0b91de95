//! Read-only views of a server's keyspace: a logical dump of the keys under a
//! prefix (to prove "nothing changed"), the names of every key (to prove a
//! store stayed inside its prefix) and memory use. Nothing here writes.

use std::collections::BTreeMap;

use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use serde_json::{json, Value};

pub use model::observed::Snapshot;

/// Escapes glob characters so a prefix matches only itself in SCAN MATCH.
fn glob_escape(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('*');
    out
}

/// The SCAN MATCH pattern of exactly the keys starting with `prefix`.
pub fn scan_pattern(prefix: &str) -> String {
    glob_escape(prefix)
}

/// Every key name whose bytes start with `prefix` (SCAN, never KEYS).
pub async fn keys_under(
    conn: &mut MultiplexedConnection,
    prefix: &str,
) -> redis::RedisResult<Vec<Vec<u8>>> {
    scan(conn, Some(&glob_escape(prefix))).await
}

/// Every key on the server. Only for servers storeproof manages.
pub async fn all_keys(conn: &mut MultiplexedConnection) -> redis::RedisResult<Vec<Vec<u8>>> {
    scan(conn, None).await
}

async fn scan(
    conn: &mut MultiplexedConnection,
    pattern: Option<&str>,
) -> redis::RedisResult<Vec<Vec<u8>>> {
    let mut cursor: u64 = 0;
    let mut keys = Vec::new();
    loop {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor);
        if let Some(p) = pattern {
            cmd.arg("MATCH").arg(p);
        }
        cmd.arg("COUNT").arg(1000);
        let (next, batch): (u64, Vec<Vec<u8>>) = cmd.query_async(conn).await?;
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys.dedup();
    Ok(keys)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The logical content of one key, or `None` if it vanished meanwhile.
pub async fn dump_key(
    conn: &mut MultiplexedConnection,
    key: &[u8],
) -> redis::RedisResult<Option<Value>> {
    let kind: String = redis::cmd("TYPE").arg(key).query_async(conn).await?;
    let value = match kind.as_str() {
        "none" => return Ok(None),
        "string" => {
            let v: Vec<u8> = conn.get(key).await?;
            json!(text(&v))
        }
        "hash" => {
            let v: BTreeMap<Vec<u8>, Vec<u8>> = conn.hgetall(key).await?;
            json!(v
                .iter()
                .map(|(k, v)| (text(k), text(v)))
                .collect::<BTreeMap<_, _>>())
        }
        "zset" => {
            let v: Vec<(Vec<u8>, f64)> = conn.zrange_withscores(key, 0, -1).await?;
            json!(v
                .iter()
                .map(|(m, s)| json!([text(m), s]))
                .collect::<Vec<_>>())
        }
        "set" => {
            let mut v: Vec<Vec<u8>> = conn.smembers(key).await?;
            v.sort();
            json!(v.iter().map(|m| text(m)).collect::<Vec<_>>())
        }
        "list" => {
            let v: Vec<Vec<u8>> = conn.lrange(key, 0, -1).await?;
            json!(v.iter().map(|m| text(m)).collect::<Vec<_>>())
        }
        other => json!(format!("<{other}>")),
    };
    let pttl: i64 = redis::cmd("PTTL").arg(key).query_async(conn).await?;
    Ok(Some(json!({"type": kind, "value": value, "pttl": pttl})))
}

/// A logical dump of every key under `prefix`.
pub async fn snapshot(
    conn: &mut MultiplexedConnection,
    prefix: &str,
) -> redis::RedisResult<Snapshot> {
    let mut out = Snapshot::new();
    for key in keys_under(conn, prefix).await? {
        if let Some(v) = dump_key(conn, &key).await? {
            out.insert(text(&key), v);
        }
    }
    Ok(out)
}

/// The keys whose names or values contain `needle`, among `keys`.
pub async fn keys_mentioning(
    conn: &mut MultiplexedConnection,
    keys: &[Vec<u8>],
    needle: &str,
) -> redis::RedisResult<Vec<String>> {
    let mut hits = Vec::new();
    for key in keys {
        let name = text(key);
        let found_in_name = name.contains(needle);
        let found_in_value = match dump_key(conn, key).await? {
            Some(v) => v.to_string().contains(needle),
            None => false,
        };
        if found_in_name || found_in_value {
            hits.push(name);
        }
    }
    Ok(hits)
}

/// Total `MEMORY USAGE` (bytes, with all samples) of `keys`.
pub async fn memory_usage(
    conn: &mut MultiplexedConnection,
    keys: &[Vec<u8>],
) -> redis::RedisResult<u64> {
    let mut total = 0u64;
    for key in keys {
        let used: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .query_async(conn)
            .await?;
        total += used.unwrap_or(0);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::glob_escape;

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("sp:1:"), "sp:1:*");
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\*");
    }
}
