use std::collections::BTreeMap;
use std::sync::Arc;

use harness::contract::Contract;
use harness::counterexample::Counterexample;
use harness::evidence::Evidence;
use harness::figures::{CrashFigures, Figures, KillFigures};
use harness::store::{Hello, StoreFactory};
use harness::{CheckResult, Needs, Subject, Suite, Verdict};
use serde_json::Value;
use stores::redis::RedisStoreFactory;

use crate::verify::{Kept, Round};

use super::checks::{CrashCheck, DOCKER, DOWN_SERVER, OPT_OUT, POWER_ALWAYS, POWER_EVERYSEC};
use super::round::probe_down_server;
use super::series::{Probe, Series};
use super::verdicts::{docker_backend_check, Findings};
use super::*;

/// Every check the suite declares has its typed identity, each its
/// own, and an id it does not declare has none (judged `unknown`).
#[test]
fn every_declared_crash_check_is_one_variant_and_no_other_id_is() {
    let typed: Vec<CrashCheck> = CHECKS
        .iter()
        .map(|c| CrashCheck::of(c.id).unwrap_or_else(|| panic!("{}", c.id)))
        .collect();
    for (i, a) in typed.iter().enumerate() {
        assert!(!typed[i + 1..].contains(a), "{a:?} twice");
    }
    assert_eq!(CrashCheck::of("crash.epochs-2"), None);
    assert_eq!(CrashCheck::of(DOCKER.id), Some(CrashCheck::Docker));
}

fn round(kill: usize, lost: usize, finding: Option<(Kept, &str)>) -> Round {
    Round {
        figures: KillFigures {
            kill,
            epochs_acknowledged: 10,
            epochs_lost: lost,
            ..KillFigures::default()
        },
        findings: finding
            .map(|(k, f)| BTreeMap::from([(k, vec![f.to_string()])]))
            .unwrap_or_default(),
        // Ten writes of every kind judged.
        judged: Kept::ALL.iter().map(|k| (*k, 10)).collect(),
        ..Round::default()
    }
}

/// A series whose reference store fared as the store did, and whose
/// store answered every probe of the down server `unavailable`.
fn series(rounds: Vec<Round>, trouble: Option<&str>) -> Series {
    Series {
        asked: rounds.len(),
        reference: rounds.clone(),
        probes: vec![Probe::Refused("hello answered unavailable".into()); rounds.len()],
        rounds,
        trouble: trouble.map(str::to_string),
        backend: "process",
        fallback: None,
    }
}

fn verdicts(
    required: &Series,
    opted: &Series,
    always: &Series,
    everysec: &Series,
) -> BTreeMap<&'static str, CheckResult> {
    let config = CrashConfig {
        seed: 7,
        ..CrashConfig::new(1, 1, 1, BackendChoice::Process)
    };
    let figures = CrashFigures {
        backend: "process".into(),
        ..CrashFigures::default()
    };
    let f = Findings {
        config: &config,
        spec: "test:store".into(),
        required,
        opted,
        always,
        everysec,
        figures: &figures,
    };
    CHECKS.iter().map(|c| (c.id, f.check(c))).collect()
}

#[test]
fn every_check_is_declared_once_with_its_contracts_and_own_servers() {
    let ids = CHECKS.map(|c| c.id);
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
    for c in CHECKS {
        assert!(
            c.id.starts_with("crash.") && !c.contracts.is_empty(),
            "{}",
            c.id
        );
        assert_eq!(c.needs, Needs::OwnServers, "{}", c.id);
    }
    assert_eq!(PAUSES.contracts, &[Contract::Rate]);
    // Each series is judged by checks of the suite, each check by one series.
    let judged: Vec<&str> = Setting::ALL
        .iter()
        .flat_map(|s| s.judged_by().iter().map(|c| c.id))
        .collect();
    assert_eq!(judged.len(), CHECKS.len());
    for id in ids {
        assert!(judged.contains(&id), "{id} is judged by no series");
    }
}

