//! `cmd:'<command line>'`: a store written in any language, as an adapter
//! process speaking JSON lines (docs/PROTOCOL.md).
//!
//! One process per instance, started in a process group of its own so that
//! the whole group — the shell and whatever it started — is killed when the
//! instance is dropped, when the run ends, or on Ctrl-C ([`kill_all`]). Every
//! request waits at most the factory's timeout. An adapter that exits, hangs
//! or writes something that is not a JSON answer is reported as
//! `adapter_failed`, naming the instance, the request and the end of its stderr;
//! after that the instance answers the same failure to every call, and the
//! first such failure of the store's instances is kept by its factory
//! ([`StoreFactory::adapter_failure`]: a broken adapter is bad input, the run
//! ends on it, blaming no store; another run in the process starts clean).
//!
//! When the explorer stops an operation on purpose, the adapter's process is
//! kept if it sent nothing but the refused command (on trial unless it
//! declared itself `stateless`, docs/PROTOCOL.md §3.2), or if it offers the
//! optional `reconnect` request (§3.1) and made itself as good as a fresh
//! one ([`StoreClient::reconnect`]); otherwise a new process replaces it. [`adapters_started`] counts them.
//!
//! Adapters get SIGKILL when storeproof dies, however it dies (a parent-death
//! signal armed before exec). An answer line is at most [`MAX_LINE`] bytes,
//! and every text that comes from an adapter (its stderr, its messages) is
//! made [`printable`] before it reaches a terminal or a report.

use std::collections::{HashMap, HashSet, VecDeque};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use crate::contract::{Call, Contract, ErrorKind, Reply, StoreError};
use crate::store::{Hello, StoreClient, StoreFactory, StoreInfo};

/// How long an adapter may take to answer one request, unless told otherwise.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The least time an adapter gets for `hello`: starting a process, loading
/// its libraries and checking its server take longer than one request, more
/// so on a loaded CI machine.
const HELLO_TIMEOUT_AT_LEAST: Duration = Duration::from_secs(30);

/// How much of an adapter's stderr is kept to show with a failure.
const STDERR_KEPT: usize = 4096;

/// The shell that runs an adapter's command line (`$1`) and watches over
/// it. It gets SIGTERM when storeproof dies (a parent-death signal) and
/// then SIGKILLs its whole process group: the command's shell, the adapter
/// and whatever they started. Needed because `sh -c` forks the command
/// instead of exec'ing it (dash), and a parent-death signal is not
/// inherited across fork. A background job's stdin is /dev/null unless
/// redirected, hence the copy through fd 3.
const WATCHDOG: &str =
    "trap 'kill -KILL 0' TERM; exec 3<&0; sh -c \"$1\" <&3 3<&- & wait $!; exit $?";

/// How much of a malformed line is quoted in a failure.
const QUOTED: usize = 200;

/// The longest answer line an adapter may write (1 MiB, newline included);
/// a longer one fails the instance instead of growing memory without end.
pub const MAX_LINE: usize = 1 << 20;

/// Keeps the first failure of an adapter's instances, with what to do
/// about it (the first one set stays).
fn record_failure(failure: &OnceLock<String>, error: &StoreError, hint: &str) {
    let _ = failure.set(format!("{}; {hint}", error.message));
}

/// `text` with every control character (ESC, BEL, CR, NUL, …) written as an
/// escape such as `\u{1b}`, so that an adapter's bytes cannot drive a
/// terminal or make a report invalid (XML forbids most of them); every other
/// character, non-ASCII included, is kept.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Adapter processes put to work by this process (see [`adapters_started`]).
static STARTED: AtomicU64 = AtomicU64::new(0);

/// How many adapter processes this process has put to work so far, each
/// sent its `hello` (one per instance connected; an instance kept across
/// operations costs none; a spare started ahead counts once it is used).
pub fn adapters_started() -> u64 {
    STARTED.load(Ordering::Relaxed)
}

