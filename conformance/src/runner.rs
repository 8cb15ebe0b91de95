//! Runs conformance checks against a store and turns what happened into
//! verdicts. Scenarios are played one step at a time; every reply goes to the
//! sequential model's judge, and the first violation stops the scenario with
//! the steps that led to it as the counterexample.

use std::collections::HashMap;
use std::time::Instant;

use redis::aio::MultiplexedConnection;
use serde_json::{json, Value};

use super::scenario::{needs_server_clock, Patch, Step};
use super::{CheckDef, CheckKind};
use harness::check::{CheckResult, Level, Verdict};
use harness::contract::{Contract, ContractModel, ErrorKind, Judgement, Reply, Request, StoreError};
use harness::history::History;
use harness::keyspace;
use harness::server::{ManagedServer, VIRTUAL_EPOCH_MS};
use harness::store::{Hello, StoreClient, StoreFactory};

/// Where the checks run.
pub enum ServerRef<'a> {
    /// A server storeproof started: clock control and whole-keyspace reads allowed.
    Managed(&'a ManagedServer),
    /// A server someone else runs: only keys under the run's prefix are touched.
    External {
        /// The server's URL, e.g. `redis://127.0.0.1:6379/`.
        url: String,
    },
}

impl ServerRef<'_> {
    /// The URL stores connect to.
    pub fn url(&self) -> String {
        match self {
            ServerRef::Managed(s) => s.url(),
            ServerRef::External { url } => url.clone(),
        }
    }

    /// Whether storeproof controls this server.
    pub fn managed(&self) -> Option<&ManagedServer> {
        match self {
            ServerRef::Managed(s) => Some(s),
            ServerRef::External { .. } => None,
        }
    }
}

/// Everything a check needs to run against one store.
pub struct Target<'a> {
    /// Connects the store's instances.
    pub factory: &'a dyn StoreFactory,
    /// The server the store is pointed at.
    pub server: ServerRef<'a>,
    /// Every key of this run starts with it; each check adds its own part.
    pub run_prefix: String,
    /// The opt-out passed to the store in its hello, if any.
    pub opt_out: Option<String>,
    /// The contracts the store offers (from its hello).
    pub contracts: Vec<Contract>,
    /// Whether server-assumption checks may start servers of their own.
    pub may_start_servers: bool,
}

impl Target<'_> {
    /// The prefix of check number `n`.
    pub fn check_prefix(&self, n: usize) -> String {
        format!("{}c{n}:", self.run_prefix)
    }

    /// A fresh connection of storeproof's own to the target server.
    pub async fn admin(&self) -> Result<MultiplexedConnection, String> {
        let client = redis::Client::open(self.server.url()).map_err(|e| e.to_string())?;
        client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", self.server.url()))
    }

    /// Connects instance `name` of the store under `prefix`. The error
    /// names the instance; an `adapter_failed` one is the harness's trouble
    /// (see [`Outcome::connect_failed`]).
    pub async fn connect(
        &self,
        name: &str,
        prefix: &str,
        clock_ms: i64,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        self.connect_store(name, prefix, &self.server.url(), clock_ms)
            .await
    }

    /// Connects instance `name` to `url` (a gate in front of the server).
    pub async fn connect_store(
        &self,
        name: &str,
        prefix: &str,
        url: &str,
        clock_ms: i64,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        let hello = Hello {
            instance: name.into(),
            redis_url: url.into(),
            prefix: prefix.into(),
            opt_out: self.opt_out.clone(),
        };
        self.factory
            .connect(&hello, clock_ms)
            .await
            .map(|(_, client)| client)
            .map_err(|e| StoreError {
                message: format!("instance {name} could not connect: {}", e.message),
                ..e
            })
    }
}

/// What one check found, before it becomes a [`CheckResult`].
pub(crate) struct Outcome {
    pub verdict: Verdict,
    pub reason: String,
    pub evidence: Value,
    pub counterexample: Option<Value>,
}

