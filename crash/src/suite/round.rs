//! One kill round: the workloads, the kill at its seeded moment, the probe of
//! the down server, the restart and the read-back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::contract::{Contract, Request};
use harness::store::{Hello, StoreFactory};
use harness::History;

use crate::backend::CrashBackend;
use crate::observe::observe;
use crate::verify::{judge_round, Round};
use crate::workload::{self, wall_ms, Acked};

use super::series::{Probe, KINDS_WAIT, MIN_ACKED_PER_ROUND, PROBE_WAIT, WORKLOAD_TIMEOUT};
use super::CrashConfig;

/// Who writes in a kill round: the store, storeproof's reference store
/// beside it (demonstrations), and whether the store is probed while the
/// server is down.
pub(super) struct Writers<'a> {
    pub(super) store: &'a Arc<dyn StoreFactory>,
    pub(super) reference: Option<&'a Arc<dyn StoreFactory>>,
    pub(super) probe: bool,
}

/// What one kill showed: the store's round, the reference store's, and
/// what the store did while the server was down.
pub(super) struct KillRound {
    pub(super) store: Round,
    pub(super) reference: Option<Round>,
    pub(super) probe: Option<Probe>,
}

/// The reference store's key prefix in a round: beside the store's, never
/// under it (`…o0:` → `…o0r:`), so no scan of the store's prefix meets it.
pub(super) fn reference_prefix(prefix: &str) -> String {
    format!("{}r:", prefix.strip_suffix(':').unwrap_or(prefix))
}

/// One store's workload in a round: its history and its instances.
pub(super) struct Workload {
    pub(super) history: Arc<Mutex<History>>,
    pub(super) tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Workload {
    pub(super) async fn start(
        factory: &Arc<dyn StoreFactory>,
        hello: impl Fn(usize) -> Hello,
        config: &CrashConfig,
        seed: u64,
        contracts: &[Contract],
        stop: &Arc<AtomicBool>,
    ) -> Result<Workload, String> {
        let history = Arc::new(Mutex::new(History::default()));
        let tasks = workload::start(
            factory,
            hello,
            config.instances,
            seed,
            contracts,
            &history,
            stop,
        )
        .await?;
        Ok(Workload { history, tasks })
    }

    /// What it acknowledged so far (the history is short until the kill
    /// may land: reading it whole is cheap).
    pub(super) fn acked(&self) -> Acked {
        self.history
            .lock()
            .map(|h| Acked::from_history(&h))
            .unwrap_or_default()
    }

    /// Waits for its instances (they stop on their errors) and returns its history.
    pub(super) async fn end(self) -> Result<History, String> {
        for t in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
        }
        let history = self
            .history
            .lock()
            .map_err(|_| "the history of the workload is unreadable".to_string())?
            .clone();
        Ok(history)
    }
}