/// Process groups of live adapters, for [`kill_all`].
static LIVE_GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

fn register(pgid: i32) {
    crate::cleanup::register(
        "adapter processes",
        crate::cleanup::Stage::Processes,
        kill_all,
    );
    if let Ok(mut g) = LIVE_GROUPS.lock() {
        g.get_or_insert_with(HashSet::new).insert(pgid);
    }
}

/// Process groups killed during the run, for [`kill_all`] to wait on.
static KILLED_GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

fn kill_group(pgid: i32) {
    // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
    let sent = unsafe { libc::killpg(pgid, libc::SIGKILL) } == 0;
    if let Ok(mut g) = LIVE_GROUPS.lock() {
        if let Some(set) = g.as_mut() {
            set.remove(&pgid);
        }
    }
    // SIGKILL is delivered asynchronously: a member may still run for a
    // moment. Not waited for here (this is every abandoned adapter's path),
    // but once, for every group, when the run ends ([`kill_all`]).
    if sent {
        if let Ok(mut g) = KILLED_GROUPS.lock() {
            g.get_or_insert_with(HashSet::new).insert(pgid);
        }
    }
}

/// The longest storeproof waits at its end for killed adapters' processes
/// to die.
const GROUP_DEATH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The process groups that have a live member (not a zombie awaiting its
/// reaper), from one read of `/proc`; empty where `/proc` cannot be read.
fn groups_with_live_members() -> HashSet<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashSet::new();
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|stat| {
            // After the command name in parentheses: state, ppid, pgrp, …
            let mut fields = stat
                .rsplit(')')
                .next()
                .unwrap_or_default()
                .split_whitespace();
            let state = fields.next().unwrap_or("X");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<i32>().ok())?;
            (state != "Z" && state != "X").then_some(pgrp)
        })
        .collect()
}

/// Kills every adapter process group still alive (at the end of a run, and
/// on Ctrl-C), then waits (boundedly) until no process of any group killed
/// during the run still runs: when storeproof exits, nothing of an adapter
/// is left.
pub fn kill_all() {
    let groups: Vec<i32> = LIVE_GROUPS
        .lock()
        .map(|g| {
            g.as_ref()
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default()
        })
        .unwrap_or_default();
    for pgid in groups {
        kill_group(pgid);
    }
    let killed = KILLED_GROUPS
        .lock()
        .map(|mut g| g.take().unwrap_or_default())
        .unwrap_or_default();
    if killed.is_empty() {
        return;
    }
    let deadline = std::time::Instant::now() + GROUP_DEATH_WAIT;
    while !groups_with_live_members().is_disjoint(&killed) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Starts adapter processes from a command line.
#[derive(Debug, Clone)]
pub struct ExternalStoreFactory {
    command: String,
    workdir: PathBuf,
    timeout: Duration,
    /// Where the adapter's first successful hello said its state lives;
    /// every later hello must say the same (shared by clones: one store).
    state: Arc<OnceLock<StateLocation>>,
    /// The first failure of an instance of this store (shared by clones and
    /// every instance): [`StoreFactory::adapter_failure`].
    failure: Arc<OnceLock<String>>,
    /// Processes started ahead, per instance name, not yet sent `hello`
    /// (shared by clones; killed when the last clone goes).
    spares: Arc<Spares>,
}

/// Where an adapter keeps its records, as its hello declares with
/// `"state"` (docs/PROTOCOL.md §3): checks that read, restore, fill or kill the
/// Redis server can judge only a store whose state is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateLocation {
    /// `"state": "redis"` (also when hello says nothing): every record is a
    /// key under the prefix on the server of `redis_url`.
    Redis,
    /// `"state": "durable"`: the records live in a database of the store's
    /// own (a SQLite file in `STOREPROOF_WORKDIR`, PostgreSQL, …); the Redis
    /// server is at most its clock.
    Durable,
}

