//! The built-in Redis stores against real `redis-server`s, a module per
//! topic. One test binary: a binary per topic cost a compile of the shared
//! helpers and a link each.

mod common;
mod keys;
mod lease;
mod queue;
mod rate;
mod server;
mod walks;