#[test]
fn a_kept_write_lost_fails_its_check_with_a_rerun_and_the_rest_pass() {
    let lost = series(
        vec![round(1, 1, Some((Kept::Epochs, "tree-1: gone")))],
        None,
    );
    let shown = series(vec![round(1, 3, None)], None);
    let quiet = series(vec![round(1, 0, None)], None);
    let v = verdicts(&lost, &shown, &quiet, &shown);
    let epochs = &v[EPOCHS.id];
    assert_eq!(epochs.verdict, Verdict::Fail, "{}", epochs.reason);
    assert!(
        epochs.reason.contains("kill 1, tree-1: gone"),
        "{}",
        epochs.reason
    );
    let Some(Counterexample::Crash(rerun)) = epochs.counterexample.clone() else {
        panic!("not a crash re-run: {:?}", epochs.counterexample)
    };
    assert_eq!((rerun.seed, rerun.backend.as_str()), (7, "process"));
    assert_eq!(json(&epochs.evidence)["figures"]["total"]["epochs_lost"], 1);
    assert_eq!(json(&epochs.evidence)["found"][0], "kill 1, tree-1: gone");
    for c in [
        NEXT_TAKE,
        CHILDREN,
        PAUSES,
        OPT_OUT,
        POWER_ALWAYS,
        POWER_EVERYSEC,
    ] {
        assert_eq!(
            v[c.id].verdict,
            Verdict::Pass,
            "{}: {}",
            c.id,
            v[c.id].reason
        );
    }
    assert_eq!(v[DOCKER.id].verdict, Verdict::Skipped);
}

#[test]
fn a_failed_check_s_evidence_holds_the_events_of_what_it_lost() {
    use crate::verify::Item;
    use harness::contract::{Reply, Request};
    let mut lost = round(2, 1, Some((Kept::Epochs, "tree-1: gone")));
    lost.items = BTreeMap::from([(Kept::Epochs, vec![Item::Tree("tree-1".into())])]);
    let take = Request::LeaseTake {
        tree: "tree-1".into(),
        holder: "w0".into(),
        ttl_ms: 100,
    };
    lost.shown.invoke("w0", &take.to_call(), None, 5);
    lost.shown.complete(
        "w0",
        take.op(),
        &Ok(Reply::Granted {
            epoch: 4,
            expires_at_ms: 105,
        }),
        None,
        5,
    );
    let lost = series(vec![round(1, 0, None), lost], None);
    let quiet = series(vec![round(1, 0, None)], None);
    let shown = series(vec![round(1, 3, None)], None);
    let v = verdicts(&lost, &shown, &lost, &shown);
    for id in [EPOCHS.id, POWER_ALWAYS.id] {
        let c = &v[id];
        assert_eq!(c.verdict, Verdict::Fail, "{id}: {}", c.reason);
        let h: &KillHistory = match &c.evidence {
            Evidence::KillsFound(k) => k.history.as_ref(),
            _ => None,
        }
        .unwrap_or_else(|| panic!("{id}: no kill history: {:?}", c.evidence));
        assert_eq!(h.kill, 2, "{id}");
        assert_eq!(&h.history, &lost.rounds[1].shown, "{id}");
        // The shape a timeline reads: history.events, each flat.
        assert_eq!(
            json(&c.evidence)["history"]["events"][1]["value"]["granted"]["epoch"],
            4
        );
        // The re-run keeps its shape.
        assert!(matches!(c.counterexample, Some(Counterexample::Crash(_))));
    }
    // A check that passed, or failed about nothing a request names, has
    // no history.
    assert_eq!(v[NEXT_TAKE.id].verdict, Verdict::Pass);
    assert!(json(&v[NEXT_TAKE.id].evidence).get("history").is_none());
    let v = verdicts(&quiet, &shown, &quiet, &shown);
    assert!(json(&v[EPOCHS.id].evidence).get("history").is_none());
    let bare = series(
        vec![round(1, 1, Some((Kept::Claims, "the queue: no")))],
        None,
    );
    let v = verdicts(&bare, &shown, &quiet, &shown);
    assert_eq!(v[CLAIMS.id].verdict, Verdict::Fail);
    assert!(json(&v[CLAIMS.id].evidence).get("history").is_none());
}

