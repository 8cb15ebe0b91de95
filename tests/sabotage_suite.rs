//! `--suite sabotage` on the built binary, the cheap parts: it is offered
//! but not part of a default run, its checks can be named by `--check`, and
//! every named sabotage is a MUST check of its own. That the suite fails
//! when a sabotage escapes and passes when it is caught is proven on a
//! managed server by the unit test in `src/sabotage_suite.rs` (a whole
//! sabotage through every suite takes half a minute in a debug build).

mod common;

use common::{read_report, storeproof};
use harness::server::{ManagedServer, ServerOptions};

#[test]
fn the_help_offers_the_sabotage_suite_outside_the_default_run() {
    let out = storeproof(&["certify", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("sabotage"), "{help}");
    assert!(
        help.contains("but sabotage, which certifies storeproof itself"),
        "{help}"
    );
}

#[test]
fn sabotage_checks_are_named_by_check_and_need_the_sabotage_suite() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let out_arg = out_dir.to_str().unwrap();
    for (suite, check, says) in [
        // Known, but its suite is left out: refused before anything runs.
        (
            "conformance",
            "sabotage.read-then-write-take",
            "add --suite sabotage",
        ),
        // A typo names no check at all.
        ("sabotage", "sabotage.nope", "no check id starts with"),
    ] {
        let out = storeproof(&[
            "certify", "--suite", suite, "--check", check, "--out", out_arg,
        ]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!out_dir.exists(), "a report after a setup error");
    }
}

/// On a server storeproof did not start, no sabotage can be run (they
/// follow the managed server's clock): every one is a MUST check left
/// skipped with the reason, and the run is INCOMPLETE, never a pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_named_sabotage_is_a_must_check_and_undecided_without_a_managed_server() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let url = server.url();
    let out = tokio::task::spawn_blocking({
        let out_dir = out_dir.clone();
        move || {
            storeproof(&[
                "certify",
                "--suite",
                "sabotage",
                "--redis-url",
                &url,
                "--seed",
                "3",
                "--out",
                out_dir.to_str().unwrap(),
            ])
        }
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let report = read_report(&out_dir);
    let checks = report["checks"].as_array().unwrap();
    let ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    let expected: Vec<String> = sabotage::named()
        .map(|n| format!("sabotage.{}", n.name))
        .collect();
    assert_eq!(ids, expected);
    for c in checks {
        assert_eq!(c["level"], "must", "{c}");
        assert_eq!(c["verdict"], "skipped", "{c}");
        assert!(
            c["reason"].as_str().unwrap().contains("managed server"),
            "{c}"
        );
    }
    assert_eq!(report["verdict"], "incomplete");
    // What ran is the sabotage set, not the default --store.
    assert_eq!(report["store"]["name"], "storeproof's sabotage set");
    assert!(
        report["store"]["spec"]
            .as_str()
            .unwrap()
            .starts_with("sabotage:*"),
        "{}",
        report["store"]
    );
    server.stop().await.unwrap();
}
