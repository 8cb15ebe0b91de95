//! The Redis image for the Docker crash backend, built here from the host's
//! own `redis-server` — this machine has no registry and the engine starts
//! with no images, so nothing can be pulled.
//!
//! The build context holds the binary and every shared library `ldd` names
//! (at the paths `ldd` prints, plus the dynamic loader), and a Dockerfile
//! `FROM scratch` that copies them in. The tag is a hash of those inputs, so
//! an image built once is found by name and reused by every later run, and a
//! changed binary or library gets a new image instead of a stale one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use bollard::errors::Error as DockerError;
use bollard::query_parameters::BuildImageOptionsBuilder;
use bollard::Docker;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use crate::backend::CrashError;

/// The repository part of the image name; the tag is the inputs' hash.
pub const IMAGE_REPOSITORY: &str = "storeproof-redis";

/// Where the binary sits inside the image (the ENTRYPOINT). Its name must
/// stay `redis-server`: the Debian binary picks its mode from `argv[0]`
/// (`redis-check-rdb` and `redis-check-aof` are the same file).
const SERVER_PATH_IN_IMAGE: &str = "/usr/bin/redis-server";

/// The Dockerfile of the image. Part of the hash, so changing it rebuilds.
const DOCKERFILE: &str = "\
FROM scratch
COPY rootfs/ /
WORKDIR /data
EXPOSE 6379
LABEL storeproof.image=redis
ENTRYPOINT [\"/usr/bin/redis-server\"]
";

/// How long one image build may take before we give up (it copies ~15 MB).
const BUILD_TIMEOUT: Duration = Duration::from_secs(300);

/// Returns `storeproof-redis:<hash>`, building the image first unless an
/// image with that name already exists (it is kept between runs as a cache).
///
/// The binary is that of `server`'s kind, the server the run was given (for
/// `None`, `$STOREPROOF_REDIS_SERVER` or the first `redis-server` on PATH).
/// Builds are serialised across processes with a lock file, so tests
/// running in parallel build the image once.
pub async fn ensure_image(
    docker: &Docker,
    server: Option<&harness::server::ServerKind>,
) -> Result<String, CrashError> {
    let binary = harness::server::ServerOptions::default()
        .on_server(server)
        .binary()
        .map_err(|e| CrashError(e.to_string()))?;
    // Hashing ~17 MB again for every backend of a run is wasted time: once
    // this process has the name for this binary, asking the engine is enough.
    let known = lock(&ENSURED).get(&binary).cloned();
    if let Some(name) = known {
        if image_exists(docker, &name).await? {
            return Ok(name);
        }
    }
    let key = binary.clone();
    let inputs = tokio::task::spawn_blocking(move || ImageInputs::collect(&binary))
        .await
        .map_err(|e| CrashError(format!("reading the image inputs failed: {e}")))??;
    let name = inputs.image_name();
    if image_exists(docker, &name).await? {
        lock(&ENSURED).insert(key, name.clone());
        return Ok(name);
    }
    // Another process may be building the same image right now: wait for it,
    // then look again, rather than sending a second copy of the context.
    let _lock = BuildLock::acquire().await?;
    if image_exists(docker, &name).await? {
        return Ok(name);
    }
    let context = inputs.build_context()?;
    build(docker, &name, context).await?;
    if !image_exists(docker, &name).await? {
        return Err(CrashError(format!(
            "the build of image {name} finished but the image is not there; \
             run `docker images` to see what the engine has"
        )));
    }
    lock(&ENSURED).insert(key, name.clone());
    Ok(name)
}

/// Image names this process already ensured, by `redis-server` path.
static ENSURED: Mutex<BTreeMap<PathBuf, String>> = Mutex::new(BTreeMap::new());

/// A poisoned map is still a right map.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// True when the engine has an image called `name`.
async fn image_exists(docker: &Docker, name: &str) -> Result<bool, CrashError> {
    match docker.inspect_image(name).await {
        Ok(_) => Ok(true),
        Err(DockerError::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(false),
        Err(e) => Err(CrashError(format!(
            "cannot ask the Docker engine for image {name}: {e}"
        ))),
    }
}

/// Sends the context to the engine's classic builder and waits for the end.
async fn build(docker: &Docker, name: &str, context: Vec<u8>) -> Result<(), CrashError> {
    let options = BuildImageOptionsBuilder::default()
        .dockerfile("Dockerfile")
        .t(name)
        .rm(true)
        .forcerm(true)
        .build();
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(context.into())));
    let mut log = String::new();
    let outcome = tokio::time::timeout(BUILD_TIMEOUT, async {
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    if let Some(detail) = info.error_detail {
                        let message = detail.message.unwrap_or_default();
                        return Err(format!("the build failed: {message}"));
                    }
                    if let Some(line) = info.stream {
                        log.push_str(&line);
                    }
                }
                Err(e) => return Err(format!("the build failed: {e}")),
            }
        }
        Ok(())
    })
    .await;
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(message)) => Err(CrashError(format!(
            "cannot build the Redis image {name}: {message}; build output:\n{log}"
        ))),
        Err(_) => Err(CrashError(format!(
            "building the Redis image {name} took more than {} s; check that \
             the Docker engine is healthy (`docker info`)",
            BUILD_TIMEOUT.as_secs()
        ))),
    }
}

