//! The virtual wall clock of a managed server and the LD_PRELOAD shim that
//! makes the server read it.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI64, Ordering};

use memmap2::MmapMut;

/// Where virtual time starts: 2033-05-18T03:33:20Z in milliseconds.
///
/// Distinctive on purpose: a number in a store's keyspace that lies near
/// this instant is a timestamp, and nothing else is mistaken for one.
pub const VIRTUAL_EPOCH_MS: i64 = 2_000_000_000_000;

/// The environment variable the shim reads the clock file's path from.
pub const CLOCK_FILE_ENV: &str = "STOREPROOF_CLOCK_FILE";

/// The file name of the shim when written out by [`install_clock_shim`].
pub const CLOCK_SHIM_FILE_NAME: &str = "libstoreproof_clock.so";

/// The clock shim, an LD_PRELOAD shared object built from
/// `harness/shim/clockshim.c` by `build.rs` and carried inside the binary so
/// that `storeproof` stays one file.
///
/// Loaded into a process whose environment has [`CLOCK_FILE_ENV`] naming a
/// [`VirtualClock`] file, it answers `clock_gettime(CLOCK_REALTIME…)`,
/// `gettimeofday` and `time` from that clock; every other clock is the
/// kernel's.
pub const CLOCK_SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libstoreproof_clock.so"));

const NS_PER_MS: i64 = 1_000_000;

/// Writes [`CLOCK_SHIM`] into `dir` and returns its path, ready for
/// `LD_PRELOAD`.
///
/// `dir` must be on a filesystem mounted without `noexec` (the loader maps
/// the library executable); see [`allows_exec`].
pub fn install_clock_shim(dir: &Path) -> io::Result<PathBuf> {
    let path = dir.join(CLOCK_SHIM_FILE_NAME);
    fs::write(&path, CLOCK_SHIM)?;
    Ok(path)
}

/// Whether files under `dir` may be mapped executable, i.e. its filesystem
/// is not mounted `noexec` (Docker mounts `/dev/shm` that way by default).
/// `false` when that cannot be determined.
pub fn allows_exec(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs only writes into the zeroed struct we own and reads the
    // NUL-terminated path, which outlives the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut st) };
    rc == 0 && (st.f_flag & libc::ST_NOEXEC) == 0
}

/// A wall clock that only moves when the harness moves it.
///
/// It lives in an 8-byte file holding nanoseconds since the Unix epoch as a
/// native-endian `i64`; servers started with the clock shim and
/// [`CLOCK_FILE_ENV`] pointing at [`VirtualClock::path`] read it on every
/// clock call, so a `set_ms` or `advance_ms` is seen by the server's next
/// command (`TIME`, `PX` expiry, …). It starts at [`VIRTUAL_EPOCH_MS`].
///
/// `Send + Sync`: share it with `Arc`; every read and write is one atomic
/// 8-byte access, so concurrent callers never see a torn value.
pub struct VirtualClock {
    /// Points at offset 0 of `_map`; valid for as long as `_map` lives.
    word: NonNull<AtomicI64>,
    /// Keeps the mapping alive; never accessed through a reference after
    /// construction, only through `word`.
    _map: MmapMut,
    path: PathBuf,
}

// SAFETY: the only state shared between threads is the mapped word, and it is
// only ever accessed as an `AtomicI64` (atomic loads and stores). The mapping
// itself (`MmapMut`) is `Send + Sync`, and it does not move or unmap while the
// `VirtualClock` lives.
unsafe impl Send for VirtualClock {}
// SAFETY: see `Send` above; `&VirtualClock` only allows atomic access.
unsafe impl Sync for VirtualClock {}

impl std::fmt::Debug for VirtualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualClock")
            .field("path", &self.path)
            .field("now_ms", &self.now_ms())
            .finish()
    }
}

impl VirtualClock {
    /// Creates (or truncates) the clock file at `path`, maps it and sets the
    /// clock to [`VIRTUAL_EPOCH_MS`].
    pub fn create(path: &Path) -> io::Result<VirtualClock> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.set_len(std::mem::size_of::<i64>() as u64)?;
        // SAFETY: the file is ours (just created in a directory the harness
        // owns) and keeps its 8 bytes for the mapping's life; other processes
        // (the shim) only map it read-only, so nobody truncates it under us.
        let mut map = unsafe { MmapMut::map_mut(&file)? };
        // The pointer comes from `as_mut_ptr` so that writes through it are
        // allowed; the mapping is page-aligned, so offset 0 is aligned for an
        // `AtomicI64`, and `AtomicI64` has the same layout as `i64`.
        let word = NonNull::new(map.as_mut_ptr().cast::<AtomicI64>())
            .ok_or_else(|| io::Error::other("memory map of the clock file returned null"))?;
        let clock = VirtualClock {
            word,
            _map: map,
            path: path.to_path_buf(),
        };
        clock.set_ms(VIRTUAL_EPOCH_MS);
        Ok(clock)
    }

    /// The clock file; give it to the shim through [`CLOCK_FILE_ENV`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn word(&self) -> &AtomicI64 {
        // SAFETY: `word` points at the first 8 bytes of `_map`, which is
        // mapped read-write, aligned and alive as long as `self`. Every
        // access in this process and in the shim is atomic, so sharing
        // `&AtomicI64` between threads (and processes) is sound.
        unsafe { self.word.as_ref() }
    }

    /// The current virtual time in nanoseconds since the epoch.
    pub fn now_ns(&self) -> i64 {
        self.word().load(Ordering::SeqCst)
    }

    /// The current virtual time in milliseconds since the epoch (floored).
    pub fn now_ms(&self) -> i64 {
        self.now_ns().div_euclid(NS_PER_MS)
    }

    /// Sets the virtual time to `ns` nanoseconds since the epoch.
    pub fn set_ns(&self, ns: i64) {
        self.word().store(ns, Ordering::SeqCst);
    }

    /// Sets the virtual time to exactly `ms` milliseconds since the epoch
    /// (saturating far outside the years 1677–2262).
    pub fn set_ms(&self, ms: i64) {
        self.set_ns(ms.saturating_mul(NS_PER_MS));
    }

    /// Moves the virtual time by `delta` milliseconds; negative moves it
    /// back. Atomic with respect to other `advance_ms` calls.
    pub fn advance_ms(&self, delta: i64) {
        let delta_ns = delta.saturating_mul(NS_PER_MS);
        // `fetch_update` with a closure that always returns `Some` cannot
        // fail; the result carries nothing we need.
        let _ = self
            .word()
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |ns| {
                Some(ns.saturating_add(delta_ns))
            });
    }
}
