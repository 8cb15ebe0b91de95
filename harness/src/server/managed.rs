//! [`ManagedServer`]: one `redis-server` process the harness owns.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

use super::clock::{allows_exec, install_clock_shim, VirtualClock, CLOCK_FILE_ENV};
use super::options::{is_executable, DataDir, Preset, ServerOptions};
use super::process::{mark_owned, spawn_tied_to_us, Owned};
use super::{connect, info_field, ServerError};

/// The environment variable that names the `redis-server` binary to use
/// instead of the one on PATH.
pub const REDIS_SERVER_ENV: &str = "STOREPROOF_REDIS_SERVER";

/// How long a fresh server may take to answer `PING`.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a restarted server may take: it replays its AOF first.
const RESTART_TIMEOUT: Duration = Duration::from_secs(60);
/// How often to poll while waiting.
const POLL_EVERY: Duration = Duration::from_millis(10);
/// How many free ports to try before giving up (each try loses only if
/// another process binds the port between our check and the server's bind).
const PORT_ATTEMPTS: u32 = 5;
/// Response timeout of admin connections: long enough for `appendfsync
/// always` on a slow disk and for commands during AOF loading.
const ADMIN_RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
const ADMIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long `stop` waits for a graceful `SHUTDOWN` before SIGKILL.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// How many log lines an error quotes.
const LOG_TAIL_LINES: usize = 5;

const LOG_FILE: &str = "redis.log";
const CONF_FILE: &str = "redis.conf";
/// Where the fsync shim records synced sizes (see [`ManagedServer::power_loss`]).
const FSYNC_LOG: &str = "fsync.log";
/// The variable that tells the shim where to record them.
const FSYNC_LOG_ENV: &str = "STOREPROOF_FSYNC_LOG";
const CLOCK_FILE: &str = "clock";

/// The key the clock probe writes and deletes at start: under a prefix of
/// storeproof's own, never one a store is given (those start with `sp:`).
pub const CLOCK_PROBE_KEY: &str = "storeproof-internal:clock-probe";
/// How far the clock probe moves the virtual clock (distinctive, so that no
/// real clock lands on it by chance).
const PROBE_MOVE_MS: i64 = 7_777;
/// The probe key's time to live, set before the move.
const PROBE_TTL_MS: i64 = 60_000;
/// How far (ms) the server may be from the virtual clock: the shim answers
/// it exactly, so only rounding is allowed.
const PROBE_TOLERANCE_MS: i64 = 1;
/// How many times the clock probe runs. A server that caches wall-clock
/// time (Valkey on the CPU's time stamp counter: at most one clock read per
/// millisecond) answers a round from the stale time nearly always, but only
/// nearly; three rounds make a miss vanishingly rare.
pub(crate) const PROBE_ROUNDS: usize = 3;
/// Reads `TIME` and the probe key's `PTTL` in one script (one instant of the
/// server's clock, as a store's script would see it). Read-only, so that
/// servers replicating scripts verbatim accept it after `TIME`.
const PROBE_SCRIPT: &str = "local t = redis.call('TIME') \
     local p = redis.call('PTTL', KEYS[1]) \
     return {tonumber(t[1]), tonumber(t[2]), p}";

/// A `redis-server` the harness started and owns.
///
/// Guarantees: it listens on `127.0.0.1:`[`port`](ManagedServer::port) only,
/// in a directory of its own ([`dir`](ManagedServer::dir), holding
/// `redis.conf`, `redis.log`, the AOF and the clock file); it gets SIGKILL
/// when this process dies, however it dies; dropping the value SIGKILLs and
/// reaps the process and removes the directory, and so does
/// [`cleanup_all`](super::cleanup_all). With
/// [`ServerOptions::virtual_clock`], its wall clock is
/// [`clock`](ManagedServer::clock) and nothing else.
pub struct ManagedServer {
    // Declared first so that it is dropped first: kill, then forget the rest.
    owned: Owned,
    options: ServerOptions,
    binary: PathBuf,
    port: u16,
    dir: PathBuf,
    conf_path: PathBuf,
    log_path: PathBuf,
    shim_path: Option<PathBuf>,
    clock: Option<Arc<VirtualClock>>,
    version: String,
    product: String,
}

impl std::fmt::Debug for ManagedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedServer")
            .field("port", &self.port)
            .field("dir", &self.dir)
            .field("preset", &self.options.preset)
            .field("pid", &self.pid())
            .field("version", &self.version)
            .finish()
    }
}

/// How one wait for readiness ended badly.
enum NotReady {
    /// The server could not bind its port (someone else has it).
    PortTaken,
    /// Any other failure, ready to report.
    Failed(ServerError),
}

