//! The built-in Redis stores and their server (docs/PROTOCOL.md §7): the refusals of
//! short settings, replicas and missing permissions, an unreachable, full or
//! restarted server, and RESP3. Each test starts its own server.

use std::time::Duration;

use harness::contract::{ErrorKind, LeaseView, Reply};
use harness::store::{StoreFactory, OPT_OUT_WRITES_MAY_BE_LOST};
use serde_json::json;
use stores::redis::RedisStoreFactory;

use crate::common::*;

#[tokio::test]
async fn short_durability_is_refused_naming_each_setting_unless_opted_out() {
    let server = TestServer::with(
        TestServer::options()
            .with_config("appendfsync", "everysec")
            .with_config("maxmemory-policy", "allkeys-lru"),
    )
    .await;
    let err = connect_with(&server, &server.url(), None)
        .await
        .err()
        .expect("refused");
    assert_eq!(err.kind, ErrorKind::Durability, "{err}");
    assert_eq!(err.settings, vec!["appendfsync", "maxmemory-policy"]);
    for needle in [
        "appendfsync is everysec",
        "set appendfsync always",
        "maxmemory-policy is allkeys-lru",
        "set maxmemory-policy noeviction",
        "--opt-out acknowledged-writes-may-be-lost",
    ] {
        assert!(
            err.message.contains(needle),
            "{needle:?} in {}",
            err.message
        );
    }

    let err = connect_with(&server, &server.url(), Some("please"))
        .await
        .err()
        .expect("refused");
    assert_eq!(err.kind, ErrorKind::BadRequest, "{err}");

    let mut s = connect_with(&server, &server.url(), Some(OPT_OUT_WRITES_MAY_BE_LOST))
        .await
        .expect("accepted with the opt-out");
    let (epoch, _) = granted(
        &call(
            &mut s,
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
            CLOCK,
        )
        .await,
    );
    assert_eq!(epoch, 1);
}

#[tokio::test]
async fn a_replica_is_refused_even_with_the_opt_out() {
    let primary = TestServer::start().await;
    let replica = TestServer::with(TestServer::options().with_replica_of(primary.port())).await;
    for opt_out in [None, Some(OPT_OUT_WRITES_MAY_BE_LOST)] {
        let err = connect_with(&replica, &replica.url(), opt_out)
            .await
            .err()
            .expect("a replica is refused");
        assert_eq!(err.kind, ErrorKind::Deployment, "{err}");
        assert_eq!(err.settings, vec!["role"]);
        assert!(err.message.contains("role:slave"), "{}", err.message);
    }
    // The primary itself is fine.
    connect(&primary).await;
}

#[tokio::test]
async fn a_user_without_config_is_config_refused() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER", "limited", "on", ">secret", "~*", "&*", "+@all", "-config",
        ])
        .query_async(&mut admin)
        .await
        .unwrap();
    let url = format!("redis://limited:secret@127.0.0.1:{}/", server.port());
    let err = connect_with(&server, &url, Some(OPT_OUT_WRITES_MAY_BE_LOST))
        .await
        .err()
        .expect("refused");
    assert_eq!(err.kind, ErrorKind::ConfigRefused, "{err}");
    assert!(err.message.contains("CONFIG GET"), "{}", err.message);
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let factory = RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let url = format!("redis://127.0.0.1:{}/", free_port());
    let err = factory
        .connect(&hello(&url, PREFIX, None), CLOCK)
        .await
        .err()
        .expect("nothing listens there");
    assert_eq!(err.kind, ErrorKind::Unavailable, "{err}");
    let err = factory
        .connect(&hello("not a url", PREFIX, None), CLOCK)
        .await
        .err()
        .expect("not a url");
    assert_eq!(err.kind, ErrorKind::BadRequest, "{err}");
}

// ---------------------------------------------------------------------------
// Failures while running.

#[tokio::test]
async fn a_full_server_answers_store_full_and_changes_nothing() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    assert_eq!(save(&mut s, "queued", 1).await, Reply::Saved {});
    let one = json!({"provider": "p", "holder": "h", "limit": 1, "ttl_ms": 100});
    assert!(matches!(
        call(&mut s, "rate.acquire_slot", one.clone(), CLOCK).await,
        Reply::Acquired { .. }
    ));
    let keys_before = all_keys(&mut admin).await.len();

    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "1"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let writes = [
        (
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
        ),
        (
            "queue.save",
            json!({"child": "c", "depth": 1, "payload": "x"}),
        ),
        (
            "queue.claim",
            json!({"instance": "a", "claim_ttl_ms": 1000}),
        ),
        (
            "rate.hit",
            json!({"provider": "p", "limit": 5, "window_ms": 1000}),
        ),
        (
            "rate.pause",
            json!({"provider": "p", "until_ms": CLOCK + 5}),
        ),
        // The only slot expired at CLOCK+100: the grant path must still refuse.
        ("rate.acquire_slot", one.clone()),
    ];
    for (op, args) in writes {
        let clock = if op == "rate.acquire_slot" {
            CLOCK + 200
        } else {
            CLOCK
        };
        let err = call_err(&mut s, op, args.clone(), clock).await;
        assert_eq!(err.kind, ErrorKind::StoreFull, "{op}: {err}");
    }
    // Reads still answer.
    assert_eq!(
        call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await,
        Reply::Lease(None)
    );
    assert_eq!(
        all_keys(&mut admin).await.len(),
        keys_before,
        "nothing written"
    );

    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let (epoch, _) = granted(
        &call(
            &mut s,
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
            CLOCK,
        )
        .await,
    );
    assert_eq!(epoch, 1, "the refused take granted nothing");
    assert_eq!(claim(&mut s, "a", 1000).await, claimed("queued", 1, 1));
}