#[test]
fn a_store_that_lost_nothing_beside_a_reference_that_lost_passes_the_demonstrations() {
    // Issue 19, item 2: the store kept everything with the append-only
    // file off (it keeps more than its server); the reference store lost.
    let kept = series(vec![round(1, 0, None)], None);
    let mut more_durable = series(vec![round(1, 0, None), round(2, 0, None)], None);
    more_durable.reference = vec![round(1, 4, None), round(2, 2, None)];
    let v = verdicts(&kept, &more_durable, &kept, &more_durable);
    for id in [OPT_OUT.id, POWER_EVERYSEC.id] {
        let c = &v[id];
        assert_eq!(c.verdict, Verdict::Pass, "{id}: {}", c.reason);
        assert!(c.reason.contains("6 of 20 in all"), "{id}: {}", c.reason);
        assert!(
            c.reason
                .contains("lost 0 of 20 acknowledged writes, in 0 of 2")
                && c.reason.contains("not judged"),
            "{id}: {}",
            c.reason
        );
        assert_eq!(json(&c.evidence)["reference"]["lost"], 6, "{id}");
        assert_eq!(json(&c.evidence)["store"]["lost"], 0, "{id}");
    }
}

#[test]
fn a_reference_store_that_lost_nothing_leaves_the_demonstrations_unknown_never_failed() {
    let kept = series(vec![round(1, 0, None)], None);
    // The store lost in both kills; the reference store not in kill 2.
    let mut one_quiet = series(vec![round(1, 2, None), round(2, 3, None)], None);
    one_quiet.reference = vec![round(1, 2, None), round(2, 0, None)];
    let v = verdicts(&kept, &one_quiet, &kept, &one_quiet);
    let opted = &v[OPT_OUT.id];
    assert_eq!(opted.verdict, Verdict::Unknown, "{}", opted.reason);
    assert!(
        opted
            .reason
            .contains("kill 2: the reference store lost nothing"),
        "{}",
        opted.reason
    );
    assert!(opted.counterexample.is_none());
    // A MUST demonstration that did not happen leaves the run incomplete.
    assert!(opted.leaves_incomplete());
    let everysec = &v[POWER_EVERYSEC.id];
    assert_eq!(everysec.verdict, Verdict::Unknown, "{}", everysec.reason);
    assert!(everysec
        .reason
        .contains("cut 2: the reference store lost nothing"));
    assert!(!everysec.leaves_incomplete());
    // A reference store that wrote in fewer kills than the store decides nothing.
    let mut missing = series(vec![round(1, 2, None), round(2, 3, None)], None);
    missing.reference.pop();
    let v = verdicts(&kept, &missing, &kept, &missing);
    assert_eq!(v[OPT_OUT.id].verdict, Verdict::Unknown);
}

#[test]
fn a_check_with_no_write_of_its_kind_judged_is_unknown_or_skipped_when_unsupported() {
    // Issue 19, item 14: a kill with plenty of epochs and no renew judged.
    let mut no_renew = round(1, 0, None);
    no_renew.judged.remove(&Kept::Renews);
    no_renew.figures.renews_acknowledged = 3;
    no_renew.figures.renews_not_judged = 3;
    let quiet = series(vec![round(1, 0, None)], None);
    let v = verdicts(
        &series(vec![no_renew.clone()], None),
        &quiet,
        &quiet,
        &quiet,
    );
    let renews = &v[RENEWS.id];
    assert_eq!(renews.verdict, Verdict::Unknown, "{}", renews.reason);
    assert!(
        renews
            .reason
            .contains("renews acknowledged 3, lost 0, not judged 3"),
        "{}",
        renews.reason
    );
    assert_eq!(v[EPOCHS.id].verdict, Verdict::Pass);
    assert!(
        v[EPOCHS.id]
            .reason
            .contains("epochs acknowledged 10, judged 10, lost 0"),
        "{}",
        v[EPOCHS.id].reason
    );
    // Judged in one kill of two: decided, and the sentence says so.
    let v = verdicts(
        &series(vec![no_renew.clone(), round(2, 0, None)], None),
        &quiet,
        &quiet,
        &quiet,
    );
    let renews = &v[RENEWS.id];
    assert_eq!(renews.verdict, Verdict::Pass, "{}", renews.reason);
    assert!(
        renews.reason.contains("judged in 1 of the 2 kills")
            && renews.reason.contains("not judged 3"),
        "{}",
        renews.reason
    );
    // Not offered (item 5): skipped with the store's message.
    let mut unsupported = no_renew;
    unsupported.unsupported.insert(
        Kept::Renews,
        "lease.renew answered unsupported: no renews here".into(),
    );
    let v = verdicts(&series(vec![unsupported], None), &quiet, &quiet, &quiet);
    let renews = &v[RENEWS.id];
    assert_eq!(renews.verdict, Verdict::Skipped, "{}", renews.reason);
    assert!(
        renews.reason.contains("no renews here"),
        "{}",
        renews.reason
    );
}