/// One kill: workload (the store's, and the reference store's beside it in
/// a demonstration), kill, the probe of the down server, restart,
/// read-back, judgement. `Err` is harness trouble.
#[allow(clippy::too_many_arguments)]
pub(super) async fn kill_round(
    writers: Writers<'_>,
    hello: &(dyn Fn(String) -> Hello + Sync),
    config: &CrashConfig,
    seed: u64,
    delay_ms: u64,
    power: bool,
    server: &mut dyn CrashBackend,
    k: usize,
) -> Result<KillRound, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let store = Workload::start(
        writers.store,
        |i| hello(format!("w{i}")),
        config,
        seed,
        &config.contracts,
        &stop,
    )
    .await?;
    let reference_hello = |instance: String| {
        let h = hello(instance);
        Hello {
            prefix: reference_prefix(&h.prefix),
            ..h
        }
    };
    let reference = match writers.reference {
        Some(f) => Some(
            Workload::start(
                f,
                |i| reference_hello(format!("ref{i}")),
                config,
                seed.rotate_left(17),
                &Contract::COORDINATION,
                &stop,
            )
            .await
            .map_err(|e| format!("the reference store: {e}"))?,
        ),
        None => None,
    };
    // The kill lands at a seeded moment once the workload is going: enough
    // writes, and one of each kind the store is sent (or a few seconds more).
    let deadline = Instant::now() + WORKLOAD_TIMEOUT;
    let mut kinds_deadline = None;
    loop {
        let acked = store.acked();
        let enough = acked.writes >= MIN_ACKED_PER_ROUND
            && reference
                .as_ref()
                .is_none_or(|r| r.acked().writes >= MIN_ACKED_PER_ROUND);
        if enough {
            let until = *kinds_deadline.get_or_insert_with(|| Instant::now() + KINDS_WAIT);
            if acked.kinds_missing(&config.contracts).is_empty() || Instant::now() > until {
                break;
            }
        } else if Instant::now() > deadline {
            stop.store(true, Ordering::Relaxed);
            let why = store
                .history
                .lock()
                .map(|h| workload::stopped(&h).join("; "))
                .unwrap_or_default();
            return Err(format!(
                "the workload acknowledged {} writes in {} s, too few to crash it{}",
                acked.writes,
                WORKLOAD_TIMEOUT.as_secs(),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({why})")
                }
            ));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    // The kill lands while the instances write; they stop on their errors.
    let killed = if power {
        server.power_loss().await
    } else {
        server.kill().await
    };
    stop.store(true, Ordering::Relaxed);
    let history = store.end().await?;
    let reference_history = match reference {
        Some(r) => Some(r.end().await?),
        None => None,
    };
    killed.map_err(|e| format!("could not kill the server: {e}"))?;
    let probe = if writers.probe {
        Some(
            probe_down_server(
                writers.store,
                hello(format!("prober{k}")),
                &config.contracts,
                &server.url(),
            )
            .await,
        )
    } else {
        None
    };
    server
        .restart()
        .await
        .map_err(|e| format!("could not restart the server: {e}"))?;
    let store = verify(
        writers.store,
        hello(format!("verifier{k}")),
        &config.contracts,
        k,
        &history,
    )
    .await?;
    let reference = match (writers.reference, reference_history) {
        (Some(f), Some(h)) => Some(
            verify(
                f,
                reference_hello(format!("verifier-ref{k}")),
                &Contract::COORDINATION,
                k,
                &h,
            )
            .await
            .map_err(|e| format!("the reference store: {e}"))?,
        ),
        _ => None,
    };
    Ok(KillRound {
        store,
        reference,
        probe,
    })
}

/// Reads back after the restart, as a new instance `h`, what `history`
/// acknowledged, and judges it (kill `k`, from 0).
pub(super) async fn verify(
    factory: &Arc<dyn StoreFactory>,
    h: Hello,
    contracts: &[Contract],
    k: usize,
    history: &History,
) -> Result<Round, String> {
    let acked = Acked::from_history(history);
    let (_, mut client) = factory
        .connect(&h, wall_ms())
        .await
        .map_err(|e| format!("the store could not connect after the restart: {e}"))?;
    let queue = contracts.contains(&Contract::Queue);
    let seen = observe(&mut client, &acked, queue, &h.instance).await?;
    Ok(judge_round(k + 1, history, &seen))
}

/// A new instance of the store, while the server is down: its hello, then
/// one write of a contract it claims (names no workload request uses, so
/// nothing judged depends on it even if it lands after the restart). A write
/// acknowledged is held against the store only once storeproof's own `PING`
/// of `server_url` confirms the server was down ([`Probe::ServerUp`] else).
pub(super) async fn probe_down_server(
    factory: &Arc<dyn StoreFactory>,
    hello: Hello,
    contracts: &[Contract],
    server_url: &str,
) -> Probe {
    let write = if contracts.contains(&Contract::Lease) {
        Request::LeaseTake {
            tree: "tree-probe".into(),
            holder: hello.instance.clone(),
            ttl_ms: LEASE_MS_PROBE,
        }
    } else if contracts.contains(&Contract::Queue) {
        Request::QueueSave {
            child: "child-probe".into(),
            depth: 0,
            payload: "probe".into(),
        }
    } else {
        Request::RatePause {
            provider: "provider-probe".into(),
            until_ms: wall_ms() + 1_000,
        }
    };
    let asked = async {
        let (_, mut client) = match factory.connect(&hello, wall_ms()).await {
            Ok(c) => c,
            Err(e) => return Probe::Refused(format!("hello answered {e}")),
        };
        match client.call(&write.to_call(), wall_ms()).await {
            Ok(reply) => Probe::Acknowledged(format!(
                "hello was answered ok, and {} answered {}",
                write.op(),
                crate::verify::words(&reply)
            )),
            Err(e) => Probe::Refused(format!("{} answered {e}", write.op())),
        }
    };
    match tokio::time::timeout(PROBE_WAIT, asked).await {
        Ok(Probe::Acknowledged(what)) if harness::server::answers_ping(server_url).await => {
            Probe::ServerUp(what)
        }
        Ok(probe) => probe,
        Err(_) => Probe::Silent,
    }
}

/// The lease of the probe's take: short, as the workload's.
pub(super) const LEASE_MS_PROBE: i64 = workload::LEASE_MS;