/// The files of the image: path inside the image → bytes (symlinks on the
/// host are resolved: the image holds plain files at the paths `ldd` prints).
struct ImageInputs {
    files: BTreeMap<String, Vec<u8>>,
}

impl ImageInputs {
    /// Reads the binary and every library `ldd` names.
    fn collect(binary: &Path) -> Result<ImageInputs, CrashError> {
        let mut files = BTreeMap::new();
        files.insert(SERVER_PATH_IN_IMAGE.to_string(), read(binary)?);
        for library in shared_libraries(binary)? {
            let bytes = read(&library)?;
            files.insert(library.to_string_lossy().into_owned(), bytes);
        }
        Ok(ImageInputs { files })
    }

    /// `storeproof-redis:<first 12 hex digits of the inputs' SHA-256>`.
    fn image_name(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(DOCKERFILE.as_bytes());
        for (path, bytes) in &self.files {
            // Lengths delimit the fields, so no two inputs hash alike.
            hasher.update((path.len() as u64).to_le_bytes());
            hasher.update(path.as_bytes());
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        let digest = hasher.finalize();
        let short: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        format!("{IMAGE_REPOSITORY}:{short}")
    }

    /// The build context, a tar in memory: the Dockerfile and `rootfs/`
    /// with the files, an empty `/data` (the volume's mount point and
    /// redis's `--dir`) and a `/tmp`.
    fn build_context(&self) -> Result<Vec<u8>, CrashError> {
        let mut tar = tar::Builder::new(Vec::new());
        let fail = |e: std::io::Error| CrashError(format!("cannot make the image context: {e}"));
        append_file(&mut tar, "Dockerfile", DOCKERFILE.as_bytes(), 0o644).map_err(fail)?;
        append_dir(&mut tar, "rootfs/data/", 0o755).map_err(fail)?;
        append_dir(&mut tar, "rootfs/tmp/", 0o1777).map_err(fail)?;
        for (path, bytes) in &self.files {
            let inside = format!("rootfs/{}", path.trim_start_matches('/'));
            append_file(&mut tar, &inside, bytes, 0o755).map_err(fail)?;
        }
        tar.into_inner().map_err(fail)
    }
}

fn append_file(
    tar: &mut tar::Builder<Vec<u8>>,
    path: &str,
    bytes: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(bytes.len() as u64);
    header.set_mode(mode);
    // A fixed time keeps the context the same from run to run.
    header.set_mtime(0);
    tar.append_data(&mut header, path, bytes)
}

fn append_dir(tar: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Directory);
    header.set_size(0);
    header.set_mode(mode);
    header.set_mtime(0);
    tar.append_data(&mut header, path, std::io::empty())
}