impl StateLocation {
    /// The declaration of a hello answer: `Ok(Redis)` when it has no
    /// `state`, `Err` naming the value when it is neither word.
    fn declared(hello_answer: &Value) -> Result<StateLocation, String> {
        match hello_answer.get("state") {
            None | Some(Value::Null) => Ok(StateLocation::Redis),
            Some(Value::String(s)) if s == "redis" => Ok(StateLocation::Redis),
            Some(Value::String(s)) if s == "durable" => Ok(StateLocation::Durable),
            Some(other) => Err(format!(
                "\"state\" must be \"redis\" (the default: its records are keys on the server of redis_url) or \"durable\" (a database of its own), got {}",
                printable(&other.to_string().chars().take(QUOTED).collect::<String>())
            )),
        }
    }

    fn word(self) -> &'static str {
        match self {
            StateLocation::Redis => "redis",
            StateLocation::Durable => "durable",
        }
    }
}

impl ExternalStoreFactory {
    /// Adapters run `sh -c <command>`; `workdir` is given to them as
    /// `STOREPROOF_WORKDIR` (a directory that lives as long as the run and is
    /// shared by every instance, for durable files such as kept executions).
    pub fn new(command: impl Into<String>, workdir: PathBuf) -> Self {
        ExternalStoreFactory {
            command: command.into(),
            workdir,
            timeout: DEFAULT_REQUEST_TIMEOUT,
            state: Arc::new(OnceLock::new()),
            failure: Arc::new(OnceLock::new()),
            spares: Arc::new(Spares::default()),
        }
    }

    /// Where the store keeps its state, as its first successful hello
    /// declared; `None` before any instance connected.
    pub fn declared_state(&self) -> Option<StateLocation> {
        self.state.get().copied()
    }

    /// The same factory with another per-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

fn adapter_failed(message: String) -> StoreError {
    StoreError::new(ErrorKind::AdapterFailed, message)
}

/// A short quotation of an adapter's line; `{:?}` escapes control characters.
fn quote(text: &str) -> String {
    let t = text.trim_end();
    if t.chars().count() > QUOTED {
        format!("{:?}…", t.chars().take(QUOTED).collect::<String>())
    } else {
        format!("{t:?}")
    }
}

/// How many processes per instance name are kept started ahead of need.
/// An adapter in Python or Node spends a few hundred milliseconds loading
/// its libraries before it can answer `hello`; checks and explored
/// operations take fresh processes one after another, so that load is paid
/// beside the work before it instead of in front of the next. Two: one
/// check can use an instance's process and its replacement at once (a
/// stopped operation), and more buy nothing on two cores.
const SPARES_PER_INSTANCE: usize = 2;

/// An adapter process started, not yet sent `hello`: it knows only its
/// command line, `STOREPROOF_WORKDIR` and `STOREPROOF_INSTANCE`, so it can
/// be started before the check that uses it (docs/PROTOCOL.md §1, "Started
/// ahead"). Plain
/// `std` handles, tied to no runtime: the explorer's worlds each run their
/// own, and a spare goes to whichever connects next.
struct Started {
    child: std::process::Child,
    pgid: i32,
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    stderr: std::process::ChildStderr,
}

/// Killed processes not yet reaped: a `std` child is reaped only when
/// waited for, so each start reaps those that have died since (no zombie
/// outlives the next start by much; the explorer starts thousands).
static UNREAPED: Mutex<Vec<std::process::Child>> = Mutex::new(Vec::new());

/// Kills `child`'s process group and leaves the child to be reaped.
fn kill_and_reap_later(mut child: std::process::Child, pgid: i32) {
    kill_group(pgid);
    let _ = child.kill();
    if let Ok(mut u) = UNREAPED.lock() {
        u.push(child);
    }
}

fn reap_dead() {
    if let Ok(mut u) = UNREAPED.lock() {
        u.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
    }
}

impl Started {
    /// Starts `sh -c <command>` for `instance` under the watchdog, in a
    /// process group of its own, dying with storeproof.
    fn start(factory: &ExternalStoreFactory, instance: &str) -> Result<Started, String> {
        reap_dead();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(WATCHDOG)
            .arg("storeproof-adapter")
            .arg(&factory.command)
            .env("STOREPROOF_WORKDIR", &factory.workdir)
            .env("STOREPROOF_INSTANCE", instance)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own: killing it kills the shell and its children.
            .process_group(0);
        // SAFETY: the hook only makes async-signal-safe syscalls.
        unsafe {
            cmd.pre_exec(crate::server::die_with_parent(libc::SIGTERM));
        }
        // Forked from the spawner thread, which lives as long as the process:
        // the parent-death signal fires when the forking *thread* ends.
        let mut child = crate::server::on_spawner_thread(move || cmd.spawn())
            .and_then(|spawned| spawned)
            .map_err(|e| e.to_string())?;
        let pgid = child.id() as i32;
        register(pgid);
        match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => Ok(Started {
                child,
                pgid,
                stdin,
                stdout,
                stderr,
            }),
            _ => {
                kill_and_reap_later(child, pgid);
                Err("it has no stdin/stdout/stderr".into())
            }
        }
    }
}

