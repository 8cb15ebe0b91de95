//! The generated checks bite: a store whose only bug is a renew answered
//! `renewed` at the very instant its lease expires (an off-by-one liveness
//! test, `<=` for `<`: only a renew by the holder of its own epoch, sent at
//! exactly that millisecond, meets it) fails `conformance.generated.lease`
//! with a counterexample shrunk to a few steps, which replays; the built-in
//! store passes every generated check.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use conformance::{all_checks, run_check, CheckDef, CheckKind, ConformanceSuite, Step};
use harness::contract::{Call, Contract, Reply, Request, StoreError};
use harness::counterexample::Counterexample;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::{CheckResult, ServerRef, Silent, Subject, Suite, Verdict};
use redis::aio::MultiplexedConnection;
use stores::redis::RedisStoreFactory;

/// Renews a lease at its expiry instant, which the contract calls expired.
struct RenewAtExpiry {
    inner: RedisStoreFactory,
}

struct Client {
    inner: Box<dyn StoreClient>,
    admin: MultiplexedConnection,
    /// Tree → (epoch, expiry) as this instance was last told.
    told: HashMap<String, (i64, i64)>,
}

impl Client {
    async fn server_ms(&mut self) -> Option<i64> {
        let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut self.admin).await.ok()?;
        Some(s * 1000 + us / 1000)
    }
}

#[async_trait]
impl StoreClient for Client {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        let reply = self.inner.call(call, clock_ms).await?;
        match (Request::parse(call), &reply) {
            (
                Ok(Request::LeaseTake { tree, .. }),
                Reply::Granted {
                    epoch,
                    expires_at_ms,
                },
            ) => {
                self.told.insert(tree, (*epoch, *expires_at_ms));
            }
            (
                Ok(Request::LeaseRenew {
                    tree,
                    epoch,
                    ttl_ms,
                    ..
                }),
                Reply::Lost { .. },
            ) => {
                let now = self.server_ms().await;
                if let (Some(now), Some((e, exp))) = (now, self.told.get(&tree)) {
                    if *e == epoch && *exp == now {
                        return Ok(Reply::Renewed {
                            expires_at_ms: now + ttl_ms,
                        });
                    }
                }
            }
            (Ok(Request::LeaseRenew { tree, epoch, .. }), Reply::Renewed { expires_at_ms }) => {
                self.told.insert(tree, (epoch, *expires_at_ms));
            }
            _ => {}
        }
        Ok(reply)
    }
}

#[async_trait]
impl StoreFactory for RenewAtExpiry {
    fn spec(&self) -> String {
        "test:renew-at-expiry".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        let admin = redis::Client::open(hello.redis_url.as_str())
            .expect("a redis url")
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection");
        Ok((
            info,
            Box::new(Client {
                inner,
                admin,
                told: HashMap::new(),
            }),
        ))
    }
}

fn subject<'a>(
    server: &'a ManagedServer,
    factory: Arc<dyn StoreFactory>,
    prefix: &str,
    seed: u64,
) -> Subject<'a> {
    Subject {
        spec: factory.spec(),
        factory,
        server: ServerRef::Managed(server),
        run_prefix: prefix.into(),
        opt_out: None,
        contracts: Contract::COORDINATION.to_vec(),
        seed,
        may_start_servers: true,
    }
}

fn generated(id: &str, cases: u32) -> CheckDef {
    let mut def = (*all_checks()
        .into_iter()
        .find(|d| d.spec.id == id)
        .unwrap_or_else(|| panic!("no check {id}")))
    .clone();
    let CheckKind::Generated(g) = &mut def.kind else {
        panic!("{id} is not generated")
    };
    g.cases = cases;
    def
}

fn steps_of(result: &CheckResult) -> Vec<Step> {
    match result.counterexample.clone() {
        Some(Counterexample::Scenario(cx)) => cx.steps,
        other => panic!("not a scenario counterexample: {other:?}"),
    }
}

#[tokio::test]
async fn a_renew_at_the_expiry_instant_fails_generated_lease_shrunk_and_replays() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let dir = tempfile::tempdir().expect("tempdir");
    let broken: Arc<dyn StoreFactory> = Arc::new(RenewAtExpiry {
        inner: RedisStoreFactory::new(dir.path().join("kept.sqlite")),
    });
    let target = subject(&server, broken, "sp:gen-broken:", 11);
    let def = generated("conformance.generated.lease", 64);
    let result = run_check(&target, 0, &def).await;
    assert_eq!(result.verdict, Verdict::Fail, "{}", result.reason);
    let steps = steps_of(&result);
    eprintln!(
        "{}\n{}",
        result.reason,
        serde_json::to_string_pretty(&steps).unwrap()
    );
    // Shrunk: a take, a move to its expiry, the renew (and little else).
    assert!(steps.len() <= 5, "{} steps", steps.len());
    assert!(matches!(
        steps.last(),
        Some(Step::Call {
            request: Request::LeaseRenew { .. },
            ..
        })
    ));

    // The saved counterexample replays to the same failure; the same steps
    // on the built-in store pass.
    let suite = ConformanceSuite::new();
    let replayed = suite
        .replay(&target, &def.spec, result.counterexample.as_ref(), &Silent)
        .await
        .expect("replay");
    assert_eq!(replayed.verdict, Verdict::Fail, "{}", replayed.reason);
    assert_eq!(steps_of(&replayed), steps);
    let good: Arc<dyn StoreFactory> =
        Arc::new(RedisStoreFactory::new(dir.path().join("kept2.sqlite")));
    let fixed = subject(&server, good, "sp:gen-fixed:", 11);
    let replayed = suite
        .replay(&fixed, &def.spec, result.counterexample.as_ref(), &Silent)
        .await
        .expect("replay");
    assert_eq!(replayed.verdict, Verdict::Pass, "{}", replayed.reason);
    let _ = server.stop().await;
}

