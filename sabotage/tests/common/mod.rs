//! What the sabotage tests share: one conformance check run alone.

use std::sync::Arc;

use conformance::{all_checks, run_check};
use harness::contract::Contract;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::StoreFactory;
use harness::{CheckResult, ServerRef, Subject};

/// Runs the check `id` alone against `store`.
pub async fn run_alone(store: Arc<dyn StoreFactory>, id: &str, tag: &str) -> CheckResult {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .unwrap();
    let target = Subject {
        spec: "test".into(),
        factory: store,
        server: ServerRef::Managed(&server),
        run_prefix: format!("sp:{tag}:"),
        opt_out: None,
        contracts: Contract::COORDINATION.to_vec(),
        seed: 0,
        may_start_servers: true,
    };
    let def = all_checks()
        .into_iter()
        .find(|d| d.spec.id == id)
        .unwrap_or_else(|| panic!("no check {id}"));
    let result = run_check(&target, 0, &def).await;
    let _ = server.stop().await;
    result
}
