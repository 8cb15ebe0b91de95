//! The fault suite's four sabotages (issue 10), each on a real history: a
//! real `redis-server` (behind a gate where a reply must be lost) or the
//! real SQLite store produces it, and the named `faults` checker, called
//! directly, must fail it; the store they wrap, under the same schedule,
//! must pass.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use faults::children::{self, AppliedEffect, ChildViolation, EndEffects};
use faults::fencing::{self, DurableEnd, FencingViolation};
use faults::full_server;
use faults::linearizable::{self, TreeVerdict};
use faults::nemesis::{Ending, Fault, Nemesis};
use faults::workload::Recorder as WorkloadRecorder;
use harness::contract::{Contract, ErrorKind, Reply, Request, StoreError};
use harness::gate::Gate;
use harness::server::{ManagedServer, ServerOptions, VirtualClock};
use harness::store::{Hello, StoreClient, StoreFactory};
use harness::History;
use sabotage::{BlindRetry, CompleteAnyAttempt, OomSwallowed};
use stores::redis::RedisStoreFactory;
use stores::sqlite::{ManualClock, SqliteClock, SqliteStoreFactory};

const WAIT: Duration = Duration::from_secs(5);

/// Where server time is read for the history's `server_ms`.
#[derive(Clone)]
enum Time {
    Server(Arc<VirtualClock>),
    Manual(ManualClock),
}

impl Time {
    fn now_ms(&self) -> i64 {
        match self {
            Time::Server(c) => c.now_ms(),
            Time::Manual(c) => c.now_ms(),
        }
    }
}

/// A history recorded as the harness records one: invoke, call, completion.
struct Recorder {
    history: Mutex<History>,
    time: Time,
}

impl Recorder {
    fn new(time: Time) -> Recorder {
        Recorder {
            history: Mutex::new(History::default()),
            time,
        }
    }

    async fn op(
        &self,
        who: &str,
        client: &mut Box<dyn StoreClient>,
        req: Request,
    ) -> Result<Reply, StoreError> {
        let call = req.to_call();
        let now = self.time.now_ms();
        self.history
            .lock()
            .unwrap()
            .invoke(who, &call, Some(now), now);
        let outcome = client.call(&call, now).await;
        let now = self.time.now_ms();
        self.history
            .lock()
            .unwrap()
            .complete(who, &call.op, &outcome, Some(now), now);
        outcome
    }

    fn history(&self) -> History {
        self.history.lock().unwrap().clone()
    }
}

fn hello(instance: &str, url: &str, prefix: &str) -> Hello {
    Hello {
        instance: instance.into(),
        redis_url: url.into(),
        prefix: prefix.into(),
        opt_out: None,
    }
}

async fn connect(
    store: &dyn StoreFactory,
    instance: &str,
    url: &str,
    prefix: &str,
) -> Box<dyn StoreClient> {
    store
        .connect(&hello(instance, url, prefix), 0)
        .await
        .expect("connects")
        .1
}

fn take(holder: &str) -> Request {
    Request::LeaseTake {
        tree: "t".into(),
        holder: holder.into(),
        ttl_ms: 10_000,
    }
}

async fn server() -> ManagedServer {
    ManagedServer::start(ServerOptions::default())
        .await
        .expect("server starts")
}

fn server_time(server: &ManagedServer) -> Time {
    Time::Server(server.clock().expect("a virtual clock").clone())
}

