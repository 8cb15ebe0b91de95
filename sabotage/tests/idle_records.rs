//! Every record survives idle time: a store that puts a one-day "safety" TTL
//! on its queue records (`sabotage:queue-records-expire`) fails
//! `conformance.queue.records-survive-idle`, and one whose pauses expire
//! after a day (a TTL on the pause key, a one-script edit not in the named
//! set) fails `conformance.rate.pause-survives-idle`; the built-in store
//! passes both.

use std::sync::Arc;

use conformance::{all_checks, run_check, CheckDef};
use harness::server::{ManagedServer, ServerOptions};
use harness::store::StoreFactory;
use harness::{CheckResult, Verdict};
use sabotage::{LuaPatch, LuaSabotage};
use stores::redis::RedisStoreFactory;

async fn run(
    server: &ManagedServer,
    factory: Arc<dyn StoreFactory>,
    prefix: &str,
    def: &CheckDef,
) -> CheckResult {
    let target = testkit::subject(factory).prefix(prefix).on(server);
    run_check(&target, 0, def).await
}

fn check(id: &str) -> Arc<CheckDef> {
    all_checks()
        .into_iter()
        .find(|d| d.spec.id == id)
        .unwrap_or_else(|| panic!("no conformance check {id}"))
}

/// The pause kept with a one-day TTL.
const PAUSE_EXPIRES: LuaPatch = LuaPatch {
    script: "rate_pause.lua",
    find: "redis.call('SET', KEYS[1], ARGV[1])",
    replace: "redis.call('SET', KEYS[1], ARGV[1], 'PX', 86400000)",
};

#[tokio::test(flavor = "multi_thread")]
async fn records_with_a_ttl_fail_the_idle_checks_and_the_builtin_store_passes_them() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let dir = tempfile::tempdir().expect("tempdir");
    let builtin = || RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let queue = check("conformance.queue.records-survive-idle");
    let rate = check("conformance.rate.pause-survives-idle");

    for (n, def) in [&queue, &rate].into_iter().enumerate() {
        let good = run(
            &server,
            Arc::new(builtin()),
            &format!("sp:idle-good{n}:"),
            def,
        )
        .await;
        assert_eq!(
            good.verdict,
            Verdict::Pass,
            "{}: {}",
            def.spec.id,
            good.reason
        );
    }

    let named = sabotage::find("queue-records-expire").expect("named");
    assert_eq!(named.caught_by, queue.spec.id);
    let expiring = sabotage::by_name(named.name, dir.path()).expect("the sabotage builds");
    let caught = run(&server, expiring, "sp:idle-queue:", &queue).await;
    assert_eq!(caught.verdict, Verdict::Fail, "{}", caught.reason);
    assert!(caught.reason.contains("queue.read"), "{}", caught.reason);

    let pause = LuaSabotage::new("pause-expires", &PAUSE_EXPIRES, builtin());
    let caught = run(&server, Arc::new(pause), "sp:idle-pause:", &rate).await;
    assert_eq!(caught.verdict, Verdict::Fail, "{}", caught.reason);
    assert!(caught.reason.contains("paused"), "{}", caught.reason);
    let _ = server.stop().await;
}
