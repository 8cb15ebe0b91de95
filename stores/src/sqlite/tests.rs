use std::sync::{Arc, Barrier};

use super::*;
use harness::contract::{ContractModel, Judgement, LeaseView};

fn hello(prefix: &str) -> Hello {
    Hello {
        instance: "a".into(),
        redis_url: String::new(),
        prefix: prefix.into(),
        opt_out: None,
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    factory: SqliteStoreFactory,
    clock: ManualClock,
}

fn fixture(start_ms: i64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_ms);
    let factory = SqliteStoreFactory::new(
        dir.path().join("run/store.db"),
        SqliteClock::Manual(clock.clone()),
    );
    Fixture {
        _dir: dir,
        factory,
        clock,
    }
}

fn take(holder: &str, ttl_ms: i64) -> Request {
    Request::LeaseTake {
        tree: "t".into(),
        holder: holder.into(),
        ttl_ms,
    }
}
fn renew(holder: &str, epoch: i64, ttl_ms: i64) -> Request {
    Request::LeaseRenew {
        tree: "t".into(),
        holder: holder.into(),
        epoch,
        ttl_ms,
    }
}
fn release(holder: &str, epoch: i64) -> Request {
    Request::LeaseRelease {
        tree: "t".into(),
        holder: holder.into(),
        epoch,
    }
}
fn read() -> Request {
    Request::LeaseRead { tree: "t".into() }
}

/// Sends `req`, judges the reply with the harness's model at the store's
/// server time, and answers it.
async fn judged(
    client: &mut SqliteStoreClient,
    model: &mut ContractModel,
    clock: &ManualClock,
    req: Request,
) -> Reply {
    // A wild instance clock: the store must never use it for expiry.
    let observed = client.call(&req.to_call(), -5_000_000).await;
    let verdict = model.judge(&req, clock.now_ms(), -5_000_000, &observed);
    assert_eq!(verdict, Judgement::Agrees, "{req:?} -> {observed:?}");
    observed.unwrap()
}

#[tokio::test]
async fn lease_edge_cases_agree_with_the_model() {
    let f = fixture(1000);
    let mut c = f.factory.connect_sqlite(&hello("p:")).await.unwrap();
    let mut m = ContractModel::default();
    let clock = &f.clock;

    assert_eq!(
        judged(&mut c, &mut m, clock, read()).await,
        Reply::Lease(None)
    );
    let granted = judged(&mut c, &mut m, clock, take("a", 100)).await;
    assert_eq!(
        granted,
        Reply::Granted {
            epoch: 1,
            expires_at_ms: 1100
        }
    );
    let busy = Reply::Busy {
        holder: "a".into(),
        epoch: 1,
        expires_at_ms: 1100,
    };
    assert_eq!(judged(&mut c, &mut m, clock, take("b", 100)).await, busy);
    // The live holder itself is busy too (it may adopt the epoch).
    assert_eq!(judged(&mut c, &mut m, clock, take("a", 100)).await, busy);
    let lost_to_a = Reply::Lost {
        holder: Some("a".into()),
        epoch: Some(1),
    };
    assert_eq!(
        judged(&mut c, &mut m, clock, renew("b", 1, 100)).await,
        lost_to_a
    );
    assert_eq!(
        judged(&mut c, &mut m, clock, renew("a", 2, 100)).await,
        lost_to_a
    );
    assert_eq!(
        judged(&mut c, &mut m, clock, release("b", 1)).await,
        Reply::NotHeld {}
    );
    assert_eq!(
        judged(&mut c, &mut m, clock, release("a", 0)).await,
        Reply::NotHeld {}
    );
    clock.set_ms(1050);
    assert_eq!(
        judged(&mut c, &mut m, clock, renew("a", 1, 100)).await,
        Reply::Renewed {
            expires_at_ms: 1150
        }
    );
    // The lease ends at its expiry instant: a takeover, a newer epoch.
    clock.set_ms(1150);
    assert_eq!(
        judged(&mut c, &mut m, clock, take("b", 100)).await,
        Reply::Granted {
            epoch: 2,
            expires_at_ms: 1250
        }
    );
    // The zombie is refused, and the newer epoch untouched.
    assert_eq!(
        judged(&mut c, &mut m, clock, renew("a", 1, 100)).await,
        Reply::Lost {
            holder: Some("b".into()),
            epoch: Some(2)
        }
    );
    assert_eq!(
        judged(&mut c, &mut m, clock, release("a", 1)).await,
        Reply::NotHeld {}
    );
    assert_eq!(
        judged(&mut c, &mut m, clock, release("b", 2)).await,
        Reply::Released {}
    );
    assert_eq!(
        judged(&mut c, &mut m, clock, read()).await,
        Reply::Lease(Some(LeaseView {
            holder: Some("b".into()),
            epoch: 2,
            expires_at_ms: Some(1250),
            live: false
        }))
    );
    assert_eq!(
        judged(&mut c, &mut m, clock, release("b", 2)).await,
        Reply::NotHeld {}
    );
    assert_eq!(
        judged(&mut c, &mut m, clock, renew("b", 2, 100)).await,
        Reply::Lost {
            holder: None,
            epoch: None
        }
    );
    // Released: the epoch is kept and the next grant counts on.
    let granted = judged(&mut c, &mut m, clock, take("a", 10)).await;
    assert_eq!(
        granted,
        Reply::Granted {
            epoch: 3,
            expires_at_ms: 1160
        }
    );
    // Expired and nobody took it: still never renewed.
    clock.set_ms(1160);
    assert_eq!(
        judged(&mut c, &mut m, clock, renew("a", 3, 100)).await,
        Reply::Lost {
            holder: None,
            epoch: None
        }
    );
    judged(&mut c, &mut m, clock, read()).await;
    let keep = Request::LeaseKeepExecution {
        tree: "t".into(),
        execution: "x1".into(),
    };
    judged(&mut c, &mut m, clock, keep.clone()).await;
    judged(&mut c, &mut m, clock, keep).await;
    assert_eq!(
        judged(
            &mut c,
            &mut m,
            clock,
            Request::LeaseKeptExecutions { tree: "t".into() }
        )
        .await,
        Reply::Executions(vec!["x1".into()])
    );
}

