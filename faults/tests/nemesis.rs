//! The nemesis against a real `redis-server` behind gates: plans are
//! functions of their seed, each fault does what its name says, and every
//! applied fault is in the history.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use faults::nemesis::{
    Ending, Fault, FaultKind, Nemesis, NemesisError, Plan, PlanOptions, Step, NEMESIS,
};
use harness::gate::Gate;
use harness::server::{ManagedServer, ServerOptions};
use harness::{EventKind, Happened, History, NemesisPhase};
use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;

const WAIT: Duration = Duration::from_secs(5);

async fn server() -> ManagedServer {
    ManagedServer::start(ServerOptions::default())
        .await
        .expect("server starts")
}

async fn connect(url: &str, response: Duration) -> MultiplexedConnection {
    let client = redis::Client::open(url).expect("client");
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(WAIT))
        .set_response_timeout(Some(response));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connect")
}

/// Waits until the gate has a fault armed (the nemesis armed it).
async fn armed(gate: &Gate) {
    let deadline = Instant::now() + WAIT;
    while gate.faults().is_empty() {
        assert!(Instant::now() < deadline, "the fault was never armed");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn nemesis_ops(history: &History) -> Vec<(NemesisPhase, String)> {
    history
        .events
        .iter()
        .filter(|e| e.instance == NEMESIS)
        .map(|e| match &e.what {
            Happened::Nemesis { op, note } => (note.phase, op.clone()),
            other => panic!("a nemesis event of another kind: {other:?}"),
        })
        .collect()
}

#[test]
fn a_plan_is_a_function_of_its_seed() {
    let options = PlanOptions::new(7, 3, 20);
    let a = faults::nemesis::draw(&options);
    let b = faults::nemesis::draw(&options);
    assert_eq!(a, b);
    assert_eq!(a.steps.len(), 20);
    let other = faults::nemesis::draw(&PlanOptions::new(8, 3, 20));
    assert_ne!(a.steps, other.steps);
    // Instances stay in range and the drawn kinds are the allowed ones.
    assert!(a
        .steps
        .iter()
        .all(|s| s.fault.instance().is_none_or(|i| i < 3)));
    let only = PlanOptions {
        kinds: vec![FaultKind::Delay, FaultKind::Partition],
        ..PlanOptions::new(7, 2, 30)
    };
    let plan = faults::nemesis::draw(&only);
    assert!(plan
        .steps
        .iter()
        .all(|s| matches!(s.fault.kind(), FaultKind::Delay | FaultKind::Partition)));
    assert!(plan.steps.iter().all(|s| s.after_ms <= only.max_gap_ms));
}

#[test]
fn a_fault_is_recorded_with_its_fields() {
    let f = Fault::Partition {
        instance: 1,
        for_ms: 50,
    };
    assert_eq!(f.op(), "nemesis.partition");
    assert_eq!(
        f.args(),
        serde_json::json!({"instance": 1, "instance_name": "b", "for_ms": 50})
    );
    assert_eq!(Fault::RestartServer.args(), serde_json::json!({}));
}

#[tokio::test]
async fn a_lost_reply_ran_on_the_server_but_never_reached_the_client() {
    let mut server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = Gate::start(&server.url()).await.unwrap();
    let nemesis = Nemesis::new(vec![gate.clone()]);
    let history = Mutex::new(History::default());
    let mut client = connect(&gate.url(), WAIT).await;
    let fault = Fault::LoseReplyAfterApply { instance: 0 };
    let (ending, reply) = tokio::join!(nemesis.apply(&mut server, &fault, &history), async {
        armed(&gate).await;
        client.incr::<_, _, i64>("n", 5).await
    });
    assert_eq!(ending.unwrap(), Ending::Fired);
    let err = reply.unwrap_err();
    assert!(
        !err.is_timeout(),
        "the connection closed, not a timeout: {err:?}"
    );
    let n: i64 = admin.get("n").await.unwrap();
    assert_eq!(n, 5, "the command ran once on the server");
    assert_eq!(gate.recording().len(), 1);
}

#[tokio::test]
async fn a_dropped_command_and_a_reset_never_run() {
    let mut server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = Gate::start(&server.url()).await.unwrap();
    let nemesis = Nemesis::new(vec![gate.clone()]);
    let history = Mutex::new(History::default());

    let mut client = connect(&gate.url(), Duration::from_millis(300)).await;
    let fault = Fault::DropBeforeApply { instance: 0 };
    let (ending, reply) = tokio::join!(nemesis.apply(&mut server, &fault, &history), async {
        armed(&gate).await;
        client.incr::<_, _, i64>("dropped", 1).await
    });
    assert_eq!(ending.unwrap(), Ending::Fired);
    assert!(reply.unwrap_err().is_timeout());

    let mut client = connect(&gate.url(), WAIT).await;
    let fault = Fault::ResetConnection { instance: 0 };
    let (ending, reply) = tokio::join!(nemesis.apply(&mut server, &fault, &history), async {
        armed(&gate).await;
        client.incr::<_, _, i64>("reset", 1).await
    });
    assert_eq!(ending.unwrap(), Ending::Fired);
    assert!(reply.is_err());

    let keys: Vec<String> = admin.keys("*").await.unwrap();
    assert!(keys.is_empty(), "neither command ran: {keys:?}");
}

#[tokio::test]
async fn an_unused_one_shot_fault_is_disarmed() {
    let mut server = server().await;
    let gate = Gate::start(&server.url()).await.unwrap();
    let nemesis = Nemesis::new(vec![gate.clone()]).with_armed_for(Duration::from_millis(50));
    let history = Mutex::new(History::default());
    let fault = Fault::Delay {
        instance: 0,
        ms: 10,
    };
    let ending = nemesis.apply(&mut server, &fault, &history).await.unwrap();
    assert_eq!(ending, Ending::Disarmed);
    assert!(gate.faults().is_empty(), "nothing stays armed");
    let err = nemesis
        .apply(
            &mut server,
            &Fault::ResetConnection { instance: 3 },
            &history,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, NemesisError::NoSuchInstance { .. }), "{err}");
    assert_eq!(
        nemesis_ops(&history.lock().unwrap()).len(),
        2,
        "a refused fault is not recorded"
    );
}

#[tokio::test]
async fn a_restart_keeps_the_keys_and_forgets_the_scripts() {
    let mut server = server().await;
    let mut admin = server.admin().await.unwrap();
    let () = admin.set("kept", "v").await.unwrap();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query_async(&mut admin)
        .await
        .unwrap();
    let gate = Gate::start(&server.url()).await.unwrap();
    let mut before = connect(&gate.url(), WAIT).await;
    let () = before.set("through", "gate").await.unwrap();
    let nemesis = Nemesis::new(vec![gate.clone()]);
    let history = Mutex::new(History::default());
    let ending = nemesis
        .apply(&mut server, &Fault::RestartServer, &history)
        .await
        .unwrap();
    assert_eq!(ending, Ending::Restarted);
    let mut admin = server.admin().await.unwrap();
    let v: String = admin.get("kept").await.unwrap();
    assert_eq!(v, "v");
    let err = redis::cmd("EVALSHA")
        .arg(&sha)
        .arg(0)
        .query_async::<i64>(&mut admin)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("NOSCRIPT"), "{err:?}");
    // Connections through the gate broke; new ones reach the new server.
    assert!(before.get::<_, String>("through").await.is_err());
    let mut after = connect(&gate.url(), WAIT).await;
    let v: String = after.get("through").await.unwrap();
    assert_eq!(v, "gate");
}

