//! The harness's own trouble is not the store's failure: when no server
//! can start, every explorer check is undecided (`unknown`, saying why),
//! none failed. (A test binary of its own: it changes the environment.)

use std::sync::Arc;

use explorer::{explore, ExplorerConfig, LEASE_MS};
use harness::Verdict;
use stores::redis::RedisStoreFactory;

#[test]
fn a_server_that_cannot_start_leaves_every_check_unknown() {
    // Only this test runs in this process.
    std::env::set_var(
        harness::server::REDIS_SERVER_ENV,
        "/nonexistent/redis-server",
    );
    let dir = tempfile::tempdir().unwrap();
    let config = ExplorerConfig {
        depth: 2,
        walks: 2,
        walk_steps: 3,
        seed: 1,
        threads: 2,
        skews: vec![0, LEASE_MS],
        absolute_times: false,
        ..Default::default()
    };
    let factory = Arc::new(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    let outcome = explore(factory, None, "sp:no-server:".into(), &config, &mut |l| {
        eprintln!("{l}")
    });
    for c in &outcome.checks {
        eprintln!("{} {}: {}", c.id, c.verdict.word(), c.reason);
        assert_eq!(c.verdict, Verdict::Unknown, "{}: {}", c.id, c.reason);
    }
    let complete = outcome
        .checks
        .iter()
        .find(|c| c.id == "explorer.exploration-complete")
        .unwrap();
    assert!(
        complete.reason.contains("could not start"),
        "{}",
        complete.reason
    );
}
