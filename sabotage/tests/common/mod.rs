//! What the sabotage tests share: one conformance check run alone.

use std::sync::Arc;

use conformance::{all_checks, run_check};
use harness::server::{ManagedServer, ServerOptions};
use harness::store::StoreFactory;
use harness::CheckResult;

/// Runs the check `id` alone against `store`.
pub async fn run_alone(store: Arc<dyn StoreFactory>, id: &str, tag: &str) -> CheckResult {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .unwrap();
    let target = testkit::subject(store)
        .spec("test")
        .prefix(format!("sp:{tag}:"))
        .on(&server);
    let def = all_checks()
        .into_iter()
        .find(|d| d.spec.id == id)
        .unwrap_or_else(|| panic!("no check {id}"));
    let result = run_check(&target, 0, &def).await;
    let _ = server.stop().await;
    result
}
