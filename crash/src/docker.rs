//! The Docker crash backend: `redis-server` in a container of the locally
//! built image ([`crate::image`]), its data on a named volume, killed with
//! `docker kill -s KILL` and started again on the same volume and port.
//!
//! Nothing may leak: every container and volume created is recorded in a
//! process-global registry until it is removed, a dropped backend removes
//! its own synchronously, [`cleanup_all_blocking`] removes everything left
//! (for the Ctrl-C handler), and everything carries the label
//! `storeproof.run=<label>` so that it can be found even from another
//! process. A process killed with SIGKILL cleans nothing up:
//! every object also names its owner (pid, process start, boot and host),
//! and [`reap_dead_runs`] removes, at the start of a crash run, what was
//! left by owners that are gone — the way testcontainers' reaper does.
//!
//! The server in the container is never open to the network without a
//! password: its port is published on 127.0.0.1 only, and it requires a
//! random password (in the URL given to the store), so that another
//! container on the Docker network cannot use it either.

use harness::server::ServerKind;
use std::collections::{BTreeSet, HashMap};
use std::net::TcpListener;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bollard::errors::Error as DockerError;
use bollard::models::{
    ContainerCreateBody, ContainerSummary, HostConfig, PortBinding, Volume, VolumeCreateRequest,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptionsBuilder, ListContainersOptionsBuilder,
    ListVolumesOptionsBuilder, LogsOptionsBuilder, RemoveContainerOptionsBuilder,
    RemoveVolumeOptionsBuilder,
};
use bollard::Docker;
use futures_util::StreamExt;

use crate::backend::{CrashBackend, CrashError};

/// The label put on every container and volume, valued with the run's label.
pub const RUN_LABEL: &str = "storeproof.run";

/// The owning process's pid, on every container and volume.
pub const OWNER_PID_LABEL: &str = "storeproof.owner.pid";

/// The owning process's start time (clock ticks since boot, as
/// `/proc/<pid>/stat` says): a pid reused by another process does not match.
pub const OWNER_START_LABEL: &str = "storeproof.owner.start";

/// The boot the owner ran in (`/proc/sys/kernel/random/boot_id`): after a
/// reboot every owner of an earlier boot is gone.
pub const OWNER_BOOT_LABEL: &str = "storeproof.owner.boot";

/// The host the owner ran on: a Docker engine shared by several hosts only
/// has its own host's objects judged.
pub const OWNER_HOST_LABEL: &str = "storeproof.owner.host";

/// The port redis listens on inside the container.
const CONTAINER_PORT: u16 = 6379;

/// How long a (re)started server may take to answer PING (AOF replay included).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Between two PINGs while waiting for the server.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// How often, while waiting for PING, we ask Docker whether the container
/// is still running (so a server that exits at once fails fast, with logs).
const STATE_CHECK_INTERVAL: Duration = Duration::from_millis(250);

/// How long the engine may take to answer the first ping.
const ENGINE_TIMEOUT: Duration = Duration::from_secs(10);

/// How many host ports to try when the one picked is taken meanwhile.
const PORT_ATTEMPTS: usize = 5;

/// Connects to the local Docker engine (`DOCKER_HOST` or the default
/// socket), agrees on an API version (the engine here speaks 1.41, older
/// than bollard's default) and pings it.
///
/// The error is one line saying what to do: start the engine, or use the
/// process backend. The caller decides what follows (never a silent skip).
pub async fn docker_available() -> Result<Docker, CrashError> {
    answering(Docker::connect_with_local_defaults()).await
}

/// The engine behind `connection`, once it has agreed on a version and
/// answered a ping; else the one-line "not available" error.
async fn answering(connection: Result<Docker, DockerError>) -> Result<Docker, CrashError> {
    let unavailable = |why: String| {
        CrashError(format!(
            "Docker is not available ({why}); start the Docker engine, or run the crash \
             suite with the process backend: --crash-backend process"
        ))
    };
    let docker =
        connection.map_err(|e| unavailable(format!("cannot connect: {}", one_line(&e))))?;
    let docker = match tokio::time::timeout(ENGINE_TIMEOUT, docker.negotiate_version()).await {
        Ok(Ok(docker)) => docker,
        Ok(Err(e)) => return Err(unavailable(one_line(&e))),
        Err(_) => {
            return Err(unavailable(format!(
                "the engine did not answer within {} s",
                ENGINE_TIMEOUT.as_secs()
            )))
        }
    };
    match tokio::time::timeout(ENGINE_TIMEOUT, docker.ping()).await {
        Ok(Ok(_)) => Ok(docker),
        Ok(Err(e)) => Err(unavailable(one_line(&e))),
        Err(_) => Err(unavailable(format!(
            "the engine did not answer a ping within {} s",
            ENGINE_TIMEOUT.as_secs()
        ))),
    }
}

