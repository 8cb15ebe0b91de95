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
//! An adapter that offers `cases` (§3.3) has its process kept idle when a
//! check connected through [`StoreFactory::connect_case`] is done with it,
//! and sent a new `hello` by a later check ([`cases`]).
//!
//! Adapters get SIGKILL when storeproof dies, however it dies (a parent-death
//! signal armed before exec). An answer line is at most [`MAX_LINE`] bytes,
//! and every text that comes from an adapter (its stderr, its messages) is
//! made [`printable`] before it reaches a terminal or a report.

mod adapter;
mod cases;
mod process;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::contract::{Call, Contract, ErrorKind, Reply, StoreError};
use crate::store::{Hello, StoreClient, StoreFactory, StoreInfo};
pub use adapter::MAX_LINE;
use adapter::{adapter_failed, quote, record_failure, Adapter, QUOTED};
use cases::Idle;
use process::Spares;
pub use process::{adapters_started, kill_all};

/// How long an adapter may take to answer one request, unless told otherwise.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// Processes kept between cases, per instance name (shared by clones;
    /// killed when the last clone goes).
    idle: Arc<Idle>,
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
            idle: Arc::new(Idle::default()),
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

struct ExternalClient {
    adapter: Adapter,
    /// Whether hello's answer offered the optional `reconnect` request
    /// (docs/PROTOCOL.md §3.1).
    offers_reconnect: bool,
    /// Whether hello's answer declared the process `stateless`: it keeps
    /// nothing between operations that could change a later command or
    /// answer (docs/PROTOCOL.md §3.2).
    stateless: bool,
    /// For a process whose hello offered `cases` (docs/PROTOCOL.md §3.3),
    /// connected for a case: the pool it goes back to when dropped.
    return_to: Option<Arc<Idle>>,
}

impl Drop for ExternalClient {
    fn drop(&mut self) {
        if let Some(pool) = self.return_to.take() {
            cases::put_away(&pool, &mut self.adapter);
        }
    }
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

/// Whether a hello refused with `kind` refused the server it was given
/// (docs/PROTOCOL.md §7), not the request or the store itself.
fn refuses_the_server(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::ConfigRefused | ErrorKind::Durability | ErrorKind::Deployment
    )
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

    fn instances_are_processes(&self) -> bool {
        true
    }

    fn warm(&self, instances: &[&str]) {
        self.warm_spares(instances);
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let adapter = Adapter::spawn(self, &hello.instance)?;
        self.hello(adapter, hello, clock_ms, None).await
    }

    /// A process kept idle from an earlier case of this instance name when
    /// there is one (it gets a new `hello`), else a new process; either is
    /// kept idle again after this case if its hello offers `cases`.
    async fn connect_case(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let kept = self.idle.take(&hello.instance, &hello.prefix);
        let adapter = match kept.map(|p| Adapter::resume(p, self, &hello.instance)) {
            Some(Ok(adapter)) => adapter,
            _ => Adapter::spawn(self, &hello.instance)?,
        };
        self.hello(adapter, hello, clock_ms, Some(self.idle.clone()))
            .await
    }
}

impl ExternalStoreFactory {
    /// Sends `hello` to `adapter` and checks its answer; the client goes
    /// back to `pool` when dropped if the answer offers `cases`.
    async fn hello(
        &self,
        mut adapter: Adapter,
        hello: &Hello,
        clock_ms: i64,
        pool: Option<Arc<Idle>>,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let args = serde_json::to_value(hello).unwrap_or(Value::Null);
        let ok = match adapter.request("hello", &args, clock_ms).await? {
            Ok(ok) => ok,
            Err(refused) => {
                // A process that served an earlier case offered `cases`: its
                // refusal of this server's settings (§7) is an answer, in
                // step, and it goes on to the next case (§3.3) instead of
                // being killed and another interpreter loaded.
                let known = !adapter.served.is_empty();
                if let Some(pool) = pool.filter(|_| known && refuses_the_server(refused.kind)) {
                    adapter.served.insert(hello.prefix.clone());
                    cases::put_away(&pool, &mut adapter);
                }
                return Err(refused);
            }
        };
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
        adapter.served.insert(hello.prefix.clone());
        Ok((
            info,
            Box::new(ExternalClient {
                adapter,
                offers_reconnect: offers(&ok, "reconnect"),
                stateless: offers(&ok, "stateless"),
                return_to: pool.filter(|_| offers(&ok, "cases")),
            }),
        ))
    }
}
