//! An adapter instance asked for again gets a process started ahead of it
//! (a spare, docs/PROTOCOL.md §1): the import time of an adapter in Python
//! or Node is paid beside the work before, not in front of the next check.
//! Only a process put to work gets `hello`; spares die with their store.

use std::path::Path;
use std::time::{Duration, Instant};

use harness::store::external::{adapters_started, ExternalStoreFactory};
use harness::store::{Hello, StoreFactory};

use super::alive;

fn hello(instance: &str) -> Hello {
    Hello {
        instance: instance.into(),
        // Never dialled: the adapter below answers hello by itself.
        redis_url: "redis://127.0.0.1:1".into(),
        prefix: "sp:spares:".into(),
        opt_out: None,
    }
}

/// Notes its pid when it starts and again when it reads hello, answers it,
/// then reads until stdin closes.
const ADAPTER: &str = r#"echo $$ >> "$STOREPROOF_WORKDIR/started-$STOREPROOF_INSTANCE"; read line; echo $$ >> "$STOREPROOF_WORKDIR/hello-$STOREPROOF_INSTANCE"; echo '{"id":0,"ok":{"name":"spares","version":"1","contracts":["lease"]}}'; while read line; do :; done"#;

fn pids(dir: &Path, file: &str) -> Vec<i32> {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Waits (at most 5 s) until `file` names `n` processes: a spare notes
/// itself once its shell runs, a moment after it was started.
fn wait_for(dir: &Path, file: &str, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let p = pids(dir, file);
        if p.len() >= n || Instant::now() > deadline {
            return p;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test]
async fn an_instance_asked_for_again_gets_a_process_started_ahead_and_spares_die_with_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let factory = ExternalStoreFactory::new(ADAPTER, dir.path().to_path_buf());
    let before = adapters_started();

    // A name asked for once starts only its own process.
    let first = factory.connect(&hello("a"), 0).await.unwrap();
    assert_eq!(wait_for(dir.path(), "started-a", 1).len(), 1);
    // Asked for again: its process, then two spares.
    let second = factory.connect(&hello("a"), 0).await.unwrap();
    let started = wait_for(dir.path(), "started-a", 4);
    assert_eq!(started.len(), 4, "{started:?}");
    // The third is a spare, started before it was asked for; one more
    // spare replaces it.
    let third = factory.connect(&hello("a"), 0).await.unwrap();
    let helloed = pids(dir.path(), "hello-a");
    assert_eq!(helloed.len(), 3, "only processes put to work get hello");
    assert!(started.contains(&helloed[2]), "{started:?} {helloed:?}");
    assert_eq!(wait_for(dir.path(), "started-a", 5).len(), 5);
    assert_eq!(adapters_started() - before, 3, "a spare counts once used");

    drop((first, second, third));
    drop(factory);
    let all = pids(dir.path(), "started-a");
    let deadline = Instant::now() + Duration::from_secs(5);
    while all.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<i32> = all.into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "left alive: {left:?}");
}

#[tokio::test]
async fn a_warmed_name_is_served_by_the_process_started_before_it_was_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let factory = ExternalStoreFactory::new(ADAPTER, dir.path().to_path_buf());
    factory.warm(&["a", "b"]);
    // Started before any check connects, and sent nothing.
    assert_eq!(wait_for(dir.path(), "started-a", 1).len(), 1);
    assert_eq!(wait_for(dir.path(), "started-b", 1).len(), 1);
    assert!(pids(dir.path(), "hello-a").is_empty());
    let warmed = pids(dir.path(), "started-a");
    // Warming again starts nothing more.
    factory.warm(&["a"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(pids(dir.path(), "started-a"), warmed);

    let client = factory.connect(&hello("a"), 0).await.unwrap();
    assert_eq!(
        pids(dir.path(), "hello-a"),
        warmed,
        "the first check of a warmed name gets the warmed process"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        pids(dir.path(), "started-a"),
        warmed,
        "its first ask starts no spare, as the first ask of any name"
    );
    // Asked again: its process, then two spares.
    let again = factory.connect(&hello("a"), 0).await.unwrap();
    assert_eq!(wait_for(dir.path(), "started-a", 4).len(), 4);
    drop((client, again));
    drop(factory);
    let all: Vec<i32> = ["started-a", "started-b"]
        .iter()
        .flat_map(|f| pids(dir.path(), f))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while all.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<i32> = all.into_iter().filter(|p| alive(*p)).collect();
    assert!(
        left.is_empty(),
        "a warmed process outlived its store: {left:?}"
    );
}

#[tokio::test]
async fn a_name_warmed_twice_has_two_processes_waiting_and_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let factory = ExternalStoreFactory::new(ADAPTER, dir.path().to_path_buf());
    factory.warm(&["a", "b", "a"]);
    assert_eq!(wait_for(dir.path(), "started-a", 2).len(), 2);
    assert_eq!(wait_for(dir.path(), "started-b", 1).len(), 1);
    factory.warm(&["a", "a"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(pids(dir.path(), "started-a").len(), 2, "two wait already");
    factory.warm(&["a", "a", "a"]);
    assert_eq!(wait_for(dir.path(), "started-a", 3).len(), 3);
    drop(factory);
}
