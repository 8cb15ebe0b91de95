//! The Docker crash backend against the real engine on this machine: the
//! image is built locally and reused, SIGKILL keeps what the AOF fsynced and
//! loses what nothing saved, and nothing is left behind.
//!
//! Each test uses its own label, so they can run in parallel (under nextest
//! or `cargo test`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bollard::models::{ContainerCreateBody, VolumeCreateRequest};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use bollard::Docker;

use super::{
    cleanup_all_blocking, docker_available, list_by_label, lock, owner_labels, reap_dead_runs,
    remove_container, remove_volume, DockerBackend, OWNER_PID_LABEL, OWNER_START_LABEL, REGISTRY,
    RUN_LABEL,
};
use crate::backend::{CrashBackend, CrashError};
use crate::image::ensure_image;

/// Everything labelled `storeproof.run=<label>`: the containers (id and
/// names, as Docker lists them with a leading `/`) and the volume names.
async fn list_labelled(
    docker: &Docker,
    label: &str,
) -> Result<(Vec<(String, Vec<String>)>, Vec<String>), CrashError> {
    let (containers, volumes) = list_by_label(
        docker,
        format!("{RUN_LABEL}={label}"),
        &format!("labelled {label}"),
    )
    .await?;
    Ok((
        containers
            .into_iter()
            .filter_map(|c| c.id.map(|id| (id, c.names.unwrap_or_default())))
            .collect(),
        volumes.into_iter().map(|v| v.name).collect(),
    ))
}

/// Removes every container (force) and then every volume labelled
/// `storeproof.run=<label>`, whichever process created them.
async fn remove_labelled(label: &str) -> Result<(), CrashError> {
    let docker = docker_available().await?;
    let (containers, volumes) = list_labelled(&docker, label).await?;
    for (id, names) in containers {
        remove_container(&docker, &id).await?;
        let mut registry = lock(&REGISTRY);
        for name in names {
            registry.containers.remove(name.trim_start_matches('/'));
        }
    }
    for volume in volumes {
        remove_volume(&docker, &volume).await?;
        lock(&REGISTRY).volumes.remove(&volume);
    }
    Ok(())
}

