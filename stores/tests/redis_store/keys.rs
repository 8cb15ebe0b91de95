//! The built-in Redis stores' ids, input and keys against a real
//! `redis-server`: odd ids, every key under the prefix, bad input writing
//! nothing, every script loaded. Each test starts its own server.

use harness::contract::{ChildState, ChildView, ErrorKind, LeaseView, Reply};
use serde_json::json;
use stores::redis::script_sources;

use crate::common::*;

#[tokio::test]
async fn odd_ids_work_and_every_key_stays_under_the_prefix() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let long = "k".repeat(1024);
    let ids = [
        "ü→漢字",
        "a:{b}",
        "*",
        long.as_str(),
        "sp:test:",
        "line\nbreak [x]?",
    ];

    for id in ids {
        let (epoch, _) = granted(
            &call(
                &mut s,
                "lease.take",
                json!({"tree": id, "holder": id, "ttl_ms": 60_000}),
                CLOCK,
            )
            .await,
        );
        assert_eq!(epoch, 1, "{id}");
        let r = call(
            &mut s,
            "lease.renew",
            json!({"tree": id, "holder": id, "epoch": 1, "ttl_ms": 60_000}),
            CLOCK,
        )
        .await;
        assert!(matches!(r, Reply::Renewed { .. }), "{id}: {r:?}");
        let r = call(&mut s, "lease.read", json!({"tree": id}), CLOCK).await;
        assert!(
            matches!(r, Reply::Lease(Some(LeaseView { ref holder, live: true, .. })) if holder.as_deref() == Some(id)),
            "{id}: {r:?}"
        );
        let r = call(
            &mut s,
            "lease.release",
            json!({"tree": id, "holder": id, "epoch": 1}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Released {}, "{id}");
        let r = call(
            &mut s,
            "lease.keep_execution",
            json!({"tree": id, "execution": id}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Kept {});
        let r = call(&mut s, "lease.kept_executions", json!({"tree": id}), CLOCK).await;
        assert_eq!(r, Reply::Executions(vec![id.to_string()]));

        let r = call(
            &mut s,
            "queue.save",
            json!({"child": id, "depth": 1, "payload": id}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Saved {}, "{id}");
        let r = call(
            &mut s,
            "queue.claim",
            json!({"instance": id, "claim_ttl_ms": 60_000}),
            CLOCK,
        )
        .await;
        assert_eq!(
            r,
            Reply::Claimed {
                child: id.into(),
                depth: 1,
                payload: id.into(),
                attempt: 1
            }
        );
        let r = call(
            &mut s,
            "queue.complete",
            json!({"child": id, "instance": id, "attempt": 1}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Completed {}, "{id}");
        let r = call(&mut s, "queue.read", json!({"child": id}), CLOCK).await;
        assert!(
            matches!(
                r,
                Reply::Child(Some(ChildView {
                    state: ChildState::Done,
                    ..
                }))
            ),
            "{id}: {r:?}"
        );

        let r = call(
            &mut s,
            "rate.acquire_slot",
            json!({"provider": id, "holder": id, "limit": 1, "ttl_ms": 1000}),
            CLOCK,
        )
        .await;
        let Reply::Acquired { slot } = r else {
            panic!("{id}: {r:?}")
        };
        let r = call(
            &mut s,
            "rate.release_slot",
            json!({"provider": id, "slot": slot}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Released {});
        let r = call(
            &mut s,
            "rate.release_slot",
            json!({"provider": id, "slot": id}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Unknown {});
        let r = call(
            &mut s,
            "rate.hit",
            json!({"provider": id, "limit": 1, "window_ms": 1000}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Allowed { remaining: 0 });
        let r = call(
            &mut s,
            "rate.pause",
            json!({"provider": id, "until_ms": CLOCK + 1}),
            CLOCK,
        )
        .await;
        assert_eq!(
            r,
            Reply::Paused {
                until_ms: CLOCK + 1
            }
        );
        let r = call(&mut s, "rate.read", json!({"provider": id}), CLOCK).await;
        assert_eq!(
            r,
            Reply::RateState {
                slots_in_use: 0,
                paused_until_ms: Some(CLOCK + 1)
            }
        );
    }
    // Each child claimed in turn was the only one: ids never mixed up.
    assert_eq!(claim(&mut s, "x", 100).await, Reply::Empty {});

    let keys = all_keys(&mut admin).await;
    assert!(keys.len() > ids.len() * 4, "{} keys", keys.len());
    for key in &keys {
        assert!(
            key.starts_with(PREFIX.as_bytes()),
            "key outside the prefix: {:?}",
            String::from_utf8_lossy(key)
        );
    }
    for id in ids {
        assert!(
            keys.contains(&format!("{PREFIX}lease:{id}").into_bytes()),
            "{id}"
        );
        assert!(
            keys.contains(&format!("{PREFIX}q:child:{id}").into_bytes()),
            "{id}"
        );
    }
}

#[tokio::test]
async fn bad_input_is_bad_request_and_writes_nothing() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let cases = [
        (
            "lease.take",
            json!({"tree": "", "holder": "a", "ttl_ms": 1000}),
        ),
        (
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 0}),
        ),
        (
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": "1000"}),
        ),
        ("lease.take", json!({"tree": "t", "holder": "a"})),
        (
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 1000, "extra": 1}),
        ),
        (
            "lease.renew",
            json!({"tree": "t", "holder": "a", "epoch": -1, "ttl_ms": 1000}),
        ),
        (
            "lease.release",
            json!({"tree": "t", "holder": "a", "epoch": 1.5}),
        ),
        (
            "lease.keep_execution",
            json!({"tree": "t", "execution": ""}),
        ),
        ("lease.steal", json!({"tree": "t"})),
        (
            "queue.save",
            json!({"child": "c", "depth": -1, "payload": "x"}),
        ),
        (
            "queue.save",
            json!({"child": "c", "depth": 1, "payload": 7}),
        ),
        ("queue.claim", json!({"instance": "a", "claim_ttl_ms": -5})),
        (
            "queue.complete",
            json!({"child": "c", "instance": "", "attempt": 1}),
        ),
        (
            "rate.acquire_slot",
            json!({"provider": "p", "holder": "h", "limit": 0, "ttl_ms": 10}),
        ),
        (
            "rate.hit",
            json!({"provider": "p", "limit": 1, "window_ms": 0}),
        ),
        ("rate.pause", json!({"provider": "p", "until_ms": -1})),
        ("rate.release_slot", json!({"provider": "p", "slot": ""})),
        ("rate.read", json!(null)),
    ];
    for (op, args) in cases {
        let err = call_err(&mut s, op, args.clone(), CLOCK).await;
        assert_eq!(err.kind, ErrorKind::BadRequest, "{op} {args}: {err}");
    }
    assert_eq!(
        dbsize(&mut admin).await,
        0,
        "bad input must not write a key"
    );
    assert!(sqlite_rows(&server.kept_db()).is_empty());
}

#[tokio::test]
async fn every_script_is_loaded_on_connect() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let _s = connect(&server).await;
    let mut cmd = redis::cmd("SCRIPT");
    cmd.arg("EXISTS");
    for (_, source) in script_sources() {
        cmd.arg(redis::Script::new(source).get_hash());
    }
    let loaded: Vec<i64> = cmd.query_async(&mut admin).await.unwrap();
    assert_eq!(loaded, vec![1; script_sources().len()]);
}
