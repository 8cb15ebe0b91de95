//! Owning server processes: spawning them so that they die with us, and a
//! process-global registry so that Ctrl-C can clean them all up.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock};

/// A child process shared between its owner and the registry; whoever takes
/// it out of the slot kills and reaps it, so it is reaped exactly once and a
/// recycled pid is never signalled.
type ChildSlot = Arc<Mutex<Option<Child>>>;

struct Entry {
    child: ChildSlot,
    dirs: Vec<PathBuf>,
}

static REGISTRY: Mutex<BTreeMap<u64, Entry>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A poisoned lock only means another thread panicked while holding it; the
/// data (a map of children, an `Option<Child>`) is still consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// SIGKILLs every live managed server of this process, reaps it and removes
/// its directory. For the Ctrl-C handler: call it, then exit.
///
/// Safe to call more than once and concurrently with servers being dropped
/// (each process is killed and each directory removed once). Not
/// async-signal-safe: call it from a signal-handling task or thread (e.g.
/// `tokio::signal::ctrl_c`), not from a raw signal handler. Servers that
/// are still owned afterwards behave as if [`kill`](super::ManagedServer::kill)ed.
pub fn cleanup_all() {
    let entries: Vec<Entry> = {
        let mut reg = lock(&REGISTRY);
        std::mem::take(&mut *reg).into_values().collect()
    };
    for entry in entries {
        kill_slot(&entry.child);
        for dir in &entry.dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Kills (SIGKILL) and reaps the child in `slot`, if any.
fn kill_slot(slot: &ChildSlot) {
    let child = lock(slot).take();
    if let Some(mut child) = child {
        // Errors mean it has already exited, which is what we want.
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// One server's process and directories. Dropping it SIGKILLs and reaps the
/// process and removes the directories, on every path (errors included).
pub(crate) struct Owned {
    id: u64,
    child: ChildSlot,
    dirs: Vec<PathBuf>,
}

impl Owned {
    /// Registers `dir` (already created) as owned; from now on it is removed
    /// on drop or by [`cleanup_all`].
    pub(crate) fn new(dir: PathBuf) -> Owned {
        crate::cleanup::register(
            "managed servers",
            crate::cleanup::Stage::Processes,
            cleanup_all,
        );
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let child: ChildSlot = Arc::new(Mutex::new(None));
        lock(&REGISTRY).insert(
            id,
            Entry {
                child: Arc::clone(&child),
                dirs: vec![dir.clone()],
            },
        );
        Owned {
            id,
            child,
            dirs: vec![dir],
        }
    }

    /// Registers one more directory to remove with the server.
    pub(crate) fn add_dir(&mut self, dir: PathBuf) {
        if let Some(entry) = lock(&REGISTRY).get_mut(&self.id) {
            entry.dirs.push(dir.clone());
        }
        self.dirs.push(dir);
    }

    /// Makes `child` the owned process; a previous one is killed first.
    pub(crate) fn set_child(&self, child: Child) {
        let previous = lock(&self.child).replace(child);
        if let Some(mut previous) = previous {
            let _ = previous.kill();
            let _ = previous.wait();
        }
    }

    /// The pid of the owned process, if one is set and not yet reaped.
    pub(crate) fn pid(&self) -> Option<u32> {
        lock(&self.child).as_ref().map(Child::id)
    }

    /// `Some(status)` when the owned process has exited (it is then reaped
    /// and dropped), `None` while it runs or when there is none.
    pub(crate) fn exited(&self) -> Option<ExitStatus> {
        let mut slot = lock(&self.child);
        let status = slot.as_mut().and_then(|c| c.try_wait().ok().flatten());
        if status.is_some() {
            *slot = None;
        }
        status
    }

    /// Whether a process is owned and still running.
    pub(crate) fn running(&self) -> bool {
        let mut slot = lock(&self.child);
        match slot.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Sends SIGTERM to the owned process, if one runs (for `redis-server`:
    /// a clean shutdown — the AOF flushed and fsynced, an RDB saved if
    /// configured — then exit 0). Does not wait; see
    /// [`exited`](Owned::exited). `Ok(false)` when no process runs.
    pub(crate) fn terminate(&self) -> io::Result<bool> {
        // Under the slot's lock the child is not reaped, so its pid cannot
        // have been recycled.
        let mut slot = lock(&self.child);
        let Some(child) = slot.as_mut() else {
            return Ok(false);
        };
        if child.try_wait()?.is_some() {
            return Ok(false);
        }
        let pid = libc::pid_t::try_from(child.id())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
        // SAFETY: kill(2) with a pid we own and have not reaped, and a
        // valid signal number; it touches no memory of ours.
        if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(true)
    }

    /// SIGKILLs and reaps the owned process, if any.
    pub(crate) fn kill_now(&self) {
        kill_slot(&self.child);
    }

    /// Kills the process and removes the directories; idempotent. Returns
    /// the first error removing a directory.
    pub(crate) fn release(&mut self) -> io::Result<()> {
        lock(&REGISTRY).remove(&self.id);
        self.kill_now();
        let mut first_error = None;
        for dir in self.dirs.drain(..) {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => {}
                // Already gone (cleanup_all got there first): fine.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    first_error.get_or_insert(io::Error::new(
                        e.kind(),
                        format!("cannot remove {}: {e}", dir.display()),
                    ));
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// Work for the spawner thread.
type Job = Box<dyn FnOnce() + Send>;

/// The spawner thread's queue.
///
/// Why a dedicated thread: `PR_SET_PDEATHSIG` fires when the *thread* that
/// forked the child exits, not the process. Servers and adapters may be
/// started from short-lived threads (tokio blocking threads, a model
/// checker's workers); spawning them all from one thread that lives as long
/// as the process ties their lives to the process's.
static SPAWNER: OnceLock<Result<mpsc::Sender<Job>, String>> = OnceLock::new();

fn send_to_spawner(job: Job) -> io::Result<()> {
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("storeproof-spawner".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .map(|_| tx)
            .map_err(|e| e.to_string())
    });
    spawner
        .as_ref()
        .map_err(|e| io::Error::other(format!("cannot start the process-spawner thread: {e}")))?
        .send(job)
        .map_err(|_| io::Error::other("the process-spawner thread is gone"))
}

/// Runs `f` (which forks a child armed with [`die_with_parent`]) on the
/// spawner thread and waits for its result, blocking the caller for as long
/// as a fork takes.
pub(crate) fn on_spawner_thread<R, F>(f: F) -> io::Result<R>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    send_to_spawner(Box::new(move || {
        let _ = tx.send(f());
    }))?;
    rx.recv()
        .map_err(|_| io::Error::other("the process-spawner thread dropped a request"))
}

/// A `pre_exec` hook that makes the child get `signal` when this process
/// dies, however it dies (including SIGKILL, where no cleanup code runs).
/// The child must be forked from the spawner thread (see [`SPAWNER`]).
/// The signal survives `exec` but not `fork`: the child's own children
/// are not covered.
pub(crate) fn die_with_parent(
    signal: libc::c_int,
) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // The closure runs in the forked child before exec, where only
    // async-signal-safe functions may be called: prctl and getppid are
    // syscalls, and the error path builds an io::Error from a raw errno
    // without allocating.
    move || {
        // SAFETY: prctl with PR_SET_PDEATHSIG only sets a flag of the
        // calling process.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // If we died between fork and prctl, the signal was never armed.
        // SAFETY: getppid has no preconditions.
        if unsafe { libc::getppid() } != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    }
}

/// Spawns `command` so that the child gets SIGKILL when this process dies,
/// however it dies (including SIGKILL, where no cleanup code runs).
pub(crate) async fn spawn_tied_to_us(mut command: Command) -> io::Result<Child> {
    // SAFETY: the hook only makes async-signal-safe syscalls (see
    // `die_with_parent`).
    unsafe {
        command.pre_exec(die_with_parent(libc::SIGKILL));
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    send_to_spawner(Box::new(move || {
        let _ = reply.send(command.spawn());
    }))?;
    answer
        .await
        .map_err(|_| io::Error::other("the process-spawner thread dropped a request"))?
}

/// The file that marks a directory as storeproof's and names the process
/// that owns it (`<pid> <start time in clock ticks>`), so that a later run
/// can remove it once that process is dead ([`reap_dead_runs`]).
pub const OWNER_FILE: &str = ".storeproof-owner";

/// The name prefix of every directory storeproof creates in a temp dir.
pub const DIR_PREFIX: &str = "storeproof-";

/// When process `pid` started, in clock ticks since boot (field 22 of
/// `/proc/<pid>/stat`); `None` when there is no such process. With the pid
/// it names one process for good: a recycled pid starts later.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: the
    // fields after it start after the last ')'. Field 3 is the first there.
    let after_comm = stat.rsplit_once(')')?.1;
    after_comm.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Marks `dir` (just created by this process) as storeproof's: writes
/// [`OWNER_FILE`] naming this process. Call it on every directory with the
/// [`DIR_PREFIX`] storeproof creates in a temp dir.
pub fn mark_owned(dir: &Path) -> io::Result<()> {
    let pid = std::process::id();
    let started = start_time(pid)
        .ok_or_else(|| io::Error::other("cannot read this process's start time in /proc"))?;
    std::fs::write(dir.join(OWNER_FILE), format!("{pid} {started}\n"))
}

/// Whether the process named by an [`OWNER_FILE`]'s text is gone. `None`
/// when the text is not a complete marker (being written, or not ours):
/// such a directory is never touched.
fn owner_is_dead(marker: &str) -> Option<bool> {
    let (pid, started) = marker.trim_end_matches('\n').split_once(' ')?;
    let pid: u32 = pid.parse().ok()?;
    let started: u64 = started.parse().ok()?;
    Some(start_time(pid) != Some(started))
}

/// The temp dirs storeproof creates directories in: `$TMPDIR` (or `/tmp`)
/// and `/dev/shm`.
fn temp_bases() -> Vec<PathBuf> {
    let mut bases = vec![std::env::temp_dir()];
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() && !bases.contains(&shm) {
        bases.push(shm);
    }
    bases
}

/// Removes the directories that runs which died without cleaning up (e.g.
/// SIGKILLed) left in the temp dirs, and returns them. Only a directory
/// that is named [`DIR_PREFIX`]…, is a real directory (not a link), belongs
/// to this user and holds an [`OWNER_FILE`] naming a process that is no
/// longer running is removed; nothing else is ever touched.
pub fn reap_dead_runs() -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut reaped = Vec::new();
    for base in temp_bases() {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_str().is_some_and(|n| n.starts_with(DIR_PREFIX)) {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if !meta.is_dir() || meta.uid() != me {
                continue;
            }
            let Ok(marker) = std::fs::read_to_string(path.join(OWNER_FILE)) else {
                continue;
            };
            if owner_is_dead(&marker) == Some(true) && std::fs::remove_dir_all(&path).is_ok() {
                reaped.push(path);
            }
        }
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_recycled_pid_is_not() {
        let me = std::process::id();
        let started = start_time(me).expect("own start time");
        assert_eq!(owner_is_dead(&format!("{me} {started}\n")), Some(false));
        assert_eq!(
            owner_is_dead(&format!("{me} {}\n", started + 1)),
            Some(true)
        );
        assert_eq!(owner_is_dead("4194305 1\n"), Some(true));
        assert_eq!(owner_is_dead(""), None);
        assert_eq!(owner_is_dead("12"), None);
    }
}
