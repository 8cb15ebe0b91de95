//! The full server (SPEC 2.6): while `maxmemory` is reached (with
//! `noeviction`), a store refuses writes with a clear `store_full`, loses
//! nothing it acknowledged and grants nothing twice.
//!
//! **The scenario** ([`run`]), one instance, sequential, on a server of the
//! suite's own whose clock stands still: a lease taken, a child saved and a
//! slot acquired while the server has room; then the server is filled
//! (`maxmemory` 1 byte) and every kind of write the contracts have is sent
//! once (take, renew, release, save, claim, complete, acquire, release a
//! slot, hit, pause), plus reads; then the room is given back and
//! everything is read again.
//!
//! **The judge** ([`judge`]) is pure: it replays the history through the
//! contracts' sequential models. A write refused with `store_full` must
//! have changed nothing — a refusal is not applied to the model, so a later
//! read that shows it applied fails; an acknowledged write is applied, so a
//! later read that does not show it fails; any other error (`unavailable`
//! included: the server is up and answering) is not a clean refusal. The
//! judge also demands that the server really was full: at least one write
//! refused with `store_full` (else the check cannot be decided).

use harness::contract::{Contract, ContractModel, ErrorKind, Judgement, Reply, Request};
use harness::store::StoreClient;
use harness::{Happened, History};
use serde::{Deserialize, Serialize};

use crate::ops::{operations, End};

/// What the full-server check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FullServer {
    /// Writes refused with `store_full` while the server was full.
    pub refused_full: usize,
    /// Everything that broke, each naming its invoke event.
    pub violations: Vec<FullServerViolation>,
}

/// One broken promise of a full server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FullServerViolation {
    /// The invoke event of the operation.
    pub invoke: usize,
    /// The operation, e.g. `lease.take`.
    pub op: String,
    /// What was wrong.
    pub why: String,
}

impl FullServer {
    /// Nothing broke and the server was seen refusing.
    pub fn holds(&self) -> bool {
        self.violations.is_empty() && self.refused_full > 0
    }
}

/// Judges a sequential history of one instance (see the module docs).
/// Operations of contracts outside `claimed` are not judged.
pub fn judge(history: &History, claimed: &[Contract]) -> FullServer {
    let mut model = ContractModel::default();
    let mut found = FullServer::default();
    let ops = operations(history, |_| true);
    for op in ops {
        if !claimed.contains(&op.request.contract()) {
            continue;
        }
        let event = &history.events[op.invoke];
        let server_ms = event.server_ms.unwrap_or_default();
        let violation = |why: String| FullServerViolation {
            invoke: op.invoke,
            op: op.request.op().to_string(),
            why,
        };
        match op.end {
            End::Reply(_, reply) => {
                if let Judgement::Violates(why) =
                    model.judge(&op.request, server_ms, op.clock_ms, &Ok(reply.clone()))
                {
                    found.violations.push(violation(why));
                }
            }
            End::Refused | End::Unknown => {
                let error = history
                    .events
                    .iter()
                    .skip(op.invoke + 1)
                    .find(|e| e.instance == event.instance)
                    .and_then(|e| match &e.what {
                        Happened::Fail { error, .. } | Happened::Info { error, .. } => {
                            Some(error.clone())
                        }
                        _ => None,
                    });
                match error {
                    Some(e) if e.kind == ErrorKind::StoreFull => found.refused_full += 1,
                    Some(e) => found.violations.push(violation(format!(
                        "answered {e} on a server that stayed up: a full server's refusal must be store_full, anything else must land"
                    ))),
                    None => found
                        .violations
                        .push(violation("never answered, on a server that stayed up".into())),
                }
            }
        }
    }
    found
}

/// The scenario's one instance.
const WHO: &str = "a";

