//! Adapter processes as the operating system sees them: started under a
//! watchdog in a process group of their own, started ahead of need
//! ([`Spares`]), killed by group and reaped later, and all killed at the end
//! of a run ([`kill_all`]).

use std::collections::{HashMap, HashSet, VecDeque};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::ExternalStoreFactory;

/// The shell that runs an adapter's command line (`$1`) and watches over
/// it. It gets SIGTERM when storeproof dies (a parent-death signal) and
/// then SIGKILLs its whole process group: the command's shell, the adapter
/// and whatever they started. Needed because `sh -c` forks the command
/// instead of exec'ing it (dash), and a parent-death signal is not
/// inherited across fork. A background job's stdin is /dev/null unless
/// redirected, hence the copy through fd 3.
const WATCHDOG: &str =
    "trap 'kill -KILL 0' TERM; exec 3<&0; sh -c \"$1\" <&3 3<&- & wait $!; exit $?";

/// Adapter processes put to work by this process (see [`adapters_started`]).
pub(super) static STARTED: AtomicU64 = AtomicU64::new(0);

/// How many adapter processes this process has put to work so far, each
/// sent its `hello` (one per instance connected; an instance kept across
/// operations costs none, nor does a process sent a later case's hello;
/// a spare started ahead counts once it is used).
pub fn adapters_started() -> u64 {
    STARTED.load(Ordering::Relaxed)
}

/// Process groups of live adapters, for [`kill_all`].
static LIVE_GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

fn register(pgid: i32) {
    crate::cleanup::register(
        "adapter processes",
        crate::cleanup::Stage::Processes,
        kill_all,
    );
    if let Ok(mut g) = LIVE_GROUPS.lock() {
        g.get_or_insert_with(HashSet::new).insert(pgid);
    }
}

/// Process groups killed during the run, for [`kill_all`] to wait on.
static KILLED_GROUPS: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

pub(super) fn kill_group(pgid: i32) {
    // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
    let sent = unsafe { libc::killpg(pgid, libc::SIGKILL) } == 0;
    if let Ok(mut g) = LIVE_GROUPS.lock() {
        if let Some(set) = g.as_mut() {
            set.remove(&pgid);
        }
    }
    // SIGKILL is delivered asynchronously: a member may still run for a
    // moment. Not waited for here (this is every abandoned adapter's path),
    // but once, for every group, when the run ends ([`kill_all`]).
    if sent {
        if let Ok(mut g) = KILLED_GROUPS.lock() {
            g.get_or_insert_with(HashSet::new).insert(pgid);
        }
    }
}

/// The longest storeproof waits at its end for killed adapters' processes
/// to die.
const GROUP_DEATH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The process groups that have a live member (not a zombie awaiting its
/// reaper), from one read of `/proc`; empty where `/proc` cannot be read.
fn groups_with_live_members() -> HashSet<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashSet::new();
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|stat| {
            // After the command name in parentheses: state, ppid, pgrp, …
            let mut fields = stat
                .rsplit(')')
                .next()
                .unwrap_or_default()
                .split_whitespace();
            let state = fields.next().unwrap_or("X");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<i32>().ok())?;
            (state != "Z" && state != "X").then_some(pgrp)
        })
        .collect()
}

/// Kills every adapter process group still alive (at the end of a run, and
/// on Ctrl-C), then waits (boundedly) until no process of any group killed
/// during the run still runs: when storeproof exits, nothing of an adapter
/// is left.
pub fn kill_all() {
    let groups: Vec<i32> = LIVE_GROUPS
        .lock()
        .map(|g| {
            g.as_ref()
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default()
        })
        .unwrap_or_default();
    for pgid in groups {
        kill_group(pgid);
    }
    let killed = KILLED_GROUPS
        .lock()
        .map(|mut g| g.take().unwrap_or_default())
        .unwrap_or_default();
    if killed.is_empty() {
        return;
    }
    let deadline = std::time::Instant::now() + GROUP_DEATH_WAIT;
    while !groups_with_live_members().is_disjoint(&killed) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// How many processes per instance name are kept started ahead of need.
/// An adapter in Python or Node spends a few hundred milliseconds loading
/// its libraries before it can answer `hello`; checks and explored
/// operations take fresh processes one after another, so that load is paid
/// beside the work before it instead of in front of the next. Two: one
/// check can use an instance's process and its replacement at once (a
/// stopped operation), and more buy nothing on two cores.
const SPARES_PER_INSTANCE: usize = 2;

/// An adapter process started, not yet sent `hello`: it knows only its
/// command line, `STOREPROOF_WORKDIR` and `STOREPROOF_INSTANCE`, so it can
/// be started before the check that uses it (docs/PROTOCOL.md §1, "Started
/// ahead"). Plain
/// `std` handles, tied to no runtime: the explorer's worlds each run their
/// own, and a spare goes to whichever connects next.
pub(super) struct Started {
    pub(super) child: std::process::Child,
    pub(super) pgid: i32,
    pub(super) stdin: std::process::ChildStdin,
    pub(super) stdout: std::process::ChildStdout,
    pub(super) stderr: std::process::ChildStderr,
}

/// Killed processes not yet reaped: a `std` child is reaped only when
/// waited for, so each start reaps those that have died since (no zombie
/// outlives the next start by much; the explorer starts thousands).
static UNREAPED: Mutex<Vec<std::process::Child>> = Mutex::new(Vec::new());

/// Kills `child`'s process group and leaves the child to be reaped.
pub(super) fn kill_and_reap_later(mut child: std::process::Child, pgid: i32) {
    kill_group(pgid);
    let _ = child.kill();
    if let Ok(mut u) = UNREAPED.lock() {
        u.push(child);
    }
}

fn reap_dead() {
    if let Ok(mut u) = UNREAPED.lock() {
        u.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
    }
}

impl Started {
    /// Starts `sh -c <command>` for `instance` under the watchdog, in a
    /// process group of its own, dying with storeproof.
    fn start(factory: &ExternalStoreFactory, instance: &str) -> Result<Started, String> {
        reap_dead();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(WATCHDOG)
            .arg("storeproof-adapter")
            .arg(&factory.command)
            .env("STOREPROOF_WORKDIR", &factory.workdir)
            .env("STOREPROOF_INSTANCE", instance)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own: killing it kills the shell and its children.
            .process_group(0);
        // SAFETY: the hook only makes async-signal-safe syscalls.
        unsafe {
            cmd.pre_exec(crate::server::die_with_parent(libc::SIGTERM));
        }
        // Forked from the spawner thread, which lives as long as the process:
        // the parent-death signal fires when the forking *thread* ends.
        let mut child = crate::server::on_spawner_thread(move || cmd.spawn())
            .and_then(|spawned| spawned)
            .map_err(|e| e.to_string())?;
        let pgid = child.id() as i32;
        register(pgid);
        match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => Ok(Started {
                child,
                pgid,
                stdin,
                stdout,
                stderr,
            }),
            _ => {
                kill_and_reap_later(child, pgid);
                Err("it has no stdin/stdout/stderr".into())
            }
        }
    }
}

