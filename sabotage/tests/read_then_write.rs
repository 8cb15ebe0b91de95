//! A take made of a read and then a write keeps the contract one call at a
//! time — every other conformance check passes — but the take races catch it,
//! with the interleaved commands that make two holders as evidence.

use harness::check::Verdict;
use harness::conformance::{all_checks, run_check, CheckKind, ServerRef, Target};
use harness::contract::Contract;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::redis::RedisStoreFactory;
use sabotage::ReadThenWriteLease;

#[tokio::test(flavor = "multi_thread")]
async fn the_take_races_catch_a_read_then_write_take_and_nothing_else_does() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = ReadThenWriteLease::new(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    let target = Target {
        factory: &store,
        server: ServerRef::Managed(&server),
        run_prefix: "sp:rtw:".into(),
        opt_out: None,
        contracts: Contract::ALL.to_vec(),
        may_start_servers: true,
    };
    let mut race_result = None;
    for (n, def) in all_checks().iter().enumerate() {
        if matches!(def.kind, CheckKind::Server(_)) {
            continue; // they test connect-time refusals, the same for this store
        }
        let result = run_check(&target, n, def).await;
        if def.id == "conformance.lease.take-races" {
            race_result = Some(result);
        } else {
            assert_eq!(
                result.verdict,
                Verdict::Pass,
                "{}: {}",
                def.id,
                result.reason
            );
        }
    }
    let result = race_result.expect("the take-races check exists");
    assert_eq!(result.verdict, Verdict::Fail, "{}", result.reason);
    let cx = result.counterexample.expect("a counterexample");
    let commands = cx["commands"].as_array().unwrap();
    eprintln!(
        "{}\n{}",
        result.reason,
        serde_json::to_string_pretty(&cx).unwrap()
    );
    assert!(commands.len() <= 4, "{} commands", commands.len());
    // The interleaving: both reads before either write.
    let kinds: Vec<(String, String)> = commands
        .iter()
        .map(|c| {
            let cmd = c["command"].as_str().unwrap();
            let kind = if cmd.starts_with("HSET") {
                "write"
            } else {
                "read"
            };
            (
                c["instance"].as_str().unwrap().to_string(),
                kind.to_string(),
            )
        })
        .collect();
    let reads_before_writes = kinds.iter().take(2).all(|(_, k)| k == "read")
        && kinds.iter().skip(2).all(|(_, k)| k == "write");
    assert!(reads_before_writes, "{kinds:?}");
    assert!(cx["a"]["answer"]["granted"].is_object() && cx["b"]["answer"]["granted"].is_object());
}
