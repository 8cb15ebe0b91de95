//! Conformance checks that look at the server itself rather than at replies:
//! kept execution ids never in Redis, keys inside the prefix, bytes per tree.

use std::collections::BTreeSet;

use harness::evidence::{Evidence, KeptIdsEvidence, PrefixEvidence};

use super::runner::{calls_counterexample, Outcome, SubjectExt};
use harness::contract::{Contract, Reply, Request};
use harness::counterexample::{CallsKind, LoggedCall};
use harness::keyspace;
use harness::Subject;
use harness::Verdict;

/// The checks that inspect the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// A kept execution id appears in no key name or value on the server.
    KeptNotInRedis,
    /// Odd ids leave no key outside the store's prefix (managed servers only).
    OddIdsInsidePrefix,
    /// MEMORY USAGE of the lease records, per tree.
    BytesPerTree,
    /// The three take races, every interleaving forced through the gate.
    TakeRaces,
    /// The two claim races, the same way.
    ClaimRaces,
    /// The two rate-limit races (the last slot, the last hit), the same way.
    RateRaces,
    /// Hits no window of up to a year can count any more cost nothing.
    OldHitsForgotten,
    /// A claim's commands do not grow with the children ever completed.
    ClaimCostBounded,
}

pub use harness::evidence::BytesPerTreeEvidence;

/// Trees measured for bytes per tree.
const TREES_MEASURED: usize = 200;
/// The most a lease record may cost per tree before the check warns.
const MAX_BYTES_PER_TREE: u64 = 1024;

/// One call from an instance, recorded into `log` for the evidence.
async fn call(
    client: &mut Box<dyn harness::store::StoreClient>,
    req: Request,
    clock_ms: i64,
    log: &mut Vec<LoggedCall>,
) -> Result<Reply, harness::contract::StoreError> {
    let outcome = client.call(&req.to_call(), clock_ms).await;
    log.push(LoggedCall::of(None, None, &req, &outcome));
    outcome
}

impl Special {
    pub(crate) async fn run(self, target: &Subject<'_>, prefix: &str) -> Outcome {
        match self {
            Special::KeptNotInRedis => kept_not_in_redis(target, prefix).await,
            Special::OddIdsInsidePrefix => odd_ids_inside_prefix(target, prefix).await,
            Special::BytesPerTree => bytes_per_tree(target, prefix).await,
            Special::TakeRaces => super::races::take_races(target, prefix).await,
            Special::ClaimRaces => {
                super::races::run_races(target, prefix, super::races::Races::Claim).await
            }
            Special::RateRaces => {
                super::races::run_races(target, prefix, super::races::Races::Rate).await
            }
            Special::OldHitsForgotten => old_hits_forgotten(target, prefix).await,
            Special::ClaimCostBounded => {
                super::claim_cost::claim_cost_bounded(target, prefix).await
            }
        }
    }
}

pub(crate) fn now(target: &Subject<'_>) -> i64 {
    target
        .server
        .managed()
        .and_then(|s| s.clock())
        .map_or(harness::server::VIRTUAL_EPOCH_MS, |c| c.now_ms())
}

