//! The built-in Redis stores (`builtin:redis`): lease, queue and rate limits,
//! each operation exactly one Lua script (`stores/lua/*.lua`).
//!
//! - Lease and queue scripts read **server time** with `TIME` inside the
//!   script; the instance clock is never used for them (docs/PROTOCOL.md §4.2,
//!   §4.3).
//! - Rate scripts run on the **instance clock**, passed in as `clock_ms`
//!   (docs/PROTOCOL.md §4.4).
//! - Kept execution ids never go to Redis: they go to a SQLite file the
//!   factory was constructed with (`kept.rs`).
//! - On connect the server is checked as docs/PROTOCOL.md §7 asks
//!   (`assumptions.rs`).
//!
//! Key layout: see [`Keys`].

pub mod assumptions;
mod kept;
mod keys;
mod replies;
mod scripts;

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, IntoConnectionInfo, RedisError, ScriptInvocation, Value};

use harness::contract::{Call, Contract, ErrorKind, Reply, Request, StoreError, MAX_DURATION_MS};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};

pub use kept::KeptExecutions;
pub use keys::{depth_rank, Keys};
pub use replies::parse_reply;
pub use scripts::{builtin_source, script_files, script_sources, UnknownScript};

use scripts::{Patched, Which};

/// The name the store reports in its hello.
pub const STORE_NAME: &str = "storeproof-redis";

/// How long a command may wait for its reply by default. Well above the
/// redis crate's 500 ms so that a server replaying its AOF, or an fsync on a
/// slow disk, is not mistaken for a lost server.
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long opening a connection may take.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// Makes instances of the built-in Redis stores (`builtin:redis`).
#[derive(Debug, Clone)]
pub struct RedisStoreFactory {
    kept_db_path: PathBuf,
    response_timeout: Option<Duration>,
    /// Replacement scripts (sabotages, mutants); empty for the built-in store.
    patched: Patched,
    /// What the store's server check does not look at (sabotages only);
    /// empty for the built-in store.
    blind_to: Vec<Blindness>,
}

/// A part of the server check (docs/PROTOCOL.md §7) a sabotaged store skips. It
/// exists for the sabotage set only: the built-in store checks everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blindness {
    /// It never looks at `role` or `cluster_enabled`: a replica or a cluster
    /// node is accepted as a primary.
    Deployment,
    /// It never looks at the durability settings: a server that may lose
    /// acknowledged writes is accepted without the opt-out.
    Durability,
}

impl RedisStoreFactory {
    /// A factory whose lease stores keep execution ids in the SQLite database
    /// at `kept_db_path` (created if missing; every instance opens its own
    /// connection to it).
    pub fn new(kept_db_path: PathBuf) -> Self {
        RedisStoreFactory {
            kept_db_path,
            response_timeout: Some(DEFAULT_RESPONSE_TIMEOUT),
            patched: Patched::default(),
            blind_to: Vec::new(),
        }
    }

    /// The same factory with its server check blind to `part` (see
    /// [`Blindness`]): for the sabotage set only.
    pub fn blind_to(mut self, part: Blindness) -> Self {
        self.blind_to.push(part);
        self
    }

    /// The same factory with the script of `stores/lua/<file>` replaced by
    /// `source` (the whole source as sent to Redis: start from
    /// [`builtin_source`], which has `decimal.lua` in front). It exists for
    /// the sabotage set and mutation testing: a variant of the built-in store
    /// that differs by one edit of one script, everything else (server
    /// checks, keys, reply parsing) the built-in's. Patching the same file
    /// twice keeps the last source. Fails when no script has that file name.
    pub fn with_patched_script(self, file: &str, source: &str) -> Result<Self, UnknownScript> {
        let patched = self.patched.with(file, source)?;
        Ok(RedisStoreFactory { patched, ..self })
    }

    /// Whether any script is replaced ([`Self::with_patched_script`]).
    pub fn is_patched(&self) -> bool {
        !self.patched.is_empty()
    }

    /// The same factory with another response timeout (`None`: wait forever,
    /// for a proxy that holds commands on purpose). A command that times out
    /// answers `unavailable`: its outcome is unknown.
    pub fn with_response_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// The path of the kept-executions database.
    pub fn kept_db_path(&self) -> &PathBuf {
        &self.kept_db_path
    }

    fn info() -> StoreInfo {
        StoreInfo {
            name: STORE_NAME.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            contracts: vec![Contract::Lease, Contract::Queue, Contract::Rate],
        }
    }
}

#[async_trait]
impl StoreFactory for RedisStoreFactory {
    fn spec(&self) -> String {
        "builtin:redis".to_string()
    }

