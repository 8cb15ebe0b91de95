//! Faults at the call boundary on the SQLite fencing set (in-process, no
//! Redis wire): each fault does what its name says to the real store, and
//! every applied fault is in the history.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use faults::call_faults::{CallFault, CallGate, CallNemesis, FaultyClient, CALL_KINDS};
use faults::nemesis::{Ending, Fault, NemesisError, PlanOptions, Step, NEMESIS};
use harness::contract::{Call, ErrorKind, Reply, Request, StoreError};
use harness::store::{Hello, StoreClient, StoreFactory};
use harness::{Happened, History, NemesisPhase};
use stores::sqlite::{ManualClock, SqliteClock, SqliteStoreFactory};

const WAIT: Duration = Duration::from_secs(5);
const START_MS: i64 = 1_000_000;

struct Store {
    _dir: tempfile::TempDir,
    factory: SqliteStoreFactory,
    clock: ManualClock,
}

fn store() -> Store {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = ManualClock::new(START_MS);
    let factory = SqliteStoreFactory::new(
        dir.path().join("store.db"),
        SqliteClock::Manual(clock.clone()),
    );
    Store {
        _dir: dir,
        factory,
        clock,
    }
}

impl Store {
    async fn client(&self, instance: &str) -> Box<dyn StoreClient> {
        let hello = Hello {
            instance: instance.into(),
            redis_url: String::new(),
            prefix: "sp:test:".into(),
            opt_out: None,
        };
        self.factory.connect(&hello, 0).await.expect("connects").1
    }

    /// The tree's lease as a fault-free client reads it.
    async fn lease(&self) -> Option<(Option<String>, i64)> {
        let mut c = self.client("reader").await;
        match c.call(&read(), 0).await.expect("read") {
            Reply::Lease(view) => view.map(|v| (v.holder, v.epoch)),
            other => panic!("not a lease: {other:?}"),
        }
    }
}

fn take(holder: &str, ttl_ms: i64) -> Call {
    Request::LeaseTake {
        tree: "t".into(),
        holder: holder.into(),
        ttl_ms,
    }
    .to_call()
}

fn renew(holder: &str, epoch: i64) -> Call {
    Request::LeaseRenew {
        tree: "t".into(),
        holder: holder.into(),
        epoch,
        ttl_ms: 1_000,
    }
    .to_call()
}

fn read() -> Call {
    Request::LeaseRead { tree: "t".into() }.to_call()
}

fn is_unavailable(r: &Result<Reply, StoreError>) -> bool {
    matches!(r, Err(e) if e.kind == ErrorKind::Unavailable)
}

