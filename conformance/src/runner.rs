//! Runs conformance checks against a store. Scenarios are played one step at
//! a time and recorded as a history with what the server showed around the
//! calls; the pure judge ([`crate::judge`]) then decides, and the first step
//! that breaks the contract is the counterexample.

use std::collections::HashMap;
use std::time::Instant;

use redis::aio::MultiplexedConnection;

use harness::evidence::Evidence;
pub use harness::evidence::ScenarioEvidence;

use super::judge::{
    cut, judge_steps, CheckHistory, DurableRead, KeyspaceRead, Learned, Observation,
};
use super::scenario::Step;
use super::{CheckDef, CheckKind, SUITE};
#[cfg(test)]
use harness::contract::{ContractModel, Request};
use harness::contract::{ErrorKind, Reply, StoreError};
use harness::counterexample::{CallsCounterexample, CallsKind, Counterexample, LoggedCall};
use harness::keyspace;
use harness::server::VIRTUAL_EPOCH_MS;
use harness::store::StoreClient;
use harness::Happened;
use harness::{plan, CheckSpec, Subject};
use harness::{CheckResult, Level, Verdict};

/// What the conformance checks add to a [`Subject`]: a prefix per check and
/// instances connected straight to the server.
pub(crate) trait SubjectExt {
    /// The prefix of check number `n`.
    fn check_prefix(&self, n: usize) -> String;

    /// Connects instance `name` of the store under `prefix` to the server.
    /// The error names the instance; an `adapter_failed` one is the
    /// harness's trouble (see [`Outcome::connect_failed`]).
    async fn connect(
        &self,
        name: &str,
        prefix: &str,
        clock_ms: i64,
    ) -> Result<Box<dyn StoreClient>, StoreError>;
}

impl SubjectExt for Subject<'_> {
    fn check_prefix(&self, n: usize) -> String {
        format!("{}c{n}:", self.run_prefix)
    }

    async fn connect(
        &self,
        name: &str,
        prefix: &str,
        clock_ms: i64,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        self.connect_store(name, prefix, &self.server.url(), clock_ms)
            .await
    }
}

/// What one check found, before it becomes a [`CheckResult`].
pub(crate) struct Outcome {
    pub verdict: Verdict,
    pub reason: String,
    pub evidence: Evidence,
    pub counterexample: Option<Counterexample>,
}