#[tokio::test]
async fn a_full_server_refuses_writes_until_restored() {
    let mut server = server().await;
    let mut admin = server.admin().await.unwrap();
    let () = admin.set("before", "v").await.unwrap();
    let nemesis = Nemesis::new(Vec::new());
    let history = Mutex::new(History::default());
    let fault = Fault::FillServer { for_ms: 300 };
    let (ending, refused) = tokio::join!(nemesis.apply(&mut server, &fault, &history), async {
        let deadline = Instant::now() + WAIT;
        loop {
            match admin.set::<_, _, ()>("during", "v").await {
                Err(e) => break e,
                Ok(()) => {
                    assert!(Instant::now() < deadline, "the server never filled");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    });
    assert_eq!(ending.unwrap(), Ending::Healed);
    assert_eq!(refused.code(), Some("OOM"), "{refused:?}");
    let v: String = admin.get("before").await.unwrap();
    assert_eq!(v, "v", "nothing was evicted");
    let () = admin.set("after", "v").await.unwrap();
    let max: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(max[1], "0", "maxmemory is put back");
}

#[tokio::test]
async fn a_paused_instance_sends_its_command_after_the_pause() {
    let mut server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = Gate::start(&server.url()).await.unwrap();
    let nemesis = Nemesis::new(vec![gate.clone()]);
    let history = Mutex::new(History::default());
    let mut client = connect(&gate.url(), WAIT).await;
    let fault = Fault::PauseInstance {
        instance: 0,
        for_ms: 300,
    };
    let (ending, (seen_during, reply)) =
        tokio::join!(nemesis.apply(&mut server, &fault, &history), async {
            let deadline = Instant::now() + WAIT;
            while gate.mode() != harness::gate::Mode::Hold {
                assert!(Instant::now() < deadline, "never paused");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            let sent = client.set::<_, _, ()>("zombie", "late");
            let peek = async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                admin.exists::<_, bool>("zombie").await.unwrap()
            };
            tokio::join!(peek, sent)
        });
    assert_eq!(ending.unwrap(), Ending::Healed);
    assert!(!seen_during, "the command was held during the pause");
    reply.unwrap();
    let mut admin = server.admin().await.unwrap();
    let v: String = admin.get("zombie").await.unwrap();
    assert_eq!(v, "late");
}

#[tokio::test]
async fn every_applied_fault_is_in_the_history() {
    let mut server = server().await;
    let gates = vec![
        Gate::start(&server.url()).await.unwrap(),
        Gate::start(&server.url()).await.unwrap(),
    ];
    let nemesis = Nemesis::new(gates).with_armed_for(Duration::from_millis(20));
    let history = Mutex::new(History::default());
    let plan = Plan {
        seed: 0,
        steps: vec![
            Step {
                after_ms: 0,
                fault: Fault::Partition {
                    instance: 1,
                    for_ms: 20,
                },
            },
            Step {
                after_ms: 5,
                fault: Fault::Delay {
                    instance: 0,
                    ms: 10,
                },
            },
            Step {
                after_ms: 0,
                fault: Fault::FillServer { for_ms: 20 },
            },
            Step {
                after_ms: 0,
                fault: Fault::RestartServer,
            },
        ],
    };
    let endings = nemesis.run(&mut server, &plan, &history).await.unwrap();
    assert_eq!(
        endings,
        [
            Ending::Healed,
            Ending::Disarmed,
            Ending::Healed,
            Ending::Restarted
        ]
    );
    let history = history.into_inner().unwrap();
    let expected: Vec<(NemesisPhase, String)> = plan
        .steps
        .iter()
        .flat_map(|s| {
            [
                (NemesisPhase::Start, s.fault.op()),
                (NemesisPhase::End, s.fault.op()),
            ]
        })
        .collect();
    assert_eq!(nemesis_ops(&history), expected);
    assert!(history
        .events
        .iter()
        .all(|e| e.kind() == EventKind::Nemesis));
    assert_eq!(history.events[0].op(), "nemesis.partition");
    let json = serde_json::to_value(&history).unwrap();
    assert_eq!(json["events"][0]["kind"], "nemesis");
    assert_eq!(json["events"][0]["value"]["phase"], "start");
    assert_eq!(json["events"][0]["value"]["fault"]["instance_name"], "b");
    assert_eq!(json["events"][0]["value"]["fault"]["for_ms"], 20);
    assert!(json["events"][7]["value"]["ending"]
        .as_str()
        .unwrap()
        .contains("restart_server"));
}

#[tokio::test]
async fn a_partitioned_instance_is_cut_off_then_heard_again() {
    let mut server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gates = vec![
        Gate::start(&server.url()).await.unwrap(),
        Gate::start(&server.url()).await.unwrap(),
    ];
    let (a, b) = (gates[0].clone(), gates[1].clone());
    let nemesis = Nemesis::new(gates);
    let history = Mutex::new(History::default());
    let mut cut = connect(&b.url(), Duration::from_millis(100)).await;
    let mut other = connect(&a.url(), WAIT).await;
    let fault = Fault::Partition {
        instance: 1,
        for_ms: 300,
    };
    let (ending, (cut_reply, other_reply)) =
        tokio::join!(nemesis.apply(&mut server, &fault, &history), async {
            let deadline = Instant::now() + WAIT;
            while !b.is_partitioned() {
                assert!(Instant::now() < deadline, "never partitioned");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            (
                cut.set::<_, _, ()>("cut", "v").await,
                other.set::<_, _, ()>("other", "v").await,
            )
        });
    assert_eq!(ending.unwrap(), Ending::Healed);
    assert!(cut_reply.unwrap_err().is_timeout());
    other_reply.unwrap();
    assert!(!admin.exists::<_, bool>("cut").await.unwrap());
    // Healed: a new connection of the cut instance is answered.
    let mut again = connect(&b.url(), WAIT).await;
    let () = again.set("cut", "later").await.unwrap();
    let v: String = admin.get("cut").await.unwrap();
    assert_eq!(v, "later");
}
