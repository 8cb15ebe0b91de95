//! Owning server processes: spawning them so that they die with us, and a
//! process-global registry so that Ctrl-C can clean them all up.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
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

struct SpawnRequest {
    command: Command,
    reply: tokio::sync::oneshot::Sender<io::Result<Child>>,
}

/// The spawner thread's queue.
///
/// Why a dedicated thread: `PR_SET_PDEATHSIG` fires when the *thread* that
/// forked the child exits, not the process. Servers may be started from
/// short-lived threads (tokio blocking threads, a model checker's workers);
/// spawning them all from one thread that lives as long as the process ties
/// their lives to the process's.
static SPAWNER: OnceLock<Result<mpsc::Sender<SpawnRequest>, String>> = OnceLock::new();

fn spawner() -> io::Result<&'static mpsc::Sender<SpawnRequest>> {
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("storeproof-spawner".into())
            .spawn(move || {
                for mut request in rx {
                    let _ = request.reply.send(request.command.spawn());
                }
            })
            .map(|_| tx)
            .map_err(|e| e.to_string())
    });
    spawner
        .as_ref()
        .map_err(|e| io::Error::other(format!("cannot start the process-spawner thread: {e}")))
}

/// Spawns `command` so that the child gets SIGKILL when this process dies,
/// however it dies (including SIGKILL, where no cleanup code runs).
pub(crate) async fn spawn_tied_to_us(mut command: Command) -> io::Result<Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe functions may be called: prctl and getppid are
    // syscalls, and the error path builds an io::Error from a raw errno
    // without allocating.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // If we died between fork and prctl, the signal was never armed.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    spawner()?
        .send(SpawnRequest { command, reply })
        .map_err(|_| io::Error::other("the process-spawner thread is gone"))?;
    answer
        .await
        .map_err(|_| io::Error::other("the process-spawner thread dropped a request"))?
}