async fn kept_not_in_redis(target: &Subject<'_>, prefix: &str) -> Outcome {
    let clock_ms = now(target);
    // storeproof's own connection first: a server it cannot reach is its
    // trouble, not the store's.
    let mut admin = match target.admin().await {
        Ok(a) => a,
        Err(e) => return Outcome::harness_trouble("connect to the server", e, Evidence::None),
    };
    let mut client = match target.connect("a", prefix, clock_ms).await {
        Ok(c) => c,
        Err(e) => return Outcome::connect_failed(e, Evidence::None),
    };
    // A marker no store would write by chance.
    let marker = format!("kept-exec-{:016x}", rand::random::<u64>());
    let mut log = Vec::new();
    let steps = [
        Request::LeaseTake {
            tree: "t".into(),
            holder: "a".into(),
            ttl_ms: 1000,
        },
        Request::LeaseKeepExecution {
            tree: "t".into(),
            execution: marker.clone(),
        },
    ];
    for req in steps {
        if let Err(e) = call(&mut client, req, clock_ms, &mut log).await {
            return Outcome::store_error_asking(
                target,
                "the store refused",
                e,
                Evidence::calls(&log),
            )
            .await;
        }
    }
    let listed = call(
        &mut client,
        Request::LeaseKeptExecutions { tree: "t".into() },
        clock_ms,
        &mut log,
    )
    .await;
    if !matches!(&listed, Ok(Reply::Executions(v)) if v.contains(&marker)) {
        return Outcome::fail(
            "the kept execution id was not listed back by kept_executions",
            Evidence::calls(&log),
            None,
        );
    }
    let (keys, scope) = match target.server.managed() {
        Some(_) => (
            keyspace::all_keys(&mut admin).await,
            "every key on the server",
        ),
        None => (
            keyspace::keys_under(&mut admin, &target.run_prefix).await,
            "every key under the run's prefix (the server is not storeproof's)",
        ),
    };
    let keys = match keys {
        Ok(k) => k,
        Err(e) => return Outcome::harness_trouble("scan the keyspace", e, Evidence::calls(&log)),
    };
    match keyspace::keys_mentioning(&mut admin, &keys, &marker).await {
        Ok(found) if found.is_empty() => Outcome::pass(
            format!("searched {scope} ({} keys): the id is in none", keys.len()),
            Evidence::KeptIds(KeptIdsEvidence {
                marker: marker.clone(),
                keys_searched: Some(keys.len()),
                keys: None,
                calls: log,
            }),
        ),
        Ok(found) => Outcome::fail(
            format!(
                "the kept execution id {marker} was written to Redis: {}",
                found.join(", ")
            ),
            Evidence::KeptIds(KeptIdsEvidence {
                marker: marker.clone(),
                keys_searched: None,
                keys: Some(found.clone()),
                calls: log.clone(),
            }),
            Some(calls_counterexample(CallsKind::KeptInRedis, log)),
        ),
        Err(e) => Outcome::harness_trouble("read the keyspace", e, Evidence::calls(&log)),
    }
}

