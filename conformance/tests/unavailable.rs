//! An `unavailable` answer blames the store only when storeproof's own
//! server still answers: a store answering `unavailable` on a server that
//! answers storeproof's PING fails the check; the same answer while the
//! server itself does not answer (stopped with SIGSTOP) is `unknown`, the
//! harness's trouble.

use std::process::Command;
use std::sync::Arc;

use async_trait::async_trait;
use conformance::{all_checks, run_check};
use harness::contract::{Call, Contract, ErrorKind, Reply, StoreError};
use harness::server::{ManagedServer, ServerOptions};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::{ServerRef, Subject, Verdict};

/// Answers `unavailable` to everything; with `stop`, first stops the server
/// process (as if storeproof's own server had hung).
struct Unavailable {
    stop: Option<u32>,
}

struct Client {
    stop: Option<u32>,
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, _: &Call, _: i64) -> Result<Reply, StoreError> {
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
        Ok((info, Box::new(Client { stop: self.stop })))
    }
}

#[tokio::test]
async fn unavailable_fails_the_store_only_while_storeproof_s_server_answers() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let pid = server.pid().expect("the server's pid");
    let def = all_checks()
        .into_iter()
        .find(|d| d.spec.id == "conformance.lease.take-free-tree")
        .expect("the check");
    let mut verdicts = Vec::new();
    for stop in [None, Some(pid)] {
        let target = Subject {
            spec: "test:unavailable".into(),
            factory: Arc::new(Unavailable { stop }),
            server: ServerRef::Managed(&server),
            run_prefix: format!("sp:unavail{}:", stop.is_some()),
            opt_out: None,
            contracts: vec![Contract::Lease],
            seed: 0,
            may_start_servers: true,
        };
        let result = run_check(&target, 0, &def).await;
        if stop.is_some() {
            let resumed = Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .status()
                .expect("kill -CONT");
            assert!(resumed.success());
        }
        eprintln!("{:?}: {}", result.verdict, result.reason);
        verdicts.push((result.verdict, result.reason));
    }
    assert_eq!(verdicts[0].0, Verdict::Fail, "{}", verdicts[0].1);
    assert!(
        verdicts[0].1.contains("store is to blame"),
        "{}",
        verdicts[0].1
    );
    assert_eq!(verdicts[1].0, Verdict::Unknown, "{}", verdicts[1].1);
    assert!(
        verdicts[1].1.contains("did not answer a PING"),
        "{}",
        verdicts[1].1
    );
    let _ = server.stop().await;
}
