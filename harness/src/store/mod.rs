//! How one instance talks to a store: one async trait, one call per contract
//! operation. Everything outside this module sees only [`StoreFactory`] and
//! [`StoreClient`]; the implementation here is the client of adapters in
//! any language over JSON lines ([`external`]). The stores storeproof
//! ships (the built-in Redis stores and the SQLite fencing set) are the
//! `stores` crate; the sabotage crate wraps them.

mod clock;
pub mod external;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::contract::{Call, Contract, Reply, StoreError};

pub use clock::{ManualClock, SqliteClock};
pub use model::observed::{DurableEffect, DurableState};

/// The opt-out a Redis store accepts for short durability settings
/// (docs/PROTOCOL.md §7).
pub const OPT_OUT_WRITES_MAY_BE_LOST: &str = "acknowledged-writes-may-be-lost";

/// What an instance is told when it connects (the `hello` of
/// docs/PROTOCOL.md §3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The instance's name, e.g. `a`.
    pub instance: String,
    /// The server (or a proxy storeproof controls) the store must use.
    pub redis_url: String,
    /// Every key the store writes must start with this.
    pub prefix: String,
    /// `Some("acknowledged-writes-may-be-lost")` to accept short durability.
    pub opt_out: Option<String>,
}

/// What a store says of itself once connected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreInfo {
    /// The store's name, e.g. `my-store`.
    pub name: String,
    /// The store's version.
    pub version: String,
    /// The contracts it offers; checks of the others are skipped as outside
    /// its claim.
    pub contracts: Vec<Contract>,
}

/// One instance's connection to a store. Calls are sequential: the harness
/// never sends the next call of an instance before the previous one answered.
#[async_trait]
pub trait StoreClient: Send {
    /// Sends one request with the instance clock `clock_ms` and waits for the
    /// store's answer. `Err` is a store error of docs/PROTOCOL.md §6
    /// (`bad_request`, `unavailable`, …), never a panic.
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError>;

    /// Makes this instance as good as a freshly connected one — old
    /// connections dropped, a new one open, nothing else remembered that
    /// could change a later answer — sending only connection set-up commands
    /// ([`crate::gate::is_setup`]). The explorer asks after an operation it
    /// stopped on purpose (its held command refused with an error reply, its
    /// answer ignored), and before each operation of a client that
    /// [remembers](Self::remembers) once such clients are no longer trusted.
    /// `true` once done. `false` (the default) when the client cannot: the
    /// harness then drops it and connects a new instance, so a store is never
    /// blamed for a stop it did not cause.
    async fn reconnect(&mut self, _clock_ms: i64) -> bool {
        false
    }

    /// Whether this client may keep something between operations that
    /// changes what it later sends or answers (an adapter's process, which
    /// storeproof cannot see into: a client-side cache, say). `false` (the
    /// default) for storeproof's own clients, which keep nothing. A harness
    /// whose states are the server's keys alone (the explorer) keeps such a
    /// client on trial, checking a sample of its steps against fresh ones;
    /// once what it remembers is seen to matter, it starts every operation
    /// of such a client as [`reconnect`](Self::reconnect), or a new
    /// instance, leaves it.
    fn remembers(&self) -> bool {
        false
    }
}

/// Whether `factory` offers a copy of itself on a SQLite file of its own
/// ([`StoreFactory::sqlite_copy`]): storeproof's SQLite fencing set, whose
/// server time is the run's managed server's clock. Making a copy opens
/// nothing, so asking is free.
pub fn offers_sqlite_copy(factory: &dyn StoreFactory) -> bool {
    factory
        .sqlite_copy(std::path::Path::new(""), SqliteClock::manual(0))
        .is_some()
}

/// Makes connected instances of one store implementation.
#[async_trait]
pub trait StoreFactory: Send + Sync {
    /// How the store is named on the command line (`builtin:redis`, `cmd:…`).
    fn spec(&self) -> String;

    /// The first failure of this store's adapter instances (one exited,
    /// hung, wrote garbage or an overlong line, or could not be started):
    /// one line naming the instance, the request and the fix; `None` while
    /// every one behaved, and always for storeproof's own stores. A run
    /// that sees one ends with a setup error instead of a report: no check
    /// can be trusted to say anything about the store. A store that wraps
    /// another passes its answer on.
    fn adapter_failure(&self) -> Option<String> {
        None
    }

    /// Whether each connected instance is a process of its own (an adapter:
    /// an interpreter and its client library started per instance), so
    /// that running more instances at once costs more than their calls. A
    /// cost only, changing no answer: `false` for storeproof's own stores,
    /// whose instances are connections in this process.
    fn instances_are_processes(&self) -> bool {
        false
    }

    /// Whether the store keeps its state in the Redis server its hello names
    /// (the built-in Redis stores and every adapter, which is given that
    /// server). `false` for a store that never sends Redis commands
    /// (`builtin:sqlite`): checks that drive, read or kill the Redis server
    /// cannot judge it and are skipped with the reason ([`crate::Needs`]).
    fn keeps_state_in_redis(&self) -> bool {
        true
    }

    /// The durable end state of the run under `prefix` (effects and lease
    /// log in the store's one sequence), read from the store's own storage,
    /// never over the wire. `Ok(None)` (the default) for a store that keeps
    /// no fencing set; a wrapping store must forward it.
    async fn durable_state(&self, _prefix: &str) -> Result<Option<DurableState>, StoreError> {
        Ok(None)
    }

    /// For a store that keeps its state in a SQLite file of the fencing
    /// set's schema (`builtin:sqlite`; a wrapping store must forward it):
    /// the same store on a file of its own at `path`, reading server time
    /// from `clock`. Making it opens nothing (an instance's connect does).
    /// The explorer runs one per world and snapshots and restores its lease
    /// rows (`stores::sqlite::LeaseRows`). `None` (the default): no such copy.
    fn sqlite_copy(
        &self,
        _path: &std::path::Path,
        _clock: SqliteClock,
    ) -> Option<std::sync::Arc<dyn StoreFactory>> {
        None
    }

    /// Starts the processes of `instances` ahead of their connects (a name
    /// listed twice: two), so that an adapter's interpreter and client
    /// library load beside the work before them. An optimisation only,
    /// changing no answer: nothing by default (storeproof's own stores load
    /// nothing), and a wrapping store need not forward it.
    fn warm(&self, _instances: &[&str]) {}

    /// Connects one instance. The store validates its server here
    /// (docs/PROTOCOL.md §7) and refuses with `durability`, `deployment` or
    /// `config_refused`.
    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError>;

    /// Connects one instance for a case of its own (a check, a scenario, a
    /// generated sequence: its own prefix, judged on what its instances
    /// answer), where an adapter's process may be one an earlier case of
    /// the same instance name used, sent a new `hello` (docs/PROTOCOL.md
    /// §3.3). What the instance answers must be what a fresh one would;
    /// checks that need a process never used before (the explorer, which
    /// re-runs operations on fresh processes, and the crash suite) call
    /// [`connect`](Self::connect). By default the same as `connect`.
    async fn connect_case(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        self.connect(hello, clock_ms).await
    }
}