fn durable() -> Vec<(String, String)> {
    [
        ("appendonly", "yes"),
        ("appendfsync", "always"),
        ("no-appendfsync-on-rewrite", "no"),
        ("maxmemory-policy", "noeviction"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn no_aof() -> Vec<(String, String)> {
    vec![("appendonly".to_string(), "no".to_string())]
}

/// A label no other test (nor an earlier run) uses.
fn unique_label(test: &str) -> String {
    format!(
        "test-{test}-{}-{:06x}",
        std::process::id(),
        rand::random::<u32>() & 0xff_ffff
    )
}

async fn conn(url: &str) -> redis::aio::MultiplexedConnection {
    let config =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(5)));
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap()
}

async fn set(url: &str, key: &str, value: &str) {
    let mut c = conn(url).await;
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query_async(&mut c)
        .await
        .unwrap();
}

async fn get(url: &str, key: &str) -> Option<String> {
    let mut c = conn(url).await;
    redis::cmd("GET")
        .arg(key)
        .query_async(&mut c)
        .await
        .unwrap()
}

/// (container names, volume names) labelled `storeproof.run=<label>`.
async fn labelled(label: &str) -> (Vec<String>, Vec<String>) {
    let docker = docker_available().await.unwrap();
    let (containers, volumes) = list_labelled(&docker, label).await.unwrap();
    (
        containers
            .into_iter()
            .flat_map(|(_, names)| names)
            .collect(),
        volumes,
    )
}

/// (running, exit code) of a container.
async fn state(name: &str) -> (bool, i64) {
    let docker = docker_available().await.unwrap();
    let state = docker
        .inspect_container(name, None)
        .await
        .unwrap()
        .state
        .unwrap();
    (state.running.unwrap(), state.exit_code.unwrap())
}

#[tokio::test]
async fn the_image_is_built_once_and_then_reused_by_name() {
    let docker = docker_available().await.unwrap();
    let first = ensure_image(&docker, None).await.unwrap();
    assert!(first.starts_with("storeproof-redis:"), "{first}");
    let id = docker.inspect_image(&first).await.unwrap().id;

    let started = Instant::now();
    let second = ensure_image(&docker, None).await.unwrap();
    let cached = started.elapsed();
    assert_eq!(first, second);
    assert_eq!(docker.inspect_image(&second).await.unwrap().id, id);
    // Reuse asks the engine for the name (the inputs were hashed by the
    // first call); a build sends ~17 MB and runs the builder for seconds.
    assert!(cached < Duration::from_secs(3), "reuse took {cached:?}");
    eprintln!("ensure_image with the image present: {cached:?}");
}

#[tokio::test]
async fn with_the_aof_a_write_survives_sigkill_on_the_same_port() {
    let label = unique_label("durable");
    let mut backend = DockerBackend::start(None, &durable(), &label)
        .await
        .unwrap();
    assert_eq!(backend.name(), "docker");
    let url = backend.url();
    assert!(
        url.starts_with("redis://:") && url.ends_with(&format!("@127.0.0.1:{}/", backend.port)),
        "{url}"
    );
    set(&url, "k", "v").await;

    backend.kill().await.unwrap();
    let (running, exit) = state(&backend.container).await;
    assert!(!running);
    assert_eq!(exit, 137, "128 + SIGKILL");

    backend.restart().await.unwrap();
    assert_eq!(backend.url(), url, "the port stays the same");
    assert_eq!(get(&url, "k").await.as_deref(), Some("v"));

    // A second kill and restart works the same way.
    set(&url, "k2", "v2").await;
    backend.kill().await.unwrap();
    backend.restart().await.unwrap();
    assert_eq!(get(&url, "k2").await.as_deref(), Some("v2"));

    Box::new(backend).destroy().await.unwrap();
    assert_eq!(labelled(&label).await, (vec![], vec![]));
}

#[tokio::test]
async fn without_the_aof_a_write_is_lost_at_sigkill() {
    let label = unique_label("no-aof");
    let mut backend = DockerBackend::start(None, &no_aof(), &label).await.unwrap();
    let url = backend.url();
    set(&url, "k", "v").await;
    assert_eq!(get(&url, "k").await.as_deref(), Some("v"));

    backend.kill().await.unwrap();
    assert_eq!(state(&backend.container).await, (false, 137));
    backend.restart().await.unwrap();
    assert_eq!(
        get(&url, "k").await,
        None,
        "no AOF and no RDB: the write is lost"
    );

    Box::new(backend).destroy().await.unwrap();
    assert_eq!(labelled(&label).await, (vec![], vec![]));
}

#[tokio::test]
async fn destroy_removes_the_container_and_the_volume() {
    let label = unique_label("destroy");
    let backend = DockerBackend::start(None, &durable(), &label)
        .await
        .unwrap();
    let (containers, volumes) = labelled(&label).await;
    assert_eq!(containers, vec![format!("/{}", backend.container)]);
    assert_eq!(volumes, vec![backend.volume.clone()]);
    Box::new(backend).destroy().await.unwrap();
    assert_eq!(labelled(&label).await, (vec![], vec![]));
}

#[tokio::test]
async fn a_dropped_backend_removes_what_it_created() {
    let label = unique_label("drop");
    let backend = DockerBackend::start(None, &durable(), &label)
        .await
        .unwrap();
    assert_eq!(labelled(&label).await.0.len(), 1);
    drop(backend);
    assert_eq!(labelled(&label).await, (vec![], vec![]));
}

/// The label the helper below uses, set by the test that runs it.
const LEAK_LABEL_ENV: &str = "STOREPROOF_TEST_LEAK_LABEL";

#[tokio::test]
async fn cleanup_all_removes_a_backend_that_was_never_dropped() {
    // `cleanup_all_blocking` removes everything its process created; under
    // `cargo test` that process holds the other tests' servers too, so the
    // leak and the cleanup happen in a process of their own.
    let label = unique_label("leak");
    let exe = std::env::current_exe().unwrap();
    let output = std::process::Command::new(exe)
        .args([
            "--exact",
            "docker::engine_tests::leak_a_backend_then_cleanup_all",
            "--ignored",
            "--nocapture",
        ])
        .env(LEAK_LABEL_ENV, &label)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(labelled(&label).await, (vec![], vec![]));
}

/// Run by the test above in a process of its own.
#[tokio::test]
#[ignore = "run by cleanup_all_removes_a_backend_that_was_never_dropped"]
async fn leak_a_backend_then_cleanup_all() {
    let label = std::env::var(LEAK_LABEL_ENV).unwrap_or_else(|_| unique_label("leak"));
    let mut backend = DockerBackend::start(None, &durable(), &label)
        .await
        .unwrap();
    backend.kill().await.unwrap();
    // As if the process were interrupted with the backend still owned.
    std::mem::forget(backend);
    let before = labelled(&label).await;
    assert_eq!((before.0.len(), before.1.len()), (1, 1));
    cleanup_all_blocking();
    assert_eq!(labelled(&label).await, (vec![], vec![]));
}

#[tokio::test]
async fn remove_labelled_finds_everything_with_the_label() {
    let label = unique_label("labelled");
    let backend = DockerBackend::start(None, &no_aof(), &label).await.unwrap();
    std::mem::forget(backend);
    remove_labelled(&label).await.unwrap();
    assert_eq!(labelled(&label).await, (vec![], vec![]));
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_fast_with_its_logs() {
    let label = unique_label("bad");
    let bad = vec![("no-such-directive".to_string(), "1".to_string())];
    let started = Instant::now();
    let err = DockerBackend::start(None, &bad, &label)
        .await
        .err()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    let message = err.to_string();
    assert!(message.contains("stopped"), "{message}");
    assert!(
        message.contains("no-such-directive"),
        "logs missing: {message}"
    );
    // The failed start removed what it had created.
    assert_eq!(labelled(&label).await, (vec![], vec![]));
}

#[tokio::test]
async fn the_server_in_the_container_wants_its_password_and_is_published_on_loopback_only() {
    let label = unique_label("password");
    let backend = DockerBackend::start(None, &no_aof(), &label).await.unwrap();
    let url = backend.url();
    set(&url, "k", "v").await;
    // The same server without the password: refused.
    let bare = format!("redis://127.0.0.1:{}/", backend.port);
    let mut c = conn(&bare).await;
    let refused: Result<String, _> = redis::cmd("GET").arg("k").query_async(&mut c).await;
    let err = refused.expect_err("a connection without the password reads nothing");
    assert!(err.to_string().contains("NOAUTH"), "{err}");
    let docker = docker_available().await.unwrap();
    let inspect = docker
        .inspect_container(&backend.container, None)
        .await
        .unwrap();
    let bindings = inspect.host_config.unwrap().port_bindings.unwrap();
    for binding in bindings.values().flatten().flatten() {
        assert_eq!(binding.host_ip.as_deref(), Some("127.0.0.1"));
    }
    Box::new(backend).destroy().await.unwrap();
}

/// A pid no process has: a child that has exited and been waited for.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// Labels as a storeproof process would put them, with `owner` changed.
fn labels_of(label: &str, owner: &[(&str, String)]) -> HashMap<String, String> {
    let mut labels = owner_labels();
    labels.insert(RUN_LABEL.to_string(), label.to_string());
    for (k, v) in owner {
        labels.insert(k.to_string(), v.clone());
    }
    labels
}

/// A container (created, never started) and a volume carrying `labels`.
async fn leftovers(name: &str, labels: HashMap<String, String>) {
    let docker = docker_available().await.unwrap();
    let image = ensure_image(&docker, None).await.unwrap();
    docker
        .create_volume(VolumeCreateRequest {
            name: Some(name.to_string()),
            labels: Some(labels.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    docker
        .create_container(
            Some(CreateContainerOptionsBuilder::default().name(name).build()),
            ContainerCreateBody {
                image: Some(image),
                labels: Some(labels),
                ..Default::default()
            },
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn the_reaper_removes_what_dead_runs_left_and_spares_live_ones() {
    let dead = unique_label("reap-dead");
    let reused = unique_label("reap-reused");
    let live = unique_label("reap-live");
    // A run killed with SIGKILL: its pid is gone.
    leftovers(
        &format!("storeproof-crash-{dead}"),
        labels_of(&dead, &[(OWNER_PID_LABEL, dead_pid().to_string())]),
    )
    .await;
    // A run whose pid now belongs to another process (this one): the
    // process start time does not match.
    leftovers(
        &format!("storeproof-crash-{reused}"),
        labels_of(&reused, &[(OWNER_START_LABEL, "1".to_string())]),
    )
    .await;
    // A live run: this very process.
    let backend = DockerBackend::start(None, &no_aof(), &live).await.unwrap();

    let docker = docker_available().await.unwrap();
    let reaped = reap_dead_runs(&docker).await.unwrap();
    for gone in [&dead, &reused] {
        assert_eq!(labelled(gone).await, (vec![], vec![]), "{gone} left");
        let name = format!("storeproof-crash-{gone}");
        assert!(reaped.containers.contains(&name), "{reaped:?}");
        assert!(reaped.volumes.contains(&name), "{reaped:?}");
    }
    let (containers, volumes) = labelled(&live).await;
    assert_eq!(
        (containers.len(), volumes.len()),
        (1, 1),
        "the live run was reaped"
    );
    Box::new(backend).destroy().await.unwrap();
}