/// The spares of one store, per instance name.
#[derive(Default)]
struct Spares(Mutex<HashMap<String, VecDeque<Started>>>);

impl std::fmt::Debug for Spares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self
            .0
            .lock()
            .map_or(0, |m| m.values().map(VecDeque::len).sum());
        write!(f, "Spares({kept})")
    }
}

impl Drop for Spares {
    fn drop(&mut self) {
        if let Ok(mut m) = self.0.lock() {
            for (_, spares) in m.drain() {
                for s in spares {
                    kill_and_reap_later(s.child, s.pgid);
                }
            }
        }
    }
}

impl ExternalStoreFactory {
    /// A process for `instance`: the oldest spare, or one started now; then,
    /// for a name asked for before, spares are started again up to
    /// [`SPARES_PER_INSTANCE`]. A spare that
    /// died waiting is handed out all the same: its `hello` then fails with
    /// its exit and stderr, as a process started now would.
    fn process_for(&self, instance: &str) -> Result<Started, String> {
        // Spares only for a name asked for before: checks reuse a few names
        // (`a`, `b`, …), and a name asked for once would waste its spares.
        // One look at the pool: the spare to take, and how many to start
        // (none for a name new to it).
        let (spare, missing) = match self.spares.0.lock() {
            Ok(mut m) => match m.get_mut(instance) {
                Some(kept) => {
                    let spare = kept.pop_front();
                    (spare, SPARES_PER_INSTANCE.saturating_sub(kept.len()))
                }
                None => {
                    m.insert(instance.to_string(), VecDeque::new());
                    (None, 0)
                }
            },
            Err(_) => (None, 0),
        };
        let taken = match spare {
            Some(s) => s,
            None => Started::start(self, instance)?,
        };
        // A spare that cannot start is no failure: the next process wanted
        // is started then, and its failure reported.
        let fresh: Vec<Started> = (0..missing)
            .map_while(|_| Started::start(self, instance).ok())
            .collect();
        if let Ok(mut m) = self.spares.0.lock() {
            m.entry(instance.to_string()).or_default().extend(fresh);
        }
        Ok(taken)
    }
}

/// One adapter process at work.
struct Adapter {
    instance: String,
    /// `None` once dropped.
    child: Option<std::process::Child>,
    pgid: i32,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// The task copying stderr into `stderr`: awaited once the adapter
    /// exited, so its last words are read before they are quoted.
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
    timeout: Duration,
    next_id: u64,
    /// Set once the adapter failed; every later call answers it.
    dead: Option<StoreError>,
    /// Where its store keeps the first failure of its instances.
    failure: Arc<OnceLock<String>>,
}

