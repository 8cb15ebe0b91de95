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

mod durable_file;
pub mod redis;
pub mod sqlite;