#[tokio::test]
async fn factory_offers_the_lease_contract_and_its_fencing_set() {
    let f = fixture(0);
    assert_eq!(f.factory.spec(), "builtin:sqlite");
    let (info, mut client) = f.factory.connect(&hello("p:"), 0).await.unwrap();
    assert_eq!(info.contracts, vec![Contract::Lease, Contract::Fenced]);
    let hit = Request::RateHit {
        provider: "p".into(),
        limit: 1,
        window_ms: 10,
    };
    let err = client.call(&hit.to_call(), 0).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported);
    let bad = Call {
        op: "lease.take".into(),
        args: serde_json::json!({"tree": "", "holder": "a", "ttl_ms": 1}),
    };
    assert_eq!(
        client.call(&bad, 0).await.unwrap_err().kind,
        ErrorKind::BadRequest
    );
}

#[tokio::test]
async fn prefixes_sharing_a_file_stay_apart() {
    let f = fixture(0);
    let mut one = f.factory.connect_sqlite(&hello("one:")).await.unwrap();
    let mut two = f.factory.connect_sqlite(&hello("two:")).await.unwrap();
    let granted = Reply::Granted {
        epoch: 1,
        expires_at_ms: 100,
    };
    assert_eq!(
        one.call(&take("a", 100).to_call(), 0).await.unwrap(),
        granted
    );
    assert_eq!(
        two.call(&take("b", 100).to_call(), 0).await.unwrap(),
        granted
    );
}

#[tokio::test]
async fn a_zombies_effect_is_fenced_after_a_takeover() {
    let f = fixture(0);
    let mut a = f.factory.connect_sqlite(&hello("p:")).await.unwrap();
    let mut b = f.factory.connect_sqlite(&hello("p:")).await.unwrap();
    a.call(&take("a", 100).to_call(), 0).await.unwrap();
    assert_eq!(
        a.apply_effect("t", "a", 1, "e1", "one").await.unwrap(),
        EffectOutcome::Applied
    );
    f.clock.set_ms(100);
    b.call(&take("b", 100).to_call(), 0).await.unwrap();
    // The zombie reaches the write before the new holder writes anything.
    assert_eq!(
        a.apply_effect("t", "a", 1, "e2", "zombie").await.unwrap(),
        EffectOutcome::Fenced {
            epoch: 2,
            reason: FenceReason::Superseded
        }
    );
    assert_eq!(
        b.apply_effect("t", "b", 2, "e2", "two").await.unwrap(),
        EffectOutcome::Applied
    );
    // The same effect id again is a duplicate, whoever sends it.
    assert_eq!(
        b.apply_effect("t", "b", 2, "e2", "again").await.unwrap(),
        EffectOutcome::Duplicate
    );
    let applied: Vec<_> = a
        .effects("t")
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.effect, e.holder, e.epoch, e.payload))
        .collect();
    assert_eq!(
        applied,
        vec![
            ("e1".into(), "a".into(), 1, "one".into()),
            ("e2".into(), "b".into(), 2, "two".into())
        ]
    );
}