fn read(path: &Path) -> Result<Vec<u8>, CrashError> {
    std::fs::read(path).map_err(|e| {
        CrashError(format!(
            "cannot read {} for the Redis image: {e}",
            path.display()
        ))
    })
}

/// The absolute paths of every shared object `ldd` names for `binary`,
/// the dynamic loader included (the vDSO has no file and is skipped).
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, CrashError> {
    let output = std::process::Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| {
            CrashError(format!(
                "cannot run `ldd {}` to find the libraries of the Redis image: {e}; \
                 install libc-bin or run the crash suite with --crash-backend process",
                binary.display()
            ))
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // A static binary needs no library (ldd says so, and may exit 1).
    if stdout.contains("not a dynamic executable")
        || stderr.contains("not a dynamic executable")
        || stdout.contains("statically linked")
    {
        return Ok(Vec::new());
    }
    if !output.status.success() {
        return Err(CrashError(format!(
            "`ldd {}` failed ({}): {}{}; the Docker image needs a dynamically linked redis-server",
            binary.display(),
            output.status,
            stdout.trim(),
            stderr.trim()
        )));
    }
    parse_ldd(&stdout).map_err(|line| {
        CrashError(format!(
            "`ldd {}` cannot resolve a library ({line}); install it, or run the \
             crash suite with --crash-backend process",
            binary.display()
        ))
    })
}

/// Parses `ldd` output; `Err(line)` for a library it did not find.
fn parse_ldd(stdout: &str) -> Result<Vec<PathBuf>, String> {
    let mut paths = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("not found") {
            return Err(line.to_string());
        }
        // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)` or
        // `/lib64/ld-linux-x86-64.so.2 (0x…)`; `linux-vdso.so.1 (0x…)` has no file.
        let target = match line.split_once("=>") {
            Some((_, right)) => right.trim(),
            None => line,
        };
        let path = target.split_whitespace().next().unwrap_or("");
        if path.starts_with('/') {
            paths.push(PathBuf::from(path));
        }
    }
    Ok(paths)
}

/// An exclusive `flock` on a file in the temp dir, held while an image is
/// built, released when dropped (closing the file releases the lock).
struct BuildLock {
    _file: std::fs::File,
}

impl BuildLock {
    async fn acquire() -> Result<BuildLock, CrashError> {
        let path = std::env::temp_dir().join("storeproof-redis-image.lock");
        let file = tokio::task::spawn_blocking(move || -> std::io::Result<std::fs::File> {
            use std::os::fd::AsRawFd;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)?;
            // SAFETY: flock on a file descriptor we own and keep open.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(file)
        })
        .await
        .map_err(|e| CrashError(format!("waiting for the image build lock failed: {e}")))?
        .map_err(|e| {
            CrashError(format!(
                "cannot lock {} to build the Redis image: {e}",
                std::env::temp_dir()
                    .join("storeproof-redis-image.lock")
                    .display()
            ))
        })?;
        Ok(BuildLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_every_library_and_the_loader() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        let paths = parse_ldd(out).unwrap();
        assert_eq!(
            paths,
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
    }

    #[test]
    fn a_missing_library_is_an_error() {
        let out = "\tlibfoo.so.1 => not found\n";
        assert!(parse_ldd(out).unwrap_err().contains("libfoo"));
    }

    #[test]
    fn the_name_changes_with_any_input() {
        let mut files = BTreeMap::new();
        files.insert("/usr/bin/redis-server".to_string(), b"a".to_vec());
        let one = ImageInputs {
            files: files.clone(),
        };
        files.insert("/lib/x.so".to_string(), b"b".to_vec());
        let two = ImageInputs { files };
        assert!(one.image_name().starts_with("storeproof-redis:"));
        assert_eq!(one.image_name().len(), "storeproof-redis:".len() + 12);
        assert_ne!(one.image_name(), two.image_name());
    }
}
