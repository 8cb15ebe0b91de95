//! Reading back what a killed store kept: after the restart, the verifier
//! asks the store about everything acknowledged before the kill (leases,
//! children, claims, pauses) and what a next take gets. The answers become
//! an [`Observed`], which [`crate::verify::judge_round`] judges without I/O.

use std::collections::BTreeSet;
use std::time::Duration;

use harness::contract::{ErrorKind, Reply, Request};
use harness::store::StoreClient;

use crate::verify::{Answer, Drained, LeaseRead, NextTake, Observed, TakeOutcome};
use crate::workload::{wall_ms, Acked, CLAIM_MS, LEASE_MS};

/// Asks the store after the restart: `Ok` with its reply or its own
/// refusal; `Err` is harness trouble (the adapter failed, the server cannot
/// be reached), and the round cannot be decided.
async fn ask(
    client: &mut Box<dyn StoreClient>,
    req: &Request,
    item: &str,
) -> Result<Answer, String> {
    match client.call(&req.to_call(), wall_ms()).await {
        Ok(reply) => Ok(Answer::Reply(reply)),
        Err(e) if matches!(e.kind, ErrorKind::AdapterFailed | ErrorKind::Unavailable) => Err(
            format!("{} of {item} after the restart answered {e}", req.op()),
        ),
        Err(e) if e.kind == ErrorKind::Unsupported => Ok(Answer::Unsupported(format!(
            "{} after the restart answered {e}",
            req.op()
        ))),
        Err(e) => Ok(Answer::Refused(format!(
            "{} after the restart answered {e}",
            req.op()
        ))),
    }
}

/// Reads back from the restarted server everything `acked` says was
/// acknowledged, as `verifier`; `queue` says whether to drain the queue
/// (the store claims it). Only the kinds written are asked about: a store is
/// never sent an operation it does not offer. `Err` is harness trouble.
pub async fn observe(
    client: &mut Box<dyn StoreClient>,
    acked: &Acked,
    queue: bool,
    verifier: &str,
) -> Result<Observed, String> {
    let mut seen = Observed::default();
    for tree in acked.grants.keys() {
        let read_at_ms = wall_ms();
        let answer = ask(client, &Request::LeaseRead { tree: tree.clone() }, tree).await?;
        seen.leases
            .insert(tree.clone(), LeaseRead { read_at_ms, answer });
    }
    // Short leases have run out by now; a live one (renewed, or taken in
    // flight) is released in its holder's name first.
    if !acked.grants.is_empty() {
        tokio::time::sleep(Duration::from_millis(LEASE_MS as u64 + 20)).await;
    }
    for tree in acked.grants.keys() {
        let take = next_take(client, tree, verifier).await?;
        seen.next_takes.insert(tree.clone(), take);
    }
    let children: BTreeSet<&String> = acked
        .saved
        .iter()
        .chain(acked.claims.keys())
        .chain(acked.completed.keys())
        .collect();
    for child in children {
        let read = Request::QueueRead {
            child: child.clone(),
        };
        seen.children
            .insert(child.clone(), ask(client, &read, child).await?);
    }
    for provider in acked.pauses.keys() {
        let read = Request::RateRead {
            provider: provider.clone(),
        };
        seen.pauses
            .insert(provider.clone(), ask(client, &read, provider).await?);
    }
    // Drain what is claimable. The verifier's own writes are never counted.
    let bound = if queue {
        acked.saved.len() + acked.in_flight.len() + 1
    } else {
        0
    };
    for _ in 0..bound {
        let claim = Request::QueueClaim {
            instance: verifier.into(),
            claim_ttl_ms: CLAIM_MS,
        };
        let (child, attempt) = match ask(client, &claim, "the queue").await? {
            Answer::Reply(Reply::Claimed { child, attempt, .. }) => (child, attempt),
            Answer::Reply(_) => break,
            Answer::Refused(e) => {
                seen.drain_refused = Some(e);
                break;
            }
            Answer::Unsupported(e) => {
                seen.drain_unsupported = Some(e);
                break;
            }
        };
        let done = Request::QueueComplete {
            child: child.clone(),
            instance: verifier.into(),
            attempt,
        };
        let complete_refused = match ask(client, &done, &child).await? {
            Answer::Refused(e) => Some(e),
            Answer::Reply(_) | Answer::Unsupported(_) => None,
        };
        seen.drained.push(Drained {
            child,
            attempt,
            complete_refused,
        });
    }
    Ok(seen)
}

/// The verifier's first take of `tree`, releasing a live holder up to
/// five times, then its own grant.
async fn next_take(
    client: &mut Box<dyn StoreClient>,
    tree: &str,
    verifier: &str,
) -> Result<NextTake, String> {
    let take = Request::LeaseTake {
        tree: tree.into(),
        holder: verifier.into(),
        ttl_ms: LEASE_MS,
    };
    let mut refused_releases = Vec::new();
    let mut release_unsupported = None;
    let mut outcome = TakeOutcome::AlwaysBusy;
    for _ in 0..5 {
        match ask(client, &take, tree).await? {
            Answer::Reply(Reply::Granted { epoch, .. }) => {
                outcome = TakeOutcome::Granted(epoch);
                break;
            }
            Answer::Reply(Reply::Busy { holder, epoch, .. }) => {
                let release = Request::LeaseRelease {
                    tree: tree.into(),
                    holder,
                    epoch,
                };
                match ask(client, &release, tree).await? {
                    Answer::Refused(e) => refused_releases.push(e),
                    Answer::Unsupported(e) => {
                        release_unsupported = Some(e);
                        break;
                    }
                    Answer::Reply(_) => {}
                }
            }
            Answer::Reply(other) => {
                outcome = TakeOutcome::Answered(other);
                break;
            }
            Answer::Refused(e) => {
                outcome = TakeOutcome::Refused(e);
                break;
            }
            Answer::Unsupported(e) => {
                outcome = TakeOutcome::Unsupported(e);
                break;
            }
        }
    }
    if let TakeOutcome::Granted(epoch) = outcome {
        let release = Request::LeaseRelease {
            tree: tree.into(),
            holder: verifier.into(),
            epoch,
        };
        match ask(client, &release, tree).await? {
            Answer::Refused(e) => refused_releases.push(e),
            // The verifier's own lease runs out on its own (LEASE_MS).
            Answer::Unsupported(_) | Answer::Reply(_) => {}
        }
    }
    Ok(NextTake {
        outcome,
        refused_releases,
        release_unsupported,
    })
}