impl ManagedServer {
    /// Starts a server as `options` describe and waits until it answers
    /// `PING` with `PONG` (at most 10 s).
    ///
    /// The binary is `$STOREPROOF_REDIS_SERVER` or `redis-server` on PATH.
    /// The port is a free one, picked again (up to 5 times) if another
    /// process takes it first. The answer is checked to come from our own
    /// process (its `process_id`), never from a server that happens to sit
    /// on the same port. On any error, nothing is left behind.
    pub async fn start(options: ServerOptions) -> Result<ManagedServer, ServerError> {
        options.validate()?;
        let binary = options.binary()?;
        let dir = create_server_dir(options.data_dir)?;
        // From here on, `owned` removes the directory (and kills the
        // process, once there is one) on every error path.
        let mut owned = Owned::new(dir.clone());

        let shim_path = if options.virtual_clock || options.track_fsync {
            Some(place_shim(&dir, &mut owned)?)
        } else {
            None
        };
        let clock = if options.virtual_clock {
            let clock_path = dir.join(CLOCK_FILE);
            let clock = VirtualClock::create(&clock_path).map_err(|source| ServerError::Io {
                action: format!("create the clock file {}", clock_path.display()),
                source,
                hint: "check that the server directory is writable and not full",
            })?;
            Some(Arc::new(clock))
        } else {
            None
        };

        let mut server = ManagedServer {
            owned,
            conf_path: dir.join(CONF_FILE),
            log_path: dir.join(LOG_FILE),
            dir,
            options,
            binary,
            port: 0,
            shim_path,
            clock,
            version: String::new(),
            product: String::new(),
        };

        if server.options.lazy_expiry && super::expiry::debug_is_gated(&server.binary) {
            // Only for its own client on 127.0.0.1: the server is ours.
            server
                .options
                .config
                .push(("enable-debug-command".into(), "local".into()));
        }
        let mut ready = false;
        for _ in 0..PORT_ATTEMPTS {
            server.port = super::port::pick_free_port()?;
            let conf = server.options.render_config(server.port, &server.dir)?;
            fs::write(&server.conf_path, conf).map_err(|source| ServerError::Io {
                action: format!("write {}", server.conf_path.display()),
                source,
                hint: "check that the server directory is writable and not full",
            })?;
            match server.launch(READY_TIMEOUT).await {
                Ok(()) => {
                    ready = true;
                    break;
                }
                Err(NotReady::PortTaken) => server.owned.kill_now(),
                Err(NotReady::Failed(e)) => return Err(e),
            }
        }
        if !ready {
            return Err(ServerError::NoFreePort {
                attempts: PORT_ATTEMPTS,
            });
        }
        let info = server.read_info().await;
        server.version = info
            .as_deref()
            .and_then(|i| info_field(i, "redis_version"))
            .unwrap_or("unknown")
            .to_string();
        server.product = product_name(info.as_deref());
        // A verdict is filed under the server's name: make sure it is that
        // server before anything is judged on it.
        server.check_version(info.as_deref())?;
        // Before anything is judged on this server's clock, prove that the
        // clock is ours; on error `server` drops, killing it and removing
        // its directory.
        server.probe_clock(info.as_deref()).await?;
        server.keep_lazy_expiry().await?;
        tracing::debug!(
            port = server.port,
            dir = %server.dir.display(),
            version = %server.version,
            preset = server.options.preset.name(),
            "managed redis-server started"
        );
        Ok(server)
    }

    /// Spawns the process with the current redis.conf and waits for it.
    async fn launch(&mut self, timeout: Duration) -> Result<(), NotReady> {
        // Only log lines written after this point belong to this launch.
        let log_start = fs::metadata(&self.log_path).map(|m| m.len()).unwrap_or(0);
        let command = self.command().map_err(NotReady::Failed)?;
        let child = spawn_tied_to_us(command).await.map_err(|source| {
            NotReady::Failed(ServerError::Io {
                action: format!("start {}", self.binary.display()),
                source,
                hint:
                    "check that it is an executable redis-server (or set STOREPROOF_REDIS_SERVER)",
            })
        })?;
        self.owned.set_child(child);
        self.wait_ready(timeout, log_start).await
    }