/// The spares of one instance name, and whether the name was asked for
/// (a name only warmed was not: its first ask starts no spare).
#[derive(Default)]
struct Kept {
    spares: VecDeque<Started>,
    asked: bool,
}

/// The spares of one store, per instance name.
#[derive(Default)]
pub(super) struct Spares(Mutex<HashMap<String, Kept>>);

impl std::fmt::Debug for Spares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self
            .0
            .lock()
            .map_or(0, |m| m.values().map(|k| k.spares.len()).sum());
        write!(f, "Spares({kept})")
    }
}

impl Drop for Spares {
    fn drop(&mut self) {
        if let Ok(mut m) = self.0.lock() {
            for (_, kept) in m.drain() {
                for s in kept.spares {
                    kill_and_reap_later(s.child, s.pgid);
                }
            }
        }
    }
}

impl ExternalStoreFactory {
    /// Has as many processes of each name waiting as `names` lists it
    /// (spares started ahead and processes idle between cases), starting
    /// the missing ones now, so that the checks that connect them find
    /// their adapters loaded: the few hundred milliseconds an interpreter
    /// and its client library take are paid beside whatever runs first (a
    /// server starting, another check) instead of in front of it. The first
    /// ask of a name not asked for before takes its process and starts no
    /// spare (as the first ask of any name); only a second ask does.
    /// Nothing is sent to them; a spare never used is killed with the
    /// factory's last clone.
    pub(super) fn warm_spares(&self, names: &[&str]) {
        let mut wanted: Vec<(&str, usize)> = Vec::new();
        for name in names {
            match wanted.iter_mut().find(|(n, _)| n == name) {
                Some((_, count)) => *count += 1,
                None => wanted.push((name, 1)),
            }
        }
        let Ok(mut m) = self.spares.0.lock() else {
            return;
        };
        for (name, count) in wanted {
            let kept = m.entry(name.to_string()).or_default();
            let waiting = kept.spares.len() + self.idle.count(name);
            for _ in waiting..count {
                // A spare that cannot start is no failure here: the process
                // wanted then is started again and its failure reported.
                match Started::start(self, name) {
                    Ok(s) => kept.spares.push_back(s),
                    Err(_) => break,
                }
            }
        }
    }

    /// A process for `instance`: the oldest spare, or one started now; then,
    /// for a name asked for before, spares are started again up to
    /// [`SPARES_PER_INSTANCE`]. A spare that
    /// died waiting is handed out all the same: its `hello` then fails with
    /// its exit and stderr, as a process started now would.
    pub(super) fn process_for(&self, instance: &str) -> Result<Started, String> {
        // Spares only for a name asked for before: checks reuse a few names
        // (`a`, `b`, …), and a name asked for once would waste its spares.
        // One look at the pool: the spare to take, and how many to start
        // (none on a name's first ask, warmed or not).
        let (spare, missing) = match self.spares.0.lock() {
            Ok(mut m) => {
                let kept = m.entry(instance.to_string()).or_default();
                let spare = kept.spares.pop_front();
                let wanted = if kept.asked { SPARES_PER_INSTANCE } else { 0 };
                kept.asked = true;
                (spare, wanted.saturating_sub(kept.spares.len()))
            }
            Err(_) => (None, 0),
        };
        let taken = match spare {
            Some(s) => s,
            None => Started::start(self, instance)?,
        };
        // A spare that cannot start is no failure: the next process wanted
        // is started then, and its failure reported.
        let fresh: Vec<Started> = (0..missing)
            .map_while(|_| Started::start(self, instance).ok())
            .collect();
        if let Ok(mut m) = self.spares.0.lock() {
            m.entry(instance.to_string())
                .or_default()
                .spares
                .extend(fresh);
        }
        Ok(taken)
    }
}
