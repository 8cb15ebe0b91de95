//! The crash suite end to end on both backends: with the required settings no
//! acknowledged write is lost across SIGKILLs; with the append-only file off
//! and the opt-out, every kill shows the loss; nothing of the run is left.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use crash::{BackendChoice, CrashConfig, CrashSuite};
use harness::contract::{Call, Contract, ErrorKind, Reply, Request, StoreError};
use harness::figures::{CrashFigures, Figures};
use harness::store::{Hello, StoreClient, StoreFactory, StoreInfo};
use harness::{plan, Progress, Suite};
use harness::{CheckResult, Report, RunVerdict, Verdict};
use stores::redis::RedisStoreFactory;

fn config(backend: BackendChoice, seed: u64) -> CrashConfig {
    CrashConfig {
        seed,
        ..CrashConfig::new(2, 3, 2, backend)
    }
}

/// The wall clock in ms (the crash suite runs on real time).
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap()
}

/// The contracts crash check `id` is about, as the suite declares them.
fn contracts_of(id: &str) -> &'static [Contract] {
    CrashSuite::new(config(BackendChoice::Process, 0))
        .checks()
        .into_iter()
        .find(|c| c.id == id)
        .map_or(&[], |c| c.contracts)
}

/// Progress lines on stderr, for a failing test's log.
struct Stderr;

impl Progress for Stderr {
    fn part(&self, name: &str, steps: u64) {
        eprintln!("{name}: {steps} steps");
    }
    fn step(&self, _: &str) {}
    fn line(&self, text: &str) {
        eprintln!("{text}");
    }
}

/// What a crash run reported: every check, and its figures.
struct Outcome {
    checks: Vec<CheckResult>,
    stats: CrashFigures,
}

/// The crash suite as `certify` drives it: the subject, the plan, the run.
async fn run(factory: Arc<dyn StoreFactory>, prefix: &str, config: &CrashConfig) -> Outcome {
    // The crash suite starts servers of its own.
    let subject = testkit::subject(factory)
        .prefix(prefix)
        .contracts(&config.contracts)
        .seed(config.seed)
        .unreachable();
    let suite = CrashSuite::new(config.clone());
    let (mut checks, to_run) = plan(suite.name(), suite.checks(), &subject);
    let run = suite
        .run(&subject, &to_run, &Stderr)
        .await
        .expect("the crash suite runs");
    assert_eq!(run.checks.len(), to_run.len(), "one result per check run");
    checks.extend(run.checks);
    let Figures::Crash(stats) = run.figures else {
        panic!("the crash suite's figures are crash figures")
    };
    Outcome { checks, stats }
}

async fn certify_crash(backend: BackendChoice, seed: u64) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let factory: Arc<dyn StoreFactory> =
        Arc::new(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    run(factory, "sp:crash:", &config(backend, seed)).await
}

