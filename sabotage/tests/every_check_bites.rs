//! Every conformance check can fail: each scenario check is run once per reply
//! it receives with exactly that reply corrupted, and must fail (a SHOULD
//! check must warn) every time; the checks that inspect the server are run
//! against stores that write what they must not, or ignore their server.

use std::sync::Arc;

use conformance::{all_checks, run_check, CheckDef, CheckKind, Special, Step};
use harness::contract::Contract;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::StoreFactory;
use harness::{CheckResult, Level, Verdict};
use sabotage::{Extra, RefusesAll, ServerBlind, SideEffect, Tampered};
use stores::redis::RedisStoreFactory;
use stores::sqlite::{SqliteClock, SqliteStoreFactory};

struct Fixture {
    server: ManagedServer,
    good: RedisStoreFactory,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let dir = tempfile::tempdir().expect("tempdir");
    let good = RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    Fixture {
        server,
        good,
        _dir: dir,
    }
}

async fn run_with(
    fx: &Fixture,
    factory: Arc<dyn StoreFactory>,
    prefix: String,
    n: usize,
    def: &CheckDef,
) -> CheckResult {
    run_claiming(fx, factory, &Contract::COORDINATION, prefix, n, def).await
}

/// `def` run on `factory`, a store claiming `contracts`.
async fn run_claiming(
    fx: &Fixture,
    factory: Arc<dyn StoreFactory>,
    contracts: &[Contract],
    prefix: String,
    n: usize,
    def: &CheckDef,
) -> CheckResult {
    let target = testkit::subject(factory)
        .spec("test")
        .prefix(prefix)
        .contracts(contracts)
        .on(&fx.server);
    run_check(&target, n, def).await
}

fn broken(def: &CheckDef, result: &CheckResult) -> bool {
    match def.spec.level {
        Level::Must => result.verdict == Verdict::Fail,
        Level::Should => result.verdict == Verdict::Warn,
    }
}

/// Runs every scenario check of `contract` clean (it must pass), then once per
/// reply with that reply corrupted (it must fail each time).
async fn every_reply_is_judged(contract: Contract) -> std::collections::BTreeMap<String, usize> {
    let fx = fixture().await;
    let good = fx.good.clone();
    every_reply_of(&fx, contract, good, &Contract::COORDINATION).await
}

/// As [`every_reply_is_judged`], on the store `good` claiming `contracts`.
async fn every_reply_of<F: StoreFactory + Clone + 'static>(
    fx: &Fixture,
    contract: Contract,
    good: F,
    contracts: &[Contract],
) -> std::collections::BTreeMap<String, usize> {
    let checks: Vec<Arc<CheckDef>> = all_checks()
        .into_iter()
        .filter(|c| c.contract() == Some(contract) && matches!(c.kind, CheckKind::Scenario(_)))
        .collect();
    assert!(!checks.is_empty());
    let mut missed = Vec::new();
    let mut runs = 0;
    // Corrupted runs per operation whose answer was corrupted.
    let mut by_op: std::collections::BTreeMap<String, usize> = Default::default();
    for (n, def) in checks.iter().enumerate() {
        let counting = Arc::new(Tampered::new(good.clone(), usize::MAX));
        let clean = run_claiming(
            fx,
            counting.clone(),
            contracts,
            format!("sp:clean{n}:"),
            n,
            def,
        )
        .await;
        assert_eq!(
            clean.verdict,
            Verdict::Pass,
            "{}: {}",
            def.spec.id,
            clean.reason
        );
        let calls = counting.calls();
        assert!(calls > 0, "{} made no call", def.spec.id);
        for at in 0..calls {
            let tampered = Arc::new(Tampered::new(good.clone(), at));
            let result = run_claiming(
                fx,
                tampered.clone(),
                contracts,
                format!("sp:t{n}x{at}:"),
                n,
                def,
            )
            .await;
            runs += 1;
            if let Some(op) = tampered.corrupted_op() {
                *by_op.entry(op).or_default() += 1;
            }
            if !broken(def, &result) {
                missed.push(format!(
                    "{} with reply {at} corrupted: {:?}",
                    def.spec.id, result.verdict
                ));
            }
        }
    }
    assert!(
        missed.is_empty(),
        "corruptions not caught:\n{}",
        missed.join("\n")
    );
    eprintln!(
        "{contract}: {} checks, {runs} corrupted runs, every one caught: {by_op:?}",
        checks.len()
    );
    by_op
}

