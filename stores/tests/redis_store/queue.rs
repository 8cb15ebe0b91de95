//! The built-in Redis queue against a real `redis-server`: claim order and
//! expired claims. Each test starts its own server.

use std::time::Duration;

use harness::contract::{ChildState, ChildView, Reply};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn claims_come_deepest_first_then_in_save_order() {
    let server = TestServer::start().await;
    let mut s = connect(&server).await;
    let big = 1i64 << 53;
    let saves = [
        ("shallow", 1),
        ("deep-1", 3),
        ("deep-2", 3),
        ("middle", 2),
        ("deepest", i64::MAX),
        ("huge", big),
        ("huge+1", big + 1),
        ("deep-3", 3),
    ];
    for (child, depth) in saves {
        assert_eq!(save(&mut s, child, depth).await, Reply::Saved {});
        // Some saves share a millisecond, some do not: both orders must hold.
        if child == "deep-2" {
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
    assert_eq!(
        save(&mut s, "deep-1", 9).await,
        Reply::Exists {
            state: ChildState::Queued
        }
    );
    let order = [
        ("deepest", i64::MAX),
        ("huge+1", big + 1),
        ("huge", big),
        ("deep-1", 3),
        ("deep-2", 3),
        ("deep-3", 3),
        ("middle", 2),
        ("shallow", 1),
    ];
    for (child, depth) in order {
        assert_eq!(claim(&mut s, "i", 60_000).await, claimed(child, depth, 1));
    }
    assert_eq!(claim(&mut s, "i", 60_000).await, Reply::Empty {});
    assert_eq!(
        save(&mut s, "middle", 2).await,
        Reply::Exists {
            state: ChildState::Claimed
        }
    );
}

#[tokio::test]
async fn an_expired_claim_is_claimed_again_with_the_next_attempt() {
    let server = TestServer::start().await;
    let mut admin = server.admin().await;
    let mut s = connect(&server).await;
    let complete = |child: &str, instance: &str, attempt: i64| json!({"child": child, "instance": instance, "attempt": attempt});

    assert_eq!(save(&mut s, "c", 0).await, Reply::Saved {});
    assert_eq!(save(&mut s, "never", 0).await, Reply::Saved {});
    assert_eq!(claim(&mut s, "a", 400).await, claimed("c", 0, 1));
    assert_eq!(claim(&mut s, "a", 60_000).await, claimed("never", 0, 1));
    assert_eq!(claim(&mut s, "b", 80).await, Reply::Empty {});

    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(claim(&mut s, "b", 60_000).await, claimed("c", 0, 2));
    // The first claim ran out: its completion is refused, naming the current one.
    let r = call(&mut s, "queue.complete", complete("c", "a", 1), CLOCK).await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: Some("b".into()),
            attempt: Some(2)
        }
    );
    let r = call(&mut s, "queue.complete", complete("c", "b", 1), CLOCK).await;
    assert!(matches!(r, Reply::NotClaimer { .. }), "{r:?}");
    let r = call(&mut s, "queue.complete", complete("c", "b", 2), CLOCK).await;
    assert_eq!(r, Reply::Completed {});
    let r = call(&mut s, "queue.complete", complete("c", "b", 2), CLOCK).await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: Some("b".into()),
            attempt: Some(2)
        }
    );
    assert_eq!(
        call(&mut s, "queue.read", json!({"child": "c"}), CLOCK).await,
        Reply::Child(Some(ChildView {
            state: ChildState::Done,
            claimer: Some("b".into()),
            attempt: 2,
            depth: 0
        }))
    );
    assert_eq!(
        save(&mut s, "c", 0).await,
        Reply::Exists {
            state: ChildState::Done
        }
    );
    assert_eq!(claim(&mut s, "b", 100).await, Reply::Empty {});

    let r = call(&mut s, "queue.complete", complete("ghost", "a", 1), CLOCK).await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: None,
            attempt: None
        }
    );
    assert_eq!(
        call(&mut s, "queue.read", json!({"child": "ghost"}), CLOCK).await,
        Reply::Child(None)
    );

    // Never claimed: no claimer, attempt 0.
    assert_eq!(save(&mut s, "fresh", 5).await, Reply::Saved {});
    let r = call(&mut s, "queue.complete", complete("fresh", "a", 0), CLOCK).await;
    assert_eq!(
        r,
        Reply::NotClaimer {
            claimer: None,
            attempt: Some(0)
        }
    );
    assert_eq!(
        call(&mut s, "queue.read", json!({"child": "fresh"}), CLOCK).await,
        Reply::Child(Some(ChildView {
            state: ChildState::Queued,
            claimer: None,
            attempt: 0,
            depth: 5
        }))
    );

    // Done children leave the index.
    let index: i64 = redis::cmd("ZCARD")
        .arg(format!("{PREFIX}q:index"))
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(index, 2, "never and fresh are not done");
}
