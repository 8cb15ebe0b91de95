//! Redis servers for the suites: managed `redis-server` processes whose wall
//! clock the harness controls, and facts about an external server given by
//! URL.
//!
//! A [`ManagedServer`] runs on a free `127.0.0.1` port in a directory of its
//! own, configured from a [`Preset`] plus extra directives
//! ([`ServerOptions`]). With the virtual clock on, the server is started with
//! an LD_PRELOAD shim ([`CLOCK_SHIM`], built from `harness/shim/clockshim.c`)
//! that reads wall-clock time from a [`VirtualClock`] file, so `TIME`, `PX`
//! expiry and everything else that reads the wall clock only move when the
//! harness moves them. The process dies with the harness (even on SIGKILL)
//! and leaves no directory behind when dropped or after [`cleanup_all`].

mod clock;
mod expiry;
mod external;
mod managed;
mod options;
mod port;
pub use port::ephemeral_floor;
mod process;

use std::path::PathBuf;
use std::time::Duration;

pub use clock::{
    allows_exec, install_clock_shim, VirtualClock, CLOCK_FILE_ENV, CLOCK_SHIM,
    CLOCK_SHIM_FILE_NAME, VIRTUAL_EPOCH_MS,
};
pub use external::{
    probe_url, redact_secrets, remove_keys_under, server_settings, ServerFacts, SETTING_NAMES,
};
pub use managed::{answers_ping, find_binary, ManagedServer, CLOCK_PROBE_KEY, REDIS_SERVER_ENV};
pub use options::{
    servers_dir, DataDir, Preset, ServerKind, ServerOptions, UnknownServerKind, SERVERS_DIR_ENV,
};
pub use process::{cleanup_all, mark_owned, reap_dead_runs, DIR_PREFIX, OWNER_FILE};
pub(crate) use process::{die_with_parent, on_spawner_thread};

/// Why a server could not be started, reached or controlled. Every message
/// is one line and says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// No `redis-server` binary: not on PATH, or `STOREPROOF_REDIS_SERVER`
    /// (`from_env`) names something that is not an executable file.
    #[error("{}", binary_not_found_message(from_env))]
    BinaryNotFound {
        /// The value of `STOREPROOF_REDIS_SERVER`, when it was set.
        from_env: Option<PathBuf>,
    },
    /// A named server ([`ServerKind`]) is not installed on this machine.
    #[error(
        "{server} is not installed (no executable {}); run scripts/setup to install it",
        looked_at.display()
    )]
    ServerNotInstalled {
        /// The server's name (`valkey-9`, `path:/x`, …).
        server: String,
        /// Where the harness looked for its binary.
        looked_at: PathBuf,
    },
    /// A named server's binary reported another version than its name says
    /// (e.g. `redis-7.0` found a Redis 7.2), so a verdict would be filed
    /// under the wrong server.
    #[error(
        "{} is not {server}: INFO server says {field}:{found} (wanted {wanted}…); install          {server} with scripts/setup or name the binary as path:{}",
        binary.display(), binary.display()
    )]
    WrongVersion {
        /// The server's name.
        server: String,
        /// The binary that was started.
        binary: PathBuf,
        /// The `INFO server` field read.
        field: &'static str,
        /// The version prefix wanted.
        wanted: &'static str,
        /// What the server reported (`none` when it did not say).
        found: String,
    },
    /// The options cannot describe a working managed server.
    #[error("{reason}")]
    InvalidOption {
        /// What is wrong and what to do, one line.
        reason: String,
    },
    /// A file-system or process operation of the harness failed.
    #[error("cannot {action}: {source}; {hint}")]
    Io {
        /// What the harness was doing (`create the server directory in /dev/shm`).
        action: String,
        /// The operating system's answer.
        source: std::io::Error,
        /// What to do about it.
        hint: &'static str,
    },
    /// The server process exited before it answered `PING`.
    #[error(
        "redis-server on port {port} exited while starting ({status}); its log ends: {log_tail}"
    )]
    Exited {
        /// The port it was told to use.
        port: u16,
        /// How it exited.
        status: String,
        /// The last lines of its log (which also receives its stderr).
        log_tail: String,
    },
    /// The server did not answer `PING` with `PONG` in time.
    #[error("redis-server on port {port} did not answer PING within {waited_s}s; its log ends: {log_tail}")]
    NotReady {
        /// Its port.
        port: u16,
        /// How long the harness waited, in seconds.
        waited_s: u64,
        /// The last lines of its log.
        log_tail: String,
    },
    /// Every free port the harness picked was taken before the server bound it.
    #[error("could not start redis-server on a free port after {attempts} attempts (another process took each port first); retry, or stop whatever is grabbing ports on 127.0.0.1")]
    NoFreePort {
        /// How many ports were tried.
        attempts: u32,
    },
    /// On restart, the server's port is now used by another process.
    #[error("cannot restart redis-server: port {port} is now used by another process; stop that process or start a new managed server")]
    PortTaken {
        /// The server's port.
        port: u16,
    },
    /// The managed server is not running (it was killed and not restarted).
    #[error("the managed redis-server on port {port} is not running; call restart() first")]
    NotRunning {
        /// Its port.
        port: u16,
    },
    /// The harness could not connect to its own managed server.
    #[error("cannot connect to the managed redis-server on port {port}: {source}; it may have died — look at its redis.log or restart it")]
    Connect {
        /// Its port.
        port: u16,
        /// The client's error.
        source: redis::RedisError,
    },
    /// A command the harness sent to its managed server failed.
    #[error("redis-server on port {port} refused `{command}`: {source}; check renamed commands and ACLs in ServerOptions::config")]
    Command {
        /// Its port.
        port: u16,
        /// The command, without secrets.
        command: String,
        /// The server's or client's error.
        source: redis::RedisError,
    },
    /// The server does not follow the virtual clock: a move of the clock did
    /// not move its `TIME` or a key's `PTTL` (e.g. a statically linked
    /// binary, or one that reads time in a way the shim does not answer).
    /// Judging expiries on it would blame the store for the harness's clock.
    #[error(
        "{} does not follow storeproof's virtual clock ({detail}); refusing to judge a store on \
         it. Point STOREPROOF_REDIS_SERVER at a dynamically linked redis-server (apt-get install \
         redis-server) or unset it, or name a server whose clock storeproof controls (redis-7.0, \
         redis-6.2, valkey-9)", binary.display()
    )]
    ClockNotControlled {
        /// The server binary that was started.
        binary: PathBuf,
        /// What the probe saw, one line.
        detail: String,
    },
    /// An external server given by URL did not answer.
    #[error("cannot reach Redis at {url}: {cause}; check the URL and that the server is running")]
    Unreachable {
        /// The URL with any password replaced by `***`.
        url: String,
        /// Why, one line.
        cause: String,
    },
    /// The URL is not a Redis URL.
    #[error("{url} is not a Redis URL ({cause}); use redis://[user:password@]host:port/[db]")]
    InvalidUrl {
        /// The URL with any password replaced by `***`.
        url: String,
        /// Why, one line.
        cause: String,
    },
}