impl Drop for Adapter {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            kill_and_reap_later(child, self.pgid);
        }
    }
}

impl Adapter {
    /// A process for `instance` (a spare or a new one), its pipes on the
    /// current runtime.
    fn spawn(factory: &ExternalStoreFactory, instance: &str) -> Result<Adapter, StoreError> {
        let cannot_start = |e: &dyn std::fmt::Display| {
            let error = adapter_failed(format!(
                "cannot start the adapter of instance {instance} (sh -c {:?}): {e}",
                factory.command
            ));
            record_failure(&factory.failure, &error, "fix the adapter's command line");
            error
        };
        let started = factory
            .process_for(instance)
            .map_err(|e| cannot_start(&e))?;
        let Started {
            child,
            pgid,
            stdin,
            stdout,
            stderr,
        } = started;
        let pipes = ChildStdin::from_std(stdin).and_then(|stdin| {
            Ok((
                stdin,
                ChildStdout::from_std(stdout)?,
                ChildStderr::from_std(stderr)?,
            ))
        });
        let (stdin, stdout, mut stderr) = match pipes {
            Ok(p) => p,
            Err(e) => {
                kill_and_reap_later(child, pgid);
                return Err(cannot_start(&e));
            }
        };
        STARTED.fetch_add(1, Ordering::Relaxed);
        let kept = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_KEPT)));
        let sink = kept.clone();
        let stderr_reader = tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut k) = sink.lock() {
                    k.extend(&buf[..n]);
                    while k.len() > STDERR_KEPT {
                        k.pop_front();
                    }
                }
            }
        });
        Ok(Adapter {
            instance: instance.to_string(),
            child: Some(child),
            pgid,
            stdin,
            stdout: BufReader::new(stdout),
            stderr: kept,
            stderr_reader: Some(stderr_reader),
            timeout: factory.timeout,
            next_id: 0,
            dead: None,
            failure: factory.failure.clone(),
        })
    }

    /// The process's exit status, waited for at most `most`.
    async fn exit_status(&mut self, most: Duration) -> Option<std::process::ExitStatus> {
        let deadline = tokio::time::Instant::now() + most;
        loop {
            match self.child.as_mut().map(std::process::Child::try_wait) {
                Some(Ok(Some(status))) => return Some(status),
                Some(Ok(None)) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                _ => return None,
            }
        }
    }

    fn stderr_tail(&self) -> String {
        let bytes: Vec<u8> = self
            .stderr
            .lock()
            .map(|k| k.iter().copied().collect())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(printable)
            .collect();
        let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
        if tail.is_empty() {
            "its stderr is empty".into()
        } else {
            format!("its stderr ends: {tail}")
        }
    }

    /// Sends one request and reads its answer: `Ok(Ok(value))` for `ok`,
    /// `Ok(Err(store error))` for `error`, `Err` when the adapter failed.
    async fn request(
        &mut self,
        op: &str,
        args: &Value,
        clock_ms: i64,
    ) -> Result<Result<Value, StoreError>, StoreError> {
        if let Some(dead) = &self.dead {
            return Err(dead.clone());
        }
        let id = self.next_id;
        self.next_id += 1;
        let what = format!("request {id} ({op} {args})");
        let line =
            json!({"id": id, "op": op, "args": args, "clock_ms": clock_ms}).to_string() + "\n";
        let outcome = self.exchange(&line, &what, id).await;
        if let Err((e, hint)) = &outcome {
            self.dead = Some(e.clone());
            kill_group(self.pgid);
            record_failure(&self.failure, e, hint);
        }
        outcome.map_err(|(e, _)| e)
    }

    /// One request and its answer; `Err` carries the failure and what to
    /// do about it.
    async fn exchange(
        &mut self,
        line: &str,
        what: &str,
        id: u64,
    ) -> Result<Result<Value, StoreError>, (StoreError, &'static str)> {
        const FIX: &str = "fix the adapter or its command line";
        let instance = self.instance.clone();
        let stdin = &mut self.stdin;
        let stdout = &mut self.stdout;
        let mut raw = Vec::new();
        let read = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await?;
            // One byte past the cap tells an overlong line from one that
            // exactly fills it.
            (&mut *stdout)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut raw)
                .await
        };
        let limit = if id == 0 {
            self.timeout.max(HELLO_TIMEOUT_AT_LEAST)
        } else {
            self.timeout
        };
        let read = tokio::time::timeout(limit, read).await;
        let n = match read {
            Err(_) => {
                return Err((
                    adapter_failed(format!(
                        "the adapter of instance {instance} did not answer {what} within {}s; {}",
                        limit.as_secs_f64(),
                        self.stderr_tail()
                    )),
                    "fix the adapter or raise --adapter-timeout",
                ))
            }
            Ok(Err(e)) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err((
                    adapter_failed(format!(
                        "cannot talk to the adapter of instance {instance} during {what}: {e}; {}",
                        self.stderr_tail()
                    )),
                    FIX,
                ))
            }
            Ok(Err(_)) => 0,
            Ok(Ok(n)) => n,
        };
        if n == 0 {
            // EOF: the adapter exited. Give its stderr a moment to arrive.
            let status = match self.exit_status(Duration::from_secs(2)).await {
                Some(s) => s.to_string(),
                None => "closed its stdout".to_string(),
            };
            // The reader ends at stderr's EOF, which an exited adapter's
            // process group gives at once (unless a child of it lives on).
            if let Some(reader) = self.stderr_reader.take() {
                let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
            }
            return Err((
                adapter_failed(format!(
                    "the adapter of instance {instance} exited ({status}) during {what}; {}",
                    self.stderr_tail()
                )),
                FIX,
            ));
        }
        if raw.len() > MAX_LINE && !raw.ends_with(b"\n") {
            return Err((
                adapter_failed(format!(
                    "the adapter of instance {instance} answered {what} with a line longer than \
                     {MAX_LINE} bytes (1 MiB) and no newline; an answer is one JSON object on \
                     one line; {}",
                    self.stderr_tail()
                )),
                FIX,
            ));
        }
        let answer = String::from_utf8_lossy(&raw);
        let malformed = |why: &str| {
            (
                adapter_failed(format!(
                    "the adapter of instance {instance} answered {what} with {why}: {}",
                    quote(&answer)
                )),
                FIX,
            )
        };
        let value: Value =
            serde_json::from_str(&answer).map_err(|_| malformed("a line that is not JSON"))?;
        if value.get("id").and_then(Value::as_u64) != Some(id) {
            return Err(malformed(&format!("an answer whose id is not {id}")));
        }
        match (value.get("ok"), value.get("error")) {
            (Some(ok), None) => Ok(Ok(ok.clone())),
            (None, Some(err)) => match serde_json::from_value::<StoreError>(err.clone()) {
                Ok(e)
                    if !matches!(e.kind, ErrorKind::AdapterFailed | ErrorKind::MalformedReply) =>
                {
                    Ok(Err(StoreError {
                        message: printable(&e.message),
                        ..e
                    }))
                }
                _ => Err(malformed(
                    "an error that is not {\"kind\", \"message\"} with a known kind",
                )),
            },
            _ => Err(malformed("a JSON line with neither \"ok\" nor \"error\"")),
        }
    }
}