    async fn connect(
        &self,
        hello: &Hello,
        _clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        // A misspelt opt-out is refused before anything is touched.
        let opted_out = assumptions::durability_opted_out(hello.opt_out.as_deref())?;

        let info = hello
            .redis_url
            .as_str()
            .into_connection_info()
            .map_err(|e| {
                StoreError::new(
                    ErrorKind::BadRequest,
                    format!("redis_url {:?} is not a Redis URL: {e}", hello.redis_url),
                )
            })?;
        // No `CLIENT SETINFO` on connect: every command the store sends should
        // be one a person reading a trace through the gate expects.
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let info = info.set_redis_settings(settings);
        let client = redis::Client::open(info).map_err(|e| {
            StoreError::new(
                ErrorKind::BadRequest,
                format!("redis_url {:?}: {e}", hello.redis_url),
            )
        })?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECTION_TIMEOUT))
            .set_response_timeout(self.response_timeout);
        let mut conn = open_connection(&client, &config).await?;

        let mut facts = assumptions::read_facts(&mut conn).await?;
        if self.blind_to.contains(&Blindness::Deployment) {
            facts.info_replication = "# Replication\r\nrole:master\r\n".into();
            facts.info_cluster = "# Cluster\r\ncluster_enabled:0\r\n".into();
        }
        let opted_out = opted_out || self.blind_to.contains(&Blindness::Durability);
        assumptions::assess(&facts, opted_out)?;

        // Load every script now, so that scheduled calls send `EVALSHA` alone
        // (connection set-up stays out of the schedule).
        for script in scripts::all()
            .into_iter()
            .chain(self.patched.replacements())
        {
            script
                .prepare_invoke()
                .load_async(&mut conn)
                .await
                .map_err(|e| script_load_failure(&e))?;
        }

        let kept = KeptExecutions::open(self.kept_db_path.clone(), &hello.prefix).await?;
        let store = RedisStoreClient {
            client,
            config,
            conn: Some(conn),
            keys: Keys::new(&hello.prefix),
            kept,
            patched: self.patched.clone(),
        };
        Ok((Self::info(), Box::new(store)))
    }
}

async fn open_connection(
    client: &redis::Client,
    config: &AsyncConnectionConfig,
) -> Result<MultiplexedConnection, StoreError> {
    client
        .get_multiplexed_async_connection_with_config(config)
        .await
        .map_err(|e| {
            StoreError::new(
                ErrorKind::Unavailable,
                format!("cannot connect to the Redis server: {e}"),
            )
        })
}

/// One instance of the built-in Redis stores.
struct RedisStoreClient {
    client: redis::Client,
    config: AsyncConnectionConfig,
    /// `None` after a connection-level failure: a `MultiplexedConnection`
    /// stays broken once its server went away (e.g. a restart), so the next
    /// call opens a fresh one. The server is not re-checked then: it is the
    /// same server the instance was admitted to.
    conn: Option<MultiplexedConnection>,
    keys: Keys,
    kept: KeptExecutions,
    patched: Patched,
}

impl RedisStoreClient {
    async fn connection(&mut self) -> Result<MultiplexedConnection, StoreError> {
        if let Some(conn) = &self.conn {
            // A clone is a cheap handle on the same connection.
            return Ok(conn.clone());
        }
        let conn = open_connection(&self.client, &self.config).await?;
        self.conn = Some(conn.clone());
        Ok(conn)
    }
}

#[async_trait]
impl StoreClient for RedisStoreClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        // Bad input is refused before anything is touched.
        let req = Request::parse(call)?;
        // A cheap handle (nothing at all when unpatched) so that the
        // invocation's borrow does not hold `self`.
        let patched = self.patched.clone();
        let Some(invocation) = invocation(&self.keys, &patched, &req, clock_ms) else {
            return match &req {
                Request::LeaseKeepExecution { tree, execution } => {
                    self.kept.keep(tree, execution).await?;
                    Ok(Reply::Kept {})
                }
                Request::LeaseKeptExecutions { tree } => {
                    Ok(Reply::Executions(self.kept.list(tree).await?))
                }
                other if other.contract() == Contract::Fenced => Err(StoreError::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{}: the built-in Redis stores offer no fencing set; a fenced effect \
                         must share the lease store's durable backend (the one-backend rule, \
                         docs/CONTRACTS.md §1.5)",
                        other.op()
                    ),
                )),
                other => Err(StoreError::new(
                    ErrorKind::Unsupported,
                    format!("{} has no script", other.op()),
                )),
            };
        };
        let mut conn = self.connection().await?;
        let value: Value = match invocation.invoke_async(&mut conn).await {
            Ok(value) => value,
            Err(e) => {
                if !is_server_reply(&e) {
                    self.conn = None;
                }
                return Err(script_failure(req.op(), &e));
            }
        };
        let reply = replies::parse_reply(req.op(), &value)?;
        if !reply.answers(&req) {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                format!(
                    "{}: the script answered {}, which this operation never answers",
                    req.op(),
                    reply.outcome()
                ),
            ));
        }
        Ok(reply)
    }
}

