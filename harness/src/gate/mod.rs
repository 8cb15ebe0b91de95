//! The gate: a RESP proxy between one instance and the Redis server.
//!
//! storeproof must decide the order of individual Redis commands between
//! instances (to force races such as two read-then-write takes
//! interleaving), record what a store sent, re-create an instance in the
//! middle of an operation by replaying, and break connections for the fault
//! suite. One [`Gate`] per instance: the store connects to
//! [`Gate::url`] instead of the server's URL, and every connection it opens
//! is forwarded to the server.
//!
//! **Scheduled and set-up commands.** Connection set-up and introspection
//! ([`is_setup`]: `HELLO`, `AUTH`, `SELECT`, `CLIENT …`, `SCRIPT …`, `FUNCTION …`, `PING`,
//! …) always pass straight through and are neither held, recorded nor
//! replayed, so that client-library chatter (redis-py's `HELLO 3`, script
//! loading after `NOSCRIPT`) never changes a schedule. Every other command
//! is *scheduled*: in [`Mode::Hold`] it waits until the harness
//! [releases](Gate::release) it, it is [recorded](Gate::recording) with its
//! reply, it can be [answered from a recording](Gate::replay), and
//! [faults](Gate::inject) apply to it.
//!
//! **Per connection**, requests are handled strictly in order, one at a
//! time: the next request is not looked at before the previous one's reply
//! has gone back to the client. Push frames from the server (RESP3 `>`) are
//! forwarded to the client as they come and are never taken for a reply.
//! When the client disconnects the upstream connection is closed, and the
//! other way round.
//!
//! Not supported through the gate: `CLIENT REPLY OFF|SKIP` (the gate would
//! wait for a reply that never comes) and RESP2 pub/sub on a connection
//! that also sends scheduled commands (RESP2 messages look like replies).
//! RESP3 pub/sub works: its messages are push frames.
//!
//! **Partition.** [`Gate::partition`] cuts every command, set-up ones
//! included, until [`Gate::heal`], which also resets every connection that
//! went silent (black-holed) so that its client sees an error at once.
//!
//! [`drive`] steps operations through their gates one command at a time
//! (the take races and the explorer both use it).
//!
//! Threading: all state sits behind one `std::sync::Mutex`, held only for
//! short, await-free critical sections; waiting uses `tokio::sync::Notify`
//! and oneshot channels.

mod conn;
pub mod drawn;
pub mod drive;
pub mod resp;
pub mod transaction;

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Notify};
use tokio::task::{JoinHandle, JoinSet};

use crate::server::redact_url;

/// How long the gate waits for a TCP connection to the server.
const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long [`Gate::shutdown`] lets connection tasks finish before aborting
/// them (they normally end at once).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// One Redis command: its arguments, the command name first, as bytes.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Command {
    /// The arguments exactly as the client sent them.
    pub args: Vec<Vec<u8>>,
}

impl Command {
    /// A command from its arguments (`Command::new(["SET", "k", "v"])`).
    pub fn new<I, A>(args: I) -> Command
    where
        I: IntoIterator<Item = A>,
        A: AsRef<[u8]>,
    {
        Command {
            args: args.into_iter().map(|a| a.as_ref().to_vec()).collect(),
        }
    }

    /// The command name in upper case (lossy UTF-8); empty for no arguments.
    pub fn name(&self) -> String {
        self.args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
            .unwrap_or_default()
    }

    /// Whether the command name is `name`, ignoring ASCII case.
    pub fn is(&self, name: &str) -> bool {
        self.args
            .first()
            .is_some_and(|a| a.eq_ignore_ascii_case(name.as_bytes()))
    }
}

impl fmt::Display for Command {
    /// The arguments separated by spaces; an argument that is empty, holds
    /// whitespace or a quote, or is not printable ASCII is quoted and escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            let plain = !arg.is_empty() && arg.iter().all(|b| b.is_ascii_graphic() && *b != b'"');
            if plain {
                write!(f, "{}", arg.escape_ascii())?;
            } else {
                write!(f, "\"{}\"", arg.escape_ascii())?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Command({self})")
    }
}

/// One complete RESP frame, byte for byte as the server sent it (a reply,
/// possibly with its attribute prefix).
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Frame {
    /// The raw bytes, type byte to final `\r\n`.
    pub bytes: Vec<u8>,
}

impl Frame {
    /// A frame from raw bytes. The gate only ever records complete frames;
    /// a hand-made script must use complete frames too (`b"+OK\r\n"`).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Frame {
        Frame {
            bytes: bytes.into(),
        }
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether this is an error reply (`-…` or RESP3 `!…`).
    pub fn is_error(&self) -> bool {
        matches!(self.bytes.first(), Some(b'-' | b'!'))
    }
}