/// Reads the whole keyspace, so it runs only on a managed server
/// (`Needs::AllKeys`, settled by `plan` before it runs).
async fn odd_ids_inside_prefix(target: &Subject<'_>, prefix: &str) -> Outcome {
    let mut admin = match target.admin().await {
        Ok(a) => a,
        Err(e) => return Outcome::harness_trouble("connect to the server", e, Evidence::None),
    };
    let before: BTreeSet<Vec<u8>> = match keyspace::all_keys(&mut admin).await {
        Ok(k) => k.into_iter().collect(),
        Err(e) => return Outcome::harness_trouble("scan the keyspace", e, Evidence::None),
    };
    let clock_ms = now(target);
    let mut client = match target.connect("*", prefix, clock_ms).await {
        Ok(c) => c,
        Err(e) => return Outcome::connect_failed(e, Evidence::None),
    };
    let long = "k".repeat(1024);
    let mut log = Vec::new();
    for id in [
        "ünï→漢字",
        "a:{b}",
        "*",
        "?[x]\\",
        long.as_str(),
        "../..",
        "sp:",
    ] {
        let mut reqs = vec![
            Request::LeaseTake {
                tree: id.into(),
                holder: id.into(),
                ttl_ms: 1000,
            },
            Request::LeaseRead { tree: id.into() },
        ];
        if target.contracts.contains(&Contract::Queue) {
            reqs.push(Request::QueueSave {
                child: id.into(),
                depth: 1,
                payload: id.into(),
            });
            reqs.push(Request::QueueClaim {
                instance: id.into(),
                claim_ttl_ms: 1000,
            });
        }
        if target.contracts.contains(&Contract::Rate) {
            reqs.push(Request::RateAcquireSlot {
                provider: id.into(),
                holder: id.into(),
                limit: 1,
                ttl_ms: 1000,
            });
            reqs.push(Request::RateHit {
                provider: id.into(),
                limit: 1,
                window_ms: 1000,
            });
            reqs.push(Request::RatePause {
                provider: id.into(),
                until_ms: clock_ms + 10,
            });
        }
        for req in reqs {
            if let Err(e) = call(&mut client, req, clock_ms, &mut log).await {
                return Outcome::store_error_asking(
                    target,
                    "the store refused an odd id",
                    e,
                    Evidence::calls(&log),
                )
                .await;
            }
        }
    }
    let after = match keyspace::all_keys(&mut admin).await {
        Ok(k) => k,
        Err(e) => return Outcome::harness_trouble("scan the keyspace", e, Evidence::None),
    };
    let new: Vec<&Vec<u8>> = after.iter().filter(|k| !before.contains(*k)).collect();
    let outside: Vec<String> = new
        .iter()
        .filter(|k| !k.starts_with(prefix.as_bytes()))
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    if outside.is_empty() {
        Outcome::pass(
            format!("{} new keys, all under {prefix}", new.len()),
            Evidence::Prefix(PrefixEvidence {
                prefix: prefix.to_string(),
                new_keys: new.len(),
                outside: Vec::new(),
                calls: log,
            }),
        )
    } else {
        Outcome::fail(
            format!(
                "keys written outside the prefix {prefix}: {}",
                outside.join(", ")
            ),
            Evidence::Prefix(PrefixEvidence {
                prefix: prefix.to_string(),
                new_keys: new.len(),
                outside: outside.clone(),
                calls: log.clone(),
            }),
            Some(calls_counterexample(CallsKind::OutsidePrefix, log)),
        )
    }
}