    fn command(&self) -> Result<Command, ServerError> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .and_then(|f| Ok((f.try_clone()?, f)))
            .map_err(|source| ServerError::Io {
                action: format!("open {}", self.log_path.display()),
                source,
                hint: "check that the server directory is writable and not full",
            })?;
        let mut command = Command::new(&self.binary);
        command
            .arg(&self.conf_path)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            // Config errors go to stderr before the logfile is open; keep
            // them in the log so that start-up errors can quote them.
            .stdout(Stdio::from(log.0))
            .stderr(Stdio::from(log.1));
        command.env_remove(CLOCK_FILE_ENV).env_remove(FSYNC_LOG_ENV);
        if let Some(shim) = &self.shim_path {
            command.env("LD_PRELOAD", shim);
        }
        if let Some(clock) = &self.clock {
            command.env(CLOCK_FILE_ENV, clock.path());
        }
        if self.options.track_fsync {
            command.env(FSYNC_LOG_ENV, self.dir.join(FSYNC_LOG));
        }
        Ok(command)
    }

    /// Polls until our own process answers `PING` with `PONG`, it exits, or
    /// `timeout` passes.
    async fn wait_ready(&self, timeout: Duration, log_start: u64) -> Result<(), NotReady> {
        let started = Instant::now();
        let url = self.url();
        loop {
            if let Some(status) = self.owned.exited() {
                let new_log = read_from(&self.log_path, log_start);
                if new_log.contains("Address already in use") {
                    return Err(NotReady::PortTaken);
                }
                return Err(NotReady::Failed(ServerError::Exited {
                    port: self.port,
                    status: status.to_string(),
                    log_tail: tail_lines(&new_log),
                }));
            }
            if let Some(answered_by) = ping(&url).await {
                let ours = self.owned.pid();
                // `None`: INFO is renamed or refused; PONG must do.
                if answered_by.is_none() || answered_by == ours {
                    return Ok(());
                }
                // Another server holds the port: ours will fail to bind and
                // exit, which the check above turns into PortTaken.
            }
            if started.elapsed() >= timeout {
                return Err(NotReady::Failed(ServerError::NotReady {
                    port: self.port,
                    waited_s: timeout.as_secs(),
                    log_tail: tail_lines(&read_from(&self.log_path, log_start)),
                }));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// With the virtual clock on, proves the server follows it, in
    /// [`PROBE_ROUNDS`] rounds from the clock's current time `t0`: sets a
    /// key to expire in [`PROBE_TTL_MS`]; moves the clock by
    /// [`PROBE_MOVE_MS`] and reads `TIME` and the key's `PTTL` inside a
    /// script; moves it past the key's expiry and asks `EXISTS` and `GET`
    /// (plain commands, which read the clock themselves: a server that
    /// caches wall-clock time answers them from the stale time); moves it
    /// back to `t0` and reads `TIME` (the explorer moves time backwards).
    /// The clock ends at `t0` and the key is deleted. A replica cannot
    /// write, so only `TIME` is probed there. `ClockNotControlled` when the
    /// server does not follow.
    async fn probe_clock(&self, info: Option<&str>) -> Result<(), ServerError> {
        let Some(clock) = &self.clock else {
            return Ok(());
        };
        let not_controlled = |detail: String| ServerError::ClockNotControlled {
            binary: self.binary.clone(),
            detail,
        };
        let mut conn = self.admin().await?;
        let t0 = clock.now_ms();
        let replica = self.options.replica_of.is_some();
        let mut rounds = Vec::with_capacity(PROBE_ROUNDS);
        for _ in 0..PROBE_ROUNDS {
            let round = probe_round(&mut conn, clock, t0, replica).await;
            // Whatever happened, leave the clock and the keyspace as found.
            clock.set_ms(t0);
            if !replica {
                let _: redis::RedisResult<i64> = redis::cmd("DEL")
                    .arg(CLOCK_PROBE_KEY)
                    .query_async(&mut conn)
                    .await;
            }
            let round =
                round.map_err(|e| not_controlled(format!("the clock probe could not run: {e}")))?;
            rounds.push(round);
        }
        match judge_clock_probe(&rounds) {
            None => Ok(()),
            Some(mut detail) => {
                // Names the usual cause: a server that reads the CPU's time
                // stamp counter and caches wall-clock time between reads.
                if let Some(mono) = info.and_then(|i| info_field(i, "monotonic_clock")) {
                    detail.push_str(&format!("; its monotonic clock is {mono}"));
                }
                Err(not_controlled(detail))
            }
        }
    }

    /// `INFO server`, or `None` if the server would not say.
    async fn read_info(&self) -> Option<String> {
        let mut conn = self.admin().await.ok()?;
        redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .ok()
    }

    /// `WrongVersion` unless the server is the one its
    /// [`ServerKind`](super::ServerKind) names.
    fn check_version(&self, info: Option<&str>) -> Result<(), ServerError> {
        let Some(kind) = &self.options.server else {
            return Ok(());
        };
        let Some((field, wanted)) = kind.expected_version() else {
            return Ok(());
        };
        let found = info.and_then(|i| info_field(i, field));
        if found.is_some_and(|v| v.starts_with(wanted)) {
            return Ok(());
        }
        Err(ServerError::WrongVersion {
            server: kind.to_string(),
            binary: self.binary.clone(),
            field,
            wanted,
            found: found.unwrap_or("none").to_string(),
        })
    }

    /// The server binary this server runs.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The TCP port on 127.0.0.1; it stays the same across
    /// [`restart`](ManagedServer::restart).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT/`, for the default user.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The server's own directory (config, log, AOF, clock file). Removed
    /// when the server is dropped.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's log file (`redis.log` in [`dir`](ManagedServer::dir)),
    /// which also receives its stdout and stderr.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The last few lines of the server's log, joined into one line.
    pub fn log_tail(&self) -> String {
        tail_lines(&read_from(&self.log_path, 0))
    }

    /// The server's wall clock, when [`ServerOptions::virtual_clock`] is on.
    /// Clone the `Arc` to move time from elsewhere; it keeps working across
    /// restarts.
    pub fn clock(&self) -> Option<&Arc<VirtualClock>> {
        self.clock.as_ref()
    }

    /// `redis_version` from `INFO server` at start, or `unknown` if the
    /// server would not say.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// What the server is, for reports: `Valkey 9.1.2` when it reports a
    /// `valkey_version` (Valkey also reports `redis_version:7.2.4`), else
    /// `Redis <redis_version>`; `unknown` if it would not say.
    pub fn product(&self) -> &str {
        &self.product
    }

    /// The server's process id, `None` after [`kill`](ManagedServer::kill)
    /// or when it has exited. Changes on restart.
    pub fn pid(&self) -> Option<u32> {
        self.owned.pid()
    }

    /// Whether the server process is running.
    pub fn is_running(&self) -> bool {
        self.owned.running()
    }

    /// The base configuration the server was started with.
    pub fn preset(&self) -> Preset {
        self.options.preset
    }

    /// Everything the server was started with.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// A fresh connection as the default user (all permissions), with a 10 s
    /// response timeout. Make a new one after a restart: a
    /// `MultiplexedConnection` stays broken once its server went away.
    pub async fn admin(&self) -> Result<MultiplexedConnection, ServerError> {
        connect(&self.url(), ADMIN_CONNECT_TIMEOUT, ADMIN_RESPONSE_TIMEOUT)
            .await
            .map_err(|source| ServerError::Connect {
                port: self.port,
                source,
            })
    }

    /// Creates (or resets) the ACL user `name` with `password` and `rules`
    /// (e.g. `["~*", "&*", "+@all", "-config"]` for a user without CONFIG)
    /// via `ACL SETUSER name reset on >password rules…`, and returns a URL
    /// that logs in as that user (`redis://name:password@127.0.0.1:PORT/`,
    /// percent-encoded).
    pub async fn add_acl_user(
        &self,
        name: &str,
        password: &str,
        rules: &[&str],
    ) -> Result<String, ServerError> {
        let mut conn = self.admin().await?;
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER")
            .arg(name)
            .arg("reset")
            .arg("on")
            .arg(format!(">{password}"));
        for rule in rules {
            cmd.arg(*rule);
        }
        cmd.query_async::<()>(&mut conn)
            .await
            .map_err(|source| ServerError::Command {
                port: self.port,
                // Never the password.
                command: format!("ACL SETUSER {name} reset on >*** {}", rules.join(" ")),
                source,
            })?;
        Ok(format!(
            "redis://{}:{}@127.0.0.1:{}/",
            percent_encode(name),
            percent_encode(password),
            self.port
        ))
    }

    /// Stops the server cleanly (`SHUTDOWN NOSAVE NOW`, falling back to
    /// SIGKILL after 5 s) and removes its directory. The only error is a
    /// directory that could not be removed; the process is gone either way.
    pub async fn stop(mut self) -> Result<(), ServerError> {
        if self.owned.running() {
            if let Ok(mut conn) = self.admin().await {
                // The reply is usually a dropped connection; only a server
                // error (an old Redis without NOW) is worth a second try.
                let r: redis::RedisResult<()> = redis::cmd("SHUTDOWN")
                    .arg("NOSAVE")
                    .arg("NOW")
                    .query_async(&mut conn)
                    .await;
                if matches!(&r, Err(e) if e.kind() != redis::ErrorKind::Io && !e.is_connection_dropped())
                {
                    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN")
                        .arg("NOSAVE")
                        .query_async(&mut conn)
                        .await;
                }
            }
            let started = Instant::now();
            while self.owned.running() && started.elapsed() < STOP_WAIT {
                tokio::time::sleep(POLL_EVERY).await;
            }
        }
        let dir = self.dir.clone();
        self.owned.release().map_err(|source| ServerError::Io {
            action: format!("remove the server directory {}", dir.display()),
            source,
            hint: "remove it by hand",
        })
    }

    /// A simulated power cut: SIGKILL now, then every append-only file cut
    /// back to the size it had at its last completed fsync (what the disk
    /// holds; the kernel's unsynced pages die with the power). Needs
    /// [`ServerOptions::track_fsync`]. Returns the bytes dropped.
    pub fn power_loss(&mut self) -> Result<u64, ServerError> {
        if !self.options.track_fsync {
            return Err(ServerError::InvalidOption {
                reason: "power_loss needs a server started with fsync tracking (ServerOptions::with_fsync_tracking)".into(),
            });
        }
        self.kill();
        let log = fs::read_to_string(self.dir.join(FSYNC_LOG)).unwrap_or_default();
        let mut synced: std::collections::HashMap<PathBuf, u64> = std::collections::HashMap::new();
        for line in log.lines() {
            if let Some((size, path)) = line.split_once(' ') {
                if let Ok(size) = size.parse::<u64>() {
                    synced.insert(PathBuf::from(path), size);
                }
            }
        }
        let mut dropped = 0u64;
        for path in self.append_only_tails() {
            let canonical = fs::canonicalize(&path).unwrap_or(path.clone());
            let keep = synced
                .get(&canonical)
                .or_else(|| synced.get(&path))
                .copied()
                .unwrap_or(0);
            let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if len > keep {
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|source| ServerError::Io {
                        action: format!("open {} to cut its unsynced tail", path.display()),
                        source,
                        hint: "check that the server directory is writable",
                    })?;
                file.set_len(keep).map_err(|source| ServerError::Io {
                    action: format!("cut {} to {keep} bytes", path.display()),
                    source,
                    hint: "check that the server directory is writable",
                })?;
                dropped += len - keep;
            }
        }
        Ok(dropped)
    }

    /// The append-only files a power cut can shorten: Redis 7's (and
    /// Valkey's) incremental files under `appendonlydir/` (a base file is
    /// written whole and synced at a rewrite), or the one `*.aof` file in the
    /// server's directory of a server before 7.0 (Redis 6.2 has no
    /// multi-part AOF: with only the directory looked at, its power cuts
    /// would cut nothing, and every power-loss check would hold vacuously).
    fn append_only_tails(&self) -> Vec<PathBuf> {
        let files_in = |dir: &Path, keep: &dyn Fn(&str) -> bool| -> Vec<PathBuf> {
            fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(keep))
                .collect()
        };
        let mut tails = files_in(&self.dir.join("appendonlydir"), &|n| {
            n.ends_with(".incr.aof")
        });
        tails.extend(files_in(&self.dir, &|n| n.ends_with(".aof")));
        tails
    }

    /// SIGKILLs the server now and reaps it (a crash: nothing is flushed
    /// beyond what the server already wrote). The directory stays, so
    /// [`restart`](ManagedServer::restart) can bring it back. Does nothing
    /// if it is not running.
    pub fn kill(&mut self) {
        self.owned.kill_now();
    }

    /// Starts the server again on the same port, in the same directory,
    /// with the same config and clock file, and waits (up to 60 s) until it
    /// answers `PING` — i.e. until it has replayed its AOF. A server that is
    /// still running is SIGKILLed first (a crash-restart). Open new
    /// connections afterwards.
    pub async fn restart(&mut self) -> Result<(), ServerError> {
        self.owned.kill_now();
        match self.launch(RESTART_TIMEOUT).await {
            Ok(()) => self.keep_lazy_expiry().await,
            Err(NotReady::PortTaken) => Err(ServerError::PortTaken { port: self.port }),
            Err(NotReady::Failed(e)) => Err(e),
        }
    }

    /// A clean restart: the server is asked to shut down (SIGTERM, which
    /// `redis-server` handles as `SHUTDOWN`: it flushes and fsyncs its AOF,
    /// saves an RDB if configured, and exits 0), waited for (up to 5 s),
    /// then started again as [`restart`](ManagedServer::restart) does: same
    /// port, directory, config and clock file, on the data it wrote. Returns
    /// how the old process exited. Keys survive, loaded scripts do not,
    /// open connections break.
    ///
    /// A server that does not exit in time is SIGKILLed and the call fails
    /// (it was not a clean shutdown); the server is then not running:
    /// call [`restart`](ManagedServer::restart) to bring it back. A server
    /// that is not running is just started.
    pub async fn restart_clean(&mut self) -> Result<Option<ExitStatus>, ServerError> {
        let asked = self.owned.terminate().map_err(|source| ServerError::Io {
            action: format!("send SIGTERM to redis-server on port {}", self.port),
            source,
            hint: "the server may have died meanwhile; look at its redis.log",
        })?;
        let mut status = None;
        if asked {
            let started = Instant::now();
            loop {
                if let Some(exited) = self.owned.exited() {
                    status = Some(exited);
                    break;
                }
                if started.elapsed() >= STOP_WAIT {
                    self.owned.kill_now();
                    return Err(ServerError::Io {
                        action: format!(
                            "shut down redis-server on port {} cleanly within {}s",
                            self.port,
                            STOP_WAIT.as_secs()
                        ),
                        source: io::Error::new(io::ErrorKind::TimedOut, "it did not exit"),
                        hint: "it was SIGKILLed instead; look at its redis.log for a slow AOF fsync or RDB save",
                    });
                }
                tokio::time::sleep(POLL_EVERY).await;
            }
        }
        match self.launch(RESTART_TIMEOUT).await {
            Ok(()) => self.keep_lazy_expiry().await.map(|()| status),
            Err(NotReady::PortTaken) => Err(ServerError::PortTaken { port: self.port }),
            Err(NotReady::Failed(e)) => Err(e),
        }
    }

    /// Turns background expiry off on the running process when its options
    /// ask for lazy expiry only (a restart starts with it on again).
    async fn keep_lazy_expiry(&self) -> Result<(), ServerError> {
        if !self.options.lazy_expiry {
            return Ok(());
        }
        let mut conn = self.admin().await?;
        super::expiry::stop_active_expiry(&mut conn, self.port).await
    }

    /// `Err(NotRunning)` unless the server process is running; for callers
    /// that want a clear error instead of a refused connection.
    pub fn ensure_running(&self) -> Result<(), ServerError> {
        if self.owned.running() {
            Ok(())
        } else {
            Err(ServerError::NotRunning { port: self.port })
        }
    }
}