fn assert_durable_and_loss_shown(outcome: &Outcome) {
    for c in &outcome.checks {
        if c.id == "crash.docker-backend" {
            continue;
        }
        assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
    }
    let s = &outcome.stats;
    assert_eq!(s.kills, 2);
    assert_eq!(s.lost, 0);
    let durable = &s.per_kill;
    assert_eq!(durable.len(), 2);
    for k in durable {
        // Each kill stands alone and has something of each main kind to lose.
        assert!(k.acknowledged() >= 20, "{k:?}");
        assert!(
            k.epochs_acknowledged > 0 && k.children_acknowledged > 0,
            "{k:?}"
        );
        assert_eq!(k.lost(), 0, "{k:?}");
    }
    // Every opted-out kill shows the loss on its own, with its own figures.
    let opted = &s.opt_out.per_kill;
    assert_eq!(opted.len(), 3);
    for k in opted {
        assert!(k.lost() > 0, "{k:?}");
        assert!(k.lost() <= k.acknowledged(), "{k:?}");
        assert!(k.epochs_lost <= k.epochs_acknowledged, "{k:?}");
    }
    assert_eq!(s.opt_out.kills_showing_loss, 3);
    // The reference store, written beside it, lost in every kill too.
    assert_eq!(s.opt_out_reference.kills, 3);
    assert_eq!(s.opt_out_reference.kills_showing_loss, 3);
    assert_eq!(s.power_loss.always.lost, 0);
    assert_eq!(s.power_loss.everysec_opted_out.kills_showing_loss, 2);
    assert_eq!(s.power_loss.everysec_reference.kills_showing_loss, 2);
    // While the server was down after each kill, the store answered an error.
    assert_eq!((s.down_server.probes, s.down_server.refused), (2, 2));
    // The JSON keeps the names the report's readers use.
    let json = serde_json::to_value(s).unwrap();
    assert_eq!(
        json["total"]["epochs_acknowledged"],
        s.total.epochs_acknowledged
    );
    assert_eq!(
        json["opt_out"]["per_kill"].as_array().map(Vec::len),
        Some(3)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_process_backend_keeps_every_acknowledged_write_and_shows_the_opt_out_loss() {
    let outcome = certify_crash(BackendChoice::Process, 11).await;
    assert_eq!(outcome.stats.backend, "process");
    assert_durable_and_loss_shown(&outcome);
    let docker = outcome
        .checks
        .iter()
        .find(|c| c.id == "crash.docker-backend")
        .unwrap();
    assert_eq!(docker.verdict, Verdict::Skipped, "{}", docker.reason);
}

fn labelled(kind: &str, label: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            kind,
            "ls",
            "-a",
            "-q",
            "--filter",
            &format!("label=storeproof.run={label}"),
        ])
        .output();
    let out = match out {
        Ok(o) => o,
        Err(_) => return vec![],
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_docker_backend_keeps_every_acknowledged_write_and_leaves_nothing() {
    let seed = 12;
    let outcome = certify_crash(BackendChoice::Docker, seed).await;
    assert_eq!(outcome.stats.backend, "docker");
    assert_durable_and_loss_shown(&outcome);
    let docker = outcome
        .checks
        .iter()
        .find(|c| c.id == "crash.docker-backend")
        .unwrap();
    assert_eq!(docker.verdict, Verdict::Pass, "{}", docker.reason);
    for run in ["durable", "optout"] {
        let label = format!("{:08x}-{run}", seed as u32);
        assert_eq!(
            labelled("container", &label),
            Vec::<String>::new(),
            "containers left"
        );
        // `docker volume ls` has no -a.
        let out = Command::new("docker")
            .args([
                "volume",
                "ls",
                "-q",
                "--filter",
                &format!("label=storeproof.run={label}"),
            ])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).trim().is_empty(),
            "volumes left"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_must_keep_check_fails_when_the_server_loses_writes() {
    // The runs that must lose nothing, on a server without an append-only
    // file: each of their checks must fail.
    let dir = tempfile::tempdir().unwrap();
    let factory: Arc<dyn StoreFactory> =
        Arc::new(RedisStoreFactory::new(dir.path().join("kept.sqlite")));
    let mut config = config(BackendChoice::Process, 13);
    config.kills = 2;
    config.opt_out_kills = 1;
    config.power_losses = 1;
    config.sabotage_settings = Some(vec![("appendonly".into(), "no".into())]);
    let outcome = run(factory, "sp:crash-bites:", &config).await;
    for id in [
        "crash.acknowledged-epochs-survive",
        "crash.next-take-continues",
        "crash.acknowledged-renews-survive",
        "crash.acknowledged-children-survive",
        "crash.acknowledged-claims-survive",
        "crash.children-completed-once",
        "crash.acknowledged-pauses-survive",
        "crash.power-loss-always-keeps",
    ] {
        let c = outcome.checks.iter().find(|c| c.id == id).unwrap();
        assert_eq!(
            c.verdict,
            Verdict::Fail,
            "{id} passed a server that lost writes: {}",
            c.reason
        );
        let cx = c
            .counterexample
            .as_ref()
            .expect("a failure comes with a re-run");
        let harness::counterexample::Counterexample::Crash(rerun) = cx else {
            panic!("not a crash re-run: {cx:?}")
        };
        assert_eq!(rerun.seed, 13);
        // The evidence shows the kill's requests about what was lost.
        let shown: &crash::KillHistory = match &c.evidence {
            harness::evidence::Evidence::KillsFound(k) => k.history.as_ref(),
            _ => None,
        }
        .unwrap_or_else(|| panic!("{id} has no history in its evidence: {:?}", c.evidence));
        assert!(shown.kill >= 1 && !shown.history.events.is_empty(), "{id}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_that_keeps_its_writes_elsewhere_is_not_failed_by_the_demonstrations() {
    // Issue 19, item 2. A store blind to the server it is given writes to a
    // durable server nobody kills: it loses nothing with the append-only
    // file off, nor in everysec power cuts. PROTOCOL never asks a store to
    // lose writes: the demonstrations are decided by the reference store
    // written beside it, and the store's figures are only reported. What
    // fails it is its own doing: it answers while its server is down.
    let elsewhere = harness::server::ManagedServer::start(
        harness::server::ServerOptions::default().with_virtual_clock(false),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let blind: Arc<dyn StoreFactory> = Arc::new(sabotage::ServerBlind::new(
        RedisStoreFactory::new(dir.path().join("kept.sqlite")),
        elsewhere.url(),
    ));
    let mut config = config(BackendChoice::Process, 14);
    config.kills = 1;
    config.opt_out_kills = 1;
    config.power_losses = 1;
    let outcome = run(blind, "sp:crash-blind:", &config).await;
    for id in ["crash.opt-out-loses", "crash.power-loss-everysec-loses"] {
        let c = verdict_of(&outcome, id);
        assert_eq!(c.verdict, Verdict::Pass, "{id}: {}", c.reason);
        assert!(
            c.reason.contains("reference store") && c.reason.contains("lost 0 of"),
            "{id}: {}",
            c.reason
        );
    }
    assert_eq!(outcome.stats.opt_out.lost, 0);
    assert!(outcome.stats.opt_out_reference.lost > 0);
    let down = verdict_of(&outcome, "crash.down-server-unavailable");
    assert_eq!(down.verdict, Verdict::Fail, "{}", down.reason);
    assert!(
        down.reason.contains("while the server was down"),
        "{}",
        down.reason
    );
    assert_eq!(outcome.stats.down_server.acknowledged, 1);
}

/// How a test store misbehaves.
#[derive(Clone, Copy)]
enum Fault {
    /// Answers every renew `renewed` and writes nothing.
    ForgetsRenews,
    /// Claims for 1 ms whatever was asked: the child is claimable again at once.
    ShortClaims,
    /// The verifier after a restart gets this error for every call.
    FailsAfterRestart(ErrorKind),
    /// Answers every renew `lost` (nothing renewed, nothing acknowledged).
    LosesEveryRenew,
    /// Answers these operations `unsupported`, with this message.
    DoesNotOffer(&'static [&'static str]),
}

/// The built-in Redis store with one fault.
struct Faulty {
    inner: RedisStoreFactory,
    fault: Fault,
}

struct FaultyClient {
    inner: Box<dyn StoreClient>,
    fault: Fault,
    verifier: bool,
}

#[async_trait]
impl StoreFactory for Faulty {
    fn spec(&self) -> String {
        "test:faulty".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (info, inner) = self.inner.connect(hello, clock_ms).await?;
        let client = FaultyClient {
            inner,
            fault: self.fault,
            verifier: hello.instance.starts_with("verifier"),
        };
        Ok((info, Box::new(client)))
    }
}

#[async_trait]
impl StoreClient for FaultyClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match (self.fault, Request::parse(call)?) {
            (Fault::ForgetsRenews, Request::LeaseRenew { ttl_ms, .. }) => Ok(Reply::Renewed {
                expires_at_ms: wall_ms() + ttl_ms,
            }),
            (Fault::ShortClaims, Request::QueueClaim { instance, .. }) => {
                let short = Request::QueueClaim {
                    instance,
                    claim_ttl_ms: 1,
                };
                self.inner.call(&short.to_call(), clock_ms).await
            }
            (Fault::FailsAfterRestart(kind), _) if self.verifier => {
                Err(StoreError::new(kind, "broken after the restart"))
            }
            (Fault::LosesEveryRenew, Request::LeaseRenew { .. }) => Ok(Reply::Lost {
                holder: None,
                epoch: None,
            }),
            (Fault::DoesNotOffer(ops), req) if ops.contains(&req.op()) => Err(StoreError::new(
                ErrorKind::Unsupported,
                format!("{} is not offered by this store", req.op()),
            )),
            _ => self.inner.call(call, clock_ms).await,
        }
    }
}

/// Two kills with the required settings on the process backend, nothing else.
async fn faulty_run(fault: Fault, seed: u64) -> Outcome {
    faulty_kills(fault, seed, 2).await
}

/// `kills` kills with the required settings on the process backend, nothing else.
async fn faulty_kills(fault: Fault, seed: u64, kills: usize) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let factory: Arc<dyn StoreFactory> = Arc::new(Faulty {
        inner: RedisStoreFactory::new(dir.path().join("kept.sqlite")),
        fault,
    });
    let mut config = config(BackendChoice::Process, seed);
    config.kills = kills;
    config.opt_out_kills = 0;
    config.power_losses = 0;
    run(factory, "sp:crash-faulty:", &config).await
}

fn verdict_of<'a>(outcome: &'a Outcome, id: &str) -> &'a CheckResult {
    outcome.checks.iter().find(|c| c.id == id).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_renew_acknowledged_but_not_kept_fails_the_renew_check_alone() {
    let outcome = faulty_run(Fault::ForgetsRenews, 21).await;
    let renews = verdict_of(&outcome, "crash.acknowledged-renews-survive");
    assert_eq!(renews.verdict, Verdict::Fail, "{}", renews.reason);
    assert!(
        renews.reason.contains("a renew of epoch"),
        "{}",
        renews.reason
    );
    for id in [
        "crash.acknowledged-epochs-survive",
        "crash.next-take-continues",
        "crash.acknowledged-children-survive",
        "crash.acknowledged-pauses-survive",
    ] {
        let c = verdict_of(&outcome, id);
        assert_eq!(c.verdict, Verdict::Pass, "{id}: {}", c.reason);
    }
    let lost: usize = outcome.stats.per_kill.iter().map(|k| k.renews_lost).sum();
    assert!(lost > 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_that_does_not_hold_fails_the_claim_check() {
    let outcome = faulty_run(Fault::ShortClaims, 22).await;
    let claims = verdict_of(&outcome, "crash.acknowledged-claims-survive");
    assert_eq!(claims.verdict, Verdict::Fail, "{}", claims.reason);
    assert!(
        claims.reason.contains("handed out again"),
        "{}",
        claims.reason
    );
    for id in [
        "crash.acknowledged-epochs-survive",
        "crash.acknowledged-children-survive",
        "crash.acknowledged-pauses-survive",
    ] {
        let c = verdict_of(&outcome, id);
        assert_eq!(c.verdict, Verdict::Pass, "{id}: {}", c.reason);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn trouble_after_a_restart_is_unknown_and_a_wrong_answer_fails() {
    // The adapter failing after the restart is the harness's trouble: the
    // run still ends with its verdicts, undecided, never blaming the store.
    let broken = faulty_run(Fault::FailsAfterRestart(ErrorKind::AdapterFailed), 23).await;
    for id in [
        "crash.acknowledged-epochs-survive",
        "crash.acknowledged-renews-survive",
        "crash.acknowledged-claims-survive",
    ] {
        let c = verdict_of(&broken, id);
        assert_eq!(c.verdict, Verdict::Unknown, "{id}: {}", c.reason);
        assert!(
            c.reason.contains("broken after the restart"),
            "{}",
            c.reason
        );
    }
    assert_eq!(Report::verdict_of(&broken.checks), RunVerdict::Incomplete);
    assert!(broken
        .stats
        .trouble
        .as_deref()
        .unwrap()
        .contains("kill 1 of 2"));
    // A store answering bad_request to a valid read answered wrongly.
    let wrong = faulty_run(Fault::FailsAfterRestart(ErrorKind::BadRequest), 24).await;
    let epochs = verdict_of(&wrong, "crash.acknowledged-epochs-survive");
    assert_eq!(epochs.verdict, Verdict::Fail, "{}", epochs.reason);
    assert!(epochs.reason.contains("bad_request"), "{}", epochs.reason);
}

/// The built-in Redis store offering only some contracts, as a store that
/// implements only those would: its hello lists them, every other operation
/// is answered `unsupported` and counted.
struct Narrowed {
    inner: RedisStoreFactory,
    contracts: Vec<Contract>,
    strays: Arc<AtomicUsize>,
}

struct NarrowedClient {
    inner: Box<dyn StoreClient>,
    contracts: Vec<Contract>,
    strays: Arc<AtomicUsize>,
}

#[async_trait]
impl StoreFactory for Narrowed {
    fn spec(&self) -> String {
        "test:narrowed".into()
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        let (mut info, inner) = self.inner.connect(hello, clock_ms).await?;
        info.contracts = self.contracts.clone();
        let client = NarrowedClient {
            inner,
            contracts: self.contracts.clone(),
            strays: self.strays.clone(),
        };
        Ok((info, Box::new(client)))
    }
}

#[async_trait]
impl StoreClient for NarrowedClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        match Contract::of_op(&call.op) {
            Some(c) if !self.contracts.contains(&c) => {
                self.strays.fetch_add(1, Ordering::Relaxed);
                Err(StoreError::new(
                    ErrorKind::Unsupported,
                    format!("{} is not offered", call.op),
                ))
            }
            _ => self.inner.call(call, clock_ms).await,
        }
    }
}

/// One kill, one opted-out kill and one power cut of each setting on a
/// store claiming only `contracts`; also how many calls it was sent that
/// it does not offer.
async fn narrowed_run(contracts: &[Contract], seed: u64) -> (Outcome, usize) {
    let dir = tempfile::tempdir().unwrap();
    let strays = Arc::new(AtomicUsize::new(0));
    let factory: Arc<dyn StoreFactory> = Arc::new(Narrowed {
        inner: RedisStoreFactory::new(dir.path().join("kept.sqlite")),
        contracts: contracts.to_vec(),
        strays: strays.clone(),
    });
    let mut config = config(BackendChoice::Process, seed);
    config.kills = 1;
    config.opt_out_kills = 1;
    config.power_losses = 1;
    config.contracts = contracts.to_vec();
    let outcome = run(factory, "sp:crash-narrowed:", &config).await;
    (outcome, strays.load(Ordering::Relaxed))
}

/// The checks about `decided` contracts and the whole workload are decided
/// and hold; the others are outside the claim, naming what is not offered.
fn assert_only_claimed_decided(outcome: &Outcome, decided: &[&str]) {
    for c in &outcome.checks {
        let about = contracts_of(&c.id);
        if decided.contains(&c.id.as_str()) {
            assert_eq!(c.verdict, Verdict::Pass, "{}: {}", c.id, c.reason);
        } else if about.len() == 1 {
            assert_eq!(c.verdict, Verdict::Skipped, "{}: {}", c.id, c.reason);
            assert!(c.outside_claim, "{}", c.id);
            assert!(
                c.reason.contains(&format!("the {} contract", about[0]))
                    && c.reason.contains("does not offer"),
                "{}: {}",
                c.id,
                c.reason
            );
        } else {
            // The whole workload: judged on what the store claims.
            assert!(!c.outside_claim, "{}: {}", c.id, c.reason);
            assert_ne!(c.verdict, Verdict::Fail, "{}: {}", c.id, c.reason);
            assert_ne!(c.verdict, Verdict::Unknown, "{}: {}", c.id, c.reason);
        }
    }
    for id in ["crash.opt-out-loses", "crash.power-loss-always-keeps"] {
        let c = verdict_of(outcome, id);
        assert_eq!(c.verdict, Verdict::Pass, "{id}: {}", c.reason);
    }
    assert_eq!(Report::verdict_of(&outcome.checks), RunVerdict::Pass);
    assert_eq!(outcome.stats.opt_out.kills_showing_loss, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_claiming_only_leases_gets_its_epochs_checked_across_kills() {
    let (outcome, strays) = narrowed_run(&[Contract::Lease], 31).await;
    assert_only_claimed_decided(
        &outcome,
        &[
            "crash.acknowledged-epochs-survive",
            "crash.next-take-continues",
            "crash.acknowledged-renews-survive",
        ],
    );
    assert_eq!(strays, 0, "the store was sent operations it does not offer");
    let k = &outcome.stats.per_kill[0];
    assert!(k.epochs_acknowledged >= 20, "{k:?}");
    assert_eq!(
        k.acknowledged(),
        k.epochs_acknowledged + k.renews_acknowledged
    );
    let opted = verdict_of(&outcome, "crash.opt-out-loses");
    assert!(
        opted.reason.contains("epochs acknowledged") && !opted.reason.contains("pauses"),
        "{}",
        opted.reason
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_claiming_only_rate_limits_gets_its_pauses_checked_across_kills() {
    let (outcome, strays) = narrowed_run(&[Contract::Rate], 32).await;
    assert_only_claimed_decided(&outcome, &["crash.acknowledged-pauses-survive"]);
    assert_eq!(strays, 0, "the store was sent operations it does not offer");
    let k = &outcome.stats.per_kill[0];
    assert!(k.pauses_acknowledged >= 20, "{k:?}");
    assert_eq!(k.acknowledged(), k.pauses_acknowledged);
    let always = verdict_of(&outcome, "crash.power-loss-always-keeps");
    assert!(
        always.reason.contains("pauses acknowledged") && !always.reason.contains("epochs"),
        "{}",
        always.reason
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_check_with_no_write_of_its_kind_acknowledged_is_unknown_not_passed() {
    // Issue 19, item 14: every renew answered `lost`, so none acknowledged;
    // "renews acknowledged 0, lost 0" is no pass.
    let outcome = faulty_kills(Fault::LosesEveryRenew, 25, 1).await;
    let renews = verdict_of(&outcome, "crash.acknowledged-renews-survive");
    assert_eq!(renews.verdict, Verdict::Unknown, "{}", renews.reason);
    assert!(
        renews.reason.contains("no acknowledged write of its kind"),
        "{}",
        renews.reason
    );
    for id in [
        "crash.acknowledged-epochs-survive",
        "crash.next-take-continues",
        "crash.acknowledged-children-survive",
        "crash.acknowledged-claims-survive",
        "crash.children-completed-once",
        "crash.acknowledged-pauses-survive",
    ] {
        let c = verdict_of(&outcome, id);
        assert_eq!(c.verdict, Verdict::Pass, "{id}: {}", c.reason);
        assert!(c.reason.contains(", judged "), "{id}: {}", c.reason);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unsupported_operation_skips_its_checks_and_is_never_a_loss() {
    // Issue 19, item 5: no renew, and no queue.read to read children back.
    let outcome = faulty_kills(Fault::DoesNotOffer(&["lease.renew", "queue.read"]), 26, 1).await;
    for id in [
        "crash.acknowledged-renews-survive",
        "crash.acknowledged-children-survive",
    ] {
        let c = verdict_of(&outcome, id);
        assert_eq!(c.verdict, Verdict::Skipped, "{id}: {}", c.reason);
        assert!(
            c.reason.contains("is not offered by this store"),
            "{id}: {}",
            c.reason
        );
    }
    for c in &outcome.checks {
        assert_ne!(c.verdict, Verdict::Fail, "{}: {}", c.id, c.reason);
    }
    for id in [
        "crash.acknowledged-epochs-survive",
        "crash.next-take-continues",
        "crash.acknowledged-pauses-survive",
    ] {
        let c = verdict_of(&outcome, id);
        assert_eq!(c.verdict, Verdict::Pass, "{id}: {}", c.reason);
    }
    let t = &outcome.stats.total;
    assert_eq!((t.renews_acknowledged, t.children_lost), (0, 0));
    assert_eq!(t.children_not_judged, t.children_acknowledged);
    assert!(t.children_acknowledged > 0);
}