#[test]
fn a_store_answering_while_its_server_is_down_fails_the_down_server_check() {
    let quiet = series(vec![round(1, 0, None)], None);
    let v = verdicts(&quiet, &quiet, &quiet, &quiet);
    assert_eq!(
        v[DOWN_SERVER.id].verdict,
        Verdict::Pass,
        "{}",
        v[DOWN_SERVER.id].reason
    );
    let mut answering = series(vec![round(1, 0, None), round(2, 0, None)], None);
    answering.probes = vec![
        Probe::Silent,
        Probe::Acknowledged("hello was answered ok, and lease.take answered granted".into()),
    ];
    let v = verdicts(&answering, &quiet, &quiet, &quiet);
    let c = &v[DOWN_SERVER.id];
    assert_eq!(c.verdict, Verdict::Fail, "{}", c.reason);
    assert!(
        c.reason.contains("kill 2, while the server was down"),
        "{}",
        c.reason
    );
    // A store whose state is not in Redis is not probed: outside the claim.
    let mut elsewhere = quiet;
    elsewhere.probes.clear();
    let v = verdicts(&elsewhere, &elsewhere, &elsewhere, &elsewhere);
    let c = &v[DOWN_SERVER.id];
    assert_eq!(c.verdict, Verdict::Skipped, "{}", c.reason);
    assert!(c.outside_claim && !c.leaves_incomplete());
}

/// A store is blamed for answering "while the server was down" only if
/// storeproof's own PING confirmed it was: a kill that did not hold
/// decides nothing.
#[test]
fn a_probe_answered_while_the_server_still_answers_ping_decides_nothing() {
    let mut up = series(vec![round(1, 0, None), round(2, 0, None)], None);
    up.probes = vec![Probe::ServerUp("lease.take answered granted".into()); 2];
    let quiet = series(vec![round(1, 0, None)], None);
    let v = verdicts(&up, &quiet, &quiet, &quiet);
    let c = &v[DOWN_SERVER.id];
    assert_eq!(c.verdict, Verdict::Unknown, "{}", c.reason);
    assert!(c.reason.contains("still answered PING"), "{}", c.reason);
    // One kill judged: decided on it, the other said.
    up.probes[0] = Probe::Silent;
    let v = verdicts(&up, &quiet, &quiet, &quiet);
    let c = &v[DOWN_SERVER.id];
    assert_eq!(c.verdict, Verdict::Pass, "{}", c.reason);
    assert!(
        c.reason.contains("1 more kill(s) not judged"),
        "{}",
        c.reason
    );
}

/// The probe itself, on a real server that is up: the built-in store
/// acknowledges its write, and the PING after it says the server
/// answered, so the probe is not held against the store.
#[tokio::test(flavor = "multi_thread")]
async fn the_probe_pings_the_server_before_blaming_the_store() {
    let server = harness::server::ManagedServer::start(Default::default())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let factory: Arc<dyn StoreFactory> =
        Arc::new(RedisStoreFactory::new(dir.path().join("s.sqlite")));
    let hello = Hello {
        instance: "prober".into(),
        redis_url: server.url(),
        prefix: "sp:probe-up:".into(),
        opt_out: None,
    };
    let probe = probe_down_server(&factory, hello, &[Contract::Lease], &server.url()).await;
    assert!(matches!(probe, Probe::ServerUp(_)), "{probe:?}");
}

#[test]
fn a_power_cut_losing_with_appendfsync_always_fails() {
    let kept = series(vec![round(1, 0, None)], None);
    let lost = series(
        vec![round(1, 1, Some((Kept::Children, "child-1: gone")))],
        None,
    );
    let v = verdicts(&kept, &lost, &lost, &lost);
    assert_eq!(v[POWER_ALWAYS.id].verdict, Verdict::Fail);
    assert!(v[POWER_ALWAYS.id].reason.contains("child-1: gone"));
}