/// A `redis-server` in a container, data on a volume, port pinned on the host.
pub struct DockerBackend {
    docker: Docker,
    /// The container's name (also its id for every API call).
    container: String,
    /// The named volume mounted at `/data`.
    volume: String,
    /// The host port on 127.0.0.1, the same across restarts.
    port: u16,
    /// The server's random password (`requirepass`), in [`CrashBackend::url`].
    password: String,
    /// False once [`CrashBackend::destroy`] removed everything, so that
    /// `Drop` has nothing left to do.
    live: bool,
}

impl DockerBackend {
    /// Starts a server with the redis directives `settings` (e.g.
    /// `("appendonly", "yes")`, passed as `--appendonly yes`), its data on a
    /// new volume `storeproof-crash-<label>-<random>`, and waits until it
    /// answers PING.
    ///
    /// Always added: `--save ""` (no RDB snapshots; `settings` may override
    /// it), then after `settings` (these win) `--dir /data --port 6379 --bind
    /// 0.0.0.0 --protected-mode yes --requirepass <random>`: the published
    /// port is on 127.0.0.1 only, and the password keeps other containers
    /// out. The container and the volume carry the label
    /// `storeproof.run=<label>` and their owner's labels.
    ///
    /// The container runs a server of `server`'s kind (the default binary
    /// when `None`).
    pub async fn start(
        server: Option<&ServerKind>,
        settings: &[(String, String)],
        label: &str,
    ) -> Result<DockerBackend, CrashError> {
        let docker = docker_available().await?;
        let image = crate::image::ensure_image(&docker, server).await?;
        let name = format!(
            "storeproof-crash-{}-{:08x}",
            name_safe(label),
            rand::random::<u32>()
        );
        let mut labels = owner_labels();
        labels.insert(RUN_LABEL.to_string(), label.to_string());

        docker
            .create_volume(VolumeCreateRequest {
                name: Some(name.clone()),
                labels: Some(labels.clone()),
                ..Default::default()
            })
            .await
            .map_err(|e| CrashError(format!("cannot create the Docker volume {name}: {e}")))?;
        harness::cleanup::register(
            "crash containers and volumes",
            harness::cleanup::Stage::Processes,
            cleanup_all_blocking,
        );
        lock(&REGISTRY).volumes.insert(name.clone());
        // From here on the backend owns the volume: an early return drops
        // it, and Drop removes whatever was created.
        let mut backend = DockerBackend {
            docker,
            container: name.clone(),
            volume: name,
            port: 0,
            password: format!("{:032x}", rand::random::<u128>()),
            live: true,
        };

        let args = server_args(settings, &backend.password);
        let mut last_error = String::new();
        for _ in 0..PORT_ATTEMPTS {
            backend.port = pick_free_port()?;
            backend.create_container(&image, &args, &labels).await?;
            match backend
                .docker
                .start_container(&backend.container, None)
                .await
            {
                Ok(()) => {
                    backend.wait_ready().await?;
                    return Ok(backend);
                }
                // The port was free when picked; something took it since.
                Err(e) if is_port_clash(&e) => {
                    last_error = e.to_string();
                    backend.remove_container().await?;
                }
                Err(e) => {
                    return Err(CrashError(format!(
                        "cannot start the Redis container {}: {e}",
                        backend.container
                    )))
                }
            }
        }
        Err(CrashError(format!(
            "cannot publish the Redis container's port on 127.0.0.1 after {PORT_ATTEMPTS} \
             tries (last: {last_error}); free some ports or use --crash-backend process"
        )))
    }

