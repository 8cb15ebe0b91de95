//! The built-in Redis lease store against a real `redis-server`: every lease
//! operation, epochs across release and expiry, and kept executions in
//! SQLite. Each test starts its own server, so tests run in parallel.

use std::time::Duration;

use harness::contract::{LeaseView, Reply};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn lease_take_busy_renew_lost_release_not_held_read() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;

    // The instance clock is nonsense on purpose: leases run on server time.
    let before = server_ms(&mut admin).await;
    let take = call(
        &mut s,
        "lease.take",
        json!({"tree": "t", "holder": "a", "ttl_ms": 10_000}),
        0,
    )
    .await;
    let after = server_ms(&mut admin).await;
    let (epoch, exp) = granted(&take);
    assert_eq!(epoch, 1);
    assert!(
        (before + 10_000..=after + 10_000).contains(&exp),
        "{before} {exp} {after}"
    );

    let busy = Reply::Busy {
        holder: "a".into(),
        epoch: 1,
        expires_at_ms: exp,
    };
    for holder in ["b", "a"] {
        let r = call(
            &mut s,
            "lease.take",
            json!({"tree": "t", "holder": holder, "ttl_ms": 5}),
            i64::MAX / 2,
        )
        .await;
        assert_eq!(r, busy, "take by {holder}");
    }

    let renewed = call(
        &mut s,
        "lease.renew",
        json!({"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": 20_000}),
        0,
    )
    .await;
    let Reply::Renewed {
        expires_at_ms: exp2,
    } = renewed
    else {
        panic!("wanted renewed, got {renewed:?}");
    };
    assert!(exp2 >= before + 20_000 && exp2 > exp);

    let lost_to_a = Reply::Lost {
        holder: Some("a".into()),
        epoch: Some(1),
    };
    for (holder, epoch) in [("b", 1), ("a", 2), ("a", 0)] {
        let r = call(
            &mut s,
            "lease.renew",
            json!({"tree": "t", "holder": holder, "epoch": epoch, "ttl_ms": 100}),
            CLOCK,
        )
        .await;
        assert_eq!(r, lost_to_a, "renew by {holder}/{epoch}");
    }
    let r = call(
        &mut s,
        "lease.renew",
        json!({"tree": "nobody", "holder": "a", "epoch": 1, "ttl_ms": 100}),
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

    for (holder, epoch) in [("b", 1), ("a", 2)] {
        let r = call(
            &mut s,
            "lease.release",
            json!({"tree": "t", "holder": holder, "epoch": epoch}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::NotHeld {}, "release by {holder}/{epoch}");
    }
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "t", "holder": "a", "epoch": 1}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::Released {});
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "t", "holder": "a", "epoch": 1}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::NotHeld {});
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "nobody", "holder": "a", "epoch": 1}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::NotHeld {});

    // Released: the record stays, not live; a released lease is never renewed.
    let r = call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert_eq!(
        r,
        Reply::Lease(Some(LeaseView {
            holder: Some("a".into()),
            epoch: 1,
            expires_at_ms: Some(exp2),
            live: false
        }))
    );
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
        call(&mut s, "lease.read", json!({"tree": "nobody"}), CLOCK).await,
        Reply::Lease(None)
    );

    let (epoch, _) = granted(
        &call(
            &mut s,
            "lease.take",
            json!({"tree": "t", "holder": "b", "ttl_ms": 10_000}),
            CLOCK,
        )
        .await,
    );
    assert_eq!(epoch, 2);
    let r = call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert!(
        matches!(r, Reply::Lease(Some(LeaseView { ref holder, epoch: 2, live: true, .. })) if holder.as_deref() == Some("b")),
        "{r:?}"
    );
}

#[tokio::test]
async fn the_epoch_grows_across_release_and_expiry_and_the_record_never_expires() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let take = |holder: &str, ttl: i64| json!({"tree": "t", "holder": holder, "ttl_ms": ttl});

    assert_eq!(
        granted(&call(&mut s, "lease.take", take("a", 60), CLOCK).await).0,
        1
    );
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "t", "holder": "a", "epoch": 1}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::Released {});
    assert_eq!(
        granted(&call(&mut s, "lease.take", take("b", 60), CLOCK).await).0,
        2
    );

    tokio::time::sleep(Duration::from_millis(120)).await;
    let r = call(&mut s, "lease.read", json!({"tree": "t"}), CLOCK).await;
    assert!(
        matches!(
            r,
            Reply::Lease(Some(LeaseView {
                epoch: 2,
                live: false,
                ..
            }))
        ),
        "{r:?}"
    );
    // An expired lease is never renewed, even if nobody took it.
    let r = call(
        &mut s,
        "lease.renew",
        json!({"tree": "t", "holder": "b", "epoch": 2, "ttl_ms": 1000}),
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
        granted(&call(&mut s, "lease.take", take("c", 60), CLOCK).await).0,
        3
    );

    // A matching release of an expired lease is released, and the epoch stays.
    tokio::time::sleep(Duration::from_millis(120)).await;
    let r = call(
        &mut s,
        "lease.release",
        json!({"tree": "t", "holder": "c", "epoch": 3}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::Released {});
    assert_eq!(
        granted(&call(&mut s, "lease.take", take("a", 60_000), CLOCK).await).0,
        4
    );

    let key = format!("{PREFIX}lease:t");
    let pttl: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(pttl, -1, "the lease record must never get a TTL");
}

#[tokio::test]
async fn kept_executions_live_in_sqlite_never_in_redis() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let mut a = connect(&server).await;
    let mut b = connect(&server).await;

    for e in ["e1", "e2", "e1"] {
        let r = call(
            &mut a,
            "lease.keep_execution",
            json!({"tree": "t", "execution": e}),
            CLOCK,
        )
        .await;
        assert_eq!(r, Reply::Kept {});
    }
    let r = call(
        &mut b,
        "lease.keep_execution",
        json!({"tree": "t", "execution": "e3"}),
        CLOCK,
    )
    .await;
    assert_eq!(r, Reply::Kept {});
    let want = Reply::Executions(vec!["e1".into(), "e2".into(), "e3".into()]);
    assert_eq!(
        call(&mut a, "lease.kept_executions", json!({"tree": "t"}), CLOCK).await,
        want
    );
    assert_eq!(
        call(&mut b, "lease.kept_executions", json!({"tree": "t"}), CLOCK).await,
        want
    );
    assert_eq!(
        call(
            &mut a,
            "lease.kept_executions",
            json!({"tree": "other"}),
            CLOCK
        )
        .await,
        Reply::Executions(vec![])
    );

    assert_eq!(
        dbsize(&mut admin).await,
        0,
        "kept executions must not touch Redis"
    );
    let rows = sqlite_rows(&server.kept_db());
    let executions: Vec<_> = rows.iter().map(|(_, _, e)| e.as_str()).collect();
    assert_eq!(executions, ["e1", "e2", "e3"]);
    assert!(rows.iter().all(|(ns, tree, _)| ns == PREFIX && tree == "t"));
}