/// What one round of the clock probe saw, every time in milliseconds since
/// the epoch; see [`ManagedServer::probe_clock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProbeRound {
    /// The virtual time the round started from (and ends at).
    pub(crate) t0: i64,
    /// `TIME` after the clock moved to `t0 + PROBE_MOVE_MS`.
    pub(crate) time_moved: i64,
    /// The probe key's `PTTL` then (`None` on a replica).
    pub(crate) pttl: Option<i64>,
    /// After the clock moved past the key's expiry: whether `EXISTS`
    /// counted it and whether `GET` returned it (`None` on a replica).
    pub(crate) alive_after_expiry: Option<(bool, bool)>,
    /// `TIME` after the clock went back to `t0`.
    pub(crate) time_back: i64,
}

/// One probe round on `conn` (see [`ManagedServer::probe_clock`]); the
/// caller puts the clock back and deletes the key.
async fn probe_round(
    conn: &mut MultiplexedConnection,
    clock: &VirtualClock,
    t0: i64,
    replica: bool,
) -> redis::RedisResult<ProbeRound> {
    let (time_moved, pttl, alive_after_expiry) = if replica {
        clock.set_ms(t0 + PROBE_MOVE_MS);
        (read_time_ms(conn).await?, None, None)
    } else {
        redis::cmd("SET")
            .arg(CLOCK_PROBE_KEY)
            .arg("1")
            .arg("PX")
            .arg(PROBE_TTL_MS)
            .query_async::<()>(conn)
            .await?;
        clock.set_ms(t0 + PROBE_MOVE_MS);
        let (s, us, pttl): (i64, i64, i64) = redis::cmd("EVAL")
            .arg(PROBE_SCRIPT)
            .arg(1)
            .arg(CLOCK_PROBE_KEY)
            .query_async(conn)
            .await?;
        clock.set_ms(t0 + PROBE_TTL_MS + PROBE_MOVE_MS);
        let exists: i64 = redis::cmd("EXISTS")
            .arg(CLOCK_PROBE_KEY)
            .query_async(conn)
            .await?;
        let got: Option<String> = redis::cmd("GET")
            .arg(CLOCK_PROBE_KEY)
            .query_async(conn)
            .await?;
        (
            s * 1000 + us / 1000,
            Some(pttl),
            Some((exists != 0, got.is_some())),
        )
    };
    clock.set_ms(t0);
    let time_back = read_time_ms(conn).await?;
    Ok(ProbeRound {
        t0,
        time_moved,
        pttl,
        alive_after_expiry,
        time_back,
    })
}