    async fn create_container(
        &self,
        image: &str,
        args: &[String],
        labels: &HashMap<String, String>,
    ) -> Result<(), CrashError> {
        let port_key = format!("{CONTAINER_PORT}/tcp");
        let host_config = HostConfig {
            binds: Some(vec![format!("{}:/data", self.volume)]),
            port_bindings: Some(HashMap::from([(
                port_key.clone(),
                Some(vec![PortBinding {
                    host_ip: Some("127.0.0.1".to_string()),
                    host_port: Some(self.port.to_string()),
                }]),
            )])),
            ..Default::default()
        };
        let body = ContainerCreateBody {
            image: Some(image.to_string()),
            cmd: Some(args.to_vec()),
            exposed_ports: Some(vec![port_key]),
            labels: Some(labels.clone()),
            host_config: Some(host_config),
            ..Default::default()
        };
        let options = CreateContainerOptionsBuilder::default()
            .name(&self.container)
            .build();
        self.docker
            .create_container(Some(options), body)
            .await
            .map_err(|e| {
                CrashError(format!(
                    "cannot create the Redis container {}: {e}",
                    self.container
                ))
            })?;
        lock(&REGISTRY).containers.insert(self.container.clone());
        Ok(())
    }

    async fn remove_container(&self) -> Result<(), CrashError> {
        remove_container(&self.docker, &self.container).await?;
        lock(&REGISTRY).containers.remove(&self.container);
        Ok(())
    }

    /// Polls PING until the server answers PONG. LOADING (the AOF replaying),
    /// refused connections and resets (docker-proxy up before redis) all
    /// mean "not yet"; a container that stopped, or 30 s without PONG, is
    /// an error carrying the container's logs.
    async fn wait_ready(&self) -> Result<(), CrashError> {
        let url = self.url();
        let started = Instant::now();
        let mut last_state_check = Instant::now();
        loop {
            let last_error = match ping(&url).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if last_state_check.elapsed() >= STATE_CHECK_INTERVAL {
                last_state_check = Instant::now();
                if let Some(exit) = self.stopped_with().await? {
                    return Err(CrashError(format!(
                        "the Redis container {} stopped (exit code {exit}) instead of \
                         answering PING; check the settings; its logs:\n{}",
                        self.container,
                        self.logs().await
                    )));
                }
            }
            if started.elapsed() >= READY_TIMEOUT {
                return Err(CrashError(format!(
                    "the Redis container {} did not answer PING within {} s (last: {last_error}); \
                     its logs:\n{}",
                    self.container,
                    READY_TIMEOUT.as_secs(),
                    self.logs().await
                )));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// `Some(exit code)` once the container is not running, `None` while it runs.
    async fn stopped_with(&self) -> Result<Option<i64>, CrashError> {
        let inspect = self
            .docker
            .inspect_container(&self.container, None)
            .await
            .map_err(|e| {
                CrashError(format!(
                    "cannot inspect the Redis container {}: {e}",
                    self.container
                ))
            })?;
        let state = inspect.state.unwrap_or_default();
        if state.running.unwrap_or(false) {
            Ok(None)
        } else {
            Ok(Some(state.exit_code.unwrap_or(-1)))
        }
    }

    /// The last lines of the container's output, for error messages.
    async fn logs(&self) -> String {
        let options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .tail("40")
            .build();
        let mut stream = self.docker.logs(&self.container, Some(options));
        let mut text = String::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(chunk) => text.push_str(&String::from_utf8_lossy(&chunk.into_bytes())),
                Err(e) => {
                    text.push_str(&format!("(cannot read the logs: {e})"));
                    break;
                }
            }
        }
        text
    }
}

#[async_trait]
impl CrashBackend for DockerBackend {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn url(&self) -> String {
        format!("redis://:{}@127.0.0.1:{}/", self.password, self.port)
    }

