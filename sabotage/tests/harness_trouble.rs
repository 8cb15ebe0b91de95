//! The harness's trouble is not the store's failure: a server storeproof
//! cannot reach, or an adapter that fails, leaves a conformance check
//! `unknown` (the run INCOMPLETE), never `fail`.

use std::sync::Arc;

use async_trait::async_trait;
use conformance::{all_checks, run_check, CheckKind};
use harness::contract::{Call, Contract, ErrorKind, Reply, StoreError};
use harness::server::{ManagedServer, ServerOptions};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::{Level, Verdict};
use stores::redis::RedisStoreFactory;

#[tokio::test(flavor = "multi_thread")]
async fn a_server_storeproof_cannot_reach_fails_no_check() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let target = testkit::subject(Arc::new(store))
        .spec("test")
        .prefix("sp:down:")
        .no_own_servers()
        // Nothing listens on port 1.
        .unreachable();
    let mut unknown = 0;
    for (n, def) in all_checks().iter().enumerate() {
        let result = run_check(&target, n, def).await;
        assert!(
            matches!(result.verdict, Verdict::Unknown | Verdict::Skipped),
            "{}: {:?}: {}",
            def.spec.id,
            result.verdict,
            result.reason
        );
        if result.verdict == Verdict::Unknown {
            assert!(
                result
                    .reason
                    .contains("storeproof could not connect to the server"),
                "{}: {}",
                def.spec.id,
                result.reason
            );
            if def.spec.level == Level::Must {
                assert!(result.leaves_incomplete(), "{}", def.spec.id);
            }
            unknown += 1;
        }
    }
    // Every check that runs without a managed server got as far as
    // connecting (the others are skipped with their reason).
    assert!(unknown >= 20, "only {unknown} checks were unknown");
}

/// A store whose adapter "fails" on every `lease.read`, as an external
/// adapter that crashed would answer.
struct AdapterDiesOnRead(RedisStoreFactory);

struct Client(Box<dyn StoreClient>);

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        if call.op == "lease.read" {
            return Err(StoreError::new(
                ErrorKind::AdapterFailed,
                "the adapter of instance a exited (exit status: 1) during lease.read",
            ));
        }
        self.0.call(call, clock_ms).await
    }
}

#[async_trait]
impl StoreFactory for AdapterDiesOnRead {
    fn spec(&self) -> String {
        "test:adapter-dies-on-read".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.0.connect(hello, clock_ms).await?;
        Ok((info, Box::new(Client(inner))))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_adapter_that_fails_is_not_judged_as_a_contract_violation() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = AdapterDiesOnRead(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    let target = testkit::subject(Arc::new(store))
        .spec("test")
        .prefix("sp:dies:")
        .on(&server);
    let mut reads = 0;
    for (n, def) in all_checks().iter().enumerate() {
        if def.contract() != Some(Contract::Lease) || !matches!(def.kind, CheckKind::Scenario(_)) {
            continue;
        }
        let result = run_check(&target, n, def).await;
        assert_ne!(
            result.verdict,
            Verdict::Fail,
            "{}: {}",
            def.spec.id,
            result.reason
        );
        if result.verdict == Verdict::Unknown {
            // It names the instance and the request.
            assert!(
                result.reason.contains("instance a") && result.reason.contains("lease.read"),
                "{}: {}",
                def.spec.id,
                result.reason
            );
            reads += 1;
        }
    }
    assert!(reads >= 3, "only {reads} checks read a lease");
}