/// The server's `TIME` in milliseconds since the epoch.
async fn read_time_ms(conn: &mut MultiplexedConnection) -> redis::RedisResult<i64> {
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(s * 1000 + us / 1000)
}

/// The clock probe's judgement: `None` when every round shows the server
/// following the virtual clock, else what the first bad round saw, one
/// line.
pub(crate) fn judge_clock_probe(rounds: &[ProbeRound]) -> Option<String> {
    let total = rounds.len();
    rounds.iter().enumerate().find_map(|(i, r)| {
        let which = if i == 0 {
            String::new()
        } else {
            format!(" (probe round {} of {total})", i + 1)
        };
        let want_time = r.t0 + PROBE_MOVE_MS;
        let want_pttl = PROBE_TTL_MS - PROBE_MOVE_MS;
        let off = r.time_moved - want_time;
        let time_ok = off.abs() <= PROBE_TOLERANCE_MS;
        let pttl_ok = r
            .pttl
            .is_none_or(|p| (p - want_pttl).abs() <= PROBE_TOLERANCE_MS);
        if !time_ok || !pttl_ok {
            let mut detail = format!(
                "after a move of the virtual clock by {PROBE_MOVE_MS} ms, TIME read {} ms {} it",
                off.abs(),
                if off < 0 { "behind" } else { "ahead of" }
            );
            if let Some(p) = r.pttl {
                detail.push_str(&format!(
                    " and a key set to expire in {PROBE_TTL_MS} ms had {p} ms left instead of \
                     {want_pttl}"
                ));
            }
            detail.push_str(&which);
            return Some(detail);
        }
        if let Some((exists, got)) = r.alive_after_expiry {
            if exists || got {
                let seen = match (exists, got) {
                    (true, true) => "EXISTS counted it and GET returned it",
                    (true, false) => "EXISTS counted it",
                    _ => "GET returned it",
                };
                return Some(format!(
                    "a key set to expire in {PROBE_TTL_MS} ms was still there after the \
                     virtual clock moved {PROBE_MOVE_MS} ms past its expiry ({seen}){which}"
                ));
            }
        }
        let back = r.time_back - r.t0;
        if back.abs() > PROBE_TOLERANCE_MS {
            return Some(format!(
                "after the virtual clock went back to where it started, TIME read {} ms {} \
                 it{which}",
                back.abs(),
                if back < 0 { "behind" } else { "ahead of" }
            ));
        }
        None
    })
}