/// Waits until the gate has a one-shot fault armed.
async fn armed(gate: &CallGate) {
    let deadline = Instant::now() + WAIT;
    while gate.armed().is_none() {
        assert!(Instant::now() < deadline, "the fault was never armed");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn wrapped(s: &Store, gate: &CallGate) -> FaultyClient {
    gate.wrap(s.client("a").await)
}

#[tokio::test]
async fn a_lost_reply_ran_and_a_dropped_or_reset_call_did_not() {
    let s = store();
    let gate = CallGate::new();
    let nemesis = CallNemesis::new(vec![gate.clone()]);
    let history = Mutex::new(History::default());
    let mut a = wrapped(&s, &gate).await;

    for fault in [
        Fault::DropBeforeApply { instance: 0 },
        Fault::ResetConnection { instance: 0 },
    ] {
        let (ending, reply) = tokio::join!(nemesis.apply(&fault, &history), async {
            armed(&gate).await;
            a.call(&take("a", 1_000), 0).await
        });
        assert_eq!(ending.unwrap(), Ending::Fired, "{fault:?}");
        assert!(is_unavailable(&reply), "{fault:?}: {reply:?}");
        assert_eq!(s.lease().await, None, "{fault:?}: the take never ran");
    }
    assert_eq!(gate.ran(), 0);

    let fault = Fault::LoseReplyAfterApply { instance: 0 };
    let (ending, reply) = tokio::join!(nemesis.apply(&fault, &history), async {
        armed(&gate).await;
        a.call(&take("a", 1_000), 0).await
    });
    assert_eq!(ending.unwrap(), Ending::Fired);
    assert!(is_unavailable(&reply), "{reply:?}");
    assert_eq!(
        s.lease().await,
        Some((Some("a".into()), 1)),
        "the take ran once though its reply was lost"
    );
    assert_eq!(gate.ran(), 1);
    // Without a fault the wrapper answers what the store answers.
    let again = a.call(&take("a", 1_000), 0).await.unwrap();
    assert!(
        matches!(again, Reply::Busy { ref holder, epoch: 1, .. } if holder == "a"),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_delayed_call_runs_late_and_a_partition_refuses_calls_until_healed() {
    let s = store();
    let gate = CallGate::new();
    let nemesis = CallNemesis::new(vec![gate.clone()]);
    let history = Mutex::new(History::default());
    let mut a = wrapped(&s, &gate).await;

    let fault = Fault::Delay {
        instance: 0,
        ms: 150,
    };
    let (ending, (reply, took)) = tokio::join!(nemesis.apply(&fault, &history), async {
        armed(&gate).await;
        let sent = Instant::now();
        (a.call(&take("a", 1_000), 0).await, sent.elapsed())
    });
    assert_eq!(ending.unwrap(), Ending::Fired);
    assert!(
        matches!(reply, Ok(Reply::Granted { epoch: 1, .. })),
        "{reply:?}"
    );
    assert!(took >= Duration::from_millis(150), "not delayed: {took:?}");

    let fault = Fault::Partition {
        instance: 0,
        for_ms: 200,
    };
    let (ending, during) = tokio::join!(nemesis.apply(&fault, &history), async {
        let deadline = Instant::now() + WAIT;
        while !gate.is_partitioned() {
            assert!(Instant::now() < deadline, "never partitioned");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        a.call(&renew("a", 1), 0).await
    });
    assert_eq!(ending.unwrap(), Ending::Healed);
    assert!(is_unavailable(&during), "{during:?}");
    assert_eq!(gate.ran(), 1, "the renew never reached the store");
    let after = a.call(&renew("a", 1), 0).await;
    assert!(matches!(after, Ok(Reply::Renewed { .. })), "{after:?}");
}

#[tokio::test]
async fn a_paused_instance_comes_back_a_zombie_with_its_calls_in_order() {
    let s = store();
    let gate = CallGate::new();
    let nemesis = CallNemesis::new(vec![gate.clone()]).with_clock(s.factory.clock().clone());
    let history = Mutex::new(History::default());
    let mut a1 = wrapped(&s, &gate).await;
    let mut a2 = wrapped(&s, &gate).await;
    let mut b = s.client("b").await;
    let granted = a1.call(&take("a", 1_000), 0).await.unwrap();
    assert!(matches!(granted, Reply::Granted { epoch: 1, .. }));

    let fault = Fault::PauseInstance {
        instance: 0,
        for_ms: 300,
    };
    let (ending, (first, second, seen_during)) =
        tokio::join!(nemesis.apply(&fault, &history), async {
            let deadline = Instant::now() + WAIT;
            while !gate.is_paused() {
                assert!(Instant::now() < deadline, "never paused");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            // The zombie's renew comes first, then its second client's read.
            let renew_call = renew("a", 1);
            let renew = a1.call(&renew_call, 0);
            let later = async {
                tokio::time::sleep(Duration::from_millis(30)).await;
                a2.call(&read(), 0).await
            };
            let meanwhile = async {
                tokio::time::sleep(Duration::from_millis(80)).await;
                let held = gate.ran();
                // The lease expires while the instance is stalled, and b
                // takes the tree.
                s.clock.advance_ms(2_000);
                let taken = b.call(&take("b", 1_000), 0).await.unwrap();
                (held, taken)
            };
            tokio::join!(renew, later, meanwhile)
        });
    assert_eq!(ending.unwrap(), Ending::Healed);
    let (ran_during, taken) = seen_during;
    assert_eq!(ran_during, 1, "no call of the paused instance ran");
    assert!(
        matches!(taken, Reply::Granted { epoch: 2, .. }),
        "{taken:?}"
    );
    // The zombie's renew ran after the pause, on a lease it lost.
    let first = first.unwrap();
    assert!(
        matches!(first, Reply::Lost { ref holder, epoch: Some(2) } if holder.as_deref() == Some("b")),
        "{first:?}"
    );
    assert!(
        matches!(second, Ok(Reply::Lease(Some(ref v))) if v.epoch == 2),
        "{second:?}"
    );
    assert_eq!(gate.ran(), 3);
    let h = history.into_inner().unwrap();
    let server_ms: Vec<Option<i64>> = h.events.iter().map(|e| e.server_ms).collect();
    assert_eq!(server_ms, [Some(START_MS), Some(START_MS + 2_000)]);
}

#[tokio::test]
async fn the_call_nemesis_records_what_it_applied_and_refuses_server_faults() {
    let gates = vec![CallGate::new(), CallGate::new()];
    let nemesis = CallNemesis::new(gates.clone()).with_armed_for(Duration::from_millis(20));
    let history = Mutex::new(History::default());
    for fault in [
        Fault::RestartServer,
        Fault::RestartServerCleanly,
        Fault::FillServer { for_ms: 10 },
    ] {
        let err = nemesis.apply(&fault, &history).await.unwrap_err();
        assert!(
            matches!(err, NemesisError::NotAtCallBoundary { .. }),
            "{fault:?}: {err}"
        );
    }
    let err = nemesis
        .apply(&Fault::DropBeforeApply { instance: 2 }, &history)
        .await
        .unwrap_err();
    assert!(matches!(err, NemesisError::NoSuchInstance { .. }), "{err}");
    assert!(
        history.lock().unwrap().events.is_empty(),
        "refused faults are not recorded"
    );

    // A seeded plan of call kinds only runs to the end.
    let options = PlanOptions {
        kinds: CALL_KINDS.to_vec(),
        max_gap_ms: 5,
        max_fault_ms: 10,
        ..PlanOptions::new(11, 2, 6)
    };
    let plan = faults::nemesis::draw(&options);
    assert_eq!(plan, faults::nemesis::draw(&options));
    let endings = nemesis.run(&plan, &history).await.unwrap();
    assert_eq!(endings.len(), 6);
    assert!(gates
        .iter()
        .all(|g| g.armed().is_none() && !g.is_partitioned() && !g.is_paused()));

    let h = history.into_inner().unwrap();
    let seen: Vec<(NemesisPhase, String)> = h
        .events
        .iter()
        .map(|e| {
            assert_eq!(e.instance, NEMESIS);
            match &e.what {
                Happened::Nemesis { op, note } => (note.phase, op.clone()),
                other => panic!("not a nemesis event: {other:?}"),
            }
        })
        .collect();
    let expected: Vec<(NemesisPhase, String)> = plan
        .steps
        .iter()
        .flat_map(|s: &Step| {
            [
                (NemesisPhase::Start, s.fault.op()),
                (NemesisPhase::End, s.fault.op()),
            ]
        })
        .collect();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn an_armed_fault_applies_to_one_call_only() {
    let s = store();
    let gate = CallGate::new();
    let mut a = wrapped(&s, &gate).await;
    gate.arm(CallFault::DropBeforeApply);
    assert!(is_unavailable(&a.call(&read(), 0).await));
    assert_eq!(gate.armed(), None);
    assert!(a.call(&read(), 0).await.is_ok());
    assert_eq!(gate.ran(), 1);
}

#[tokio::test]
async fn held_calls_go_on_in_the_order_they_came() {
    let s = store();
    let gate = CallGate::new();
    let (mut x, mut y, mut z) = (
        wrapped(&s, &gate).await,
        wrapped(&s, &gate).await,
        wrapped(&s, &gate).await,
    );
    gate.pause().await;
    let (tx, ty, tz) = (take("x", 1_000), take("y", 1_000), take("z", 1_000));
    // Staggered, so that they come in this order.
    let after = |ms: u64| tokio::time::sleep(Duration::from_millis(ms));
    let resume = async {
        after(150).await;
        assert_eq!(gate.ran(), 0, "held while paused");
        gate.resume();
    };
    let (rx, ry, rz, ()) = tokio::join!(
        x.call(&tx, 0),
        async {
            after(20).await;
            y.call(&ty, 0).await
        },
        async {
            after(40).await;
            z.call(&tz, 0).await
        },
        resume
    );
    assert!(
        matches!(rx, Ok(Reply::Granted { epoch: 1, .. })),
        "the first to come runs first: {rx:?} {ry:?} {rz:?}"
    );
    for r in [ry, rz] {
        assert!(
            matches!(&r, Ok(Reply::Busy { holder, .. }) if holder == "x"),
            "{r:?}"
        );
    }
}