struct ExternalClient {
    adapter: Adapter,
    /// Whether hello's answer offered the optional `reconnect` request
    /// (docs/PROTOCOL.md §3.1).
    offers_reconnect: bool,
    /// Whether hello's answer declared the process `stateless`: it keeps
    /// nothing between operations that could change a later command or
    /// answer (docs/PROTOCOL.md §3.2).
    stateless: bool,
}

#[async_trait]
impl StoreClient for ExternalClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match self.adapter.request(&call.op, &call.args, clock_ms).await? {
            Err(e) => Err(e),
            // A well-formed answer line whose `ok` the contract does not
            // allow is the store's answer, not a broken adapter: the checks
            // judge it (and fail it, naming the field); the adapter stays up.
            Ok(ok) => Reply::from_wire(&call.op, &ok).map_err(|e| {
                StoreError::new(
                    ErrorKind::MalformedReply,
                    printable(&format!(
                        "instance {} answered a reply the contract does not allow: {e} (the answer was {})",
                        self.adapter.instance,
                        quote(&ok.to_string())
                    )),
                )
            }),
        }
    }

    /// An adapter's process may remember anything (storeproof cannot see
    /// into it), unless its hello declared it `stateless`.
    fn remembers(&self) -> bool {
        !self.stateless
    }

    /// Sends `reconnect` to an adapter that offered it; only
    /// `{"reconnected": {}}` counts. Anything else (an error answer, another
    /// outcome) is `false`, and the harness starts a new process instead: an
    /// optional capability that misbehaves costs speed, never a verdict.
    async fn reconnect(&mut self, clock_ms: i64) -> bool {
        if !self.offers_reconnect {
            return false;
        }
        let answer = self
            .adapter
            .request("reconnect", &json!({}), clock_ms)
            .await;
        matches!(answer, Ok(Ok(ok)) if ok == json!({"reconnected": {}}))
    }
}

