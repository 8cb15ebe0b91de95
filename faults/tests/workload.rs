//! The fault workload's targeted episodes on the built-in Redis stores and
//! a real `redis-server`: what each sends, and that the checkers judge it.

use std::sync::{Arc, Mutex};

use faults::rate_bounds;
use faults::workload::{self, Clients, LayoutKind, LoseNextReply, Recorder, WorkloadOptions};
use harness::contract::{Reply, Request};
use harness::server::{ManagedServer, ServerOptions};
use harness::store::redis::RedisStoreFactory;
use harness::store::{Hello, StoreFactory};
use harness::{Happened, History};

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
    let levers: Vec<LoseNextReply> = vec![Box::new(|| {}), Box::new(|| {})];
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
