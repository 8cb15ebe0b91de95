//! The SQLite store reads its server time from the managed server's
//! virtual clock, to the millisecond.

use std::sync::Arc;

use harness::contract::{Reply, Request};
use harness::server::VirtualClock;
use harness::store::{Hello, SqliteClock, StoreFactory};

use super::SqliteStoreFactory;

fn virtual_clock(dir: &tempfile::TempDir) -> Arc<VirtualClock> {
    Arc::new(VirtualClock::create(&dir.path().join("clock")).unwrap())
}

/// The lease expires at the instant the server's virtual clock reaches
/// it, whatever the caller's clock says; on the system clock the same
/// moves change nothing (what a broken follow would look like).
#[tokio::test]
async fn a_lease_expires_to_the_millisecond_when_the_virtual_clock_says() {
    let dir = tempfile::tempdir().unwrap();
    let server = virtual_clock(&dir);
    for (clock, follows) in [
        (SqliteClock::following(Some(server.clone())), true),
        (SqliteClock::System, false),
    ] {
        let factory = SqliteStoreFactory::new(dir.path().join("store.db"), clock);
        let hello = Hello {
            instance: "a".into(),
            redis_url: String::new(),
            prefix: format!("follows-{follows}:"),
            opt_out: None,
        };
        let (_, mut c) = factory.connect(&hello, 0).await.unwrap();
        let take = |holder: &str| {
            Request::LeaseTake {
                tree: "t".into(),
                holder: holder.into(),
                ttl_ms: 60_000,
            }
            .to_call()
        };
        server.set_ms(10_000);
        // The caller's clock is wild: it must not matter.
        let granted = c.call(&take("a"), 99).await.unwrap();
        let Reply::Granted { expires_at_ms, .. } = granted else {
            panic!("{granted:?}");
        };
        assert_eq!(expires_at_ms == 70_000, follows, "{expires_at_ms}");
        server.set_ms(69_999);
        let busy = c.call(&take("b"), 20_000).await.unwrap();
        assert!(matches!(busy, Reply::Busy { .. }), "{busy:?}");
        server.set_ms(70_000);
        let at_expiry = c.call(&take("b"), 0).await.unwrap();
        assert_eq!(
            matches!(at_expiry, Reply::Granted { epoch: 2, .. }),
            follows,
            "{at_expiry:?}"
        );
    }
}