fn binary_not_found_message(from_env: &Option<PathBuf>) -> String {
    match from_env {
        None => "redis-server not found on PATH; install it (apt-get install redis-server) \
                 or set STOREPROOF_REDIS_SERVER to its path"
            .to_string(),
        Some(path) => format!(
            "STOREPROOF_REDIS_SERVER is {}, which is not an executable file; point it at \
             redis-server or unset it to use the one on PATH",
            path.display()
        ),
    }
}

/// Opens a multiplexed connection with explicit timeouts (the crate's
/// default response timeout, 500 ms, is too short for a server replaying
/// its AOF).
pub(crate) async fn connect(
    url: &str,
    connect_timeout: Duration,
    response_timeout: Duration,
) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(url)?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(connect_timeout))
        .set_response_timeout(Some(response_timeout));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

/// The value of `field` in an `INFO` reply (`field:value` lines).
pub(crate) fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k == field).then(|| v.trim())
    })
}

/// `url` with the password (if any) replaced by `***`, for messages and
/// reports.
pub(crate) fn redact_url(url: &str) -> String {
    // One redaction for everything: see `redact_secrets`.
    redact_secrets(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_url_hides_passwords_only() {
        assert_eq!(
            redact_url("redis://u:secret@127.0.0.1:1/"),
            "redis://u:***@127.0.0.1:1/"
        );
        assert_eq!(redact_url("redis://127.0.0.1:1/0"), "redis://127.0.0.1:1/0");
        assert_eq!(redact_url("redis://:pw@h:1"), "redis://:***@h:1");
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn info_field_reads_one_field() {
        let info = "# Server\r\nredis_version:7.0.15\r\nprocess_id:42\r\n";
        assert_eq!(info_field(info, "redis_version"), Some("7.0.15"));
        assert_eq!(info_field(info, "process_id"), Some("42"));
        assert_eq!(info_field(info, "nope"), None);
    }
}
