//! Issue 40, item 4: a search whose processes kept on trial are found to
//! remember something that matters undoes the trust earlier searches passed
//! on: those are searched again with a fresh process per operation, and
//! their rows say why. Before, an earlier search that trusted such
//! processes kept its PASS.

use std::sync::Arc;

use async_trait::async_trait;
use explorer::{explore, ExplorerConfig};
use harness::contract::{Call, Contract, ErrorKind, Reply, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::Verdict;
use stores::redis::RedisStoreFactory;

/// The built-in store whose processes, once they ran a queue operation,
/// look at the queue's index before every later one: what a process
/// remembers changes what it sends for the queue, and nothing it remembers
/// touches the lease.
struct WarmQueue(RedisStoreFactory);

struct WarmQueueClient {
    inner: Box<dyn StoreClient>,
    conn: redis::aio::MultiplexedConnection,
    index: String,
    warm: bool,
}

#[async_trait]
impl StoreClient for WarmQueueClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        if !call.op.starts_with("queue.") {
            return self.inner.call(call, clock_ms).await;
        }
        if self.warm {
            redis::cmd("EXISTS")
                .arg(&self.index)
                .query_async::<i64>(&mut self.conn)
                .await
                .map_err(|e| StoreError::new(ErrorKind::Unavailable, e.to_string()))?;
        }
        self.warm = true;
        self.inner.call(call, clock_ms).await
    }

    fn remembers(&self) -> bool {
        true
    }
}

#[async_trait]
impl StoreFactory for WarmQueue {
    fn spec(&self) -> String {
        "test:warm-queue".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.0.connect(hello, clock_ms).await?;
        let conn = redis::Client::open(hello.redis_url.as_str())
            .map_err(|e| StoreError::new(ErrorKind::Unavailable, e.to_string()))?
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| StoreError::new(ErrorKind::Unavailable, e.to_string()))?;
        Ok((
            info,
            Box::new(WarmQueueClient {
                inner,
                conn,
                index: format!("{}q:index", hello.prefix),
                warm: false,
            }),
        ))
    }
}

#[test]
fn an_earlier_search_that_trusted_a_remembering_process_is_searched_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = WarmQueue(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    let config = ExplorerConfig {
        depth: 4,
        queue_depth: 4,
        walks: 0,
        seed: 4,
        threads: 1,
        skews: vec![0],
        contracts: vec![Contract::Lease, Contract::Queue],
        ..Default::default()
    };
    let outcome = explore(
        Arc::new(store),
        None,
        "sp:trial:".into(),
        &config,
        &mut |l| eprintln!("{l}"),
    );
    let rows = &outcome.figures.per_skew;
    let lease = rows
        .iter()
        .find(|r| r.contract == "lease")
        .expect("a lease row");
    let queue = rows
        .iter()
        .find(|r| r.contract == "queue")
        .expect("a queue row");
    // The queue's search saw its processes remember; the lease's, searched
    // first on trusted processes, was searched again.
    assert!(queue.memory_failure.is_some(), "{queue:?} {lease:?}");
    let why = lease
        .memory_failure
        .as_deref()
        .expect("the lease searched again");
    assert!(why.contains("a later search showed"), "{why}");
    // In search order, once each.
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].contract, "lease");
    for c in &outcome.checks {
        if c.id.starts_with("explorer.") && !c.id.contains("queue") && !c.id.contains("race") {
            assert_ne!(c.verdict, Verdict::Fail, "{}: {}", c.id, c.reason);
        }
    }
}