#[tokio::test]
async fn an_expired_or_released_lease_fences_its_own_holder() {
    let f = fixture(0);
    let mut a = f.factory.connect_sqlite(&hello("p:")).await.unwrap();
    assert_eq!(
        a.apply_effect("t", "a", 1, "e0", "").await.unwrap(),
        EffectOutcome::Fenced {
            epoch: 0,
            reason: FenceReason::NoLease
        }
    );
    a.call(&take("a", 100).to_call(), 0).await.unwrap();
    assert_eq!(
        a.apply_effect("t", "b", 1, "e1", "").await.unwrap(),
        EffectOutcome::Fenced {
            epoch: 1,
            reason: FenceReason::NotHolder
        }
    );
    f.clock.set_ms(100);
    assert_eq!(
        a.apply_effect("t", "a", 1, "e1", "").await.unwrap(),
        EffectOutcome::Fenced {
            epoch: 1,
            reason: FenceReason::Expired
        }
    );
    a.call(&take("a", 100).to_call(), 0).await.unwrap();
    a.call(&release("a", 2).to_call(), 0).await.unwrap();
    assert_eq!(
        a.begin_call("t", "a", 2, "c1").await.unwrap(),
        CallOutcome::Fenced {
            epoch: 2,
            reason: FenceReason::Released
        }
    );
    assert_eq!(
        a.apply_effect("", "a", -1, "e", "").await.unwrap_err().kind,
        ErrorKind::BadRequest
    );
}

#[tokio::test]
async fn a_call_is_begun_at_most_once() {
    let f = fixture(0);
    let mut a = f.factory.connect_sqlite(&hello("p:")).await.unwrap();
    let b = f.factory.connect_sqlite(&hello("p:")).await.unwrap();
    a.call(&take("a", 100).to_call(), 0).await.unwrap();
    assert_eq!(
        a.begin_call("t", "a", 1, "c1").await.unwrap(),
        CallOutcome::Begun
    );
    let again = b.begin_call("t", "a", 1, "c1").await.unwrap();
    let CallOutcome::Duplicate { record } = again else {
        panic!("a second begin must be refused, got {again:?}");
    };
    assert_eq!((record.holder.as_str(), record.epoch), ("a", 1));
    assert_eq!(
        a.finish_call("nope", "r").await.unwrap(),
        FinishOutcome::NotBegun
    );
    assert_eq!(
        a.finish_call("c1", "200").await.unwrap(),
        FinishOutcome::Finished
    );
    assert_eq!(
        a.finish_call("c1", "500").await.unwrap(),
        FinishOutcome::AlreadyFinished {
            response: "200".into()
        }
    );
    // A zombie's begun call cannot be finished after a takeover.
    assert_eq!(
        a.begin_call("t", "a", 1, "c2").await.unwrap(),
        CallOutcome::Begun
    );
    f.clock.set_ms(100);
    a.call(&take("b", 100).to_call(), 0).await.unwrap();
    assert_eq!(
        a.finish_call("c2", "late").await.unwrap(),
        FinishOutcome::Fenced {
            epoch: 2,
            reason: FenceReason::Superseded
        }
    );
    let c2 = b.call_record("c2").await.unwrap().unwrap();
    assert_eq!(c2.response, None);
}

