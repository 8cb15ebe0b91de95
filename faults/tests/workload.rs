//! The fault workload's targeted episodes on the built-in Redis stores and
//! a real `redis-server`: what each sends, and that the checkers judge it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use faults::evidence::{self, Boundary};
use faults::nemesis::{Fault, Nemesis};
use faults::rate_bounds;
use faults::workload::{self, Clients, LayoutKind, LoseNextReply, Recorder, WorkloadOptions};
use harness::contract::{Call, ErrorKind, Reply, Request, StoreError};
use harness::gate::Gate;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::{Hello, StoreClient, StoreFactory};
use harness::{Happened, History};
use stores::redis::RedisStoreFactory;

async fn clients(factory: &RedisStoreFactory, instance: &str, url: &str) -> Clients {
    let hello = Hello {
        instance: instance.into(),
        redis_url: url.into(),
        prefix: "sp:test:workload:".into(),
        opt_out: None,
    };
    let one = || async { factory.connect(&hello, 0).await.expect("connects").1 };
    Clients {
        lease: one().await,
        queue: one().await,
        rate: one().await,
    }
}

#[tokio::test]
async fn the_episodes_send_a_pause_and_the_rate_bounds_judge_it() {
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("a redis-server starts");
    let clock = server.clock().cloned().expect("a virtual clock");
    let factory = RedisStoreFactory::new(server.dir().join("kept.sqlite"));
    let url = server.url();
    let mut instances = Vec::new();
    for name in ["a", "b"] {
        instances.push((name.to_string(), clients(&factory, name, &url).await));
    }
    let rec = Recorder {
        history: Arc::new(Mutex::new(History::default())),
        clock: clock.clone(),
    };
    // No lever loses a reply here: only the pause is looked at.
    let lever = || LoseNextReply {
        arm: Box::new(|| {}),
        at: Boundary::Gate,
    };
    let levers: Vec<LoseNextReply> = vec![lever(), lever()];
    let opts = WorkloadOptions::new(LayoutKind::Coordination, 7, 1);
    workload::episodes(&opts, &mut instances, &levers, &rec, &[clock]).await;
    let history = rec.history.lock().expect("history").clone();

    let pause_sent = history.events.iter().any(|e| {
        matches!(&e.what, Happened::Invoke(call)
            if matches!(Request::parse(call), Ok(Request::RatePause { .. })))
    });
    assert!(pause_sent, "no rate.pause was sent");
    let paused_answers = history
        .events
        .iter()
        .filter(|e| {
            matches!(
                &e.what,
                Happened::Ok {
                    reply: Reply::Paused { .. },
                    ..
                }
            )
        })
        .count();
    // The pause itself, then the hit and the acquire it refused.
    assert_eq!(paused_answers, 3, "{:#?}", history.events);
    let v = rate_bounds::check(&history);
    assert!(v.holds(), "{v:?}");
    assert_eq!(v.pauses, 3);
}

/// A store that answers `unavailable` to everything once `stuck` is set
/// (after its server restarted, say): it never answers again.
struct Stuck {
    inner: Box<dyn StoreClient>,
    stuck: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl StoreClient for Stuck {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        if self.stuck.load(Ordering::SeqCst) {
            return Err(StoreError::new(ErrorKind::Unavailable, "connection lost"));
        }
        self.inner.call(call, clock_ms).await
    }
}

/// The workload's instances through gates, a restart of the server, and the
/// leases of `stuck` (when given) answering `unavailable` from then on; the
/// history.
async fn restarted(stuck: Option<Arc<AtomicBool>>) -> History {
    let mut server = ManagedServer::start(ServerOptions::default())
        .await
        .expect("a redis-server starts");
    let clock = server.clock().cloned().expect("a virtual clock");
    let factory = RedisStoreFactory::new(server.dir().join("kept.sqlite"));
    let mut gates = Vec::new();
    let mut instances = Vec::new();
    for name in ["a", "b"] {
        let gate = Gate::start(&server.url()).await.expect("a gate");
        let mut c = clients(&factory, name, &gate.url()).await;
        if let Some(flag) = &stuck {
            c.lease = Box::new(Stuck {
                inner: c.lease,
                stuck: flag.clone(),
            });
        }
        gates.push(gate);
        instances.push((name.to_string(), c));
    }
    let rec = Recorder {
        history: Arc::new(Mutex::new(History::default())),
        clock: clock.clone(),
    };
    let opts = WorkloadOptions::new(LayoutKind::Coordination, 3, 3);
    let history = rec.history.clone();
    let nemesis = Nemesis::new(gates.clone());
    let ticker = workload::Ticker::start(vec![clock]);
    workload::run(&opts, instances, &rec, async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        nemesis
            .apply(&mut server, &Fault::RestartServer, &history)
            .await
            .expect("the server restarts");
        if let Some(flag) = &stuck {
            flag.store(true, Ordering::SeqCst);
        }
    })
    .await;
    drop(ticker);
    let _ = server.stop().await;
    let h = rec.history.lock().expect("history").clone();
    h
}

#[tokio::test]
async fn after_a_restart_the_builtin_store_answers_again_and_a_stuck_one_does_not() {
    let lease = |r: &Request| r.op().starts_with("lease.");
    // The built-in store reconnects: its reads after the restart answer.
    let h = restarted(None).await;
    let reads_after = h
        .events
        .iter()
        .filter(|e| matches!(&e.what, Happened::Invoke(c) if c.op == "lease.read"))
        .count();
    assert!(reads_after >= 2, "every instance reads after the faults");
    assert!(evidence::not_recovered(&h, lease).is_empty());
    // A store whose leases answer unavailable from the restart on: every
    // instance sent its reads again and again, and none was answered.
    let h = restarted(Some(Arc::new(AtomicBool::new(false)))).await;
    let stuck = evidence::not_recovered(&h, lease);
    let who: Vec<&str> = stuck.iter().map(|(w, _)| w.as_str()).collect();
    assert_eq!(who, vec!["a", "b"], "{stuck:?}");
    assert!(stuck.iter().all(|&(_, n)| n >= workload::RECOVERY_TRIES));
}