impl fmt::Display for Frame {
    /// The bytes with control characters escaped (`+OK\r\n`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.bytes.escape_ascii())
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Frame({self})")
    }
}

/// A scheduled command and the reply the client got (or, for a
/// [`Fault::DropReplyAfterApply`], the reply the server gave).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// What the client sent.
    pub command: Command,
    /// What came back.
    pub reply: Frame,
}

/// Identifies one held command for [`Gate::release`]. Unique per gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct HeldId(pub u64);

impl fmt::Display for HeldId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "held#{}", self.0)
    }
}

/// A scheduled command waiting in [`Mode::Hold`] for [`Gate::release`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// What to pass to [`Gate::release`].
    pub id: HeldId,
    /// Which client connection of this gate sent it (numbered from 1 in
    /// order of acceptance).
    pub connection: u64,
    /// The command.
    pub command: Command,
}

/// What the gate does with scheduled commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Mode {
    /// Forward at once (the default).
    #[default]
    PassThrough,
    /// Hold each one until [`Gate::release`]d.
    Hold,
}

/// During a [`Gate::replay`], a command that is not the one the recording
/// has next: the store sends different commands on re-run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The connection that sent it (it was reset).
    pub connection: u64,
    /// Its position in the replay script (0-based).
    pub index: usize,
    /// What the recording has there.
    pub expected: Command,
    /// What the store sent instead.
    pub got: Command,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the store sends different commands on re-run: command {} was `{}` but is now `{}`",
            self.index + 1,
            self.expected,
            self.got
        )
    }
}

/// Something the gate does to a scheduled command instead of forwarding it
/// normally (see [`Gate::inject`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fault {
    /// Send it to the server and read the reply (so the server applied it),
    /// then close the client connection without answering: a lost reply.
    /// The exchange is recorded.
    DropReplyAfterApply,
    /// Wait this long, then forward it normally.
    Delay(Duration),
    /// Close the client connection (with a TCP reset); nothing is sent to
    /// the server.
    ResetBeforeSend,
    /// Answer it with a RESP error ([`REFUSED_REPLY`]); nothing is sent to
    /// the server. The connection stays open and in step: the client sees
    /// its command fail, as it would a script error, and can go on.
    RefuseBeforeSend,
    /// Never forward it, never answer, keep the connection open: the client
    /// waits until it gives up (its own timeout). Later requests on that
    /// connection are never answered either.
    BlackHole,
}

/// The reply to a command refused by [`Fault::RefuseBeforeSend`]. Its
/// words start with none of the prefixes client libraries turn into a
/// connection error (`ERR max number of clients`, `LOADING`, …).
pub const REFUSED_REPLY: &[u8] =
    b"-ERR storeproof: command not sent, its operation was stopped\r\n";

/// A fault and the scheduled commands it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRule {
    /// What to do.
    pub fault: Fault,
    /// Only commands with this name (ASCII case ignored); `None`: any
    /// scheduled command.
    pub command: Option<String>,
    /// How many more commands it applies to; `None`: every one, until
    /// [`Gate::clear_faults`].
    pub times: Option<u32>,
}

impl FaultRule {
    /// `fault` for the next scheduled command only.
    pub fn once(fault: Fault) -> FaultRule {
        FaultRule {
            fault,
            command: None,
            times: Some(1),
        }
    }

    /// `fault` for every scheduled command until cleared.
    pub fn always(fault: Fault) -> FaultRule {
        FaultRule {
            fault,
            command: None,
            times: None,
        }
    }

    /// The same rule, restricted to commands named `name` (`"EVALSHA"`).
    pub fn on_command(mut self, name: &str) -> FaultRule {
        self.command = Some(name.to_string());
        self
    }

    /// The same rule, applying to the next `n` matching commands.
    pub fn times(mut self, n: u32) -> FaultRule {
        self.times = Some(n);
        self
    }

    fn matches(&self, command: &Command) -> bool {
        self.times != Some(0) && self.command.as_deref().is_none_or(|name| command.is(name))
    }
}

impl From<Fault> for FaultRule {
    /// `fault` for the next scheduled command only ([`FaultRule::once`]).
    fn from(fault: Fault) -> FaultRule {
        FaultRule::once(fault)
    }
}

