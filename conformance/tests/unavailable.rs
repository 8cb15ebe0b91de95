//! An `unavailable` answer blames the store only when storeproof's own
//! server still answers: a store answering `unavailable` on a server that
//! answers storeproof's PING fails the check; the same answer while the
//! server itself does not answer (stopped with SIGSTOP) is `unknown`, the
//! harness's trouble. The same for a check that looks at the server itself
//! (`conformance.lease.kept-executions-not-in-redis`); and an operation
//! answered `unsupported` skips either check with the store's message.

use std::process::Command;
use std::sync::Arc;

use async_trait::async_trait;
use conformance::{all_checks, run_check};
use harness::contract::{Call, Contract, ErrorKind, Reply, StoreError};
use harness::server::{ManagedServer, ServerOptions};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::{ServerRef, Subject, Verdict};

/// Answers `unavailable` to everything; with `stop`, first stops the server
/// process (as if storeproof's own server had hung); with `unsupported`,
/// answers that instead.
struct Unavailable {
    stop: Option<u32>,
    unsupported: bool,
}

struct Client {
    stop: Option<u32>,
    unsupported: bool,
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, _: &Call, _: i64) -> Result<Reply, StoreError> {
        if self.unsupported {
            return Err(StoreError::new(ErrorKind::Unsupported, "not offered here"));
        }
        if let Some(pid) = self.stop {
            let stopped = Command::new("kill")
                .args(["-STOP", &pid.to_string()])
                .status()
                .expect("kill -STOP");
            assert!(stopped.success());
        }
        Err(StoreError::new(
            ErrorKind::Unavailable,
            "the server did not answer",
        ))
    }
}

#[async_trait]
impl StoreFactory for Unavailable {
    fn spec(&self) -> String {
        "test:unavailable".into()
    }

    async fn connect(
        &self,
        _: &Hello,
        _: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let info = StoreInfo {
            name: self.spec(),
            version: "0".into(),
            contracts: vec![Contract::Lease],
        };
        Ok((
            info,
            Box::new(Client {
                stop: self.stop,
                unsupported: self.unsupported,
            }),
        ))
    }
}

#[tokio::test]
async fn unavailable_fails_the_store_only_while_storeproof_s_server_answers() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let pid = server.pid().expect("the server's pid");
    let checks = all_checks();
    for id in [
        "conformance.lease.take-free-tree",
        "conformance.lease.kept-executions-not-in-redis",
    ] {
        let def = checks.iter().find(|d| d.spec.id == id).expect("the check");
        let mut verdicts = Vec::new();
        for (stop, unsupported) in [(None, false), (Some(pid), false), (None, true)] {
            let target = Subject {
                spec: "test:unavailable".into(),
                factory: Arc::new(Unavailable { stop, unsupported }),
                server: ServerRef::Managed(&server),
                run_prefix: format!("sp:unavail{}{unsupported}:", stop.is_some()),
                opt_out: None,
                contracts: vec![Contract::Lease],
                seed: 0,
                may_start_servers: true,
            };
            let result = run_check(&target, 0, def).await;
            if stop.is_some() {
                let resumed = Command::new("kill")
                    .args(["-CONT", &pid.to_string()])
                    .status()
                    .expect("kill -CONT");
                assert!(resumed.success());
            }
            eprintln!("{id}: {:?}: {}", result.verdict, result.reason);
            verdicts.push((result.verdict, result.reason));
        }
        assert_eq!(verdicts[0].0, Verdict::Fail, "{id}: {}", verdicts[0].1);
        assert_eq!(verdicts[1].0, Verdict::Unknown, "{id}: {}", verdicts[1].1);
        assert!(
            verdicts[1].1.contains("did not answer a PING"),
            "{id}: {}",
            verdicts[1].1
        );
        assert_eq!(verdicts[2].0, Verdict::Skipped, "{id}: {}", verdicts[2].1);
        assert!(
            verdicts[2].1.contains("not offered here"),
            "{id}: {}",
            verdicts[2].1
        );
    }
    let _ = server.stop().await;
}

#[tokio::test]
async fn the_claim_cost_check_skips_a_store_answering_unsupported() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let def = all_checks()
        .into_iter()
        .find(|d| d.spec.id == "conformance.queue.claim-cost-bounded")
        .expect("the check");
    let target = Subject {
        spec: "test:unsupported".into(),
        factory: Arc::new(Unavailable {
            stop: None,
            unsupported: true,
        }),
        server: ServerRef::Managed(&server),
        run_prefix: "sp:unsup:".into(),
        opt_out: None,
        contracts: vec![Contract::Queue],
        seed: 0,
        may_start_servers: true,
    };
    let result = run_check(&target, 0, &def).await;
    assert_eq!(result.verdict, Verdict::Skipped, "{}", result.reason);
    assert!(
        result.reason.contains("not offered here"),
        "{}",
        result.reason
    );
    let _ = server.stop().await;
}