/// Whether a hello answer offers `capability` in its optional
/// `capabilities` list (an absent or malformed list offers nothing).
fn offers(hello_answer: &Value, capability: &str) -> bool {
    hello_answer
        .get("capabilities")
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().any(|c| c.as_str() == Some(capability)))
}

#[async_trait]
impl StoreFactory for ExternalStoreFactory {
    fn spec(&self) -> String {
        format!("cmd:{}", self.command)
    }

    /// As the adapter's hello declared (`"state"`); before the first hello
    /// (certify's probe connects first), the default: Redis.
    fn keeps_state_in_redis(&self) -> bool {
        self.declared_state() != Some(StateLocation::Durable)
    }

    fn adapter_failure(&self) -> Option<String> {
        self.failure.get().cloned()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let mut adapter = Adapter::spawn(self, &hello.instance)?;
        let args = serde_json::to_value(hello).unwrap_or(Value::Null);
        let ok = adapter.request("hello", &args, clock_ms).await??;
        let info: StoreInfo = serde_json::from_value(ok.clone()).map_err(|e| {
            adapter_failed(format!(
                "the adapter of instance {} answered hello with {} ({e}); it must be {{\"name\", \"version\", \"contracts\": [\"lease\", …]}}",
                hello.instance,
                quote(&ok.to_string())
            ))
        })?;
        let info = StoreInfo {
            name: printable(&info.name),
            version: printable(&info.version),
            ..info
        };
        if info.contracts.is_empty() {
            return Err(adapter_failed(format!(
                "the adapter of instance {} offers no contract; name at least one of {:?}",
                hello.instance,
                Contract::ALL.map(Contract::name)
            )));
        }
        let state = StateLocation::declared(&ok).map_err(|why| {
            let error = adapter_failed(format!(
                "the adapter of instance {} answered hello with {why}",
                hello.instance
            ));
            record_failure(&self.failure, &error, "fix the adapter's hello answer");
            error
        })?;
        let first = *self.state.get_or_init(|| state);
        if first != state {
            let error = adapter_failed(format!(
                "the adapter of instance {} declared \"state\": \"{}\" in hello, but an earlier instance declared \"{}\"; one store keeps its state in one place",
                hello.instance,
                state.word(),
                first.word()
            ));
            record_failure(&self.failure, &error, "fix the adapter's hello answer");
            return Err(error);
        }
        Ok((
            info,
            Box::new(ExternalClient {
                adapter,
                offers_reconnect: offers(&ok, "reconnect"),
                stateless: offers(&ok, "stateless"),
            }),
        ))
    }
}