/// Why the gate could not start or do what was asked. Every message says
/// what to do.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The upstream URL is not a `redis://` URL of a TCP server.
    #[error(
        "the gate cannot forward to {url}: {cause}; use redis://[user:password@]host:port[/db]"
    )]
    InvalidUrl {
        /// The URL, password replaced by `***`.
        url: String,
        /// Why, one line.
        cause: String,
    },
    /// The gate could not listen on 127.0.0.1.
    #[error("the gate cannot listen on 127.0.0.1: {source}; check that the loopback interface is up and that ports are free")]
    Bind {
        /// The operating system's answer.
        source: std::io::Error,
    },
    /// The server did not accept a TCP connection when the gate started.
    #[error("the gate cannot reach the Redis server at {addr}: {cause}; start the server before the gate, or fix the URL")]
    Upstream {
        /// `host:port`.
        addr: String,
        /// Why, one line.
        cause: String,
    },
    /// [`Gate::release`] of an id that is not held.
    #[error("no command {id} is held: it was released already, or its connection closed; call held() for the commands held now")]
    NotHeld {
        /// The id asked for.
        id: HeldId,
    },
    /// The gate was shut down.
    #[error("the gate was shut down; start a new one")]
    ShutDown,
}

/// Whether `command` is connection set-up or introspection, which the gate
/// always forwards at once and never holds, records or replays: `HELLO`,
/// `AUTH`, `SELECT`, `CLIENT` (any subcommand), `SCRIPT` (any subcommand),
/// `COMMAND`, `PING`, `INFO`, `CONFIG`, `READONLY`, `RESET`, `ECHO`, `QUIT`,
/// `MONITOR`, and the pub/sub (un)subscribe commands (`SUBSCRIBE`,
/// `PSUBSCRIBE`, `SSUBSCRIBE`, `UNSUBSCRIBE`, `PUNSUBSCRIBE`,
/// `SUNSUBSCRIBE`, which RESP3 answers with push frames only). ASCII case
/// is ignored. Everything else (`EVALSHA`, `EVAL`, `HGETALL`, `TIME`,
/// `MULTI`, …) is scheduled.
pub fn is_setup(command: &Command) -> bool {
    const SETUP: &[&str] = &[
        "HELLO", "AUTH", "SELECT", "CLIENT", "SCRIPT", "FUNCTION", "COMMAND", "PING", "INFO",
        "CONFIG", "READONLY", "RESET", "ECHO", "QUIT", "MONITOR",
    ];
    SETUP.iter().any(|name| command.is(name)) || is_subscription(command)
}

/// The pub/sub commands whose RESP3 answers are push frames only (no
/// regular reply to wait for).
fn is_subscription(command: &Command) -> bool {
    const SUBSCRIPTION: &[&str] = &[
        "SUBSCRIBE",
        "PSUBSCRIBE",
        "SSUBSCRIBE",
        "UNSUBSCRIBE",
        "PUNSUBSCRIBE",
        "SUNSUBSCRIBE",
    ];
    SUBSCRIPTION.iter().any(|name| command.is(name))
}

/// A RESP proxy for one instance (see the [module docs](self)).
///
/// Cheap to clone: clones share one gate. The gate stops (listener and
/// every connection closed) on [`shutdown`](Gate::shutdown) or when the last
/// clone is dropped.
#[derive(Clone)]
pub struct Gate {
    shared: Arc<Shared>,
    _stop_on_drop: Arc<StopOnDrop>,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("addr", &self.shared.addr)
            .field("upstream", &self.shared.upstream_addr)
            .field("mode", &self.state().mode)
            .field("connections", &self.connections())
            .finish()
    }
}

/// Everything the gate's tasks share with the handles.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Woken when a command is held or an exchange recorded.
    changed: Notify,
    /// `true` once the gate is stopping.
    stop: watch::Sender<bool>,
    /// Bumped by [`Gate::heal`]: black-holed connections reset on a change.
    heal: watch::Sender<u64>,
    addr: SocketAddr,
    upstream_host: String,
    upstream_port: u16,
    upstream_addr: String,
    upstream_url: String,
    accept_task: Mutex<Option<JoinHandle<()>>>,
    next_connection: AtomicU64,
}

#[derive(Default)]
struct State {
    mode: Mode,
    next_held: u64,
    /// Held commands in arrival order, each with the sender that releases it.
    held: Vec<(Held, oneshot::Sender<()>)>,
    recording: Vec<Exchange>,
    /// What is left of the replay script.
    script: VecDeque<Exchange>,
    /// The index in the original script of `script.front()`.
    script_index: usize,
    /// Script indices from this one on must match byte for byte (a guess).
    exact_from: usize,
    /// The values the store drew this replay, renamed to the recorded ones
    /// (see [`drawn`]).
    renaming: drawn::Renaming,
    divergence: Option<Divergence>,
    faults: Vec<FaultRule>,
    /// [`Gate::partition`]: every command, set-up ones too, is black-holed.
    partitioned: bool,
    connections: usize,
    stopped: bool,
    /// Every database other than 0 that a `SELECT` through the gate named
    /// (its argument as sent, when it is not `0`).
    other_databases: Vec<String>,
    /// [`Gate::emulate_transactions`].
    transactions: bool,
    /// [`Gate::set_watch_dirty`].
    watch_dirty: bool,
    /// Bumped by [`Gate::reset_transactions`].
    transaction_epoch: u64,
}