/// `Valkey <valkey_version>`, else `Redis <redis_version>`, from `INFO
/// server`; `unknown` without either.
fn product_name(info: Option<&str>) -> String {
    let field = |name: &str| info.and_then(|i| info_field(i, name));
    match (field("valkey_version"), field("redis_version")) {
        (Some(v), _) => format!("Valkey {v}"),
        (None, Some(v)) => format!("Redis {v}"),
        (None, None) => "unknown".to_string(),
    }
}

/// The default `redis-server` (options that name no [`ServerKind`]):
/// `$STOREPROOF_REDIS_SERVER` when set (it must be an executable file), else
/// the first `redis-server` on PATH.
pub fn find_binary() -> Result<PathBuf, ServerError> {
    if let Some(value) = std::env::var_os(REDIS_SERVER_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(value);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(ServerError::BinaryNotFound {
                from_env: Some(path),
            })
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("redis-server"))
        .find(|candidate| is_executable(candidate))
        .ok_or(ServerError::BinaryNotFound { from_env: None })
}

/// Creates the server's directory: for tmpfs under `/dev/shm` when that
/// works, else (and for disk) under the system temp dir.
fn create_server_dir(kind: DataDir) -> Result<PathBuf, ServerError> {
    let temp = std::env::temp_dir();
    let mut bases = Vec::new();
    if kind == DataDir::Tmpfs {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            bases.push(shm.to_path_buf());
        }
    }
    bases.push(temp);
    let mut last_error = None;
    for base in &bases {
        match tempfile::Builder::new()
            .prefix("storeproof-redis-")
            .tempdir_in(base)
        {
            Ok(dir) => {
                let dir = dir.keep();
                // Marked so that a later run reaps it if we die without
                // cleaning up; unmarked, it would be left for good.
                return match mark_owned(&dir) {
                    Ok(()) => Ok(dir),
                    Err(source) => {
                        let _ = fs::remove_dir_all(&dir);
                        Err(ServerError::Io {
                            action: format!("mark {} as storeproof's", dir.display()),
                            source,
                            hint: "check that the temp dir is writable and /proc is mounted",
                        })
                    }
                };
            }
            Err(e) => last_error = Some((base, e)),
        }
    }
    let (base, source) = match last_error {
        Some((base, e)) => (base.display().to_string(), e),
        None => (
            "the temp directory".to_string(),
            io::Error::other("no base dir"),
        ),
    };
    Err(ServerError::Io {
        action: format!("create a server directory in {base}"),
        source,
        hint: "set TMPDIR to a writable directory",
    })
}

