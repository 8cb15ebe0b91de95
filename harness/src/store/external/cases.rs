//! Adapter processes kept idle between cases (docs/PROTOCOL.md §3.3): an
//! adapter whose hello offered `cases` is not killed when a check is done
//! with its instance, but kept here, and the next check that connects the
//! same instance name under a prefix the process has not served sends it a
//! new `hello` instead of starting a process (an interpreter, its client
//! library, its connection) again.
//!
//! Only a process in step is kept (every request answered, nothing unread,
//! alive, never failed), and never more than [`IDLE_PER_INSTANCE`] per
//! name. Pooled per instance name because a process is started with its
//! name (`STOREPROOF_INSTANCE`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::adapter::StderrTail;
use super::process::kill_and_reap_later;

/// The most processes of one instance name kept idle: a check uses one or
/// two of a name at once (a stopped operation's replacement), so more would
/// only wait.
const IDLE_PER_INSTANCE: usize = 2;

/// A process between cases: alive, every request it was sent answered.
/// Plain `std` handles, tied to no runtime.
pub(super) struct IdleProcess {
    pub(super) child: std::process::Child,
    pub(super) pgid: i32,
    pub(super) stdin: std::process::ChildStdin,
    pub(super) stdout: std::process::ChildStdout,
    pub(super) stderr: Arc<StderrTail>,
    /// The id its next request gets (ids never repeat within a process).
    pub(super) next_id: u64,
    /// The prefixes of the cases it served.
    pub(super) served: HashSet<String>,
}

impl IdleProcess {
    fn kill(self) {
        kill_and_reap_later(self.child, self.pgid);
    }
}

/// The idle processes of one store, per instance name (shared by the
/// factory's clones; every one killed when the last clone goes, and by
/// [`super::kill_all`] at the end of a run).
#[derive(Default)]
pub(super) struct Idle(Mutex<HashMap<String, Vec<IdleProcess>>>);

impl std::fmt::Debug for Idle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().map_or(0, |m| m.values().map(Vec::len).sum());
        write!(f, "Idle({kept})")
    }
}

impl Idle {
    /// How many processes of `instance` are idle.
    pub(super) fn count(&self, instance: &str) -> usize {
        self.0
            .lock()
            .map_or(0, |m| m.get(instance).map_or(0, Vec::len))
    }

    /// An idle process of `instance` that has never served `prefix` and is
    /// still alive (one that died idle is killed and reaped, not handed
    /// out).
    pub(super) fn take(&self, instance: &str, prefix: &str) -> Option<IdleProcess> {
        let mut m = self.0.lock().ok()?;
        let kept = m.get_mut(instance)?;
        while let Some(i) = kept.iter().position(|p| !p.served.contains(prefix)) {
            let mut p = kept.swap_remove(i);
            if matches!(p.child.try_wait(), Ok(None)) {
                return Some(p);
            }
            p.kill();
        }
        None
    }

    /// Keeps `process` for a later case of `instance`, or kills it when
    /// enough are kept.
    pub(super) fn put(&self, instance: &str, process: IdleProcess) {
        let Ok(mut m) = self.0.lock() else {
            return process.kill();
        };
        let kept = m.entry(instance.to_string()).or_default();
        if kept.len() < IDLE_PER_INSTANCE {
            kept.push(process);
        } else {
            drop(m);
            process.kill();
        }
    }
}

impl Drop for Idle {
    fn drop(&mut self) {
        if let Ok(mut m) = self.0.lock() {
            for (_, kept) in m.drain() {
                kept.into_iter().for_each(IdleProcess::kill);
            }
        }
    }
}

/// Hands an instance's process back to the idle pool when the instance is
/// dropped (an [`super::adapter::Adapter`] kills what it still holds).
pub(super) fn put_away(pool: &Arc<Idle>, adapter: &mut super::adapter::Adapter) {
    if let Some(process) = adapter.idle() {
        pool.put(&adapter.instance, process);
    }
}
