//! Every named sabotage that is one edit of one built-in script is caught by
//! the check it names, and the unpatched built-in store passes that same
//! check: the edit, nothing else, is what the check catches.

use std::collections::BTreeSet;
use std::sync::Arc;

use conformance::{all_checks, run_check, CheckDef};
use harness::server::{ManagedServer, ServerOptions};
use harness::store::StoreFactory;
use harness::{CheckResult, Verdict};
use stores::redis::{builtin_source, RedisStoreFactory};

async fn run(
    server: &ManagedServer,
    factory: Arc<dyn StoreFactory>,
    prefix: String,
    def: &CheckDef,
) -> CheckResult {
    let target = testkit::subject(factory).prefix(prefix).on(server);
    run_check(&target, 0, def).await
}

fn check(id: &str) -> Arc<CheckDef> {
    all_checks()
        .into_iter()
        .find(|d| d.spec.id == id)
        .unwrap_or_else(|| panic!("no conformance check {id}"))
}

#[test]
fn every_sabotage_names_a_check_and_a_real_bug_and_every_patch_applies() {
    let conformance: BTreeSet<&str> = all_checks().iter().map(|d| d.spec.id).collect();
    let mut names = BTreeSet::new();
    let mut lua = 0;
    for n in sabotage::named() {
        assert!(names.insert(n.name), "{} is named twice", n.name);
        assert!(!n.real_bug.is_empty() && !n.breaks.is_empty(), "{}", n.name);
        let suite = n.caught_by.split('.').next().unwrap_or_default();
        assert!(
            ["conformance", "explorer", "faults", "crash"].contains(&suite),
            "{}: {}",
            n.name,
            n.caught_by
        );
        if suite == "conformance" {
            assert!(conformance.contains(n.caught_by), "{}", n.caught_by);
        }
        if let Some(patch) = n.lua_patch() {
            lua += 1;
            let source = patch.apply().unwrap_or_else(|e| panic!("{}: {e}", n.name));
            assert_ne!(Some(source.as_str()), builtin_source(patch.script));
        }
    }
    assert!(lua >= 10, "{lua} script sabotages");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_script_sabotage_is_caught_by_its_check_which_the_builtin_passes() {
    let started = std::time::Instant::now();
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let dir = tempfile::tempdir().expect("tempdir");
    let builtin = RedisStoreFactory::new(dir.path().join("kept.sqlite"));

    let mut escaped = Vec::new();
    let mut checks = BTreeSet::new();
    for (n, named) in sabotage::named().enumerate() {
        // Script edits another suite catches are run by that suite's tests
        // (crash_sabotages.rs, explorer_sabotages.rs).
        if named.lua_patch().is_none() || !named.caught_by.starts_with("conformance.") {
            continue;
        }
        let def = check(named.caught_by);
        let store = sabotage::by_name(named.name, dir.path()).expect("selectable by name");
        assert_eq!(store.spec(), format!("sabotage:{}", named.name));
        let result = run(&server, store, format!("sp:s{n}:"), &def).await;
        eprintln!(
            "{:32} {:48} {:?}: {}",
            named.name,
            named.caught_by,
            result.verdict,
            result.reason.lines().next().unwrap_or_default()
        );
        // A SHOULD check that catches its sabotage warns.
        if !matches!(result.verdict, Verdict::Fail | Verdict::Warn) {
            escaped.push(format!(
                "{} escaped {} ({:?}: {})",
                named.name, named.caught_by, result.verdict, result.reason
            ));
        }
        checks.insert(named.caught_by);
    }
    for (n, id) in checks.iter().enumerate() {
        let result = run(
            &server,
            Arc::new(builtin.clone()),
            format!("sp:b{n}:"),
            &check(id),
        )
        .await;
        assert_eq!(
            result.verdict,
            Verdict::Pass,
            "the built-in store fails {id}: {}",
            result.reason
        );
    }
    assert!(escaped.is_empty(), "{}", escaped.join("\n"));
    eprintln!(
        "{} checks, built-in and sabotages, in {:?}",
        checks.len(),
        started.elapsed()
    );
}

/// The table of `docs/SABOTAGES.md`, one row per named sabotage.
fn table() -> String {
    let mut rows = vec![
        "| Sabotage | The real bug it stands for | The check that catches it |".to_string(),
        "|---|---|---|".to_string(),
    ];
    for n in sabotage::named() {
        rows.push(format!(
            "| `sabotage:{}` | {} | `{}` |",
            n.name, n.real_bug, n.caught_by
        ));
    }
    rows.join("\n")
}

#[test]
fn the_sabotage_table_in_the_docs_is_the_named_list() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/SABOTAGES.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    let table = table();
    assert!(
        doc.contains(&table),
        "{} does not hold the table of sabotage::named(); it should read:\n\n{table}\n",
        path.display()
    );
}

/// The connection sabotages (a server check blind to a part of
/// docs/PROTOCOL.md §7) fail the server-assumption check they name; the
/// built-in store passes it.
#[tokio::test(flavor = "multi_thread")]
async fn every_blind_server_check_is_caught_by_its_server_case() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let dir = tempfile::tempdir().expect("tempdir");
    let builtin = RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    for (n, name) in ["accepts-replica", "durability-unchecked"]
        .iter()
        .enumerate()
    {
        let named = sabotage::find(name).expect("named");
        let def = check(named.caught_by);
        let store = sabotage::by_name(name, dir.path()).expect("selectable by name");
        let result = run(&server, store, format!("sp:c{n}:"), &def).await;
        assert_eq!(result.verdict, Verdict::Fail, "{name}: {}", result.reason);
        let result = run(
            &server,
            Arc::new(builtin.clone()),
            format!("sp:cb{n}:"),
            &def,
        )
        .await;
        assert_eq!(result.verdict, Verdict::Pass, "built-in: {}", result.reason);
    }
}
