//! An adapter's failure belongs to its store, the run's, never to the
//! process (issue 20, item 4): before, the first failure of any adapter was
//! kept in a process-wide cell that was never reset, so one broken adapter
//! stopped every later run in the same process (a Rust test suite
//! certifying several stores, say) with its message.

use std::path::PathBuf;

use harness::store::external::ExternalStoreFactory;
use harness::store::{Hello, StoreFactory};

fn hello() -> Hello {
    Hello {
        instance: "a".into(),
        // Never reached: the adapter exits before it could connect.
        redis_url: "redis://127.0.0.1:1".into(),
        prefix: "sp:adapter-failure:".into(),
        opt_out: None,
    }
}

#[tokio::test]
async fn an_adapter_failure_stays_with_its_store_and_another_store_starts_clean() {
    let workdir: PathBuf = std::env::temp_dir();
    let broken = ExternalStoreFactory::new("exit 3", workdir.clone());
    assert_eq!(broken.adapter_failure(), None, "nothing failed yet");
    assert!(broken.connect(&hello(), 0).await.is_err());
    let why = broken
        .adapter_failure()
        .expect("the store keeps its adapter's failure");
    assert!(why.contains("instance a"), "{why}");
    // A clone is the same store: it sees the same failure.
    assert_eq!(broken.clone().adapter_failure(), Some(why));
    // Another store, the same command even, has nothing held against it.
    let other = ExternalStoreFactory::new("exit 3", workdir);
    assert_eq!(other.adapter_failure(), None);
}