#[test]
fn harness_trouble_leaves_a_check_unknown_and_a_finding_still_fails() {
    let troubled = series(
        vec![round(1, 0, None)],
        Some("kill 2 of 3: could not restart the server: gone"),
    );
    let empty = series(vec![], None);
    let v = verdicts(&troubled, &empty, &empty, &empty);
    let unknown = &v[EPOCHS.id];
    assert_eq!(unknown.verdict, Verdict::Unknown);
    assert!(
        unknown.reason.contains("could not restart"),
        "{}",
        unknown.reason
    );
    assert!(unknown.leaves_incomplete());
    // No kill asked: skipped with the flag that asks for them.
    assert_eq!(v[OPT_OUT.id].verdict, Verdict::Skipped);
    assert!(v[OPT_OUT.id].reason.contains("--opt-out-kills 0"));
    let both = series(
        vec![round(1, 1, Some((Kept::Epochs, "tree-1: gone")))],
        Some("kill 2 of 3: gone"),
    );
    let v = verdicts(&both, &empty, &empty, &empty);
    assert_eq!(v[EPOCHS.id].verdict, Verdict::Fail);
}

#[test]
fn the_docker_backend_check_has_a_verdict_for_each_way_the_kills_ran() {
    let warn = docker_backend_check(
        Some("Docker is not available (cannot connect)"),
        BackendChoice::Auto,
        Evidence::None,
    );
    assert_eq!(warn.verdict, Verdict::Warn);
    assert!(
        warn.reason.contains("Docker is not available"),
        "{}",
        warn.reason
    );
    assert_eq!(
        docker_backend_check(None, BackendChoice::Process, Evidence::None).verdict,
        Verdict::Skipped
    );
    assert_eq!(
        docker_backend_check(None, BackendChoice::Docker, Evidence::None).verdict,
        Verdict::Pass
    );
}

#[test]
fn a_rerun_keeps_its_contracts_and_an_older_one_means_all() {
    let narrowed = serde_json::json!({
        "kind": "crash-run", "seed": 3, "kills": 1, "opt_out_kills": 1, "power_losses": 0,
        "contracts": ["lease"]
    });
    let rerun: CrashRerun = serde_json::from_value(narrowed).expect("a re-run reads");
    assert_eq!(rerun.contracts, vec![Contract::Lease]);
    let old = serde_json::json!({
        "kind": "crash-run", "seed": 3, "kills": 1, "opt_out_kills": 1, "power_losses": 0
    });
    let rerun: CrashRerun = serde_json::from_value(old).expect("an older re-run reads");
    assert_eq!(
        (rerun.instances, rerun.backend.as_str(), rerun.contracts),
        (4, "", Contract::COORDINATION.to_vec())
    );
}

#[tokio::test]
async fn a_store_claiming_nothing_has_every_check_outside_the_claim_and_no_server() {
    struct Unreachable;
    #[async_trait::async_trait]
    impl StoreFactory for Unreachable {
        fn spec(&self) -> String {
            "test:unreachable".into()
        }
        async fn connect(
            &self,
            _: &Hello,
            _: i64,
        ) -> Result<
            (
                harness::store::StoreInfo,
                Box<dyn harness::store::StoreClient>,
            ),
            harness::contract::StoreError,
        > {
            panic!("nothing is written to a store that claims nothing")
        }
    }
    let subject = Subject {
        spec: "test:unreachable".into(),
        factory: Arc::new(Unreachable),
        opt_out: None,
        run_prefix: "sp:none:".into(),
        contracts: vec![],
        server: harness::ServerRef::External {
            url: "redis://127.0.0.1:1/".into(),
        },
        seed: 1,
        may_start_servers: true,
    };
    let suite = CrashSuite::new(CrashConfig::new(1, 1, 1, BackendChoice::Process));
    let (settled, to_run) = harness::plan(NAME, suite.checks(), &subject);
    assert!(to_run.is_empty(), "{to_run:?}");
    assert_eq!(settled.len(), CHECKS.len());
    for c in &settled {
        assert!(c.outside_claim && !c.leaves_incomplete(), "{}", c.id);
    }
    // Nothing to run: the suite starts no server and connects nothing.
    let run = suite
        .run(&subject, &to_run, &harness::Silent)
        .await
        .unwrap();
    assert!(run.checks.is_empty());
    match run.figures {
        Figures::Crash(f) => assert_eq!(f.kills, 0),
        other => panic!("{other:?}"),
    }
}

/// Evidence as report.json shows it.
fn json(e: &Evidence) -> Value {
    serde_json::to_value(e).unwrap()
}
