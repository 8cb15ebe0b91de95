//! The stores storeproof ships, each a [`harness::store::StoreFactory`]:
//!
//! - [`redis`]: the built-in Redis stores (`builtin:redis`), one Lua script
//!   per operation (`lua/`), leases and queue on server time, rate limits on
//!   the caller's clock; the reference every sabotage patches.
//! - [`sqlite`]: the SQLite fencing set (`builtin:sqlite`): leases on a
//!   database clock, fenced effects, outbound calls and the lease log in one
//!   transaction order.
//!
//! They are certified like any store: the harness and the checkers know
//! them only through the store traits.
//!
//! Before it takes a request, the Redis store reads the server it is given
//! and refuses one that could lose what it acknowledged (docs/PROTOCOL.md
//! §7), unless the caller opted out:
//!
//! ```rust
//! use std::collections::BTreeMap;
//!
//! use harness::contract::ErrorKind;
//! use stores::redis::assumptions::{assess, ServerFacts, REQUIRED_DURABILITY};
//!
//! let settings = |appendonly: &str| ServerFacts {
//!     config: Ok(REQUIRED_DURABILITY
//!         .iter()
//!         .map(|(name, value)| {
//!             let value = if *name == "appendonly" { appendonly } else { value };
//!             (name.to_string(), value.to_string())
//!         })
//!         .collect::<BTreeMap<_, _>>()),
//!     info_replication: "role:master\r\n".into(),
//!     info_cluster: "cluster_enabled:0\r\n".into(),
//! };
//! assert!(assess(&settings("yes"), false).is_ok());
//! let refused = assess(&settings("no"), false).unwrap_err();
//! assert_eq!(refused.kind, ErrorKind::Durability);
//! // Opted out: acknowledged writes may be lost, and the store says so.
//! assert!(assess(&settings("no"), true).is_ok());
//! ```

mod durable_file;
pub mod redis;
pub mod sqlite;
