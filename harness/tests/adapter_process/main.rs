//! The adapter client's processes: a failure stays with its store
//! (`failure`), and processes are started ahead of need (`spares`).

mod failure;
mod spares;
