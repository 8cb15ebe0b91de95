//! The built-in Redis rate limits against a real `redis-server`, on the
//! instance's clock: slots, hits and pauses. Each test starts its own server.

use harness::contract::Reply;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn slots_fill_come_back_on_release_and_expire_on_clock_ms() {
    let server = TestServer::start().await;
    let mut s = connect(&server).await;
    let t = CLOCK;
    let acquire = json!({"provider": "p", "holder": "h", "limit": 2, "ttl_ms": 100});
    let slot = |r: Reply| match r {
        Reply::Acquired { slot } => slot,
        other => panic!("wanted acquired, got {other:?}"),
    };

    let s1 = slot(call(&mut s, "rate.acquire_slot", acquire.clone(), t).await);
    let s2 = slot(call(&mut s, "rate.acquire_slot", acquire.clone(), t + 10).await);
    assert_ne!(s1, s2);
    assert_eq!(
        call(&mut s, "rate.acquire_slot", acquire.clone(), t + 20).await,
        Reply::Full {
            retry_at_ms: t + 100
        }
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 20).await,
        Reply::RateState {
            slots_in_use: 2,
            paused_until_ms: None
        }
    );
    let release = |slot: &str| json!({"provider": "p", "slot": slot});
    assert_eq!(
        call(&mut s, "rate.release_slot", release(&s1), t + 30).await,
        Reply::Released {}
    );
    assert_eq!(
        call(&mut s, "rate.release_slot", release(&s1), t + 30).await,
        Reply::Unknown {}
    );
    assert_eq!(
        call(&mut s, "rate.release_slot", release("nope"), t + 30).await,
        Reply::Unknown {}
    );
    let s3 = slot(call(&mut s, "rate.acquire_slot", acquire.clone(), t + 40).await);
    assert!(s3 != s1 && s3 != s2);

    // At t+110 s2 (expires t+110) is over: a slot ends at its expiry.
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 110).await,
        Reply::RateState {
            slots_in_use: 1,
            paused_until_ms: None
        }
    );
    assert_eq!(
        call(&mut s, "rate.release_slot", release(&s2), t + 110).await,
        Reply::Unknown {}
    );
    // Going back on the instance clock, s3 is live again; at t+140 it is not.
    assert_eq!(
        call(&mut s, "rate.release_slot", release(&s3), t + 140).await,
        Reply::Unknown {}
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 50).await,
        Reply::RateState {
            slots_in_use: 0,
            paused_until_ms: None
        }
    );
    // Another provider is independent.
    let other = json!({"provider": "q", "holder": "h", "limit": 1, "ttl_ms": 100});
    slot(call(&mut s, "rate.acquire_slot", other, t).await);
}

#[tokio::test]
async fn hits_count_in_the_window_and_pauses_only_lengthen() {
    let server = TestServer::start().await;
    let mut s = connect(&server).await;
    let t = CLOCK;
    let hit = json!({"provider": "p", "limit": 2, "window_ms": 1000});

    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t).await,
        Reply::Allowed { remaining: 1 }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 500).await,
        Reply::Allowed { remaining: 0 }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 900).await,
        Reply::Limited {
            retry_at_ms: t + 1000
        }
    );
    // (now − window, now]: at t+1000 the hit at t has left.
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 1000).await,
        Reply::Allowed { remaining: 0 }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 1001).await,
        Reply::Limited {
            retry_at_ms: t + 1500
        }
    );
    // A skewed instance behind the others still counts what is in its window.
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 600).await,
        Reply::Limited {
            retry_at_ms: t + 1000
        }
    );

    let pause = |until: i64| json!({"provider": "p", "until_ms": until});
    assert_eq!(
        call(&mut s, "rate.pause", pause(t + 3000), t).await,
        Reply::Paused { until_ms: t + 3000 }
    );
    assert_eq!(
        call(&mut s, "rate.pause", pause(t + 2000), t).await,
        Reply::Paused { until_ms: t + 3000 }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 2999).await,
        Reply::Paused { until_ms: t + 3000 }
    );
    let acquire = json!({"provider": "p", "holder": "h", "limit": 5, "ttl_ms": 100});
    assert_eq!(
        call(&mut s, "rate.acquire_slot", acquire.clone(), t + 2999).await,
        Reply::Paused { until_ms: t + 3000 }
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 2999).await,
        Reply::RateState {
            slots_in_use: 0,
            paused_until_ms: Some(t + 3000)
        }
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t + 3000).await,
        Reply::RateState {
            slots_in_use: 0,
            paused_until_ms: None
        }
    );
    assert_eq!(
        call(&mut s, "rate.hit", hit.clone(), t + 3000).await,
        Reply::Allowed { remaining: 1 }
    );
    assert!(matches!(
        call(&mut s, "rate.acquire_slot", acquire, t + 3000).await,
        Reply::Acquired { .. }
    ));

    // Any whole number is a pause, compared exactly beyond 2^53.
    let far = i64::MAX - 1;
    assert_eq!(
        call(&mut s, "rate.pause", pause(far), t).await,
        Reply::Paused { until_ms: far }
    );
    assert_eq!(
        call(&mut s, "rate.pause", pause(far - 1), t).await,
        Reply::Paused { until_ms: far }
    );
    assert_eq!(
        call(&mut s, "rate.pause", pause(far + 1), t).await,
        Reply::Paused { until_ms: far + 1 }
    );
    assert_eq!(
        call(&mut s, "rate.read", json!({"provider": "p"}), t).await,
        Reply::RateState {
            slots_in_use: 1,
            paused_until_ms: Some(i64::MAX)
        }
    );
}
