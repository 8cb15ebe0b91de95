//! The one registry of what a signal must undo: whoever makes something
//! that must not outlive the run (a managed server, an adapter process, a
//! container, keys on a user's server, a working directory) registers how
//! to remove all of its kind, once, when it makes the first. The signal
//! handler runs [`run_all`] and needs to know none of them.
//!
//! Registrations are plain functions, each removing everything of its kind
//! that is still there: safe to call more than once, and never dropping
//! what a run's own cleanup already removed.

use std::sync::Mutex;

/// When a cleanup runs: processes first (nothing of the run writes any
/// more), then what they may have written into (keys, then files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Servers, adapter processes, containers: killed and removed.
    Processes,
    /// Keys the run wrote on a server it does not own.
    Keys,
    /// Directories the run's stores wrote into: removed last, since until
    /// then something could still write into them.
    Files,
}

/// One registered cleanup.
#[derive(Clone, Copy)]
struct Registered {
    name: &'static str,
    stage: Stage,
    run: fn(),
}

static REGISTRY: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

/// Registers `run` under `name` at `stage`; a second registration under the
/// same name is ignored, so callers register on every first use without
/// keeping track.
pub fn register(name: &'static str, stage: Stage, run: fn()) {
    let mut registry = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    if !registry.iter().any(|r| r.name == name) {
        registry.push(Registered { name, stage, run });
    }
}

/// Runs every registered cleanup, stage by stage (in registration order
/// within a stage), and returns the names run. Not async-signal-safe: call
/// it from a signal-handling task or thread, not from a raw handler.
pub fn run_all() -> Vec<&'static str> {
    let mut todo: Vec<Registered> = REGISTRY.lock().unwrap_or_else(|p| p.into_inner()).clone();
    // Stable: registration order within a stage.
    todo.sort_by_key(|r| r.stage);
    todo.into_iter()
        .map(|r| {
            (r.run)();
            r.name
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static ORDER: Mutex<Vec<&str>> = Mutex::new(Vec::new());
    static FILES_RUNS: AtomicUsize = AtomicUsize::new(0);

    fn files() {
        FILES_RUNS.fetch_add(1, Ordering::SeqCst);
        ORDER.lock().unwrap().push("files");
    }
    fn processes() {
        ORDER.lock().unwrap().push("processes");
    }
    fn keys() {
        ORDER.lock().unwrap().push("keys");
    }

    #[test]
    fn cleanups_run_processes_then_keys_then_files_each_once_per_call() {
        register("test files", Stage::Files, files);
        register("test keys", Stage::Keys, keys);
        register("test processes", Stage::Processes, processes);
        // Registered again on a later first use: still once.
        register("test files", Stage::Files, files);
        let ran = run_all();
        let mine: Vec<&str> = ran.into_iter().filter(|n| n.starts_with("test ")).collect();
        assert_eq!(mine, ["test processes", "test keys", "test files"]);
        assert_eq!(*ORDER.lock().unwrap(), ["processes", "keys", "files"]);
        assert_eq!(FILES_RUNS.load(Ordering::SeqCst), 1);
    }
}
