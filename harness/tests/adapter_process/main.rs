//! The adapter client's processes: a failure stays with its store
//! (`failure`), processes are started ahead of need (`spares`) and kept
//! between cases (`cases`).

mod cases;
mod failure;
mod spares;