/// Waits until the gate has a fault armed (the nemesis armed it).
async fn armed(gate: &Gate) {
    let deadline = Instant::now() + WAIT;
    while gate.faults().is_empty() {
        assert!(Instant::now() < deadline, "the fault was never armed");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Takes the lease as `a` through `gate` while the nemesis loses that
/// take's reply after the server applied it; the history and the answer.
async fn take_with_lost_reply(
    server: &mut ManagedServer,
    store: &dyn StoreFactory,
    prefix: &str,
) -> (History, Result<Reply, StoreError>) {
    let gate = Gate::start(&server.url()).await.unwrap();
    let rec = Recorder::new(server_time(server));
    let mut a = connect(store, "a", &gate.url(), prefix).await;
    let nemesis = Nemesis::new(vec![gate.clone()]);
    let fault = Fault::LoseReplyAfterApply { instance: 0 };
    let (ending, answer) = tokio::join!(nemesis.apply(server, &fault, &rec.history), async {
        armed(&gate).await;
        rec.op("a", &mut a, take("a")).await
    });
    assert_eq!(ending.unwrap(), Ending::Fired);
    (rec.history(), answer)
}

#[tokio::test]
async fn blind_retry_is_caught_by_lease_linearizability() {
    let mut server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let builtin = || RedisStoreFactory::new(dir.path().join("kept.sqlite"));

    let (history, answer) =
        take_with_lost_reply(&mut server, &BlindRetry::new(builtin()), "sp:br:").await;
    // The retry found the first attempt's own lease.
    let Ok(Reply::Busy { holder, epoch, .. }) = &answer else {
        panic!("the retry answers busy, got {answer:?}");
    };
    assert_eq!(holder, "a");
    let verdict = linearizable::check(&history);
    eprintln!("blind-retry: {answer:?} -> {:?}", verdict.trees["t"]);
    let TreeVerdict::NotLinearizable { op_event, .. } = &verdict.trees["t"] else {
        panic!("epoch {epoch} was granted by no operation: {verdict:?}");
    };
    assert!(history.events[*op_event].what.op() == "lease.take");

    // The store it wraps answers `unavailable`: the outcome is unknown, and
    // the history explains.
    let (history, answer) = take_with_lost_reply(&mut server, &builtin(), "sp:br2:").await;
    assert_eq!(answer.unwrap_err().kind, ErrorKind::Unavailable);
    let verdict = linearizable::check(&history);
    assert!(verdict.all_linearizable(), "{verdict:?}");
}

/// a claims the child, its claim expires on server time, b claims it
/// (attempt 2), then a (stale, attempt 1) and b complete.
async fn stale_completion(
    server: &ManagedServer,
    store: &dyn StoreFactory,
    prefix: &str,
) -> History {
    let url = server.url();
    let rec = Recorder::new(server_time(server));
    let mut a = connect(store, "a", &url, prefix).await;
    let mut b = connect(store, "b", &url, prefix).await;
    let save = Request::QueueSave {
        child: "c".into(),
        depth: 0,
        payload: "p".into(),
    };
    assert_eq!(rec.op("a", &mut a, save).await.unwrap(), Reply::Saved {});
    let claim = |who: &str| Request::QueueClaim {
        instance: who.into(),
        claim_ttl_ms: 1_000,
    };
    let first = rec.op("a", &mut a, claim("a")).await.unwrap();
    assert!(
        matches!(first, Reply::Claimed { attempt: 1, .. }),
        "{first:?}"
    );
    server.clock().unwrap().advance_ms(2_000);
    let second = rec.op("b", &mut b, claim("b")).await.unwrap();
    assert!(
        matches!(second, Reply::Claimed { attempt: 2, .. }),
        "{second:?}"
    );
    let complete = |who: &str, attempt| Request::QueueComplete {
        child: "c".into(),
        instance: who.into(),
        attempt,
    };
    rec.op("a", &mut a, complete("a", 1)).await.unwrap();
    rec.op("b", &mut b, complete("b", 2)).await.unwrap();
    rec.history()
}

#[tokio::test]
async fn complete_any_attempt_is_caught_by_children_once() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let builtin = || RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    // The child's one effect: the durable store deduplicated the second.
    let end = EndEffects {
        applied: vec![AppliedEffect {
            child: "c".into(),
            effect: "e".into(),
        }],
    };

    let history = stale_completion(&server, &CompleteAnyAttempt::new(builtin()), "sp:ca:").await;
    let verdict = children::check(&history, &end);
    eprintln!("complete-any-attempt: {verdict:?}");
    match &verdict.violations[..] {
        [ChildViolation::CompletedTwice { child, completions }] => {
            assert_eq!(child, "c");
            let attempts: Vec<i64> = completions.iter().map(|&(_, a)| a).collect();
            assert_eq!(attempts, vec![1, 2]);
        }
        other => panic!("expected the child completed twice, got {other:?}"),
    }

    // The real queue refuses the stale completion (`not_claimer`).
    let history = stale_completion(&server, &builtin(), "sp:ca2:").await;
    let verdict = children::check(&history, &end);
    assert!(verdict.holds(), "{verdict:?}");
}

/// Takes the lease while the server is full (maxmemory below its use,
/// noeviction), makes room again, and reads the lease.
async fn take_while_full(
    server: &ManagedServer,
    store: &dyn StoreFactory,
    prefix: &str,
) -> (History, Result<Reply, StoreError>, Reply) {
    let rec = Recorder::new(server_time(server));
    let mut a = connect(store, "a", &server.url(), prefix).await;
    let mut admin = server.admin().await.unwrap();
    let config = |value: &str| {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("SET").arg("maxmemory").arg(value);
        cmd
    };
    let before: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query_async(&mut admin)
        .await
        .unwrap();
    config("1").query_async::<()>(&mut admin).await.unwrap();
    let answer = rec.op("a", &mut a, take("a")).await;
    config(&before[1])
        .query_async::<()>(&mut admin)
        .await
        .unwrap();
    let read = Request::LeaseRead { tree: "t".into() };
    let seen = rec.op("a", &mut a, read).await.unwrap();
    (rec.history(), answer, seen)
}

#[tokio::test]
async fn oom_swallowed_is_caught_by_lease_linearizability() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let builtin = || RedisStoreFactory::new(dir.path().join("kept.sqlite"));

    let sabotaged = OomSwallowed::new(builtin());
    let (history, answer, seen) = take_while_full(&server, &sabotaged, "sp:oom:").await;
    eprintln!("oom-swallowed: take {answer:?}, then read {seen:?}");
    assert!(matches!(answer, Ok(Reply::Granted { .. })), "{answer:?}");
    assert_eq!(sabotaged.invented(), 1);
    // The acknowledged grant did not land (what faults.full-server-refuses
    // judges), and no order of the history explains it.
    assert_eq!(seen, Reply::Lease(None));
    let verdict = linearizable::check(&history);
    assert!(
        matches!(verdict.trees["t"], TreeVerdict::NotLinearizable { .. }),
        "{verdict:?}"
    );

    // The real store refuses with store_full: nothing happened, and the
    // history explains.
    let (history, answer, seen) = take_while_full(&server, &builtin(), "sp:oom2:").await;
    assert_eq!(answer.unwrap_err().kind, ErrorKind::StoreFull);
    assert_eq!(seen, Reply::Lease(None));
    assert!(linearizable::check(&history).all_linearizable());
}