impl Outcome {
    pub fn pass(reason: impl Into<String>, evidence: Evidence) -> Self {
        Outcome {
            verdict: Verdict::Pass,
            reason: reason.into(),
            evidence,
            counterexample: None,
        }
    }
    pub fn fail(
        reason: impl Into<String>,
        evidence: Evidence,
        counterexample: Option<Counterexample>,
    ) -> Self {
        Outcome {
            verdict: Verdict::Fail,
            reason: reason.into(),
            evidence,
            counterexample,
        }
    }
    /// The harness could not decide the check (its own trouble, not the
    /// store's): `reason` says what went wrong.
    pub fn unknown(reason: impl Into<String>, evidence: Evidence) -> Self {
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
    pub fn connect_failed(e: StoreError, evidence: Evidence) -> Self {
        if e.kind == ErrorKind::AdapterFailed {
            Outcome::unknown(e.message, evidence)
        } else {
            Outcome::fail(e.to_string(), evidence, None)
        }
    }

    /// A store's error answer to a valid request: a failure (`what: e`),
    /// unless its adapter failed (bad input, not a contract violation) or
    /// it answered `unsupported`, which skips the check with its message.
    pub fn store_error(what: &str, e: StoreError, evidence: Evidence) -> Self {
        match e.kind {
            ErrorKind::AdapterFailed => {
                Outcome::unknown(format!("{what}: {}", e.message), evidence)
            }
            ErrorKind::Unsupported => Outcome {
                verdict: Verdict::Skipped,
                reason: format!("the store answered unsupported: {}", e.message),
                evidence,
                counterexample: None,
            },
            _ => Outcome::fail(format!("{what}: {e}"), evidence, None),
        }
    }

    /// [`Outcome::store_error`], but an `unavailable` blames the store only
    /// when storeproof's own server answers a PING sent straight to it; when
    /// it does not, the check is the harness's trouble (unknown).
    pub async fn store_error_asking(
        target: &Subject<'_>,
        what: &str,
        e: StoreError,
        evidence: Evidence,
    ) -> Self {
        if e.kind == ErrorKind::Unavailable {
            if let Err(why) = ping_server(target).await {
                return Outcome::unknown(
                    format!(
                        "{what}: {e}; storeproof's own server did not answer a PING sent straight to it either ({why}): the harness's trouble, not the store's"
                    ),
                    evidence,
                );
            }
        }
        Outcome::store_error(what, e, evidence)
    }

    /// The harness's own trouble reading the server (a connect, scan or
    /// snapshot that failed): the check is undecided, never failed.
    pub fn harness_trouble(what: &str, e: impl std::fmt::Display, evidence: Evidence) -> Self {
        Outcome::unknown(format!("storeproof could not {what}: {e}"), evidence)
    }
}

/// Runs one check as check number `n` of the run (which picks its prefix).
/// A check outside the store's claim, or whose needs the run cannot meet,
/// is settled by [`plan`] without running, so every check body may assume
/// its [`Needs`](harness::Needs) are met.
pub async fn run_check(target: &Subject<'_>, n: usize, def: &CheckDef) -> CheckResult {
    let spec = &def.spec;
    // `plan` is the one place claims and needs are settled; a caller that
    // skipped it (replay, the sabotage tests) gets the same answer.
    if let Some(settled) = plan(SUITE, vec![*spec], target).0.pop() {
        return settled;
    }
    let started = Instant::now();
    let outcome = match &def.kind {
        CheckKind::Scenario(steps) => {
            run_scenario(target, spec, &target.check_prefix(n), &steps()).await
        }
        CheckKind::Special(s) => s.run(target, &target.check_prefix(n)).await,
        CheckKind::Server(case) => case.run(target, &target.check_prefix(n)).await,
        CheckKind::Generated(g) => g.run(target, spec, n).await,
    };
    let verdict = match (outcome.verdict, spec.level) {
        // A SHOULD check never fails the run: its failure is a warning.
        (Verdict::Fail, Level::Should) => Verdict::Warn,
        (v, _) => v,
    };
    CheckResult {
        id: spec.id.to_string(),
        suite: SUITE.into(),
        level: spec.level,
        verdict,
        outside_claim: false,
        reason: if outcome.reason.is_empty() {
            spec.about.to_string()
        } else {
            outcome.reason
        },
        evidence: outcome.evidence,
        counterexample: outcome.counterexample,
        violations: Vec::new(),
        seconds: started.elapsed().as_secs_f64(),
        about: spec.about.to_string(),
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
                learned.learn(i, &req, &reply);
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

/// Plays `steps` against the store under `prefix`, recording every call and
/// answer and what the server showed around them, then has the judge decide
/// ([`judge_steps`]). Playing stops only where it cannot go on (a grant or
/// slot the store never gave, an instance that cannot connect, an adapter
/// that failed, a server that cannot be read).
pub(crate) async fn run_scenario(
    target: &Subject<'_>,
    spec: &CheckSpec,
    prefix: &str,
    steps: &[Step],
) -> Outcome {
    // A scenario that moves time needs a managed server (`scenario_check`),
    // which `plan` made sure of; without a virtual clock the server's TIME
    // is read around each call, as on any other server.
    let clock = target.server.managed().and_then(|s| s.clock());
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
        Err(e) => return Outcome::harness_trouble("connect to the server", e, Evidence::None),
    };
    let mut recorded = CheckHistory {
        check: spec.id.to_string(),
        level: spec.level,
        start_ms: start,
        history: Default::default(),
        observations: Vec::new(),
    };
    let mut instances: HashMap<String, Box<dyn StoreClient>> = HashMap::new();
    let mut learned = Learned::default();
    let mut now = start;

    for (i, step) in steps.iter().enumerate() {
        let instance = match step {
            Step::At(ms) => {
                now = start + ms;
                if let Some(c) = clock {
                    c.set_ms(now);
                }
                continue;
            }
            Step::Call { instance, .. } | Step::Raw { instance, .. } => instance,
        };
        if !instances.contains_key(instance) {
            match target.connect(instance, prefix, now).await {
                Ok(c) => {
                    instances.insert(instance.clone(), c);
                }
                Err(error) => {
                    if error.kind == ErrorKind::Unavailable {
                        recorded.observations.push(Observation::ServerPing {
                            step: i,
                            error: ping_server(target).await.err(),
                        });
                    }
                    recorded.observations.push(Observation::ConnectFailed {
                        step: i,
                        instance: instance.clone(),
                        error,
                    });
                    break;
                }
            }
        }
        let Some(client) = instances.get_mut(instance) else {
            break;
        };
        let server_ms = clock.map(|_| now);
        let history = &mut recorded.history;
        match step {
            Step::At(_) => {}
            Step::Raw { call, .. } => {
                let before = read_keyspace(&mut admin, prefix).await;
                // A store outside Redis keeps nothing in that keyspace: its
                // own durable state is compared too, where it reports one.
                let durable = !target.factory.keeps_state_in_redis();
                let state_before = if durable {
                    Some(target.factory.durable_state(prefix).await)
                } else {
                    None
                };
                history.invoke(instance, call, server_ms, now);
                let outcome = client.call(call, now).await;
                history.complete(instance, &call.op, &outcome, server_ms, now);
                if let Some(state_before) = state_before {
                    let read =
                        DurableRead::of(state_before, target.factory.durable_state(prefix).await);
                    recorded
                        .observations
                        .push(Observation::DurableState { step: i, read });
                }
                let after = match (read_keyspace(&mut admin, prefix).await, &before) {
                    (KeyspaceRead::Keys(a), KeyspaceRead::Keys(b)) if a == *b => {
                        KeyspaceRead::Unchanged
                    }
                    (after, _) => after,
                };
                let unreadable = matches!(before, KeyspaceRead::Failed(_))
                    || matches!(after, KeyspaceRead::Failed(_));
                recorded.observations.push(Observation::Keyspace {
                    step: i,
                    before,
                    after,
                });
                if unreadable || adapter_failed(&outcome) {
                    break;
                }
            }
            Step::Call {
                request,
                skew_ms,
                patch,
                ..
            } => {
                let mut req = request.clone();
                if let Some(p) = patch {
                    // A grant or slot the store never gave: nothing to send.
                    if learned.patch(&mut req, p, start).is_err() {
                        break;
                    }
                }
                let clock_ms = now + skew_ms;
                let call = req.to_call();
                history.invoke(instance, &call, server_ms, clock_ms);
                // On a server storeproof does not control, its clock is read
                // around the call: the call happened somewhere in [before, after].
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
                if clock.is_none() {
                    recorded.observations.push(Observation::ServerTime {
                        step: i,
                        before,
                        after,
                    });
                }
                if matches!(&outcome, Err(e) if e.kind == ErrorKind::Unavailable) {
                    // Whose trouble: storeproof's server, or the store?
                    let error = ping_server(target).await.err();
                    let down = error.is_some();
                    recorded
                        .observations
                        .push(Observation::ServerPing { step: i, error });
                    if down {
                        break;
                    }
                }
                if adapter_failed(&outcome)
                    || (clock.is_none() && (before.is_none() || after.is_none()))
                {
                    break;
                }
                if let Ok(reply) = &outcome {
                    learned.learn(i, &req, reply);
                }
            }
        }
    }
    let judged = judge_steps(steps, &recorded);
    let recorded = cut(recorded, &judged);
    let calls = recorded
        .history
        .events
        .iter()
        .filter(|e| matches!(e.what, Happened::Invoke(_)))
        .count();
    let evidence = Evidence::Scenario(Box::new(ScenarioEvidence { calls, recorded }));
    Outcome {
        verdict: judged.verdict,
        reason: judged.reason,
        evidence,
        counterexample: judged.counterexample.map(Counterexample::Scenario),
    }
}

/// The keys under `prefix`, or why they could not be read.
async fn read_keyspace(admin: &mut MultiplexedConnection, prefix: &str) -> KeyspaceRead {
    match keyspace::snapshot(admin, prefix).await {
        Ok(keys) => KeyspaceRead::Keys(keys),
        Err(e) => KeyspaceRead::Failed(e.to_string()),
    }
}

/// Whether the adapter failed during a call: bad input, not a contract
/// violation; nothing after it can be played.
fn adapter_failed(outcome: &Result<Reply, StoreError>) -> bool {
    matches!(outcome, Err(e) if e.kind == ErrorKind::AdapterFailed)
}

/// How long storeproof's own PING of the server may take.
const PING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether storeproof's own server answers a `PING` sent straight to it on a
/// fresh connection (not through the store), within [`PING_TIMEOUT`]; the
/// error says why not. Asked after a store answered `unavailable`: a server
/// that does not answer is the harness's trouble, one that does leaves the
/// store to blame.
pub(crate) async fn ping_server(target: &Subject<'_>) -> Result<(), String> {
    let ping = async {
        let mut admin = target.admin().await?;
        redis::cmd("PING")
            .query_async::<redis::Value>(&mut admin)
            .await
            .map(|_| ())
            .map_err(|e| format!("PING failed: {e}"))
    };
    match tokio::time::timeout(PING_TIMEOUT, ping).await {
        Ok(answered) => answered,
        Err(_) => Err(format!("no answer to PING in {} s", PING_TIMEOUT.as_secs())),
    }
}

/// The server's `TIME` in ms.
async fn server_time(admin: &mut MultiplexedConnection) -> Option<i64> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(admin).await.ok()?;
    Some(secs * 1000 + micros / 1000)
}

/// A store's answer as wire JSON: the reply, or `{"error": …}`.
/// A call log as a check's counterexample.
pub(crate) fn calls_counterexample(kind: CallsKind, calls: Vec<LoggedCall>) -> Counterexample {
    Counterexample::Calls(CallsCounterexample { kind, calls })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use harness::contract::Contract;
    use harness::store::{Hello, StoreFactory, StoreInfo};
    use harness::ServerRef;

    use super::*;
    use crate::all_checks;

    /// A store no settled check may touch: connecting it is a test failure.
    struct Untouchable;

    #[async_trait]
    impl StoreFactory for Untouchable {
        fn spec(&self) -> String {
            "untouchable".into()
        }

        async fn connect(
            &self,
            hello: &Hello,
            _: i64,
        ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
            panic!("a settled check connected instance {}", hello.instance)
        }
    }

    #[tokio::test]
    async fn run_check_settles_claims_and_needs_exactly_as_plan_does() {
        let subject = Subject {
            spec: "untouchable".into(),
            factory: Arc::new(Untouchable),
            opt_out: None,
            run_prefix: "sp:settled:".into(),
            // Only the queue: lease and rate checks are outside the claim.
            contracts: vec![Contract::Queue],
            // Nothing listens on port 1, and nothing may connect to it.
            server: ServerRef::External {
                url: "redis://127.0.0.1:1/".into(),
            },
            seed: 0,
            may_start_servers: false,
        };
        let defs = all_checks();
        let (settled, _) = plan(SUITE, defs.iter().map(|d| d.spec).collect(), &subject);
        let (mut outside, mut skipped) = (0, 0);
        for def in &defs {
            let Some(planned) = settled.iter().find(|r| r.id == def.spec.id) else {
                continue;
            };
            let ran = run_check(&subject, 0, def).await;
            assert_eq!(&ran, planned, "{}", def.spec.id);
            if ran.outside_claim {
                outside += 1;
            } else {
                assert_eq!(ran.verdict, Verdict::Skipped, "{}", def.spec.id);
                skipped += 1;
            }
        }
        // Lease and rate checks are outside the claim; the server checks
        // and the queue's timed scenarios have needs this run cannot meet.
        assert!(
            outside > 10 && skipped > 3,
            "{outside} outside, {skipped} skipped"
        );
    }

    /// The SQLite store judged on the managed server's virtual clock: its
    /// leases expire to the millisecond when it follows that clock, and the
    /// same check fails when it reads the machine's clock instead (a broken
    /// follow cannot pass).
    #[tokio::test]
    async fn the_sqlite_store_passes_expiry_only_when_it_follows_the_virtual_clock() {
        use harness::server::{ManagedServer, ServerOptions};
        use stores::sqlite::{SqliteClock, SqliteStoreFactory};

        let server = ManagedServer::start(ServerOptions::default())
            .await
            .unwrap();
        let defs = all_checks();
        let expiry = defs
            .iter()
            .find(|d| d.spec.id == "conformance.lease.expiry-after-instant")
            .unwrap();
        for (clock, expect) in [
            (
                SqliteClock::following(server.clock().cloned()),
                Verdict::Pass,
            ),
            (SqliteClock::System, Verdict::Fail),
        ] {
            let factory = SqliteStoreFactory::new(server.dir().join("store.db"), clock);
            let subject = Subject {
                spec: factory.spec(),
                factory: Arc::new(factory),
                opt_out: None,
                run_prefix: format!("sp:follow{expect:?}:"),
                contracts: vec![Contract::Lease],
                server: ServerRef::Managed(&server),
                seed: 0,
                may_start_servers: true,
            };
            let result = run_check(&subject, 0, expiry).await;
            assert_eq!(result.verdict, expect, "{}", result.reason);
        }
        let _ = server.stop().await;
    }
}