/// Writes the clock shim where the loader may map it executable: the
/// server's directory, or (when that is on a `noexec` mount such as
/// Docker's `/dev/shm`) a directory of its own in the temp dir, owned and
/// removed with the server.
fn place_shim(dir: &Path, owned: &mut Owned) -> Result<PathBuf, ServerError> {
    let shim_dir = if allows_exec(dir) {
        dir.to_path_buf()
    } else {
        let temp = std::env::temp_dir();
        if !allows_exec(&temp) {
            return Err(ServerError::Io {
                action: format!(
                    "place the clock shim: {} and {} are mounted noexec",
                    dir.display(),
                    temp.display()
                ),
                source: io::Error::from(io::ErrorKind::PermissionDenied),
                hint: "set TMPDIR to a directory on a filesystem mounted without noexec",
            });
        }
        let shim_dir = tempfile::Builder::new()
            .prefix("storeproof-shim-")
            .tempdir_in(&temp)
            .map_err(|source| ServerError::Io {
                action: format!(
                    "create a directory for the clock shim in {}",
                    temp.display()
                ),
                source,
                hint: "set TMPDIR to a writable directory",
            })?
            .keep();
        owned.add_dir(shim_dir.clone());
        mark_owned(&shim_dir).map_err(|source| ServerError::Io {
            action: format!("mark {} as storeproof's", shim_dir.display()),
            source,
            hint: "check that the temp dir is writable and /proc is mounted",
        })?;
        shim_dir
    };
    install_clock_shim(&shim_dir).map_err(|source| ServerError::Io {
        action: format!("write the clock shim into {}", shim_dir.display()),
        source,
        hint: "check that the directory is writable and not full",
    })
}

/// Whether a Redis server answers `PING` at `url` on a new connection
/// (within a couple of seconds): asked to confirm that a server storeproof
/// killed is really down before a store is blamed for answering then.
pub async fn answers_ping(url: &str) -> bool {
    ping(url).await.is_some()
}

