//! The full server (docs/CONTRACTS.md §1.6): while `maxmemory` is reached (with
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
//! refused with `store_full` (else the check cannot be decided); and once
//! the room is given back (the event [`run`] returns), a `store_full`
//! refusal is a failure too.

use harness::contract::{Contract, ContractModel, ErrorKind, Judgement, Reply, Request};
use harness::store::StoreClient;
use harness::{Happened, History};

use crate::ops::{operations, End};
pub use model::findings::full_server::{FullServer, FullServerViolation};

/// Judges a sequential history of one instance (see the module docs);
/// the server has room again from event `room_from` on. Operations of
/// contracts outside `claimed` are not judged.
pub fn judge(history: &History, claimed: &[Contract], room_from: usize) -> FullServer {
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
            // The store does not offer it: nothing happened, nothing to
            // blame (PROTOCOL: `unsupported` skips what it is about).
            End::Declined => {
                let message = history
                    .events
                    .iter()
                    .skip(op.invoke + 1)
                    .find(|e| e.instance == event.instance)
                    .and_then(|e| match &e.what {
                        Happened::Fail { error, .. } => Some(error.message.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                found
                    .declined
                    .push(format!("{}: unsupported: {message}", op.request.op()));
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
                    Some(e) if e.kind == ErrorKind::StoreFull && op.invoke >= room_from => found
                        .violations
                        .push(violation(format!(
                            "answered {e} after the room was given back"
                        ))),
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
/// with `unfill`; every request and answer recorded in `rec`. Answers the
/// index of the first event after the room was given back.
pub async fn run<F, U>(
    client: &mut dyn StoreClient,
    rec: &crate::workload::Recorder,
    claimed: &[Contract],
    fill: F,
    unfill: U,
) -> Result<usize, String>
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
    let room_from = rec.history.lock().map_or(0, |h| h.events.len());
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
    Ok(room_from)
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

#[cfg(test)]
mod tests {
    use super::*;
    use harness::contract::{LeaseView, StoreError};

    const ALL: [Contract; 3] = Contract::COORDINATION;

    fn take(tree: &str) -> Request {
        Request::LeaseTake {
            tree: tree.into(),
            holder: WHO.into(),
            ttl_ms: 60_000,
        }
    }

    fn read(tree: &str) -> Request {
        Request::LeaseRead { tree: tree.into() }
    }

    fn sent(h: &mut History, req: Request, out: Result<Reply, StoreError>) {
        let call = req.to_call();
        h.invoke(WHO, &call, Some(0), 0);
        h.complete(WHO, &call.op, &out, Some(0), 0);
    }

    fn full() -> Result<Reply, StoreError> {
        Err(StoreError::new(ErrorKind::StoreFull, "OOM"))
    }

    fn granted() -> Result<Reply, StoreError> {
        Ok(Reply::Granted {
            epoch: 1,
            expires_at_ms: 60_000,
        })
    }

    fn live() -> Result<Reply, StoreError> {
        Ok(Reply::Lease(Some(LeaseView {
            holder: Some(WHO.into()),
            epoch: 1,
            expires_at_ms: Some(60_000),
            live: true,
        })))
    }

    #[test]
    fn a_clean_refusal_then_the_write_after_the_room_came_back_holds() {
        let mut h = History::default();
        sent(&mut h, take("t"), full());
        let room_from = h.events.len();
        sent(&mut h, read("t"), Ok(Reply::Lease(None)));
        sent(&mut h, take("t"), granted());
        let v = judge(&h, &ALL, room_from);
        assert!(v.holds(), "{v:?}");
        assert_eq!(v.refused_full, 1);
    }

    #[test]
    fn a_grant_that_never_landed_fails() {
        let mut h = History::default();
        sent(&mut h, take("t"), granted());
        let room_from = h.events.len();
        sent(&mut h, read("t"), Ok(Reply::Lease(None)));
        let v = judge(&h, &ALL, room_from);
        assert!(!v.holds() && !v.violations.is_empty(), "{v:?}");
    }

    #[test]
    fn a_refusal_that_landed_anyway_fails() {
        let mut h = History::default();
        sent(&mut h, take("t"), full());
        let room_from = h.events.len();
        sent(&mut h, read("t"), live());
        assert!(!judge(&h, &ALL, room_from).violations.is_empty());
    }

    #[test]
    fn unavailable_or_store_full_with_room_is_no_clean_refusal() {
        let mut h = History::default();
        sent(&mut h, take("t"), full());
        sent(
            &mut h,
            take("u"),
            Err(StoreError::new(ErrorKind::Unavailable, "OOM")),
        );
        let room_from = h.events.len();
        sent(&mut h, take("v"), full());
        let v = judge(&h, &ALL, room_from);
        assert_eq!(v.violations.len(), 2, "{v:?}");
        assert_eq!(v.refused_full, 1);
    }

    #[test]
    fn an_unsupported_answer_is_declined_never_a_violation() {
        let mut h = History::default();
        sent(&mut h, take("t"), full());
        let no = StoreError::new(ErrorKind::Unsupported, "no pauses here");
        let pause = Request::RatePause {
            provider: "p".into(),
            until_ms: 5,
        };
        sent(&mut h, pause, Err(no));
        let v = judge(&h, &[Contract::Lease, Contract::Rate], usize::MAX);
        assert!(v.violations.is_empty(), "{v:?}");
        assert_eq!(v.declined, vec!["rate.pause: unsupported: no pauses here"]);
    }

    #[test]
    fn a_server_that_never_refused_is_not_decided() {
        let mut h = History::default();
        sent(&mut h, take("t"), granted());
        let room_from = h.events.len();
        sent(&mut h, read("t"), live());
        let v = judge(&h, &ALL, room_from);
        assert!(v.violations.is_empty() && !v.holds(), "{v:?}");
    }
}
