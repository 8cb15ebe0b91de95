//! The nemesis's faults that used to be left out, against a real
//! `redis-server`: a partition cuts set-up commands too, healing it frees
//! the connections that went silent at once, and a clean restart shuts the
//! server down cleanly before starting it on its data.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use faults::nemesis::{Ending, Fault, FaultKind, Nemesis, NEMESIS};
use harness::gate::Gate;
use harness::server::{ManagedServer, ServerOptions};
use harness::{Happened, History, NemesisPhase};
use redis::AsyncCommands;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(5);
/// How long a silent connection is watched for an answer during the cut.
const SILENCE: Duration = Duration::from_millis(150);

async fn server() -> ManagedServer {
    ManagedServer::start(ServerOptions::default())
        .await
        .expect("server starts")
}

/// A RESP array of bulk strings.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend(format!("${}\r\n{a}\r\n", a.len()).into_bytes());
    }
    out
}

/// What a raw connection reads within `within`: `None` if nothing came
/// (silence), `Some(Ok(bytes))` for data (empty: closed), `Some(Err)` for
/// a reset.
async fn read_within(conn: &mut TcpStream, within: Duration) -> Option<std::io::Result<Vec<u8>>> {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(within, conn.read(&mut buf)).await {
        Err(_) => None,
        Ok(Ok(n)) => Some(Ok(buf[..n].to_vec())),
        Ok(Err(e)) => Some(Err(e)),
    }
}

/// Whether a read's result says the connection ended (closed or reset)
/// without an answer.
fn ended_without_answer(read: &std::io::Result<Vec<u8>>) -> bool {
    match read {
        Ok(bytes) => bytes.is_empty(),
        Err(_) => true,
    }
}

#[tokio::test]
async fn a_partition_cuts_set_up_commands_and_its_heal_frees_silent_connections() {
    let mut server = server().await;
    let mut admin = server.admin().await.unwrap();
    let gate = Gate::start(&server.url()).await.unwrap();
    let nemesis = Nemesis::new(vec![gate.clone()]);
    let history = Mutex::new(History::default());
    // Opened before the cut: its scheduled command must be cut too.
    let mut old = TcpStream::connect(gate.local_addr()).await.unwrap();
    let script = "return 7";
    let fault = Fault::Partition {
        instance: 0,
        for_ms: 400,
    };
    let (ending, (silent, freed_after)) =
        tokio::join!(nemesis.apply(&mut server, &fault, &history), async {
            let deadline = Instant::now() + WAIT;
            while !gate.is_partitioned() {
                assert!(Instant::now() < deadline, "never partitioned");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            old.write_all(&resp(&["SET", "cut", "v"])).await.unwrap();
            // A reconnecting client's set-up chatter: a new connection's
            // PING and SCRIPT LOAD.
            let mut ping = TcpStream::connect(gate.local_addr()).await.unwrap();
            ping.write_all(&resp(&["PING"])).await.unwrap();
            let mut load = TcpStream::connect(gate.local_addr()).await.unwrap();
            load.write_all(&resp(&["SCRIPT", "LOAD", script]))
                .await
                .unwrap();
            // Watched together, well within the partition.
            let (a, b, c) = tokio::join!(
                read_within(&mut old, SILENCE),
                read_within(&mut ping, SILENCE),
                read_within(&mut load, SILENCE)
            );
            let silent = [a.is_none(), b.is_none(), c.is_none()];
            // Now wait for the heal: each connection must end at once,
            // not when a client timeout would have fired.
            while gate.is_partitioned() {
                assert!(Instant::now() < deadline, "never healed");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            let healed = Instant::now();
            let mut freed = Vec::new();
            for conn in [&mut old, &mut ping, &mut load] {
                let read = read_within(conn, WAIT).await;
                freed.push(read.as_ref().is_some_and(ended_without_answer));
            }
            (
                silent,
                freed.into_iter().all(|f| f).then(|| healed.elapsed()),
            )
        });
    assert_eq!(ending.unwrap(), Ending::Healed);
    assert_eq!(
        silent,
        [true, true, true],
        "no command, set-up or scheduled, is answered during the partition"
    );
    let freed_after = freed_after.expect("every silent connection ended without an answer");
    assert!(
        freed_after < Duration::from_secs(1),
        "the heal frees silent connections at once, not after {freed_after:?}"
    );
    // None of the cut commands ran.
    assert!(!admin.exists::<_, bool>("cut").await.unwrap());
    let sha = redis::Script::new(script).get_hash().to_string();
    let loaded: Vec<bool> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(&sha)
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(
        loaded,
        [false],
        "the cut SCRIPT LOAD never reached the server"
    );
    // Healed: a new connection is answered, set-up commands included.
    let mut again = TcpStream::connect(gate.local_addr()).await.unwrap();
    again.write_all(&resp(&["PING"])).await.unwrap();
    let pong = read_within(&mut again, WAIT).await.unwrap().unwrap();
    assert_eq!(pong, b"+PONG\r\n");
}

/// How many clean exits the server's log records ("ready to exit").
fn clean_exits(server: &ManagedServer) -> usize {
    std::fs::read_to_string(server.log_path())
        .unwrap_or_default()
        .matches("ready to exit")
        .count()
}

#[tokio::test]
async fn a_clean_restart_shuts_down_cleanly_and_keeps_the_data() {
    let mut server = server().await;
    let mut admin = server.admin().await.unwrap();
    let () = admin.set("kept", "v").await.unwrap();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query_async(&mut admin)
        .await
        .unwrap();
    let nemesis = Nemesis::new(Vec::new());
    let history = Mutex::new(History::default());

    // A crash-restart is no clean shutdown: the log shows no clean exit.
    let ending = nemesis
        .apply(&mut server, &Fault::RestartServer, &history)
        .await
        .unwrap();
    assert_eq!(ending, Ending::Restarted);
    assert_eq!(clean_exits(&server), 0, "SIGKILL leaves no clean exit");

    let pid_before = server.pid();
    let ending = nemesis
        .apply(&mut server, &Fault::RestartServerCleanly, &history)
        .await
        .unwrap();
    assert_eq!(ending, Ending::Restarted);
    assert_eq!(clean_exits(&server), 1, "the server shut down cleanly");
    assert_ne!(server.pid(), pid_before, "a new process runs");

    let mut admin = server.admin().await.unwrap();
    let v: String = admin.get("kept").await.unwrap();
    assert_eq!(v, "v", "the data survives");
    let err = redis::cmd("EVALSHA")
        .arg(&sha)
        .arg(0)
        .query_async::<i64>(&mut admin)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("NOSCRIPT"), "{err:?}");

    // The old process exited by itself, with success.
    let status = server.restart_clean().await.unwrap();
    assert!(
        status.is_some_and(|s| s.success()),
        "a clean shutdown exits 0: {status:?}"
    );

    let history = history.into_inner().unwrap();
    let ops: Vec<(NemesisPhase, &str)> = history
        .events
        .iter()
        .filter(|e| e.instance == NEMESIS)
        .filter_map(|e| match &e.what {
            Happened::Nemesis { op, note } => Some((note.phase, op.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        ops,
        [
            (NemesisPhase::Start, "nemesis.restart_server"),
            (NemesisPhase::End, "nemesis.restart_server"),
            (NemesisPhase::Start, "nemesis.restart_server_cleanly"),
            (NemesisPhase::End, "nemesis.restart_server_cleanly"),
        ]
    );
    assert!(FaultKind::ALL.contains(&FaultKind::RestartServerCleanly));
}