#[tokio::test]
async fn the_lease_log_holds_every_change_in_order() {
    let f = fixture(0);
    let mut a = f.factory.connect_sqlite(&hello("p:")).await.unwrap();
    a.call(&take("a", 100).to_call(), 0).await.unwrap();
    a.call(&take("b", 100).to_call(), 0).await.unwrap(); // busy: not logged
    f.clock.set_ms(50);
    a.call(&renew("a", 1, 100).to_call(), 0).await.unwrap();
    f.clock.set_ms(150);
    a.call(&take("b", 100).to_call(), 0).await.unwrap();
    a.call(&renew("a", 1, 100).to_call(), 0).await.unwrap(); // lost: not logged
    a.call(&release("b", 2).to_call(), 0).await.unwrap();
    a.call(&take("c", 100).to_call(), 0).await.unwrap();
    let log = a.lease_log("t").await.unwrap();
    let got: Vec<_> = log
        .iter()
        .map(|e| {
            (
                e.event,
                e.holder.as_str(),
                e.epoch,
                e.at_ms,
                e.expires_at_ms,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (LeaseEvent::Grant, "a", 1, 0, 100),
            (LeaseEvent::Renew, "a", 1, 50, 150),
            (LeaseEvent::Takeover, "b", 2, 150, 250),
            (LeaseEvent::Release, "b", 2, 150, 250),
            (LeaseEvent::Grant, "c", 3, 150, 250),
        ]
    );
    assert_eq!(
        (log[2].previous_holder.as_deref(), log[2].previous_epoch),
        (Some("a"), Some(1))
    );
    assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(a.lease_log("other").await.unwrap().is_empty());
}

#[test]
fn racing_takes_grant_exactly_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let clock = SqliteClock::manual(0);
    let mut dbs: Vec<Db> = (0..2)
        .map(|_| Db::open(&path, "p:", clock.clone()).unwrap())
        .collect();
    for round in 0..10 {
        let tree = format!("t{round}");
        let barrier = Arc::new(Barrier::new(dbs.len()));
        let replies: Vec<Reply> = std::thread::scope(|s| {
            let handles: Vec<_> = dbs
                .iter_mut()
                .enumerate()
                .map(|(i, db)| {
                    let (barrier, tree) = (barrier.clone(), tree.clone());
                    s.spawn(move || {
                        barrier.wait();
                        db.take(&tree, &format!("h{i}"), 1000).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let granted = replies
            .iter()
            .filter(|r| matches!(r, Reply::Granted { epoch: 1, .. }))
            .count();
        let busy = replies
            .iter()
            .filter(|r| matches!(r, Reply::Busy { epoch: 1, .. }))
            .count();
        assert_eq!((granted, busy), (1, 1), "round {round}: {replies:?}");
    }
}

/// A seeded walk of takes, renews, releases and reads by three instances
/// over two trees, the clock moving by small steps (often onto an expiry
/// instant): every reply must agree with the harness's lease model.
#[tokio::test]
async fn a_seeded_walk_agrees_with_the_model() {
    let f = fixture(0);
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(f.factory.connect_sqlite(&hello("p:")).await.unwrap());
    }
    let mut model = ContractModel::default();
    // xorshift: deterministic and dependency-free.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let (mut granted, mut renewed) = (0, 0);
    for _ in 0..300 {
        let who = next(3) as usize;
        let holder = ["a", "b", "c"][who].to_string();
        let tree = ["t", "u"][next(2) as usize].to_string();
        // Mostly the current epoch or the one before: live holders and zombies.
        let record = model.lease.trees.get(&tree);
        let current = record.map_or(0, |r| r.epoch);
        // Half the time the record's holder speaks (sent through its own
        // instance or another: instances share one file).
        let holder = match record {
            Some(r) if next(2) == 0 => r.holder.clone(),
            _ => holder,
        };
        let epoch = (current - next(2) as i64).max(0);
        let ttl_ms = 10 + next(3) as i64 * 10;
        let req = match next(4) {
            0 => Request::LeaseTake {
                tree,
                holder,
                ttl_ms,
            },
            1 => Request::LeaseRenew {
                tree,
                holder,
                epoch,
                ttl_ms,
            },
            2 => Request::LeaseRelease {
                tree,
                holder,
                epoch,
            },
            _ => Request::LeaseRead { tree },
        };
        let reply = judged(&mut clients[who], &mut model, &f.clock, req).await;
        granted += usize::from(matches!(reply, Reply::Granted { .. }));
        renewed += usize::from(matches!(reply, Reply::Renewed { .. }));
        f.clock.advance_ms(next(4) as i64);
    }
    // The walk must have exercised takeovers, not only busy answers.
    assert!(
        granted > 5 && renewed > 5,
        "only {granted} grants, {renewed} renewals"
    );
}

/// A restart (every connection closed, a new factory on the same file)
/// keeps the epoch, the log and the fencing: epoch-monotonic across restarts.
#[tokio::test]
async fn the_file_outlives_its_connections() {
    let f = fixture(0);
    {
        let mut a = f.factory.connect_sqlite(&hello("p:")).await.unwrap();
        a.call(&take("a", 100).to_call(), 0).await.unwrap();
        assert_eq!(
            a.begin_call("t", "a", 1, "c1").await.unwrap(),
            CallOutcome::Begun
        );
    }
    let again = SqliteStoreFactory::new(f.factory.path().to_path_buf(), f.factory.clock().clone());
    let mut b = again.connect_sqlite(&hello("p:")).await.unwrap();
    f.clock.set_ms(100);
    assert_eq!(
        b.call(&take("b", 100).to_call(), 0).await.unwrap(),
        Reply::Granted {
            epoch: 2,
            expires_at_ms: 200
        }
    );
    assert!(matches!(
        b.begin_call("t", "b", 2, "c1").await.unwrap(),
        CallOutcome::Duplicate { .. }
    ));
    let events: Vec<_> = b
        .lease_log("t")
        .await
        .unwrap()
        .iter()
        .map(|e| e.event)
        .collect();
    assert_eq!(events, vec![LeaseEvent::Grant, LeaseEvent::Takeover]);
}

#[test]
fn clocks_read_as_told() {
    let manual = SqliteClock::manual(42);
    assert_eq!(manual.now_ms(), 42);
    let handle = manual.as_manual().unwrap().clone();
    assert_eq!(handle.advance_ms(8), 50);
    assert_eq!(manual.now_ms(), 50);
    handle.set_ms(7);
    assert_eq!(manual.now_ms(), 7);
    assert!(SqliteClock::System.as_manual().is_none());
    // After 2020-01-01 in ms: a system clock read in seconds would fail this.
    assert!(SqliteClock::System.now_ms() > 1_577_836_800_000);
}

/// The fencing set over the wire agrees with the contract's model, call by
/// call: applied, duplicate, fenced once superseded, a call begun once and
/// finished once, a zombie's finish fenced.
#[tokio::test]
async fn fencing_set_on_the_wire_agrees_with_the_model() {
    let f = fixture(0);
    let (_, mut a) = f.factory.connect(&hello("p:"), 0).await.unwrap();
    let effect = |holder: &str, epoch: i64, id: &str| Request::EffectApply {
        tree: "t".into(),
        holder: holder.into(),
        epoch,
        effect: id.into(),
        payload: "x".into(),
    };
    let begin = |holder: &str, epoch: i64, id: &str| Request::CallBegin {
        tree: "t".into(),
        holder: holder.into(),
        epoch,
        call: id.into(),
    };
    let finish = |id: &str, response: &str| Request::CallFinish {
        call: id.into(),
        response: response.into(),
    };
    // (advance the clock to, request, the outcome the model must agree on)
    let steps: Vec<(i64, Request, &str)> = vec![
        (0, effect("a", 1, "e1"), "fenced"),
        (0, take("a", 100), "granted"),
        (10, effect("a", 1, "e1"), "applied"),
        (11, effect("a", 1, "e1"), "duplicate"),
        (12, begin("a", 1, "c1"), "begun"),
        (13, begin("a", 1, "c1"), "duplicate"),
        (14, finish("c1", "r1"), "finished"),
        (15, finish("c1", "r2"), "already_finished"),
        (16, finish("c9", "r"), "not_begun"),
        (17, begin("a", 1, "c2"), "begun"),
        (200, take("b", 100), "granted"),
        (201, effect("a", 1, "e2"), "fenced"),
        (202, finish("c2", "late"), "fenced"),
        (203, effect("b", 2, "e2"), "applied"),
    ];
    let mut model = ContractModel::default();
    for (at, req, want) in steps {
        f.clock.set_ms(at);
        let got = a.call(&req.to_call(), 0).await.unwrap();
        assert_eq!(got.outcome(), want, "{req:?}");
        assert_eq!(
            model.judge(&req, at, 0, &Ok(got.clone())),
            Judgement::Agrees,
            "{req:?} answered {got:?}"
        );
    }
    // The model bites: an apply answered where it must be fenced.
    let stale = effect("a", 1, "e3");
    assert!(matches!(
        model.judge(&stale, 204, 0, &Ok(Reply::Applied {})),
        Judgement::Violates(_)
    ));
}
