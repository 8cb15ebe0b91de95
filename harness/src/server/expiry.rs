//! Lazy expiry only, for a managed server whose virtual clock stands still
//! between commands: no background deletion of expired keys and hash
//! fields.
//!
//! Valkey 9's background expiry cycle deletes a hash field whose own expiry
//! (`HPEXPIREAT`) equals the server's time, while a read at that instant
//! still returns it (a field expires once its time is *passed*). Under a
//! clock the harness holds at a lease's expiry instant, the field is then
//! there or gone depending on whether the cycle ran before the next
//! command: seen as a refused write that "changed the store's keys" and as
//! a server that does not repeat itself. With the cycle off, an expired
//! key or field goes when a command touches it, exactly as every read sees
//! it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use redis::aio::MultiplexedConnection;

use super::ServerError;

/// Whether `binary` keeps `DEBUG` behind `enable-debug-command` (Redis and
/// Valkey 7.0 and later): its `--version` names major version 7 or more.
/// A binary whose version cannot be read is taken to, which at worst starts
/// it with one directive it does not know.
/// Asked once per binary a process starts: the explorer starts a server
/// for every world.
pub(crate) fn debug_is_gated(binary: &Path) -> bool {
    static SEEN: Mutex<BTreeMap<PathBuf, bool>> = Mutex::new(BTreeMap::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    *seen.entry(binary.to_path_buf()).or_insert_with(|| {
        let Ok(out) = Command::new(binary).arg("--version").output() else {
            return true;
        };
        major_version(&String::from_utf8_lossy(&out.stdout)).is_none_or(|major| major >= 7)
    })
}

/// The major version in a `redis-server --version` line
/// (`Redis server v=7.0.15 sha=…`, `Valkey server v=9.1.2 …`).
fn major_version(line: &str) -> Option<u32> {
    let rest = line.split(" v=").nth(1)?;
    rest.split('.').next()?.parse().ok()
}

/// Turns the background expiry cycle off (`DEBUG SET-ACTIVE-EXPIRE 0`).
pub(crate) async fn stop_active_expiry(
    conn: &mut MultiplexedConnection,
    port: u16,
) -> Result<(), ServerError> {
    redis::cmd("DEBUG")
        .arg("SET-ACTIVE-EXPIRE")
        .arg(0)
        .query_async::<()>(conn)
        .await
        .map_err(|source| ServerError::Command {
            port,
            command: "DEBUG SET-ACTIVE-EXPIRE 0".into(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_major_version_is_read_from_the_version_line() {
        assert_eq!(
            major_version("Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64"),
            Some(7)
        );
        assert_eq!(
            major_version("Redis server v=6.2.14 sha=40305114:0"),
            Some(6)
        );
        assert_eq!(
            major_version("Valkey server v=9.1.2 sha=00000000:1"),
            Some(9)
        );
        assert_eq!(major_version("something else"), None);
    }
}