#[tokio::test]
async fn the_builtin_store_passes_every_generated_check() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let dir = tempfile::tempdir().expect("tempdir");
    let good: Arc<dyn StoreFactory> =
        Arc::new(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    for id in [
        "conformance.generated.lease",
        "conformance.generated.queue",
        "conformance.generated.rate",
    ] {
        let def = generated(id, 24);
        let target = subject(&server, good.clone(), "sp:gen-good:", 5);
        let result = run_check(&target, 0, &def).await;
        assert_eq!(
            result.verdict,
            Verdict::Pass,
            "{id}: {}\n{}",
            result.reason,
            serde_json::to_string(&result.counterexample).unwrap_or_default()
        );
        let harness::evidence::Evidence::Generated(g) = &result.evidence else {
            panic!("{id}: {:?}", result.evidence)
        };
        assert_eq!(g.generated.played, 24, "{id}");
    }
    let _ = server.stop().await;
}

/// A measurement, not a test (run with `--ignored --nocapture`): which named
/// sabotages the generated checks catch at the default size.
#[tokio::test]
#[ignore = "a measurement, not a test: run with --ignored --nocapture"]
async fn measure_named_sabotages() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = std::env::var("CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(conformance::DEFAULT_CASES);
    let only = std::env::var("ONLY").unwrap_or_default();
    for (k, named) in sabotage::named().enumerate() {
        if !named.name.contains(only.as_str()) {
            continue;
        }
        let work = dir.path().join(named.name);
        std::fs::create_dir_all(&work).expect("workdir");
        let Some(factory) = sabotage::by_name_following(named.name, &work, server.clock().cloned())
        else {
            continue;
        };
        let mut line = format!("{:32}", named.name);
        for (n, id) in [
            "conformance.generated.lease",
            "conformance.generated.queue",
            "conformance.generated.rate",
        ]
        .into_iter()
        .enumerate()
        {
            let target = subject(&server, factory.clone(), &format!("sp:m{k}:"), 0);
            let started = std::time::Instant::now();
            let result = run_check(&target, n, &generated(id, cases)).await;
            let steps = result
                .counterexample
                .as_ref()
                .and_then(Counterexample::scenario)
                .map(|s| s.steps.len());
            line.push_str(&format!(
                " {}={}{} {:.1}s",
                id.trim_start_matches("conformance.generated."),
                result.verdict.word(),
                steps.map(|s| format!("({s} steps)")).unwrap_or_default(),
                started.elapsed().as_secs_f64()
            ));
        }
        eprintln!("{line}");
    }
    let _ = server.stop().await;
}

/// The built-in store, but `lease.renew` answers `unsupported`.
struct NoRenew(RedisStoreFactory);

struct NoRenewClient(Box<dyn StoreClient>);

#[async_trait]
impl StoreClient for NoRenewClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        if call.op == "lease.renew" {
            return Err(StoreError::new(
                harness::contract::ErrorKind::Unsupported,
                "this store never renews",
            ));
        }
        self.0.call(call, clock_ms).await
    }
}

#[async_trait]
impl StoreFactory for NoRenew {
    fn spec(&self) -> String {
        "test:no-renew".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.0.connect(hello, clock_ms).await?;
        Ok((info, Box::new(NoRenewClient(inner))))
    }
}

#[tokio::test]
async fn an_operation_answered_unsupported_skips_the_generated_check_with_the_store_s_message() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("managed server");
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn StoreFactory> = Arc::new(NoRenew(RedisStoreFactory::new(
        dir.path().join("kept.sqlite"),
    )));
    let target = subject(&server, store, "sp:gen-norenew:", 3);
    let result = run_check(&target, 0, &generated("conformance.generated.lease", 24)).await;
    assert_eq!(result.verdict, Verdict::Skipped, "{}", result.reason);
    assert!(
        result
            .reason
            .contains("unsupported to lease.renew: this store never renews"),
        "{}",
        result.reason
    );
    let _ = server.stop().await;
}