impl Outcome {
    pub fn pass(reason: impl Into<String>, evidence: Value) -> Self {
        Outcome {
            verdict: Verdict::Pass,
            reason: reason.into(),
            evidence,
            counterexample: None,
        }
    }
    pub fn fail(reason: impl Into<String>, evidence: Value, counterexample: Option<Value>) -> Self {
        Outcome {
            verdict: Verdict::Fail,
            reason: reason.into(),
            evidence,
            counterexample,
        }
    }
    pub fn skipped(reason: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Skipped,
            reason: reason.into(),
            evidence: Value::Null,
            counterexample: None,
        }
    }
    /// The harness could not decide the check (its own trouble, not the
    /// store's): `reason` says what went wrong.
    pub fn unknown(reason: impl Into<String>, evidence: Value) -> Self {
        Outcome {
            verdict: Verdict::Unknown,
            reason: reason.into(),
            evidence,
            counterexample: None,
        }
    }
}

impl Outcome {
    /// A store that could not be connected: the store's failure (it refused
    /// a server it must accept, or could not reach it), unless its adapter
    /// failed, which is bad input rather than a contract violation.
    pub fn connect_failed(e: StoreError, evidence: Value) -> Self {
        if e.kind == ErrorKind::AdapterFailed {
            Outcome::unknown(e.message, evidence)
        } else {
            Outcome::fail(e.to_string(), evidence, None)
        }
    }

    /// A store's error answer to a valid request: a failure (`what: e`),
    /// unless its adapter failed (bad input, not a contract violation).
    pub fn store_error(what: &str, e: StoreError, evidence: Value) -> Self {
        if e.kind == ErrorKind::AdapterFailed {
            Outcome::unknown(format!("{what}: {}", e.message), evidence)
        } else {
            Outcome::fail(format!("{what}: {e}"), evidence, None)
        }
    }

    /// The harness's own trouble reading the server (a connect, scan or
    /// snapshot that failed): the check is undecided, never failed.
    pub fn harness_trouble(what: &str, e: impl std::fmt::Display, evidence: Value) -> Self {
        Outcome::unknown(format!("storeproof could not {what}: {e}"), evidence)
    }
}

/// Runs every check `select` keeps, in order, calling `on_result` after each.
pub async fn run_suite(
    target: &Target<'_>,
    checks: &[std::sync::Arc<CheckDef>],
    on_result: &mut (dyn FnMut(&CheckResult) + Send),
) -> Vec<CheckResult> {
    let mut results = Vec::with_capacity(checks.len());
    for (n, def) in checks.iter().enumerate() {
        let result = run_check(target, n, def).await;
        on_result(&result);
        results.push(result);
    }
    results
}

