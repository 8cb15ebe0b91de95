//! A lock-style lease store (a lock key with `PX` beside a fence counter)
//! cannot know a released or expired lease's holder or expiry, so it reads
//! such a lease as `{"holder": null, "epoch": N, "expires_at_ms": null,
//! "live": false}`. The contract judges only `epoch` and `live` there: such a
//! store passes every lease check. Tried through the example adapter over the
//! real protocol, so the adapter's reply parser is what is tested.

#[path = "../../tests/common/python.rs"]
mod python;

use std::path::PathBuf;
use std::sync::Arc;

use conformance::{all_checks, run_check, CheckKind};
use harness::contract::Contract;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::external::ExternalStoreFactory;
use harness::Verdict;

#[tokio::test(flavor = "multi_thread")]
async fn a_store_answering_nulls_for_a_lease_that_is_not_live_passes_every_lease_check() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let adapter = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/adapters/python/builtin_scripts.py");
    let store = ExternalStoreFactory::new(
        format!(
            "STOREPROOF_ADAPTER_NULL_DEAD_LEASES=1 {} {}",
            python::python(),
            adapter.display()
        ),
        dir.path().to_path_buf(),
    );
    let target = testkit::subject(Arc::new(store))
        .spec("test")
        .prefix("sp:lock:")
        .on(&server);
    let mut nulls_seen = 0;
    let mut run = 0;
    for (n, def) in all_checks().iter().enumerate() {
        // The races need no read; the bytes check measures the example's
        // own records, the same either way.
        if def.contract() != Some(Contract::Lease) || !matches!(def.kind, CheckKind::Scenario(_)) {
            continue;
        }
        let result = run_check(&target, n, def).await;
        run += 1;
        assert!(
            matches!(result.verdict, Verdict::Pass | Verdict::Warn),
            "{}: {:?}: {}",
            def.spec.id,
            result.verdict,
            result.reason
        );
        // The history shows each answer as the store gave it.
        let evidence = serde_json::to_string(&result.evidence).unwrap();
        if evidence.contains(r#""holder":null"#) {
            nulls_seen += 1;
        }
    }
    eprintln!("{run} lease checks passed, {nulls_seen} of them read a lease with nulls");
    assert!(run >= 8, "only {run} lease checks");
    assert!(nulls_seen >= 3, "the nulls were never exercised");
}