#[tokio::test(flavor = "multi_thread")]
async fn every_lease_reply_is_judged() {
    let by_op = every_reply_is_judged(Contract::Lease).await;
    // Release answers are flipped (released ↔ not_held), a meaningful wrong
    // answer, and caught every time.
    assert!(
        by_op.get("lease.release").is_some_and(|n| *n >= 3),
        "{by_op:?}"
    );
}

/// The fencing set's checks, on the SQLite fencing set (a durable store:
/// the Redis stores do not offer it), every reply corrupted in turn.
#[tokio::test(flavor = "multi_thread")]
async fn every_fenced_reply_is_judged() {
    let fx = fixture().await;
    let file = fx._dir.path().join("fenced.sqlite");
    let sqlite = SqliteStoreFactory::new(file, SqliteClock::following(fx.server.clock().cloned()));
    let by_op = every_reply_of(
        &fx,
        Contract::Fenced,
        sqlite,
        &[Contract::Lease, Contract::Fenced],
    )
    .await;
    assert!(by_op.contains_key("effect.apply"), "{by_op:?}");
    assert!(by_op.contains_key("call.begin"), "{by_op:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_queue_reply_is_judged() {
    every_reply_is_judged(Contract::Queue).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_rate_reply_is_judged() {
    let by_op = every_reply_is_judged(Contract::Rate).await;
    assert!(by_op.contains_key("rate.release_slot"), "{by_op:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn checks_of_the_server_itself_catch_side_effects() {
    let fx = fixture().await;
    let cases = [
        (Special::KeptNotInRedis, Extra::KeptInRedis),
        (Special::OddIdsInsidePrefix, Extra::KeyOutsidePrefix),
        (Special::BytesPerTree, Extra::Padding),
    ];
    let checks = all_checks();
    for (n, (special, extra)) in cases.into_iter().enumerate() {
        let def = checks
            .iter()
            .find(|c| matches!(c.kind, CheckKind::Special(s) if s == special))
            .expect("special check");
        let clean = run_with(
            &fx,
            Arc::new(fx.good.clone()),
            format!("sp:sclean{n}:"),
            n,
            def,
        )
        .await;
        assert_eq!(
            clean.verdict,
            Verdict::Pass,
            "{}: {}",
            def.spec.id,
            clean.reason
        );
        let bad = Arc::new(SideEffect::new(fx.good.clone(), extra));
        let result = run_with(&fx, bad.clone(), format!("sp:s{n}:"), n, def).await;
        assert!(
            broken(def, &result),
            "{} passed a store with {extra:?}: {}",
            def.spec.id,
            result.reason
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn server_assumption_checks_catch_blind_and_refusing_stores() {
    let fx = fixture().await;
    let blind = Arc::new(ServerBlind::new(fx.good.clone(), fx.server.url()));
    for (n, def) in all_checks()
        .iter()
        .filter(|c| matches!(c.kind, CheckKind::Server(_)))
        .enumerate()
    {
        let clean = run_with(
            &fx,
            Arc::new(fx.good.clone()),
            format!("sp:vclean{n}:"),
            n,
            def,
        )
        .await;
        assert_eq!(
            clean.verdict,
            Verdict::Pass,
            "{}: {}",
            def.spec.id,
            clean.reason
        );
        let refusing = run_with(&fx, Arc::new(RefusesAll), format!("sp:vr{n}:"), n, def).await;
        assert!(
            broken(def, &refusing),
            "{} passed a store refusing everything",
            def.spec.id
        );
        let CheckKind::Server(case) = &def.kind else {
            continue;
        };
        if case.refusal.is_some() {
            let r = run_with(&fx, blind.clone(), format!("sp:vb{n}:"), n, def).await;
            assert!(
                broken(def, &r),
                "{} passed a store blind to its server",
                def.spec.id
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_checks_catch_a_store_that_refuses_but_writes() {
    let fx = fixture().await;
    let bad = Arc::new(SideEffect::new(fx.good.clone(), Extra::WriteOnBadRequest));
    let mut caught = 0;
    for (n, def) in all_checks().iter().enumerate() {
        let CheckKind::Scenario(steps) = def.kind else {
            continue;
        };
        if !steps().iter().any(|s| matches!(s, Step::Raw { .. })) {
            continue;
        }
        // The fencing set's bad input is a durable store's, whose writes are
        // not in Redis to be seen: its refusals are judged reply by reply
        // in every_fenced_reply_is_judged.
        if def.contract() == Some(Contract::Fenced) {
            continue;
        }
        let clean = run_with(
            &fx,
            Arc::new(fx.good.clone()),
            format!("sp:bclean{n}:"),
            n,
            def,
        )
        .await;
        assert_eq!(
            clean.verdict,
            Verdict::Pass,
            "{}: {}",
            def.spec.id,
            clean.reason
        );
        let result = run_with(&fx, bad.clone(), format!("sp:b{n}:"), n, def).await;
        assert_eq!(
            result.verdict,
            Verdict::Fail,
            "{}: {}",
            def.spec.id,
            result.reason
        );
        assert!(
            result
                .reason
                .contains("was refused but changed the keyspace"),
            "{}: {}",
            def.spec.id,
            result.reason
        );
        caught += 1;
    }
    eprintln!("{caught} bad-input checks caught a store that refuses but writes");
    assert!(caught >= 3, "only {caught} bad-input checks");
}

/// A durable store's client that, after refusing a request with
/// `bad_request`, still takes a lease of a tree no check reads: refused, but
/// not "before changing anything", in a store that writes nothing to Redis.
struct TakesOnBadRequest;

struct TakesOnBadRequestClient {
    inner: Box<dyn harness::store::StoreClient>,
    made: u64,
}

#[async_trait::async_trait]
impl harness::store::StoreClient for TakesOnBadRequestClient {
    async fn call(
        &mut self,
        call: &harness::contract::Call,
        clock_ms: i64,
    ) -> Result<harness::contract::Reply, harness::contract::StoreError> {
        let outcome = self.inner.call(call, clock_ms).await;
        if matches!(&outcome, Err(e) if e.kind == harness::contract::ErrorKind::BadRequest) {
            self.made += 1;
            let half_done = harness::contract::Request::LeaseTake {
                tree: format!("half-done-{}", self.made),
                holder: "z".into(),
                ttl_ms: 1000,
            };
            let _ = self.inner.call(&half_done.to_call(), clock_ms).await;
        }
        outcome
    }
}

#[async_trait::async_trait]
impl sabotage::ClientSabotage for TakesOnBadRequest {
    fn spec(&self) -> String {
        "test:takes-on-bad-request".into()
    }

    async fn wrap(
        &self,
        _: &harness::store::Hello,
        inner: Box<dyn harness::store::StoreClient>,
    ) -> Result<Box<dyn harness::store::StoreClient>, harness::contract::StoreError> {
        Ok(Box::new(TakesOnBadRequestClient { inner, made: 0 }))
    }
}

/// The bad-input checks of a store outside Redis compare its durable state
/// (an empty keyspace unchanged proves nothing there).
#[tokio::test(flavor = "multi_thread")]
async fn bad_input_checks_catch_a_durable_store_that_refuses_but_writes() {
    let fx = fixture().await;
    let sqlite = || {
        SqliteStoreFactory::new(
            fx._dir
                .path()
                .join(format!("durable-{}.sqlite", next_file_number())),
            SqliteClock::following(fx.server.clock().cloned()),
        )
    };
    let claims = [Contract::Lease, Contract::Fenced];
    for id in [
        "conformance.lease.bad-input",
        "conformance.fenced.bad-input",
    ] {
        let checks = all_checks();
        let (n, def) = checks
            .iter()
            .enumerate()
            .find(|(_, c)| c.spec.id == id)
            .expect("the check");
        let clean = run_claiming(
            &fx,
            Arc::new(sqlite()),
            &claims,
            format!("sp:dclean{n}:"),
            n,
            def,
        )
        .await;
        assert_eq!(clean.verdict, Verdict::Pass, "{id}: {}", clean.reason);
        let bad = Arc::new(sabotage::Sabotaged::wrapping(sqlite(), TakesOnBadRequest));
        let result = run_claiming(&fx, bad, &claims, format!("sp:dbad{n}:"), n, def).await;
        assert_eq!(result.verdict, Verdict::Fail, "{id}: {}", result.reason);
        assert!(
            result.reason.contains("changed the store's durable state"),
            "{id}: {}",
            result.reason
        );
    }
}

fn next_file_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}