/// One readiness probe: `Some(pid)` when the server at `url` answered
/// `PING` with `PONG` (`pid` from `INFO server`, `None` if INFO is not
/// available), `None` when it did not (refused, LOADING, timeout).
async fn ping(url: &str) -> Option<Option<u32>> {
    let mut conn = connect(url, Duration::from_millis(500), Duration::from_secs(2))
        .await
        .ok()?;
    let pong: String = redis::cmd("PING").query_async(&mut conn).await.ok()?;
    if pong != "PONG" {
        return None;
    }
    let info: redis::RedisResult<String> = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await;
    Some(
        info.ok()
            .and_then(|i| info_field(&i, "process_id").and_then(|p| p.parse().ok())),
    )
}

/// The contents of `path` from byte `start` on (at most the last 16 KiB),
/// lossily decoded; empty if it cannot be read.
fn read_from(path: &Path, start: u64) -> String {
    const MAX: u64 = 16 * 1024;
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let from = start.max(len.saturating_sub(MAX));
    if file.seek(SeekFrom::Start(from)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    let _ = file.take(MAX).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The last few non-empty lines of `log`, joined with ` | ` so that an
/// error message stays one line.
fn tail_lines(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return "(nothing)".to_string();
    }
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join(" | ")
}

/// Percent-encodes everything but RFC 3986 unreserved characters, for the
/// user-info part of a URL.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_lines_is_one_line() {
        assert_eq!(tail_lines(""), "(nothing)");
        let log = (1..=8).map(|i| format!("line {i}\n")).collect::<String>();
        assert_eq!(
            tail_lines(&log),
            "line 4 | line 5 | line 6 | line 7 | line 8"
        );
    }

    fn good_round(t0: i64) -> ProbeRound {
        ProbeRound {
            t0,
            time_moved: t0 + PROBE_MOVE_MS,
            pttl: Some(PROBE_TTL_MS - PROBE_MOVE_MS),
            alive_after_expiry: Some((false, false)),
            time_back: t0,
        }
    }

    #[test]
    fn the_clock_probe_passes_a_server_that_follows_the_clock() {
        let t0 = 2_000_000_000_000;
        assert_eq!(judge_clock_probe(&[good_round(t0); PROBE_ROUNDS]), None);
        let replica = ProbeRound {
            pttl: None,
            alive_after_expiry: None,
            ..good_round(t0)
        };
        assert_eq!(judge_clock_probe(&[replica]), None);
    }

    #[test]
    fn the_clock_probe_refuses_a_server_with_a_stale_cached_clock() {
        let t0 = 2_000_000_000_000;
        // What Valkey 9 on the CPU's time stamp counter answered in one round
        // out of twenty: TIME and PTTL right (its cache had just expired),
        // then the key still there past its expiry.
        let stale_expiry = ProbeRound {
            alive_after_expiry: Some((true, true)),
            ..good_round(t0)
        };
        let detail = judge_clock_probe(&[good_round(t0), stale_expiry, good_round(t0)])
            .expect("a key alive past its expiry is refused");
        assert!(
            detail.contains("still there after the virtual clock moved 7777 ms past its expiry")
                && detail.contains("EXISTS counted it and GET returned it")
                && detail.contains("(probe round 2 of 3)"),
            "{detail}"
        );
        // And in the other nineteen: TIME from before the move.
        let stale_time = ProbeRound {
            time_moved: t0 + 1,
            pttl: Some(PROBE_TTL_MS - 1),
            ..good_round(t0)
        };
        let detail = judge_clock_probe(&[stale_time]).expect("stale TIME is refused");
        assert_eq!(
            detail,
            "after a move of the virtual clock by 7777 ms, TIME read 7776 ms behind it and a \
             key set to expire in 60000 ms had 59999 ms left instead of 52223"
        );
        // A clock that does not go back.
        let stuck = ProbeRound {
            time_back: t0 + PROBE_MOVE_MS,
            ..good_round(t0)
        };
        let detail = judge_clock_probe(&[stuck]).expect("a clock stuck ahead is refused");
        assert!(
            detail.contains("went back") && detail.contains("7777 ms ahead of"),
            "{detail}"
        );
        // Only GET (EXISTS renamed away or lying) is enough.
        let get_only = ProbeRound {
            alive_after_expiry: Some((false, true)),
            ..good_round(t0)
        };
        assert!(judge_clock_probe(&[get_only]).is_some());
    }

    #[test]
    fn product_names_valkey_by_its_own_version() {
        let valkey =
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n";
        assert_eq!(product_name(Some(valkey)), "Valkey 9.1.2");
        assert_eq!(
            product_name(Some("redis_version:6.2.14\r\n")),
            "Redis 6.2.14"
        );
        assert_eq!(product_name(None), "unknown");
    }

    #[test]
    fn percent_encode_keeps_unreserved() {
        assert_eq!(percent_encode("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(percent_encode("p@ss:w/rd"), "p%40ss%3Aw%2Frd");
    }
}
