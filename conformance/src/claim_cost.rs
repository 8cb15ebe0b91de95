//! `conformance.queue.claim-cost-bounded`: a claim's cost must not grow with
//! the children ever completed. Done children's records are kept for good
//! (a save of a done id answers `exists {done}`), so memory cannot tell a
//! store that also leaves them in its claim order from one that does not;
//! the work a claim does can. It is counted as the Redis commands the server
//! ran for it (INFO commandstats, scripts' own calls included), which is why
//! the check needs a managed server: nobody else's commands are counted.

use std::collections::BTreeMap;

use harness::evidence::Evidence;

use super::runner::{calls_counterexample, Outcome, SubjectExt};
use harness::contract::{ErrorKind, Reply, Request, StoreError};
use harness::counterexample::{Answer, CallsKind, LoggedCall};
use harness::Subject;
use harness::Verdict;

/// Children saved, claimed and completed before the measured claims.
pub(crate) const COMPLETED: usize = 200;
/// How many more commands than a fresh queue's claim a claim may cost
/// before the check warns (a store may do a little bookkeeping per claim;
/// walking the completed children costs hundreds).
const SLACK_COMMANDS: u64 = 16;
/// Claim ttl of the check's claims (never reached: no clock moves).
const CLAIM_TTL_MS: i64 = 60_000;

pub use harness::evidence::ClaimCostEvidence;

/// Every command's `calls` in INFO commandstats, INFO itself left out.
async fn command_calls(
    admin: &mut redis::aio::MultiplexedConnection,
) -> redis::RedisResult<BTreeMap<String, u64>> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(admin)
        .await?;
    Ok(info
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            (name != "info").then(|| (name.to_string(), calls))
        })
        .collect())
}

/// The commands run between two readings, by name.
fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(name, n)| {
            let d = n.saturating_sub(before.get(name).copied().unwrap_or(0));
            (d > 0).then(|| (name.clone(), d))
        })
        .collect()
}

/// Saves `children` fresh children on a queue of its own under `prefix`,
/// then claims two of them: the commands of each measured claim. The first
/// `completed` are claimed and completed before the two measured claims.
async fn measure(
    target: &Subject<'_>,
    admin: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    completed: usize,
    clock_ms: i64,
    log: &mut Vec<LoggedCall>,
) -> Result<Vec<BTreeMap<String, u64>>, Outcome> {
    let mut client = target
        .connect("a", prefix, clock_ms)
        .await
        .map_err(|e| Outcome::connect_failed(e, Evidence::None))?;
    let refused =
        |what: &str, req: &Request, outcome: &Result<Reply, StoreError>, log: &[LoggedCall]| {
            let mut calls = log.to_vec();
            calls.push(LoggedCall::of(None, None, req, outcome));
            if let Err(e) = outcome {
                if e.kind == ErrorKind::Unsupported {
                    return Outcome::store_error(what, e.clone(), Evidence::calls(&calls));
                }
            }
            Outcome {
                verdict: Verdict::Fail,
                reason: format!(
                    "{what} was not answered as the contract says: {}",
                    Answer::of(outcome)
                ),
                evidence: Evidence::calls(&calls),
                counterexample: Some(calls_counterexample(CallsKind::ClaimCost, calls.clone())),
            }
        };
    for i in 0..completed + 2 {
        let req = Request::QueueSave {
            child: format!("c{i:04}"),
            depth: 0,
            payload: "p".into(),
        };
        let outcome = client.call(&req.to_call(), clock_ms).await;
        if !matches!(outcome, Ok(Reply::Saved { .. })) {
            return Err(refused("a save of a new child", &req, &outcome, log));
        }
    }
    let mut measured = Vec::new();
    for i in 0..completed + 2 {
        let req = Request::QueueClaim {
            instance: "a".into(),
            claim_ttl_ms: CLAIM_TTL_MS,
        };
        let before = if i >= completed {
            Some(command_calls(admin).await.map_err(|e| {
                Outcome::harness_trouble("read INFO commandstats", e, Evidence::None)
            })?)
        } else {
            None
        };
        let outcome = client.call(&req.to_call(), clock_ms).await;
        if let Some(before) = before {
            let after = command_calls(admin).await.map_err(|e| {
                Outcome::harness_trouble("read INFO commandstats", e, Evidence::None)
            })?;
            measured.push(delta(&before, &after));
            log.push(LoggedCall::of(
                Some(prefix.to_string()),
                None,
                &req,
                &outcome,
            ));
        }
        let Ok(Reply::Claimed { child, attempt, .. }) = &outcome else {
            return Err(refused("a claim with children queued", &req, &outcome, log));
        };
        if i < completed {
            let req = Request::QueueComplete {
                child: child.clone(),
                instance: "a".into(),
                attempt: *attempt,
            };
            let outcome = client.call(&req.to_call(), clock_ms).await;
            if !matches!(outcome, Ok(Reply::Completed { .. })) {
                return Err(refused(
                    "a complete by the current claim",
                    &req,
                    &outcome,
                    log,
                ));
            }
        }
    }
    Ok(measured)
}

/// The check: a claim after [`COMPLETED`] completions costs no more than
/// [`SLACK_COMMANDS`] commands above a claim on a fresh queue.
pub(crate) async fn claim_cost_bounded(target: &Subject<'_>, prefix: &str) -> Outcome {
    let clock_ms = super::special::now(target);
    let mut admin = match target.admin().await {
        Ok(a) => a,
        Err(e) => return Outcome::harness_trouble("connect to the server", e, Evidence::None),
    };
    let mut log = Vec::new();
    let total = |m: &BTreeMap<String, u64>| m.values().sum::<u64>();
    let cheaper = |v: &[BTreeMap<String, u64>]| v.iter().map(total).min().unwrap_or(0);
    let fresh = match measure(
        target,
        &mut admin,
        &format!("{prefix}fresh:"),
        0,
        clock_ms,
        &mut log,
    )
    .await
    {
        Ok(m) => m,
        Err(o) => return o,
    };
    let after = match measure(
        target,
        &mut admin,
        &format!("{prefix}done:"),
        COMPLETED,
        clock_ms,
        &mut log,
    )
    .await
    {
        Ok(m) => m,
        Err(o) => return o,
    };
    let (f, a) = (cheaper(&fresh), cheaper(&after));
    let dearer = after
        .iter()
        .max_by_key(|m| total(m))
        .cloned()
        .unwrap_or_default();
    let evidence = Evidence::ClaimCost(ClaimCostEvidence {
        completed: COMPLETED,
        fresh_claim_commands: f,
        claim_after_completed_commands: a,
        slack_commands: SLACK_COMMANDS,
        commands: dearer,
    });
    let grows = a > f + SLACK_COMMANDS;
    Outcome {
        verdict: if grows { Verdict::Fail } else { Verdict::Pass },
        reason: format!(
            "a claim after {COMPLETED} children were completed ran {a} Redis commands; on a fresh queue, {f} (INFO commandstats, the cheaper of two claims each){}",
            if grows {
                ": claims walk the completed children again, so they slow down with every child ever done"
            } else {
                ""
            }
        ),
        evidence,
        counterexample: grows.then(|| calls_counterexample(CallsKind::ClaimCost, log)),
    }
}