/// The one script call of a Redis operation (`None` for the kept-execution
/// operations, which never touch Redis). Ids only ever travel as KEYS (inside
/// a key name) or ARGV, never as Lua source. Lease and queue scripts get no
/// clock (they read `TIME`); rate scripts get `clock_ms`.
fn invocation<'a>(
    keys: &Keys,
    patched: &'a Patched,
    req: &Request,
    clock_ms: i64,
) -> Option<ScriptInvocation<'a>> {
    use Which::*;
    let script = |which: Which| patched.script(which);
    Some(match req {
        Request::LeaseTake {
            tree,
            holder,
            ttl_ms,
        } => {
            let mut inv = script(LEASE_TAKE).key(keys.lease(tree));
            inv.arg(holder).arg(ttl_ms);
            inv
        }
        Request::LeaseRenew {
            tree,
            holder,
            epoch,
            ttl_ms,
        } => {
            let mut inv = script(LEASE_RENEW).key(keys.lease(tree));
            inv.arg(holder).arg(epoch).arg(ttl_ms);
            inv
        }
        Request::LeaseRelease {
            tree,
            holder,
            epoch,
        } => {
            let mut inv = script(LEASE_RELEASE).key(keys.lease(tree));
            inv.arg(holder).arg(epoch);
            inv
        }
        Request::LeaseRead { tree } => script(LEASE_READ).key(keys.lease(tree)),
        Request::QueueSave {
            child,
            depth,
            payload,
        } => {
            let mut inv = script(QUEUE_SAVE).key(keys.child(child));
            inv.key(keys.queue_index())
                .key(keys.queue_seq())
                .arg(child)
                .arg(depth)
                .arg(payload)
                .arg(depth_rank(*depth));
            inv
        }
        Request::QueueClaim {
            instance,
            claim_ttl_ms,
        } => {
            let mut inv = script(QUEUE_CLAIM).key(keys.queue_index());
            inv.arg(keys.child_prefix()).arg(instance).arg(claim_ttl_ms);
            inv
        }
        Request::QueueComplete {
            child,
            instance,
            attempt,
        } => {
            let mut inv = script(QUEUE_COMPLETE).key(keys.child(child));
            inv.key(keys.queue_index()).arg(instance).arg(attempt);
            inv
        }
        Request::QueueRead { child } => script(QUEUE_READ).key(keys.child(child)),
        Request::RateAcquireSlot {
            provider,
            holder,
            limit,
            ttl_ms,
        } => {
            let mut inv = script(RATE_ACQUIRE_SLOT).key(keys.rate_slots(provider));
            inv.key(keys.rate_pause(provider))
                .key(keys.rate_seq(provider))
                .arg(clock_ms)
                .arg(holder)
                .arg(limit)
                .arg(ttl_ms);
            inv
        }
        Request::RateReleaseSlot { provider, slot } => {
            let mut inv = script(RATE_RELEASE_SLOT).key(keys.rate_slots(provider));
            inv.arg(clock_ms).arg(slot);
            inv
        }
        Request::RateHit {
            provider,
            limit,
            window_ms,
        } => {
            let mut inv = script(RATE_HIT).key(keys.rate_hits(provider));
            inv.key(keys.rate_pause(provider))
                .key(keys.rate_seq(provider))
                .arg(clock_ms)
                .arg(limit)
                .arg(window_ms)
                .arg(MAX_DURATION_MS);
            inv
        }
        Request::RatePause { provider, until_ms } => {
            let mut inv = script(RATE_PAUSE).key(keys.rate_pause(provider));
            inv.arg(until_ms);
            inv
        }
        Request::RateRead { provider } => {
            let mut inv = script(RATE_READ).key(keys.rate_slots(provider));
            inv.key(keys.rate_pause(provider)).arg(clock_ms);
            inv
        }
        // Kept executions live in SQLite, never in Redis; the fencing set is
        // not offered at all (the one-backend rule, docs/CONTRACTS.md §1.5).
        Request::LeaseKeepExecution { .. }
        | Request::LeaseKeptExecutions { .. }
        | Request::EffectApply { .. }
        | Request::CallBegin { .. }
        | Request::CallFinish { .. } => return None,
    })
}

