//! The Rust adapter kit: what a store written in Rust needs beside the
//! [`StoreFactory`](crate::StoreFactory) and [`StoreClient`](crate::StoreClient)
//! traits, the same parts storeproof's own Redis store is built from, so
//! an author writes only the store's own logic (its keys and scripts):
//!
//! - [`Request::parse`]: a [`Call`](crate::Call) checked against every
//!   value and type rule of docs/PROTOCOL.md §2, typed, or the
//!   `bad_request` to answer; [`Request::contract`] says which contract
//!   an operation belongs to (answer `unsupported` for one not offered).
//! - [`check_server`]: the server checks of §7 a Redis store makes on
//!   connect (durability, replica or cluster, refused `CONFIG`), with the
//!   one opt-out.
//! - [`KeptExecutions`]: `lease.keep_execution` and
//!   `lease.kept_executions` in a SQLite file (never in Redis), shared by
//!   every instance; open it under the directory
//!   [`Certification::of_in_workdir`](crate::Certification::of_in_workdir)
//!   gives.
//! - [`redis_command_failure`]: a set-up command's Redis error as the store
//!   error §6 and §7 name (a refused command is `config_refused`).
//! - [`operation_failure`]: an operation's failed command or script as §6
//!   names it: `store_full` when the server is full (nothing changed),
//!   else `unavailable` (the outcome is unknown); [`is_server_reply`] says
//!   whether the connection is still in step (else drop it and open a new
//!   one for the next operation).
//!
//! - [`ScriptedConnection`]: a store made of Lua scripts on one Redis
//!   connection, as §5 runs it: connect, check the server and load every
//!   script in one call; one `EVALSHA` per operation, `NOSCRIPT` loaded
//!   again, a connection that broke replaced; [`reply_of_words`] reads a
//!   script's answer written in the examples' convention.
//!
//! - [`example`]: a whole store (lease, queue, rate) written on these parts.
//!
//! The `redis` and `async_trait` crates are re-exported at the versions
//! storeproof is built with, so a store's connection type is the one
//! [`check_server`] takes.

pub mod example;
mod lua;

pub use async_trait::async_trait;
pub use redis;

pub use harness::contract::{
    ChildState, ChildView, LeaseView, Request, MAX_DURATION_MS, MAX_LIMIT,
};
pub use stores::redis::assumptions::redis_command_failure;
pub use stores::redis::script_failure as operation_failure;
pub use stores::redis::{is_server_reply, KeptExecutions};

pub use lua::{reply_of_words, ScriptedConnection};

use harness::contract::StoreError;
use stores::redis::assumptions::{assess, durability_opted_out, read_facts};

/// Checks the server behind `conn` as docs/PROTOCOL.md §7 asks of a store
/// that keeps its state in Redis: `Err` (`durability`, `deployment`,
/// `config_refused`, or `bad_request` for an unknown opt-out) is what the
/// store's connect must answer. `opt_out` is the hello's.
pub async fn check_server(
    conn: &mut redis::aio::MultiplexedConnection,
    opt_out: Option<&str>,
) -> Result<(), StoreError> {
    let opted_out = durability_opted_out(opt_out)?;
    let facts = read_facts(conn).await?;
    assess(&facts, opted_out)
}