/// The full-server scenario of `faults.full-server-refuses`
/// ([`full_server::run`]) on a server of its own, judged by
/// [`full_server::judge`].
async fn full_server_verdict(store: &dyn StoreFactory) -> full_server::FullServer {
    let server = server().await;
    let clock = server.clock().expect("a virtual clock").clone();
    let mut client = connect(store, "a", &server.url(), "sp:full:").await;
    let rec = WorkloadRecorder {
        history: Arc::new(Mutex::new(History::default())),
        clock,
    };
    let admin = server.admin().await.unwrap();
    let set = |value: &'static str| {
        let mut admin = admin.clone();
        async move {
            redis::cmd("CONFIG")
                .arg("SET")
                .arg("maxmemory")
                .arg(value)
                .query_async::<()>(&mut admin)
                .await
                .map_err(|e| e.to_string())
        }
    };
    let claimed = Contract::COORDINATION.to_vec();
    let room_from = full_server::run(client.as_mut(), &rec, &claimed, set("1"), set("0"))
        .await
        .unwrap();
    let history = rec.history.lock().unwrap().clone();
    full_server::judge(&history, &claimed, room_from)
}

#[tokio::test]
async fn oom_swallowed_is_caught_by_full_server_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let builtin = || RedisStoreFactory::new(dir.path().join("kept.sqlite"));
    let verdict = full_server_verdict(&OomSwallowed::new(builtin())).await;
    eprintln!("oom-swallowed under faults.full-server-refuses: {verdict:?}");
    assert!(!verdict.holds());
    assert_eq!(verdict.refused_full, 0, "every store_full was swallowed");
    assert!(
        verdict.violations.iter().any(|v| v.op == "lease.take"),
        "{verdict:?}"
    );
    let verdict = full_server_verdict(&builtin()).await;
    assert!(verdict.holds(), "{verdict:?}");
}