/// A failed `SCRIPT LOAD` on connect. The store runs every operation as a
/// script, so a server that refuses scripts is refused like one that refuses
/// `CONFIG GET`: the store cannot work there and says what to allow.
fn script_load_failure(e: &RedisError) -> StoreError {
    let failure = assumptions::redis_command_failure("SCRIPT LOAD", e);
    if failure.kind != ErrorKind::ConfigRefused {
        return failure;
    }
    StoreError::new(
        ErrorKind::ConfigRefused,
        format!(
            "the server refused SCRIPT LOAD ({} {}); every operation of this store is a Lua \
             script, so allow EVALSHA and SCRIPT LOAD for this user",
            e.code().unwrap_or_default(),
            e.detail().unwrap_or_default()
        ),
    )
}

/// Whether the server answered (with an error reply): the connection itself
/// is fine then and is kept; any other failure leaves it out of step.
pub fn is_server_reply(e: &RedisError) -> bool {
    matches!(
        e.kind(),
        redis::ErrorKind::Server(_) | redis::ErrorKind::Extension
    )
}

/// Whether an error reply says the server is out of memory. Redis 7 keeps the
/// `OOM` code of a write refused inside a script; older servers wrap it in
/// an `ERR Error running script` whose text still carries it.
fn is_oom(code: Option<&str>, detail: &str) -> bool {
    code == Some("OOM") || detail.contains("OOM command not allowed")
}

/// A failed script call: `store_full` when the server is full (the script
/// was refused at its first write, so nothing changed), else `unavailable`
/// (the outcome is unknown).
pub fn script_failure(op: &str, e: &RedisError) -> StoreError {
    let (code, detail) = if is_server_reply(e) {
        (e.code(), e.detail().unwrap_or_default().to_string())
    } else {
        (None, e.to_string())
    };
    if is_oom(code, &detail) {
        return StoreError::new(
            ErrorKind::StoreFull,
            format!(
                "{op}: the Redis server is full (maxmemory reached) and refused the write; \
                 nothing was changed. Free memory or raise maxmemory."
            ),
        );
    }
    let message = match code {
        Some(code) => format!("{op}: the server answered an error ({code} {detail})"),
        None => format!("{op}: the Redis server did not answer ({detail}); the outcome is unknown"),
    };
    StoreError::new(ErrorKind::Unavailable, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_is_recognised_in_either_form() {
        assert!(is_oom(Some("OOM"), "command not allowed when used memory"));
        assert!(is_oom(
            Some("ERR"),
            "Error running script (call to f_1): @user_script:9: -OOM command not allowed when used memory > 'maxmemory'"
        ));
        assert!(!is_oom(Some("ERR"), "unknown command"));
        assert!(!is_oom(None, "connection reset"));
    }

    #[test]
    fn a_patched_script_replaces_its_operations_script_and_no_other() {
        let factory = RedisStoreFactory::new("kept.sqlite".into());
        assert!(!factory.is_patched());
        let unpatched = &factory.patched;
        assert!(std::ptr::eq(
            unpatched.script(Which::LEASE_TAKE),
            &*scripts::LEASE_TAKE
        ));

        let source = builtin_source("lease_renew.lua")
            .unwrap()
            .replace("<", "<=");
        let factory = factory
            .with_patched_script("lease_renew.lua", &source)
            .unwrap();
        assert!(factory.is_patched());
        let patched = &factory.patched;
        assert_ne!(
            patched.script(Which::LEASE_RENEW).get_hash(),
            scripts::LEASE_RENEW.get_hash()
        );
        assert_eq!(
            patched.script(Which::LEASE_RENEW).get_hash(),
            redis::Script::new(&source).get_hash()
        );
        for which in [Which::LEASE_TAKE, Which::RATE_READ, Which::QUEUE_CLAIM] {
            assert!(std::ptr::eq(patched.script(which), which.builtin()));
        }
        assert_eq!(patched.replacements().count(), 1);

        let err = factory
            .with_patched_script("lease_steal.lua", "return 1")
            .unwrap_err();
        assert!(err.to_string().contains("lease_take.lua"), "{err}");
    }

    #[test]
    fn every_operation_has_a_script() {
        let ops: Vec<_> = script_sources().into_iter().map(|(op, _)| op).collect();
        assert_eq!(ops.len(), 13);
        for (_, source) in script_sources() {
            assert!(source.contains("KEYS[1]"));
        }
    }
}
