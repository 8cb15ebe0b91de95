//! The command line end to end, a module per topic: bad input and setup
//! errors (`errors`), whole runs and their reports (`runs`), and servers
//! storeproof did not start (`servers`). One test binary: a binary per
//! topic cost a compile of the shared helpers and a link each.

#[path = "../common/mod.rs"]
mod common;
mod errors;
mod runs;
mod servers;
