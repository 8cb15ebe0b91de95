//! The adapter client's processes: a failure stays with its store
//! (`failure`), processes are started ahead of need (`spares`) and kept
//! between cases (`cases`).

mod cases;
mod failure;
mod spares;

/// Whether process `pid` is alive (not a zombie awaiting its reaper).
fn alive(pid: impl std::fmt::Display) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .next();
    matches!(state, Some(s) if s != "Z" && s != "X")
}