#[tokio::test]
async fn a_restarted_server_is_unavailable_then_reconnected_with_its_data() {
    let mut server = TestServer::start().await;
    let mut s = connect(&server).await;
    let take = |holder: &str| json!({"tree": "t", "holder": holder, "ttl_ms": 100});
    assert_eq!(
        granted(&call(&mut s, "lease.take", take("a"), CLOCK).await).0,
        1
    );

    server.kill();
    let err = call_err(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert_eq!(err.kind, ErrorKind::Unavailable, "{err}");

    server.restart().await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    // The AOF kept epoch 1 (appendfsync always), so the next grant is 2.
    assert_eq!(
        granted(&call(&mut s, "lease.take", take("b"), CLOCK).await).0,
        2
    );
}

#[tokio::test]
async fn instances_keep_executions_concurrently_in_one_file() {
    let server = TestServer::start().await;
    let mut tasks = Vec::new();
    for i in 0..6 {
        let mut s = connect(&server).await;
        tasks.push(tokio::spawn(async move {
            for j in 0..5 {
                let e = format!("e{i}-{j}");
                let r = call(
                    &mut s,
                    "lease.keep_execution",
                    json!({"tree": "t", "execution": e}),
                    CLOCK,
                )
                .await;
                assert_eq!(r, Reply::Kept {});
                let r = call(
                    &mut s,
                    "lease.keep_execution",
                    json!({"tree": "t", "execution": "shared"}),
                    CLOCK,
                )
                .await;
                assert_eq!(r, Reply::Kept {});
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut s = connect(&server).await;
    let Reply::Executions(kept) =
        call(&mut s, "lease.kept_executions", json!({"tree": "t"}), CLOCK).await
    else {
        panic!("wanted executions");
    };
    assert_eq!(kept.len(), 31, "{kept:?}");
    assert_eq!(kept.iter().filter(|e| *e == "shared").count(), 1);
}

#[tokio::test]
async fn resp3_connections_read_nulls_and_config_the_same() {
    let server = TestServer::start().await;
    let url = format!("{}?protocol=resp3", server.url());
    let mut s = connect_with(&server, &url, None)
        .await
        .expect("resp3 connect");
    let r = call(
        &mut s,
        "lease.renew",
        json!({"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": 100}),
        CLOCK,
    )
    .await;
    assert_eq!(
        r,
        Reply::Lost {
            holder: None,
            epoch: None
        }
    );
    assert_eq!(
        call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await,
        Reply::Lease(None)
    );
    assert_eq!(
        granted(
            &call(
                &mut s,
                "lease.take",
                json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
                CLOCK
            )
            .await
        )
        .0,
        1
    );
    let r = call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert!(
        matches!(
            r,
            Reply::Lease(Some(LeaseView {
                live: true,
                epoch: 1,
                ..
            }))
        ),
        "{r:?}"
    );
    assert_eq!(save(&mut s, "c", 2).await, Reply::Saved {});
    let r = call(
        &mut s,
        "queue.complete",
        json!({"child": "c", "instance": "a", "attempt": 0}),
        CLOCK,
    )
    .await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: None,
            attempt: Some(0)
        }
    );
    let r = call(&mut s, "rate.read", json!({"provider": "p"}), CLOCK).await;
    assert_eq!(
        r,
        Reply::RateState {
            slots_in_use: 0,
            paused_until_ms: None
        }
    );

    let durable_but_lru =
        TestServer::with(TestServer::options().with_config("maxmemory-policy", "allkeys-lru"))
            .await;
    let url = format!("{}?protocol=resp3", durable_but_lru.url());
    let err = connect_with(&durable_but_lru, &url, None)
        .await
        .err()
        .expect("refused");
    assert_eq!(err.settings, vec!["maxmemory-policy"]);
}

#[tokio::test]
async fn a_user_without_scripting_is_refused_on_connect() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "noscript",
            "on",
            ">secret",
            "~*",
            "&*",
            "+@all",
            "-@scripting",
        ])
        .query_async(&mut admin)
        .await
        .unwrap();
    let url = format!("redis://noscript:secret@127.0.0.1:{}/", server.port());
    let err = connect_with(&server, &url, None)
        .await
        .err()
        .expect("refused");
    assert_eq!(err.kind, ErrorKind::ConfigRefused, "{err}");
    assert!(err.message.contains("SCRIPT LOAD"), "{}", err.message);
}