/// Runs one check as check number `n` of the run (which picks its prefix).
pub async fn run_check(target: &Target<'_>, n: usize, def: &CheckDef) -> CheckResult {
    let started = Instant::now();
    let outside_claim = matches!(def.contract, Some(c) if !target.contracts.contains(&c));
    let outcome = match def.contract {
        Some(c) if !target.contracts.contains(&c) => Outcome::skipped(format!(
            "the store does not offer the {c} contract (its hello listed {})",
            target
                .contracts
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        _ => match &def.kind {
            CheckKind::Scenario(steps) => {
                run_scenario(target, &target.check_prefix(n), &steps()).await
            }
            CheckKind::Special(s) => s.run(target, &target.check_prefix(n)).await,
            CheckKind::Server(case) => case.run(target).await,
        },
    };
    let verdict = match (outcome.verdict, def.level) {
        // A SHOULD check never fails the run: its failure is a warning.
        (Verdict::Fail, Level::Should) => Verdict::Warn,
        (v, _) => v,
    };
    CheckResult {
        id: def.id.to_string(),
        suite: "conformance".into(),
        level: def.level,
        verdict,
        outside_claim,
        reason: if outcome.reason.is_empty() {
            def.about.to_string()
        } else {
            outcome.reason
        },
        evidence: outcome.evidence,
        counterexample: outcome.counterexample,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The values a scenario learned from the store: epochs granted per tree and
/// slots acquired per provider, so later steps can name them.
#[derive(Default)]
struct Learned {
    grants: HashMap<String, Vec<i64>>,
    slots: HashMap<String, Vec<String>>,
}

impl Learned {
    fn learn(&mut self, req: &Request, reply: &Reply) {
        match (req, reply) {
            (Request::LeaseTake { tree, .. }, Reply::Granted { epoch, .. }) => {
                self.grants.entry(tree.clone()).or_default().push(*epoch)
            }
            (Request::RateAcquireSlot { provider, .. }, Reply::Acquired { slot }) => self
                .slots
                .entry(provider.clone())
                .or_default()
                .push(slot.clone()),
            _ => {}
        }
    }

    /// Fills in a request's patched field; `Err` when the scenario names a
    /// grant or slot the store never gave (the store diverged earlier).
    fn patch(&self, req: &mut Request, patch: &Patch, start_ms: i64) -> Result<(), String> {
        match (req, patch) {
            (
                Request::LeaseRenew { tree, epoch, .. } | Request::LeaseRelease { tree, epoch, .. },
                Patch::Epoch(r),
            ) => {
                let granted = self
                    .grants
                    .get(tree.as_str())
                    .and_then(|g| g.get(r.grant.wrapping_sub(1)))
                    .ok_or_else(|| format!("tree {tree:?} has no grant number {}", r.grant))?;
                *epoch = granted + r.plus;
            }
            (Request::RateReleaseSlot { provider, slot }, Patch::Slot(k)) => {
                *slot = self
                    .slots
                    .get(provider.as_str())
                    .and_then(|s| s.get(k.wrapping_sub(1)))
                    .cloned()
                    .ok_or_else(|| format!("provider {provider:?} has no slot number {k}"))?;
            }
            (Request::RatePause { until_ms, .. }, Patch::UntilFromStart(off)) => {
                *until_ms = start_ms + off;
            }
            (req, patch) => return Err(format!("cannot apply {patch:?} to {}", req.op())),
        }
        Ok(())
    }
}

/// Plays a scenario against the model alone, answering with the canonical
/// replies: proves the scenario itself is well formed.
#[cfg(test)]
pub(crate) fn dry_run(steps: &[Step]) -> Result<(), String> {
    let mut model = ContractModel::default();
    let mut learned = Learned::default();
    let start = VIRTUAL_EPOCH_MS;
    let mut now = start;
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::At(ms) => {
                if start + ms < now {
                    return Err(format!("step {i}: time moves backwards"));
                }
                now = start + ms;
            }
            Step::Call {
                request,
                skew_ms,
                patch,
                ..
            } => {
                let mut req = request.clone();
                if let Some(p) = patch {
                    learned
                        .patch(&mut req, p, start)
                        .map_err(|e| format!("step {i}: {e}"))?;
                }
                req.validate().map_err(|e| format!("step {i}: {e}"))?;
                let reply = model.apply(&req, now, now + skew_ms);
                learned.learn(&req, &reply);
            }
            Step::Raw { call, .. } => {
                if Request::parse(call).is_ok() {
                    return Err(format!("step {i}: raw call {call:?} is valid"));
                }
            }
        }
    }
    Ok(())
}

/// Plays `steps` against the store under `prefix`, judging every reply.
pub(crate) async fn run_scenario(target: &Target<'_>, prefix: &str, steps: &[Step]) -> Outcome {
    let clock = target.server.managed().and_then(|s| s.clock());
    if needs_server_clock(steps) && clock.is_none() {
        return Outcome::skipped(
            "needs a managed server: lease and queue expiry are judged to the millisecond \
             on a server clock storeproof controls (this run uses --redis-url)",
        );
    }
    // Each scenario starts a day after the last one, so nothing earlier is
    // still live, and time only moves forward.
    let start = match clock {
        Some(c) => {
            let start = c.now_ms() + 86_400_000;
            c.set_ms(start);
            start
        }
        None => VIRTUAL_EPOCH_MS,
    };
    let mut admin = match target.admin().await {
        Ok(a) => a,
        Err(e) => return Outcome::harness_trouble("connect to the server", e, Value::Null),
    };
    let mut instances: HashMap<String, Box<dyn StoreClient>> = HashMap::new();
    let mut model = ContractModel::default();
    let mut learned = Learned::default();
    let mut history = History::default();
    let mut now = start;
    let mut warnings = Vec::new();
    let mut calls = 0usize;

    let counterexample = |upto: usize, observed: Value| {
        Some(json!({
            "kind": "conformance-scenario",
            "steps": &steps[..=upto],
            "observed": observed,
        }))
    };

    for (i, step) in steps.iter().enumerate() {
        let (instance, is_raw) = match step {
            Step::At(ms) => {
                now = start + ms;
                if let Some(c) = clock {
                    c.set_ms(now);
                }
                continue;
            }
            Step::Call { instance, .. } => (instance, false),
            Step::Raw { instance, .. } => (instance, true),
        };
        if !instances.contains_key(instance) {
            match target.connect(instance, prefix, now).await {
                Ok(c) => {
                    instances.insert(instance.clone(), c);
                }
                Err(e) => return Outcome::connect_failed(e, json!({"history": history})),
            }
        }
        let Some(client) = instances.get_mut(instance) else {
            continue;
        };
        let server_ms = clock.map(|_| now);
        calls += 1;
        if is_raw {
            let Step::Raw { call, .. } = step else {
                continue;
            };
            let before = keyspace::snapshot(&mut admin, prefix).await;
            history.invoke(instance, call, server_ms, now);
            let outcome = client.call(call, now).await;
            history.complete(instance, &call.op, &outcome, server_ms, now);
            let after = keyspace::snapshot(&mut admin, prefix).await;
            if let Some(unknown) = adapter_failed(&outcome, instance, call, &history) {
                return unknown;
            }
            let observed = serde_json::to_value(outcome_json(&outcome)).unwrap_or(Value::Null);
            let refused = matches!(&outcome, Err(e) if e.kind == ErrorKind::BadRequest);
            if !refused {
                return Outcome::fail(
                    format!(
                        "step {i}: bad input {} {} was not refused with bad_request: got {observed}",
                        call.op, call.args
                    ),
                    json!({"history": history}),
                    counterexample(i, observed),
                );
            }
            match (before, after) {
                (Ok(b), Ok(a)) if b == a => {}
                (Ok(b), Ok(a)) => {
                    return Outcome::fail(
                        format!(
                            "step {i}: bad input {} {} was refused but changed the keyspace",
                            call.op, call.args
                        ),
                        json!({"history": history, "before": b, "after": a}),
                        counterexample(i, observed),
                    )
                }
                (Err(e), _) | (_, Err(e)) => {
                    return Outcome::harness_trouble(
                        "read the keyspace to see whether the refused request changed it",
                        e,
                        json!({"history": history}),
                    )
                }
            }
            continue;
        }
        let Step::Call {
            request,
            skew_ms,
            patch,
            ..
        } = step
        else {
            continue;
        };
        let mut req = request.clone();
        if let Some(p) = patch {
            if let Err(e) = learned.patch(&mut req, p, start) {
                return Outcome::fail(
                    format!("step {i}: {e}: the store diverged earlier"),
                    json!({"history": history}),
                    counterexample(i, Value::Null),
                );
            }
        }
        let clock_ms = now + skew_ms;
        let call = req.to_call();
        history.invoke(instance, &call, server_ms, clock_ms);
        // On a server storeproof does not control, its clock is read around
        // the call: the call happened somewhere in [before, after].
        let before = match clock {
            Some(_) => None,
            None => server_time(&mut admin).await,
        };
        let outcome = client.call(&call, clock_ms).await;
        let after = match clock {
            Some(_) => None,
            None => server_time(&mut admin).await,
        };
        history.complete(instance, &call.op, &outcome, server_ms, clock_ms);
        if let Some(unknown) = adapter_failed(&outcome, instance, &call, &history) {
            return unknown;
        }
        if clock.is_none() && (before.is_none() || after.is_none()) {
            return Outcome::harness_trouble(
                format!("read the server's TIME around step {i}, so the reply cannot be judged")
                    .as_str(),
                "TIME failed",
                json!({"history": history}),
            );
        }
        if let Err(e) = &outcome {
            if e.kind == ErrorKind::Unsupported {
                return Outcome::skipped(format!(
                    "the store answered unsupported to {}: {}",
                    call.op, e.message
                ));
            }
        }
        let observed = outcome_json(&outcome);
        let judgement = match (before, after) {
            (Some(lo), Some(hi)) => judge_within(&mut model, &req, lo, hi, clock_ms, &outcome),
            _ => model.judge(&req, now, clock_ms, &outcome),
        };
        match judgement {
            Judgement::Agrees => {}
            Judgement::Conservative(why) => warnings.push(format!("step {i}: {why}")),
            Judgement::Violates(why) => {
                return Outcome::fail(
                    format!("step {i}: {} {}: {why}", call.op, call.args),
                    json!({"history": history}),
                    counterexample(i, observed),
                )
            }
        }
        if let Ok(reply) = &outcome {
            learned.learn(&req, reply);
        }
    }
    let evidence = json!({"calls": calls, "history": history});
    if warnings.is_empty() {
        Outcome::pass(String::new(), evidence)
    } else {
        Outcome {
            verdict: Verdict::Warn,
            reason: warnings.join("; "),
            evidence,
            counterexample: None,
        }
    }
}

/// An adapter that failed during a call is bad input, not a contract
/// violation: the check is undecided, naming the instance and the request.
fn adapter_failed(
    outcome: &Result<Reply, StoreError>,
    instance: &str,
    call: &harness::contract::Call,
    history: &History,
) -> Option<Outcome> {
    match outcome {
        Err(e) if e.kind == ErrorKind::AdapterFailed => Some(Outcome::unknown(
            format!(
                "the adapter of instance {instance} failed during {} {}: {}",
                call.op, call.args, e.message
            ),
            json!({"history": history}),
        )),
        _ => None,
    }
}

/// The server's `TIME` in ms.
async fn server_time(admin: &mut MultiplexedConnection) -> Option<i64> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(admin).await.ok()?;
    Some(secs * 1000 + micros / 1000)
}

/// Judges a reply whose server instant is only known to lie in `[lo, hi]`:
/// the instant a grant or renewal implies (its expiry minus the ttl) when it
/// falls in the window, else either end. The model follows the first
/// instant that explains the reply.
fn judge_within(
    model: &mut ContractModel,
    req: &Request,
    lo: i64,
    hi: i64,
    clock_ms: i64,
    outcome: &Result<Reply, harness::contract::StoreError>,
) -> Judgement {
    let ttl = match req {
        Request::LeaseTake { ttl_ms, .. } | Request::LeaseRenew { ttl_ms, .. } => Some(*ttl_ms),
        _ => None,
    };
    let implied = match (outcome, ttl) {
        (Ok(Reply::Granted { expires_at_ms, .. }), Some(t))
        | (Ok(Reply::Renewed { expires_at_ms }), Some(t)) => Some(expires_at_ms - t),
        _ => None,
    };
    let mut last = Judgement::Agrees;
    for now in implied
        .filter(|n| (lo..=hi).contains(n))
        .into_iter()
        .chain([lo, hi])
    {
        let mut candidate = model.clone();
        let j = candidate.judge(req, now, clock_ms, outcome);
        if !matches!(j, Judgement::Violates(_)) {
            *model = candidate;
            return j;
        }
        last = j;
    }
    last
}

/// A store's answer as wire JSON: the reply, or `{"error": …}`.
pub(crate) fn outcome_json(outcome: &Result<Reply, harness::contract::StoreError>) -> Value {
    match outcome {
        Ok(r) => serde_json::to_value(r).unwrap_or(Value::Null),
        Err(e) => json!({"error": e}),
    }
}