async fn bytes_per_tree(target: &Subject<'_>, prefix: &str) -> Outcome {
    let clock_ms = now(target);
    // storeproof's own connection first: a server it cannot reach is its
    // trouble, not the store's.
    let mut admin = match target.admin().await {
        Ok(a) => a,
        Err(e) => return Outcome::harness_trouble("connect to the server", e, Evidence::None),
    };
    let mut client = match target.connect("a", prefix, clock_ms).await {
        Ok(c) => c,
        Err(e) => return Outcome::connect_failed(e, Evidence::None),
    };
    let mut log = Vec::new();
    for i in 0..TREES_MEASURED {
        let req = Request::LeaseTake {
            tree: format!("tree-{i:06}"),
            holder: "a".into(),
            ttl_ms: 60_000,
        };
        let outcome = client.call(&req.to_call(), clock_ms).await;
        if outcome.is_err() || i == 0 {
            log.push(LoggedCall::of(None, None, &req, &outcome));
        }
        if let Err(e) = outcome {
            return Outcome::store_error_asking(
                target,
                "the store refused a take",
                e,
                Evidence::calls(&log),
            )
            .await;
        }
    }
    let keys = match keyspace::keys_under(&mut admin, prefix).await {
        Ok(k) => k,
        Err(e) => return Outcome::harness_trouble("scan the keyspace", e, Evidence::None),
    };
    let bytes = match keyspace::memory_usage(&mut admin, &keys).await {
        Ok(b) => b,
        Err(e) => return Outcome::harness_trouble("read MEMORY USAGE", e, Evidence::None),
    };
    let per_tree = bytes / TREES_MEASURED as u64;
    let evidence = Evidence::BytesPerTree(BytesPerTreeEvidence {
        trees: TREES_MEASURED,
        keys: keys.len(),
        bytes,
        bytes_per_tree: per_tree,
        limit_bytes_per_tree: MAX_BYTES_PER_TREE,
    });
    let reason = format!(
        "{per_tree} bytes per tree ({bytes} bytes in {} keys for {TREES_MEASURED} trees, MEMORY USAGE); lease records are kept for good",
        keys.len()
    );
    Outcome {
        verdict: if per_tree <= MAX_BYTES_PER_TREE {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        reason,
        evidence,
        counterexample: None,
    }
}

/// Hits sent to the provider whose old hits must be forgotten.
const OLD_HITS: i64 = 100;
/// How much more than a provider with one hit the forgetting provider may
/// cost before the check warns (allocator slack, not hits).
const OLD_HITS_SLACK_BYTES: u64 = 512;

pub use harness::evidence::OldHitsEvidence;

/// A provider hit [`OLD_HITS`] times, then once more a year and a second
/// later (beyond any window a hit may name, `MAX_DURATION_MS`), must cost
/// about what a provider hit only that once costs: the old hits can never be
/// counted again, so a store that keeps them grows without bound.
async fn old_hits_forgotten(target: &Subject<'_>, prefix: &str) -> Outcome {
    use harness::contract::MAX_DURATION_MS;
    let t0 = now(target);
    let late = t0 + OLD_HITS + MAX_DURATION_MS + 1000;
    let mut admin = match target.admin().await {
        Ok(a) => a,
        Err(e) => return Outcome::harness_trouble("connect to the server", e, Evidence::None),
    };
    let hit = || Request::RateHit {
        provider: "p".into(),
        limit: 1_000_000,
        window_ms: 1000,
    };
    let mut log = Vec::new();
    let mut bytes = Vec::new();
    // Under two prefixes of their own: the provider with old hits, and one
    // with only the late hit.
    for (part, clocks) in [
        (
            "old:",
            (0..OLD_HITS)
                .map(|i| t0 + i)
                .chain([late])
                .collect::<Vec<_>>(),
        ),
        ("one:", vec![late]),
    ] {
        let sub = format!("{prefix}{part}");
        let mut client = match target.connect("a", &sub, t0).await {
            Ok(c) => c,
            Err(e) => return Outcome::connect_failed(e, Evidence::None),
        };
        for clock in clocks {
            let req = hit();
            let outcome = client.call(&req.to_call(), clock).await;
            if !matches!(outcome, Ok(Reply::Allowed { .. })) || clock == late {
                log.push(LoggedCall::of(
                    Some(part.to_string()),
                    Some(clock),
                    &req,
                    &outcome,
                ));
            }
            if let Err(e) = outcome {
                return Outcome::store_error_asking(
                    target,
                    "the store refused a hit",
                    e,
                    Evidence::calls(&log),
                )
                .await;
            }
        }
        let keys = match keyspace::keys_under(&mut admin, &sub).await {
            Ok(k) => k,
            Err(e) => return Outcome::harness_trouble("scan the keyspace", e, Evidence::None),
        };
        match keyspace::memory_usage(&mut admin, &keys).await {
            Ok(b) => bytes.push(b),
            Err(e) => return Outcome::harness_trouble("read MEMORY USAGE", e, Evidence::None),
        }
    }
    let (old, one) = (bytes[0], bytes[1]);
    let evidence = Evidence::OldHits(OldHitsEvidence {
        old_hits: OLD_HITS,
        bytes_after_old_hits: old,
        bytes_of_one_hit: one,
        slack_bytes: OLD_HITS_SLACK_BYTES,
    });
    let kept = old > one + OLD_HITS_SLACK_BYTES;
    Outcome {
        verdict: if kept { Verdict::Fail } else { Verdict::Pass },
        reason: format!(
            "after {OLD_HITS} hits and one more a year later the provider costs {old} bytes; with only that last hit, {one} bytes (MEMORY USAGE){}",
            if kept {
                ": hits no window can count any more are kept"
            } else {
                ""
            }
        ),
        evidence,
        counterexample: kept.then(|| calls_counterexample(CallsKind::OldHitsKept, log)),
    }
}