/// a holds epoch 1 and applies an effect; while that apply is under way,
/// server time passes a's expiry and b takes epoch 2. The fencing verdict
/// judged with the store's durable end state, and a's answer.
async fn zombie_apply(store: SqliteStoreFactory, clock: ManualClock) -> (fencing::Fencing, Reply) {
    let rec = Recorder::new(Time::Manual(clock.clone()));
    let store: Arc<dyn StoreFactory> = Arc::new(store);
    let mut a = connect(store.as_ref(), "a", "", "p:").await;
    let mut b = connect(store.as_ref(), "b", "", "p:").await;
    let granted = rec.op("a", &mut a, take("a")).await.unwrap();
    assert!(
        matches!(granted, Reply::Granted { epoch: 1, .. }),
        "{granted:?}"
    );
    let apply = Request::EffectApply {
        tree: "t".into(),
        holder: "a".into(),
        epoch: 1,
        effect: "e".into(),
        payload: "x".into(),
    };
    let (applied, taken) = tokio::join!(rec.op("a", &mut a, apply), async {
        // The sabotaged apply has read the lease (live) by now and waits.
        tokio::time::sleep(Duration::from_millis(200)).await;
        clock.advance_ms(20_000);
        rec.op("b", &mut b, take("b")).await
    });
    assert!(
        matches!(taken, Ok(Reply::Granted { epoch: 2, .. })),
        "{taken:?}"
    );
    let state = store
        .durable_state("p:")
        .await
        .unwrap()
        .expect("the SQLite store keeps a durable state");
    let end = DurableEnd::from_state(&state);
    (fencing::check(&rec.history(), &end), applied.unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn fence_outside_transaction_is_caught_by_the_durable_order() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let sabotaged = SqliteStoreFactory::new(
        dir.path().join("sabotaged.sqlite"),
        SqliteClock::Manual(clock.clone()),
    )
    .with_fence_outside_transaction(Duration::from_millis(800));
    let (verdict, answer) = zombie_apply(sabotaged, clock).await;
    eprintln!("fence-outside-transaction: a's apply {answer:?} -> {verdict:?}");
    assert_eq!(
        answer,
        Reply::Applied {},
        "the fence read came before b's take"
    );
    match &verdict.violations[..] {
        [FencingViolation::StoredAfterNewerEpoch {
            effect,
            epoch,
            newer_epoch,
            seq,
            newer_seq,
            ..
        }] => {
            assert_eq!((effect.as_str(), *epoch, *newer_epoch), ("e", 1, 2));
            assert!(newer_seq < seq);
        }
        other => panic!("expected the durable-order violation alone, got {other:?}"),
    }

    // The real store fences inside the write's transaction: a's effect is
    // committed before b's takeover, and the same schedule passes.
    let clock = ManualClock::new(1_000);
    let real = SqliteStoreFactory::new(
        dir.path().join("real.sqlite"),
        SqliteClock::Manual(clock.clone()),
    );
    let (verdict, answer) = zombie_apply(real, clock).await;
    assert_eq!(answer, Reply::Applied {});
    assert!(verdict.holds(), "{verdict:?}");
}

#[tokio::test]
async fn every_named_sabotage_is_made_and_the_sqlite_one_keeps_a_durable_state() {
    let dir = tempfile::tempdir().unwrap();
    for named in sabotage::named() {
        let store = sabotage::by_name(named.name, dir.path()).expect("made by name");
        assert!(!named.breaks.is_empty());
        let durable = store.durable_state("p:").await.unwrap();
        let sqlite = named.name == "fence-outside-transaction";
        assert_eq!(durable.is_some(), sqlite, "{}", named.name);
        assert_eq!(store.keeps_state_in_redis(), !sqlite, "{}", named.name);
    }
    assert!(sabotage::by_name("nope", dir.path()).is_none());
}