    /// `docker kill -s KILL`, then waits until Docker sees the container
    /// stopped, so that a `restart` right after cannot race the kill.
    async fn kill(&mut self) -> Result<(), CrashError> {
        let options = KillContainerOptionsBuilder::default()
            .signal("KILL")
            .build();
        match self
            .docker
            .kill_container(&self.container, Some(options))
            .await
        {
            Ok(()) => {}
            // 409: not running — already dead, which is what kill wants.
            Err(DockerError::DockerResponseServerError {
                status_code: 409, ..
            }) => {}
            Err(e) => {
                return Err(CrashError(format!(
                    "cannot kill the Redis container {}: {e}",
                    self.container
                )))
            }
        }
        let started = Instant::now();
        while self.stopped_with().await?.is_none() {
            if started.elapsed() >= READY_TIMEOUT {
                return Err(CrashError(format!(
                    "the Redis container {} still runs {} s after SIGKILL; check the Docker engine",
                    self.container,
                    READY_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
        Ok(())
    }

    /// Starts the same container (same volume, same host port) and waits for PING.
    async fn restart(&mut self) -> Result<(), CrashError> {
        self.docker
            .start_container(&self.container, None)
            .await
            .map_err(|e| {
                let hint = if is_port_clash(&e) {
                    format!(
                        "; another process took port {} while the server was down",
                        self.port
                    )
                } else {
                    String::new()
                };
                CrashError(format!(
                    "cannot restart the Redis container {}: {e}{hint}",
                    self.container
                ))
            })?;
        self.wait_ready().await
    }

    async fn destroy(mut self: Box<Self>) -> Result<(), CrashError> {
        self.remove_container().await?;
        remove_volume(&self.docker, &self.volume).await?;
        lock(&REGISTRY).volumes.remove(&self.volume);
        self.live = false;
        Ok(())
    }
}

impl Drop for DockerBackend {
    /// A backend dropped without `destroy` (an error, a panic) removes its
    /// container and volume now, synchronously.
    fn drop(&mut self) {
        if !self.live {
            return;
        }
        let containers: Vec<String> = {
            let mut registry = lock(&REGISTRY);
            let had = registry.containers.remove(&self.container);
            registry.volumes.remove(&self.volume);
            if had {
                vec![self.container.clone()]
            } else {
                Vec::new()
            }
        };
        report_leftovers(remove_blocking(containers, vec![self.volume.clone()]));
    }
}

/// Removes every container and volume this process created and has not
/// removed yet (force: running containers are killed). For the Ctrl-C
/// handler and for tests; safe to call more than once and from inside or
/// outside an async runtime (it works on a thread of its own). What cannot
/// be removed is named on stderr with the command that removes it.
pub fn cleanup_all_blocking() {
    let (containers, volumes) = {
        let mut registry = lock(&REGISTRY);
        let registry = std::mem::take(&mut *registry);
        (
            registry.containers.into_iter().collect::<Vec<_>>(),
            registry.volumes.into_iter().collect::<Vec<_>>(),
        )
    };
    if containers.is_empty() && volumes.is_empty() {
        return;
    }
    report_leftovers(remove_blocking(containers, volumes));
}

/// Every container and volume carrying `label_filter` (a Docker label
/// filter: `key` or `key=value`); `what` names them in an error.
async fn list_by_label(
    docker: &Docker,
    label_filter: String,
    what: &str,
) -> Result<(Vec<ContainerSummary>, Vec<Volume>), CrashError> {
    let filters = HashMap::from([("label".to_string(), vec![label_filter])]);
    let containers = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(|e| CrashError(format!("cannot list the containers {what}: {e}")))?;
    let volumes = docker
        .list_volumes(Some(
            ListVolumesOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(|e| CrashError(format!("cannot list the volumes {what}: {e}")))?
        .volumes
        .unwrap_or_default();
    Ok((containers, volumes))
}

/// The owner labels of this process: pid, start time, boot and host.
pub fn owner_labels() -> HashMap<String, String> {
    let me = Owner::me();
    HashMap::from([
        (OWNER_PID_LABEL.to_string(), me.pid.to_string()),
        (OWNER_START_LABEL.to_string(), me.start),
        (OWNER_BOOT_LABEL.to_string(), me.boot),
        (OWNER_HOST_LABEL.to_string(), me.host),
    ])
}

/// Who created an object, as its labels say.
struct Owner {
    pid: u32,
    start: String,
    boot: String,
    host: String,
}

impl Owner {
    fn me() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            start: process_start(pid).unwrap_or_default(),
            boot: std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .map(|b| b.trim().to_string())
                .unwrap_or_default(),
            host: hostname(),
        }
    }
}

/// A process's start time in clock ticks since boot (field 22 of
/// `/proc/<pid>/stat`), or `None` when there is no such process.
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count
    // from the last `)`, after which field 3 comes.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Whether the owner named by `labels` is certainly gone. Objects without
/// an owner, or of another host, are never judged dead.
fn owner_dead(labels: &HashMap<String, String>, me: &Owner) -> bool {
    let (Some(pid), Some(host)) = (
        labels
            .get(OWNER_PID_LABEL)
            .and_then(|p| p.parse::<u32>().ok()),
        labels.get(OWNER_HOST_LABEL),
    ) else {
        return false;
    };
    if *host != me.host {
        return false;
    }
    let boot = labels.get(OWNER_BOOT_LABEL).map_or("", String::as_str);
    if !boot.is_empty() && !me.boot.is_empty() && boot != me.boot {
        return true;
    }
    let start = labels.get(OWNER_START_LABEL).map_or("", String::as_str);
    match process_start(pid) {
        Some(now) => !start.is_empty() && now != start,
        // No /proc entry: gone, if /proc is there at all to say so.
        None => !me.start.is_empty(),
    }
}

/// What [`reap_dead_runs`] removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reaped {
    /// Names of the containers removed.
    pub containers: Vec<String>,
    /// Names of the volumes removed.
    pub volumes: Vec<String>,
}

/// Removes every container and volume labelled `storeproof.run` whose owner
/// is gone (killed with SIGKILL, or the machine rebooted), on this host.
/// Objects of live runs, of other hosts, and without an owner are left alone.
pub async fn reap_dead_runs(docker: &Docker) -> Result<Reaped, CrashError> {
    let me = Owner::me();
    let (containers, volumes) =
        list_by_label(docker, RUN_LABEL.to_string(), "of storeproof").await?;
    let mut reaped = Reaped::default();
    for c in containers {
        let (Some(id), Some(labels)) = (c.id, c.labels) else {
            continue;
        };
        if owner_dead(&labels, &me) {
            remove_container(docker, &id).await?;
            let name = c
                .names
                .and_then(|n| n.first().cloned())
                .unwrap_or(id)
                .trim_start_matches('/')
                .to_string();
            reaped.containers.push(name);
        }
    }
    for v in volumes {
        if owner_dead(&v.labels, &me) {
            remove_volume(docker, &v.name).await?;
            reaped.volumes.push(v.name);
        }
    }
    Ok(reaped)
}

/// What this process created and has not removed yet.
#[derive(Default)]
struct Registry {
    containers: BTreeSet<String>,
    volumes: BTreeSet<String>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    containers: BTreeSet::new(),
    volumes: BTreeSet::new(),
});

/// A poisoned registry is still the right list of names.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes a container with force (SIGKILL if it runs); gone already is fine.
async fn remove_container(docker: &Docker, name: &str) -> Result<(), CrashError> {
    let options = RemoveContainerOptionsBuilder::default().force(true).build();
    match docker.remove_container(name, Some(options)).await {
        Ok(()) => Ok(()),
        Err(DockerError::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(()),
        Err(e) => Err(CrashError(format!(
            "cannot remove the Docker container {name}: {e}; remove it with `docker rm -f {name}`"
        ))),
    }
}

/// Removes a volume; gone already is fine. Its container must be gone first.
async fn remove_volume(docker: &Docker, name: &str) -> Result<(), CrashError> {
    let options = RemoveVolumeOptionsBuilder::default().force(true).build();
    match docker.remove_volume(name, Some(options)).await {
        Ok(()) => Ok(()),
        Err(DockerError::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(()),
        Err(e) => Err(CrashError(format!(
            "cannot remove the Docker volume {name}: {e}; remove it with `docker volume rm {name}`"
        ))),
    }
}

/// Removes `containers` then `volumes` from a thread of its own with its own
/// runtime: `Drop` and the Ctrl-C handler cannot await, and blocking inside
/// the caller's runtime on that runtime's own futures would deadlock.
/// Returns one message per thing that could not be removed.
fn remove_blocking(containers: Vec<String>, volumes: Vec<String>) -> Vec<String> {
    let worker = std::thread::Builder::new()
        .name("storeproof-docker-cleanup".to_string())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => return vec![format!("cannot start a runtime for the cleanup: {e}")],
            };
            runtime.block_on(async {
                let docker = match docker_available().await {
                    Ok(docker) => docker,
                    Err(e) => return vec![e.to_string()],
                };
                let mut failures = Vec::new();
                for name in &containers {
                    if let Err(e) = remove_container(&docker, name).await {
                        failures.push(e.to_string());
                    }
                }
                for name in &volumes {
                    if let Err(e) = remove_volume(&docker, name).await {
                        failures.push(e.to_string());
                    }
                }
                failures
            })
        });
    match worker.map(|handle| handle.join()) {
        Ok(Ok(failures)) => failures,
        Ok(Err(_)) => vec!["the Docker cleanup thread panicked".to_string()],
        Err(e) => vec![format!("cannot start the Docker cleanup thread: {e}")],
    }
}

/// Cleanup runs where no caller can take an error (Drop, Ctrl-C): say on
/// stderr what is left and how to remove it.
fn report_leftovers(failures: Vec<String>) {
    for failure in failures {
        eprintln!("storeproof: docker cleanup: {failure}");
    }
}

/// The redis-server arguments: defaults, then `settings`, then what the
/// backend needs (later directives win).
fn server_args(settings: &[(String, String)], password: &str) -> Vec<String> {
    let mut args = vec!["--save".to_string(), String::new()];
    for (name, value) in settings {
        args.push(format!("--{}", name.trim_start_matches("--")));
        args.push(value.clone());
    }
    // 0.0.0.0 inside the container: docker-proxy connects from the bridge,
    // not from loopback. The password is what keeps the network out.
    for (name, value) in [
        ("dir", "/data".to_string()),
        ("port", CONTAINER_PORT.to_string()),
        ("bind", "0.0.0.0".to_string()),
        ("protected-mode", "yes".to_string()),
        ("requirepass", password.to_string()),
    ] {
        args.push(format!("--{name}"));
        args.push(value);
    }
    args
}

/// One PING with a fresh connection (a connection does not survive a
/// restart). `Err` says why it was not PONG.
async fn ping(url: &str) -> Result<(), String> {
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        // Above the crate's 500 ms default: a busy server replaying its AOF
        // may be slow to answer, and that is not a failure.
        .set_response_timeout(Some(Duration::from_secs(2)));
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| e.to_string())?;
    let pong: String = redis::cmd("PING")
        .query_async(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    if pong == "PONG" {
        Ok(())
    } else {
        Err(format!("PING answered {pong:?}"))
    }
}

/// A host port that was free a moment ago, below the ephemeral range
/// (32768+ here) so that an outgoing connection's local port cannot take it
/// while the server is down between a kill and a restart.
fn pick_free_port() -> Result<u16, CrashError> {
    for _ in 0..100 {
        let port = rand::random_range(20000..32000u16);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| {
            CrashError(format!(
                "cannot find a free port on 127.0.0.1: {e}; check that the loopback interface is up"
            ))
        })
}

/// Docker refuses to start a container whose published port is taken.
fn is_port_clash(e: &DockerError) -> bool {
    let text = e.to_string();
    text.contains("port is already allocated") || text.contains("address already in use")
}

/// Docker names allow `[a-zA-Z0-9][a-zA-Z0-9_.-]*`; anything else becomes `-`.
fn name_safe(label: &str) -> String {
    let safe: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if safe.is_empty() {
        "run".to_string()
    } else {
        safe
    }
}

/// An engine error with its causes (the top one alone may say only
/// "client error (Connect)"), on one line.
fn one_line(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Against the real engine: image, kill, restart, cleanup, the reaper.
#[cfg(test)]
mod engine_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_go_between_the_defaults_and_what_the_backend_needs() {
        let args = server_args(
            &[
                ("appendonly".to_string(), "yes".to_string()),
                ("--appendfsync".to_string(), "always".to_string()),
            ],
            "secret",
        );
        assert_eq!(
            args,
            [
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--dir",
                "/data",
                "--port",
                "6379",
                "--bind",
                "0.0.0.0",
                "--protected-mode",
                "yes",
                "--requirepass",
                "secret"
            ]
        );
    }

    #[tokio::test]
    async fn a_missing_socket_says_what_to_do_in_one_line() {
        let socket = "/nonexistent/storeproof-docker.sock";
        let connection = Docker::connect_with_unix(socket, 5, bollard::API_DEFAULT_VERSION);
        let message = answering(connection).await.err().unwrap().to_string();
        assert!(
            message.starts_with("Docker is not available ("),
            "{message}"
        );
        assert!(
            message.ends_with(
                "start the Docker engine, or run the crash suite with the process \
                 backend: --crash-backend process"
            ),
            "{message}"
        );
        assert!(!message.contains('\n'), "{message}");
        eprintln!("{message}");
    }

    #[tokio::test]
    async fn a_socket_nobody_serves_is_not_available_either() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("docker.sock");
        // Bound and closed: the file is there, connections are refused.
        drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
        let connection =
            Docker::connect_with_unix(socket.to_str().unwrap(), 5, bollard::API_DEFAULT_VERSION);
        let message = answering(connection).await.err().unwrap().to_string();
        assert!(
            message.starts_with("Docker is not available ("),
            "{message}"
        );
        assert!(message.contains("--crash-backend process"), "{message}");
        eprintln!("{message}");
    }

    #[test]
    fn labels_become_docker_names() {
        assert_eq!(name_safe("crash run/1"), "crash-run-1");
        assert_eq!(name_safe(""), "run");
    }
}