/// What a connection does with a scheduled command (decided under the lock).
pub(crate) enum Admission {
    /// Forward it now (faults still apply).
    Forward,
    /// Wait for the receiver, then forward it.
    Hold(oneshot::Receiver<()>),
    /// Answer with this frame; do not forward it.
    Answer(Frame),
    /// It diverged from the replay script: reset the connection.
    Diverged,
    /// The gate is stopping.
    Stopped,
}

/// Stops the gate when the last handle goes away.
struct StopOnDrop(Arc<Shared>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

impl Gate {
    /// Listens on `127.0.0.1:0` and forwards every accepted connection to
    /// `upstream_url`, a `redis://` URL (only host and port are used for the
    /// TCP connection; authentication and database selection are commands
    /// the client sends, and they pass through).
    ///
    /// Checks once that the server accepts a TCP connection, so that a
    /// wrong URL fails here rather than in the store. Must be called inside
    /// a tokio runtime; the gate's tasks run on it.
    pub async fn start(upstream_url: &str) -> Result<Gate, GateError> {
        let (host, port) = upstream_host_port(upstream_url)?;
        let upstream_addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        match tokio::time::timeout(
            UPSTREAM_CONNECT_TIMEOUT,
            TcpStream::connect((host.as_str(), port)),
        )
        .await
        {
            Ok(Ok(probe)) => drop(probe),
            Ok(Err(e)) => {
                return Err(GateError::Upstream {
                    addr: upstream_addr,
                    cause: e.to_string(),
                })
            }
            Err(_) => {
                return Err(GateError::Upstream {
                    addr: upstream_addr,
                    cause: format!("no answer within {}s", UPSTREAM_CONNECT_TIMEOUT.as_secs()),
                })
            }
        }
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|source| GateError::Bind { source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| GateError::Bind { source })?;
        let (stop, _) = watch::channel(false);
        let (heal, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Notify::new(),
            stop,
            heal,
            addr,
            upstream_host: host,
            upstream_port: port,
            upstream_addr,
            upstream_url: upstream_url.to_string(),
            accept_task: Mutex::new(None),
            next_connection: AtomicU64::new(1),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        *lock(&shared.accept_task) = Some(task);
        tracing::debug!(gate = %addr, upstream = %shared.upstream_addr, "gate started");
        Ok(Gate {
            _stop_on_drop: Arc::new(StopOnDrop(Arc::clone(&shared))),
            shared,
        })
    }

    /// The URL to give the store: the upstream URL with `host:port`
    /// replaced by the gate's (`127.0.0.1:PORT`); scheme, user, password,
    /// database path and query (`?protocol=resp3`) are kept.
    pub fn url(&self) -> String {
        replace_host_port(&self.shared.upstream_url, self.shared.addr)
    }

    /// Every database other than 0 that a client selected through this
    /// gate (`SELECT 3`), in the order first seen: storeproof reads and
    /// restores database 0 only, so a store that keeps its keys elsewhere
    /// cannot be judged on its keys (docs/PROTOCOL.md §5).
    pub fn other_databases(&self) -> Vec<String> {
        self.state().other_databases.clone()
    }

    /// The address the gate listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The server's `host:port` the gate forwards to.
    pub fn upstream_addr(&self) -> &str {
        &self.shared.upstream_addr
    }

    /// Sets what happens to scheduled commands from now on. Switching to
    /// [`Mode::PassThrough`] releases every held command (in arrival
    /// order), so that nothing stays stuck.
    pub fn set_mode(&self, mode: Mode) {
        let released = {
            let mut state = self.state();
            state.mode = mode;
            if mode == Mode::PassThrough {
                std::mem::take(&mut state.held)
            } else {
                Vec::new()
            }
        };
        for (_, release) in released {
            let _ = release.send(());
        }
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.state().mode
    }

    /// The oldest command held now; if none is, waits until one is held or
    /// `timeout` passes (`None`), or the gate stops (`None`). Returns the
    /// same command again until it is released, so "release, then
    /// `next_held`" steps through a store's commands one by one.
    pub async fn next_held(&self, timeout: Duration) -> Option<Held> {
        self.wait_until(timeout, |state| state.held.first().map(|(h, _)| h.clone()))
            .await
    }

    /// Waits until at least `count` exchanges are recorded (`true`), or
    /// `timeout` passes or the gate stops (`false`). A released command's
    /// reply is recorded before it is sent to the client.
    pub async fn wait_recorded(&self, count: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |state| {
            (state.recording.len() >= count).then_some(())
        })
        .await
        .is_some()
    }

    /// The commands held now, in arrival order. Commands of a connection
    /// that closed are gone from it.
    pub fn held(&self) -> Vec<Held> {
        self.state().held.iter().map(|(h, _)| h.clone()).collect()
    }

    /// Lets one held command go to the server (faults then apply); its
    /// reply goes back to the client. Fails if `id` is not held now.
    pub fn release(&self, id: HeldId) -> Result<(), GateError> {
        let release = {
            let mut state = self.state();
            if state.stopped {
                return Err(GateError::ShutDown);
            }
            let at = state
                .held
                .iter()
                .position(|(h, _)| h.id == id)
                .ok_or(GateError::NotHeld { id })?;
            state.held.remove(at).1
        };
        // The receiver is gone only if its connection is closing: then the
        // command is dropped with it, as if it had never been held.
        let _ = release.send(());
        Ok(())
    }

    /// Releases every held command, in arrival order. In [`Mode::Hold`]
    /// later commands are held again.
    pub fn release_all(&self) {
        let released = std::mem::take(&mut self.state().held);
        for (_, release) in released {
            let _ = release.send(());
        }
    }

    /// Every scheduled command that went to the server (or was answered by
    /// replay) with its reply, in the order the replies were received.
    pub fn recording(&self) -> Vec<Exchange> {
        self.state().recording.clone()
    }

    /// Forgets the recording.
    pub fn clear_recording(&self) {
        self.state().recording.clear();
    }

    /// Replays `script`: the next scheduled commands (from any connection)
    /// are compared with `script[i].command`; while they match they are
    /// answered with `script[i].reply` without being sent to the server,
    /// and recorded. The mode becomes [`Mode::Hold`], so once the script is
    /// exhausted the next scheduled command is held.
    ///
    /// A command that differs from the script is a divergence: it is not
    /// sent, [`divergence`](Gate::divergence) reports expected vs got, the
    /// connection is reset, and the rest of the script is dropped. Set-up
    /// commands ([`is_setup`]) pass through as always. Replaces any earlier
    /// script and clears an earlier divergence.
    ///
    /// A command that differs from the script's only in values the store
    /// drew at random ([`drawn`]: a uuid per operation, say) matches it: from
    /// then until the next replay the gate renames the store's value to the
    /// recorded one in every command and back in every reply.
    pub fn replay(&self, script: Vec<Exchange>) {
        self.replay_guessing(script, usize::MAX);
    }

    /// [`Gate::replay`], where the exchanges from `guess_at` on are a
    /// guess at what the store sends next (not what it sent before): they
    /// match only byte for byte, never up to a renaming (a recorded value
    /// need not be fresh in the state the guess is made in).
    pub fn replay_guessing(&self, script: Vec<Exchange>, guess_at: usize) {
        let mut state = self.state();
        state.script = script.into();
        state.script_index = 0;
        state.exact_from = guess_at;
        state.renaming = drawn::Renaming::default();
        state.divergence = None;
        state.mode = Mode::Hold;
    }

    /// The values the store drew that the current replay renamed: (the
    /// store's, the recorded), as [`drawn::Renaming::pairs`].
    pub fn renamed(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.state().renaming.pairs().to_vec()
    }

    /// Keeps each connection's transaction at the gate (see
    /// [`transaction`]): `MULTI`, `WATCH` and the commands queued in a
    /// transaction are answered by the gate (each still a scheduled
    /// command, held and recorded) and reach the server only at `EXEC`,
    /// as one write. For a harness that restores the server between
    /// commands and answers earlier ones from a recording (the explorer),
    /// where a transaction the server kept would be lost. Off by default.
    pub fn emulate_transactions(&self, on: bool) {
        self.state().transactions = on;
    }

    /// Whether a key watched on this gate's connections was modified since
    /// its `WATCH`: with [`Gate::emulate_transactions`], an `EXEC` after a
    /// `WATCH` is then answered as aborted (a null) and nothing is sent.
    pub fn set_watch_dirty(&self, dirty: bool) {
        self.state().watch_dirty = dirty;
    }

    /// Forgets every connection's transaction and watches kept at the
    /// gate (see [`Gate::emulate_transactions`]), as if each connection
    /// had sent `DISCARD` and `UNWATCH`: for a new run of an operation on
    /// a connection an earlier run stopped inside a transaction.
    pub fn reset_transactions(&self) {
        self.state().transaction_epoch += 1;
    }

    /// How many exchanges of the replay script are still to be answered.
    pub fn replay_remaining(&self) -> usize {
        self.state().script.len()
    }

    /// The divergence of the last [`replay`](Gate::replay), if one
    /// happened.
    pub fn divergence(&self) -> Option<Divergence> {
        self.state().divergence.clone()
    }

    /// Adds a fault rule (a bare [`Fault`] applies to the next scheduled
    /// command only). When a scheduled command is about to be forwarded
    /// (after any hold), the first rule, in order of injection, that
    /// matches it applies, and only that one; a rule whose count runs out is
    /// removed. Replayed commands are answered before faults apply.
    pub fn inject(&self, rule: impl Into<FaultRule>) {
        self.state().faults.push(rule.into());
    }

    /// The fault rules still in force, in order.
    pub fn faults(&self) -> Vec<FaultRule> {
        self.state().faults.clone()
    }

    /// Removes every fault rule. A command already delayed or black-holed
    /// stays so (a black-holed one until [`heal`](Gate::heal)).
    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    /// Cuts the instance off: from now until [`heal`](Gate::heal), every
    /// command any of its connections sends — set-up commands (`PING`,
    /// `HELLO`, `SCRIPT LOAD`, …) as well as scheduled ones, new
    /// connections' as well as old ones' — is black-holed: never sent, never
    /// answered, its connection left silent (as [`Fault::BlackHole`]). A
    /// held or delayed command whose turn comes during the partition is
    /// black-holed too. Replies to commands that reached the server before
    /// the partition still come back. Fault rules and mode are untouched.
    pub fn partition(&self) {
        self.state().partitioned = true;
    }

    /// Whether the gate is partitioned now ([`partition`](Gate::partition)
    /// without a [`heal`](Gate::heal) since).
    pub fn is_partitioned(&self) -> bool {
        self.state().partitioned
    }

    /// Ends a partition and frees every connection that went silent: each
    /// connection whose command was black-holed (by the partition or by a
    /// [`Fault::BlackHole`] rule) is closed with a TCP reset at once, so its
    /// client sees an error instead of waiting for its own timeout. The
    /// black-holed commands never ran. Later commands pass as usual (fault
    /// rules still apply). Harmless when not partitioned.
    pub fn heal(&self) {
        self.state().partitioned = false;
        self.shared.heal.send_modify(|generation| *generation += 1);
    }

    /// How many client connections are open now.
    pub fn connections(&self) -> usize {
        self.state().connections
    }

    /// Closes the listener and every connection (held commands are dropped
    /// unanswered) and waits until every task of the gate has ended. Other
    /// clones of this handle see a stopped gate.
    pub async fn shutdown(self) {
        self.shared.stop();
        let task = lock(&self.shared.accept_task).take();
        if let Some(task) = task {
            if let Err(e) = task.await {
                tracing::warn!(error = %e, "gate accept task ended abnormally");
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    /// Waits until `ready` returns `Some` (checked now and after every
    /// change), `timeout` passes or the gate stops.
    async fn wait_until<T>(
        &self,
        timeout: Duration,
        mut ready: impl FnMut(&State) -> Option<T>,
    ) -> Option<T> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            // Registered before the check, so no change can slip between.
            notified.as_mut().enable();
            {
                let state = self.state();
                if let Some(found) = ready(&state) {
                    return Some(found);
                }
                if state.stopped {
                    return None;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return ready(&self.state());
            }
        }
    }
}

impl Shared {
    /// Notes what a set-up command says about the connection's database:
    /// a `SELECT` of any database but 0 is kept for [`Gate::other_databases`].
    pub(crate) fn note_setup(&self, command: &Command) {
        if !command.is("SELECT") {
            return;
        }
        let db = command
            .args
            .get(1)
            .map(|a| String::from_utf8_lossy(a).trim().to_string())
            .unwrap_or_default();
        if db.parse::<i64>() == Ok(0) {
            return;
        }
        let mut state = lock(&self.state);
        if !state.other_databases.contains(&db) {
            state.other_databases.push(db);
        }
    }

    /// Signals every task to stop and drops every held command.
    fn stop(&self) {
        let held = {
            let mut state = lock(&self.state);
            state.stopped = true;
            std::mem::take(&mut state.held)
        };
        // Dropping the senders wakes the held connections; they stop.
        drop(held);
        self.stop.send_replace(true);
        self.changed.notify_waiters();
    }

    /// Decides what happens to a scheduled command of `connection`.
    pub(crate) fn admit(&self, connection: u64, command: &Command) -> Admission {
        let mut state = lock(&self.state);
        if state.stopped {
            return Admission::Stopped;
        }
        if let Some(expected) = state.script.front().map(|e| e.command.clone()) {
            let exact = state.script_index >= state.exact_from;
            if expected == *command || (!exact && state.renaming.unify(&expected, command)) {
                if let Some(exchange) = state.script.pop_front() {
                    state.script_index += 1;
                    let reply = exchange.reply.clone();
                    state.recording.push(exchange);
                    drop(state);
                    self.changed.notify_waiters();
                    return Admission::Answer(reply);
                }
            }
            let divergence = Divergence {
                connection,
                index: state.script_index,
                expected,
                got: command.clone(),
            };
            tracing::info!(%divergence, connection, "gate replay diverged");
            state.divergence = Some(divergence);
            state.script.clear();
            return Admission::Diverged;
        }
        match state.mode {
            Mode::PassThrough => Admission::Forward,
            Mode::Hold => {
                state.next_held += 1;
                let id = HeldId(state.next_held);
                let (tx, rx) = oneshot::channel();
                state.held.push((
                    Held {
                        id,
                        connection,
                        command: command.clone(),
                    },
                    tx,
                ));
                drop(state);
                self.changed.notify_waiters();
                Admission::Hold(rx)
            }
        }
    }

    /// Whether transactions are kept at the gate, whether a watched key
    /// was modified (see [`Gate::emulate_transactions`]) and how many
    /// times they were reset ([`Gate::reset_transactions`]).
    pub(crate) fn transactions(&self) -> (bool, bool, u64) {
        let state = lock(&self.state);
        (
            state.transactions,
            state.watch_dirty,
            state.transaction_epoch,
        )
    }

    /// Whether the gate is partitioned now (see [`Gate::partition`]).
    pub(crate) fn partitioned(&self) -> bool {
        lock(&self.state).partitioned
    }

    /// A receiver that changes on every [`Gate::heal`].
    pub(crate) fn heal_signal(&self) -> watch::Receiver<u64> {
        self.heal.subscribe()
    }

    /// The fault that applies to `command` now, if any (and counts it).
    pub(crate) fn take_fault(&self, command: &Command) -> Option<Fault> {
        let mut state = lock(&self.state);
        let at = state.faults.iter().position(|r| r.matches(command))?;
        let rule = &mut state.faults[at];
        let fault = rule.fault;
        if let Some(times) = rule.times.as_mut() {
            *times -= 1;
            if *times == 0 {
                state.faults.remove(at);
            }
        }
        Some(fault)
    }

    /// `command` as the server and the recording must see it, when that
    /// differs from what the store sent: the values the store drew renamed
    /// to the recorded ones ([`Gate::replay`]); `None` when nothing is.
    pub(crate) fn to_recorded(&self, command: &Command) -> Option<Command> {
        let state = lock(&self.state);
        if state.renaming.is_empty() {
            return None;
        }
        Some(state.renaming.to_recorded(command)).filter(|renamed| renamed != command)
    }

    /// Bytes for the store: the recorded values renamed back to its own.
    pub(crate) fn to_store(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let state = lock(&self.state);
        (!state.renaming.is_empty()).then(|| state.renaming.to_store(bytes))
    }

    /// Records an exchange that went through the server.
    pub(crate) fn record(&self, exchange: Exchange) {
        lock(&self.state).recording.push(exchange);
        self.changed.notify_waiters();
    }

    /// Forgets a closed connection and its held commands.
    pub(crate) fn connection_closed(&self, connection: u64) {
        let mut state = lock(&self.state);
        state.connections = state.connections.saturating_sub(1);
        state.held.retain(|(h, _)| h.connection != connection);
    }

    pub(crate) fn upstream(&self) -> (&str, u16) {
        (&self.upstream_host, self.upstream_port)
    }

    pub(crate) fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }
}

/// Locks a mutex, ignoring poisoning: the gate's state stays consistent
/// at every unlock (no critical section can panic half-way through an
/// update that matters).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Accepts connections until the gate stops, then waits for (or, after a
/// grace period, aborts) every connection task.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut stop = shared.stop_signal();
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            () = stopped(&mut stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((socket, peer)) => {
                    let connection = shared.next_connection.fetch_add(1, Ordering::Relaxed);
                    {
                        let mut state = lock(&shared.state);
                        if state.stopped {
                            break;
                        }
                        state.connections += 1;
                    }
                    tracing::debug!(connection, %peer, "gate accepted a connection");
                    tasks.spawn(conn::serve(Arc::clone(&shared), connection, socket));
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait, retry.
                    tracing::warn!(error = %e, "gate accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tasks.shutdown().await;
    }
    tracing::debug!(gate = %shared.addr, "gate stopped");
}

/// Resolves once the gate is stopping (or its stop signal is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`: drop it here.
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// Host and port of a `redis://` URL, via the `redis` crate's parser.
fn upstream_host_port(url: &str) -> Result<(String, u16), GateError> {
    let invalid = |cause: String| GateError::InvalidUrl {
        url: redact_url(url),
        cause,
    };
    if !url.starts_with("redis://") && !url.starts_with("valkey://") {
        return Err(invalid(
            "only plain redis:// URLs can go through the gate (no TLS, no unix sockets)".into(),
        ));
    }
    let client = redis::Client::open(url).map_err(|e| invalid(e.to_string()))?;
    match client.get_connection_info().addr() {
        redis::ConnectionAddr::Tcp(host, port) => Ok((host.clone(), *port)),
        _ => Err(invalid("not a plain TCP address".into())),
    }
}

/// `url` with its `host:port` replaced by `addr` (user, password, path and
/// query kept).
fn replace_host_port(url: &str, addr: SocketAddr) -> String {
    let Some(scheme_end) = url.find("://") else {
        return format!("redis://{addr}/");
    };
    let rest_start = scheme_end + 3;
    let rest = &url[rest_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host_start = authority.rfind('@').map_or(0, |at| at + 1);
    format!(
        "{}{}{}{}",
        &url[..rest_start],
        &authority[..host_start],
        addr,
        &rest[authority_end..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(args: &[&str]) -> Command {
        Command::new(args)
    }

    #[test]
    fn setup_commands_are_recognised_in_any_case() {
        for args in [
            &["HELLO", "3"][..],
            &["hello", "3", "AUTH", "u", "p"],
            &["auth", "pw"],
            &["Select", "1"],
            &["CLIENT", "SETNAME", "x"],
            &["client", "setinfo", "LIB-NAME", "redis-py"],
            &["SCRIPT", "LOAD", "return 1"],
            &["script", "exists", "abc"],
            &["SCRIPT", "FLUSH"],
            &["COMMAND", "DOCS"],
            &["ping"],
            &["INFO", "server"],
            &["config", "get", "appendonly"],
            &["READONLY"],
            &["reset"],
            &["echo", "x"],
            &["QUIT"],
            &["subscribe", "ch"],
        ] {
            assert!(is_setup(&cmd(args)), "{args:?}");
        }
    }

    #[test]
    fn other_commands_are_scheduled() {
        for args in [
            &["EVALSHA", "abc", "0"][..],
            &["eval", "return 1", "0"],
            &["HGETALL", "h"],
            &["hset", "h", "f", "v"],
            &["TIME"],
            &["MULTI"],
            &["exec"],
            &["GET", "PING"],
            &["SCRIPTS"],
            &["CLIENTS"],
            &[],
        ] {
            assert!(!is_setup(&cmd(args)), "{args:?}");
        }
    }

    #[test]
    fn command_display_quotes_what_needs_it() {
        let c = Command::new([&b"SET"[..], b"a b", b"", b"\xff\r\n", b"x"]);
        assert_eq!(c.to_string(), r#"SET "a b" "" "\xff\r\n" x"#);
        assert_eq!(c.name(), "SET");
        assert!(c.is("set"));
    }

    #[test]
    fn urls_keep_everything_but_host_and_port() {
        let addr: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        for (upstream, gated) in [
            ("redis://127.0.0.1:6379/", "redis://127.0.0.1:4000/"),
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:4000"),
            ("redis://localhost", "redis://127.0.0.1:4000"),
            (
                "redis://user:p%40ss@10.0.0.1:6379/3?protocol=resp3",
                "redis://user:p%40ss@127.0.0.1:4000/3?protocol=resp3",
            ),
            (
                "redis://:pw@[::1]:6379/?protocol=resp3",
                "redis://:pw@127.0.0.1:4000/?protocol=resp3",
            ),
            (
                "redis://h:1?protocol=resp3",
                "redis://127.0.0.1:4000?protocol=resp3",
            ),
        ] {
            assert_eq!(replace_host_port(upstream, addr), gated, "{upstream}");
        }
    }

    #[test]
    fn upstream_addresses_come_from_the_url() {
        assert_eq!(
            upstream_host_port("redis://u:p@127.0.0.1:7001/2?protocol=resp3").unwrap(),
            ("127.0.0.1".to_string(), 7001)
        );
        assert_eq!(
            upstream_host_port("redis://localhost").unwrap(),
            ("localhost".to_string(), 6379)
        );
        for bad in [
            "rediss://h:1/",
            "redis+unix:///tmp/s",
            "http://x",
            "nonsense",
        ] {
            let err = upstream_host_port(bad).unwrap_err();
            assert!(err.to_string().contains("use redis://"), "{bad}: {err}");
        }
    }

    #[test]
    fn fault_rules_match_and_count() {
        let once = FaultRule::once(Fault::BlackHole).on_command("evalsha");
        assert!(once.matches(&cmd(&["EVALSHA", "x", "0"])));
        assert!(!once.matches(&cmd(&["GET", "x"])));
        let spent = FaultRule::always(Fault::BlackHole).times(0);
        assert!(!spent.matches(&cmd(&["GET", "x"])));
        assert_eq!(FaultRule::from(Fault::ResetBeforeSend).times, Some(1));
    }

    #[test]
    fn gate_is_send_sync_and_clone() {
        fn assert_traits<T: Send + Sync + Clone>() {}
        assert_traits::<Gate>();
    }
}