/// Sends the scenario's requests as instance `a` on `client`, filling the
/// server between the first part and the second with `fill` and emptying it
/// with `unfill`; every request and answer recorded in `rec`.
pub async fn run<F, U>(
    client: &mut dyn StoreClient,
    rec: &crate::workload::Recorder,
    claimed: &[Contract],
    fill: F,
    unfill: U,
) -> Result<(), String>
where
    F: std::future::Future<Output = Result<(), String>>,
    U: std::future::Future<Output = Result<(), String>>,
{
    let who = WHO;
    let take = |tree: &str| Request::LeaseTake {
        tree: tree.into(),
        holder: who.into(),
        ttl_ms: 60_000,
    };
    let before = vec![
        take("room"),
        Request::QueueSave {
            child: "saved-with-room".into(),
            depth: 0,
            payload: "p".into(),
        },
        Request::RateAcquireSlot {
            provider: "slots".into(),
            holder: who.into(),
            limit: 5,
            ttl_ms: 60_000,
        },
    ];
    let (mut slot, mut epoch) = (None, None);
    for answer in send(client, rec, claimed, &before).await {
        match answer {
            Ok(Reply::Acquired { slot: s }) => slot = Some(s),
            Ok(Reply::Granted { epoch: e, .. }) => epoch = Some(e),
            _ => {}
        }
    }
    fill.await?;
    let mut full = vec![
        take("full"),
        Request::QueueSave {
            child: "saved-when-full".into(),
            depth: 0,
            payload: "p".into(),
        },
        Request::QueueClaim {
            instance: who.into(),
            claim_ttl_ms: 60_000,
        },
        Request::RateAcquireSlot {
            provider: "slots-full".into(),
            holder: who.into(),
            limit: 5,
            ttl_ms: 60_000,
        },
        Request::RateHit {
            provider: "hits-full".into(),
            limit: 5,
            window_ms: 60_000,
        },
        Request::RatePause {
            provider: "paused-full".into(),
            until_ms: i64::MAX / 4,
        },
        Request::LeaseRead {
            tree: "room".into(),
        },
        Request::QueueRead {
            child: "saved-with-room".into(),
        },
    ];
    if let Some(epoch) = epoch {
        full.push(Request::LeaseRenew {
            tree: "room".into(),
            holder: who.into(),
            epoch,
            ttl_ms: 120_000,
        });
    }
    if let Some(slot) = slot {
        full.push(Request::RateReleaseSlot {
            provider: "slots".into(),
            slot,
        });
    }
    let mut claimed_child = None;
    for answer in send(client, rec, claimed, &full).await {
        if let Ok(Reply::Claimed { child, attempt, .. }) = answer {
            claimed_child = Some((child, attempt));
        }
    }
    let mut last = Vec::new();
    if let Some((child, attempt)) = claimed_child {
        last.push(Request::QueueComplete {
            child,
            instance: who.into(),
            attempt,
        });
    }
    if let Some(epoch) = epoch {
        last.push(Request::LeaseRelease {
            tree: "room".into(),
            holder: who.into(),
            epoch,
        });
    }
    send(client, rec, claimed, &last).await;
    unfill.await?;
    let after = vec![
        Request::LeaseRead {
            tree: "room".into(),
        },
        Request::LeaseRead {
            tree: "full".into(),
        },
        Request::QueueRead {
            child: "saved-with-room".into(),
        },
        Request::QueueRead {
            child: "saved-when-full".into(),
        },
        Request::RateRead {
            provider: "slots".into(),
        },
        Request::RateRead {
            provider: "slots-full".into(),
        },
        Request::RateRead {
            provider: "paused-full".into(),
        },
        take("full"),
        Request::QueueClaim {
            instance: who.into(),
            claim_ttl_ms: 60_000,
        },
    ];
    send(client, rec, claimed, &after).await;
    Ok(())
}

/// Sends, as the scenario's one instance, each request of `reqs` whose
/// contract is in `claimed`, in order; their answers.
async fn send(
    client: &mut dyn StoreClient,
    rec: &crate::workload::Recorder,
    claimed: &[Contract],
    reqs: &[Request],
) -> Vec<Result<Reply, harness::contract::StoreError>> {
    let mut answers = Vec::new();
    for req in reqs.iter().filter(|r| claimed.contains(&r.contract())) {
        answers.push(rec.call(WHO, client, req).await);
    }
    answers
}
