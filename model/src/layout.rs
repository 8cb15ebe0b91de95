//! Layouts: which backend each store is on (docs/CONTRACTS.md §1.5). The
//! data and its names; `layout` reads it from TOML and judges it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A store a layout places on a backend (docs/CONTRACTS.md §1.5). The order is
/// the report's and the error lines' order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Store {
    /// The execution lease store: the one every fenced write is checked against.
    Lease,
    /// The child execution queue (pure coordination: any backend).
    Queue,
    /// Provider rate limits (pure coordination: any backend).
    Rate,
    /// The lease log, a record of grants and takeovers (any backend).
    LeaseLog,
    /// Fenced effects: must share the lease store's backend.
    FencedEffect,
    /// Outbound calls: must share the lease store's backend.
    OutboundCall,
}

impl Store {
    /// Every store, in order.
    pub const ALL: [Store; 6] = [
        Store::Lease,
        Store::Queue,
        Store::Rate,
        Store::LeaseLog,
        Store::FencedEffect,
        Store::OutboundCall,
    ];

    /// Its name as a layout file and the error lines write it, e.g. `fenced_effect`.
    pub fn name(self) -> &'static str {
        match self {
            Store::Lease => "lease",
            Store::Queue => "queue",
            Store::Rate => "rate",
            Store::LeaseLog => "lease_log",
            Store::FencedEffect => "fenced_effect",
            Store::OutboundCall => "outbound_call",
        }
    }

    /// The store named `name` (exactly as a layout file writes it), if any.
    pub fn from_name(name: &str) -> Option<Store> {
        Store::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the one-backend rule binds it to the lease store's backend.
    ///
    /// Only fenced effects and outbound calls: they read the lease in their
    /// write's own transaction, which a lease on another backend cannot join.
    /// The lease log is a record, written after the fact, and may be on any
    /// backend (the seed page "Running on Redis": "rate limits, the queue and
    /// the lease log are on any backend").
    pub fn shares_lease_backend(self) -> bool {
        matches!(self, Store::FencedEffect | Store::OutboundCall)
    }

    /// The store names joined for a message: `lease, queue, ...`.
    /// Every store's name, comma-separated, in [`Store`] order.
    pub fn all_names() -> String {
        Store::ALL.map(Store::name).join(", ")
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend a store is on: `redis`, `sqlite`, or any other name (e.g.
/// `postgres`). Names are compared in lower case.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Backend {
    /// Redis.
    Redis,
    /// SQLite, the reference durable backend (docs/CONTRACTS.md §1.4).
    Sqlite,
    /// Any other backend, by its lower-case name.
    Other(String),
}

impl Backend {
    /// The backend named `name` (trimmed, lower-cased); `None` unless the
    /// name is ASCII letters, digits, `-`, `_` and `.`, at least one.
    pub fn named(name: &str) -> Option<Backend> {
        let name = name.trim().to_ascii_lowercase();
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        if name.is_empty() || !name.chars().all(allowed) {
            return None;
        }
        Some(match name.as_str() {
            "redis" => Backend::Redis,
            "sqlite" => Backend::Sqlite,
            _ => Backend::Other(name),
        })
    }

    /// Its name, e.g. `redis`.
    pub fn name(&self) -> &str {
        match self {
            Backend::Redis => "redis",
            Backend::Sqlite => "sqlite",
            Backend::Other(name) => name,
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl TryFrom<String> for Backend {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        Backend::named(&name).ok_or_else(|| format!("`{name}` is not a backend name"))
    }
}

impl From<Backend> for String {
    fn from(b: Backend) -> String {
        b.name().to_string()
    }
}

/// Which backend each store is on; a store absent is not used. Only form is
/// guaranteed here (known stores, named backends); whether the layout holds
/// is [`crate::assemble`]'s to say.
///
/// As TOML:
///
/// ```toml
/// [stores]
/// lease = "sqlite"
/// queue = "redis"
/// rate = "redis"
/// lease_log = "sqlite"
/// fenced_effect = "sqlite"
/// outbound_call = "sqlite"
/// ```
///
/// As JSON (the report): the `[stores]` table as an object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Layout {
    stores: BTreeMap<Store, Backend>,
}

impl Layout {
    /// A layout with no store placed yet.
    pub fn empty() -> Layout {
        Layout::default()
    }

    /// This layout with `store` on `backend` (replacing its earlier backend).
    pub fn with(mut self, store: Store, backend: Backend) -> Layout {
        self.stores.insert(store, backend);
        self
    }

    /// The Redis queue and rate limits, everything else durable (SQLite
    /// here; PostgreSQL or MongoDB in production): the layout for payments,
    /// where no atomic step spans two databases. Supported.
    pub fn redis_queue_and_rate_beside_durable() -> Layout {
        Layout::empty()
            .with(Store::Lease, Backend::Sqlite)
            .with(Store::Queue, Backend::Redis)
            .with(Store::Rate, Backend::Redis)
            .with(Store::LeaseLog, Backend::Sqlite)
            .with(Store::FencedEffect, Backend::Sqlite)
            .with(Store::OutboundCall, Backend::Sqlite)
    }

    /// Redis leases, queue and rate limits, with no lease log, fenced-effect
    /// or outbound-call store: the coordination set, for applications that
    /// make no fenced write and no outbound call. Supported.
    pub fn coordination_set() -> Layout {
        Layout::empty()
            .with(Store::Lease, Backend::Redis)
            .with(Store::Queue, Backend::Redis)
            .with(Store::Rate, Backend::Redis)
    }

    /// The two supported Redis layouts (docs/CONTRACTS.md §1.5), by name.
    pub fn supported() -> [(&'static str, Layout); 2] {
        [
            (
                "redis-queue-and-rate-beside-durable",
                Layout::redis_queue_and_rate_beside_durable(),
            ),
            ("coordination-set", Layout::coordination_set()),
        ]
    }

    /// The backend `store` is on, or `None` when the layout does not use it.
    pub fn backend(&self, store: Store) -> Option<&Backend> {
        self.stores.get(&store)
    }

    /// Every store used, with its backend, in [`Store`] order.
    pub fn stores(&self) -> impl Iterator<Item = (Store, &Backend)> {
        self.stores.iter().map(|(s, b)| (*s, b))
    }

    /// The layout as TOML, as `layout::LayoutFile::from_toml_str` reads it back.
    pub fn to_toml(&self) -> String {
        let mut out = String::from("[stores]\n");
        for (store, backend) in self.stores() {
            out.push_str(&format!("{store} = \"{backend}\"\n"));
        }
        out
    }
}

impl fmt::Display for Layout {
    /// `lease=sqlite queue=redis ...`, or `no stores`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.stores.is_empty() {
            return f.write_str("no stores");
        }
        let parts: Vec<String> = self.stores().map(|(s, b)| format!("{s}={b}")).collect();
        f.write_str(&parts.join(" "))
    }
}
