//! What a failed check saves to be shown and replayed: one closed enum with a
//! variant per kind of counterexample, each typed to its fields.
//!
//! `report.json` and replay files carry a counterexample as the JSON of its
//! variant alone (no wrapper): the variants are told apart by their `kind`
//! tag where they have one, else by their fields (a fault workload's layout
//! and plans, a scenario's steps and answer), so files written before the
//! enum existed still read.

use serde::{Deserialize, Serialize};

use crate::contract::{Call, Contract, Reply, Request, StoreError};
use crate::explore::{Property, Schedule};
use crate::history::History;
use crate::nemesis::{FaultsConfig, LayoutKind, Plan};
use crate::scenario::Step;

/// A failed check's counterexample: the minimal steps that show the failure,
/// in the shape its suite replays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Counterexample {
    /// An explorer schedule that broke a property.
    Explorer(Box<ExplorerCounterexample>),
    /// A crash run to repeat.
    Crash(CrashRerun),
    /// Two calls raced, with the interleaving no sequential order explains.
    Race(Box<RaceCounterexample>),
    /// The calls of a check about what the store keeps (claims that slow
    /// down, hits kept, keys outside the prefix, an id kept out of Redis).
    Calls(CallsCounterexample),
    /// A server the store accepted that it must refuse.
    Server(ServerCounterexample),
    /// A fault workload's failing history and what made it.
    Faults(Box<FaultsCounterexample>),
    /// A conformance scenario, the breaking step last.
    Scenario(ScenarioCounterexample),
}

impl Counterexample {
    /// The conformance scenario it is, if it is one.
    pub fn scenario(&self) -> Option<&ScenarioCounterexample> {
        match self {
            Counterexample::Scenario(s) => Some(s),
            _ => None,
        }
    }

    /// The explorer schedule it is, if it is one.
    pub fn explorer(&self) -> Option<&ExplorerCounterexample> {
        match self {
            Counterexample::Explorer(x) => Some(x),
            _ => None,
        }
    }

    /// The history it carries, if any (an explorer schedule's operations, a
    /// fault workload's run).
    pub fn history(&self) -> Option<&History> {
        match self {
            Counterexample::Explorer(x) => Some(&x.history),
            Counterexample::Faults(f) => Some(&f.history),
            _ => None,
        }
    }
}

/// A conformance scenario that broke: its steps and the store's last answer.
/// Its JSON carries `kind: "conformance-scenario"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename = "conformance-scenario")]
pub struct ScenarioCounterexample {
    /// The scenario's steps, the breaking one last.
    pub steps: Vec<Step>,
    /// The store's answer to the last step (null when the step could not
    /// be sent), as the store gave it.
    pub observed: Answer,
}

/// Which set of races a race counterexample comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RaceKind {
    /// `conformance.lease.take-races`.
    TakeRace,
    /// `conformance.queue.claim-races`.
    ClaimRace,
    /// `conformance.rate.races`.
    RateRace,
}

/// Two concurrent calls whose answers no sequential order explains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaceCounterexample {
    /// The race set.
    pub kind: RaceKind,
    /// The race's name.
    pub race: String,
    /// The Redis commands in the order the gate delivered them; empty when
    /// the calls ran truly concurrently (a store with no Redis wire).
    pub commands: Vec<RaceCommand>,
    /// The first call and its answer.
    pub a: RaceCall,
    /// The second call and its answer.
    pub b: RaceCall,
}

/// One Redis command of a raced call, as delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceCommand {
    /// The instance that sent it (`a` or `b`).
    pub instance: String,
    /// The command, as sent (for the clock, its move in words).
    pub command: String,
    /// Where the server clock moved to, for the clock's entry (instance
    /// `clock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_ms: Option<i64>,
}

/// One raced call and what the store answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaceCall {
    /// The call sent.
    pub call: Call,
    /// What the store answered.
    pub answer: Answer,
}

/// Which cost check a call log counterexample comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallsKind {
    /// Claims that run more commands after many children were completed.
    ClaimCost,
    /// A provider that keeps hits no window can count any more.
    OldHitsKept,
    /// An execution id kept out of Redis that was written there.
    KeptInRedis,
    /// Keys written outside the run's prefix.
    OutsidePrefix,
}

/// The calls a cost check made, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallsCounterexample {
    /// The check it comes from.
    pub kind: CallsKind,
    /// The calls, in order.
    pub calls: Vec<LoggedCall>,
}

/// One call of a call log and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedCall {
    /// The key prefix the call ran under, when the check used several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The instance clock it was sent with, when the check moved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_ms: Option<i64>,
    /// The call sent.
    pub call: Call,
    /// What the store answered.
    pub answer: Answer,
}

/// The tag a server-assumption counterexample carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ServerTag {
    /// `server-assumption`.
    #[default]
    #[serde(rename = "server-assumption")]
    ServerAssumption,
}

/// A server the store accepted although its settings break an assumption
/// of docs/PROTOCOL.md §7.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCounterexample {
    /// Always `server-assumption`.
    pub kind: ServerTag,
    /// The server it was given.
    pub server: ServerSetup,
}

/// The server a server check gave the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSetup {
    /// Which setup it was, by name.
    pub setup: String,
    /// The opt-out the store was given with it, if any.
    pub opt_out: Option<String>,
}

impl LoggedCall {
    /// `request` as sent (under `prefix`, at instance clock `clock_ms`) and
    /// what the store answered.
    pub fn of(
        prefix: Option<String>,
        clock_ms: Option<i64>,
        request: &Request,
        outcome: &Result<Reply, StoreError>,
    ) -> LoggedCall {
        LoggedCall {
            prefix,
            clock_ms,
            call: request.to_call(),
            answer: Answer::of(outcome),
        }
    }
}

/// What a store answered a call, as a counterexample or evidence shows it:
/// its reply as on the wire, `{"error": …}` for a refusal, null for none
/// (the call was never sent, or the operation ended unanswered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Answer {
    /// The store refused the call with an error. First: no reply reads as
    /// `{"error": …}`.
    Refused {
        /// The error.
        error: StoreError,
    },
    /// The store's reply.
    Reply(Reply),
    /// No answer.
    Nothing,
}

impl Answer {
    /// The answer of a call's outcome.
    pub fn of(outcome: &Result<Reply, StoreError>) -> Answer {
        match outcome {
            Ok(r) => Answer::Reply(r.clone()),
            Err(e) => Answer::Refused { error: e.clone() },
        }
    }

    /// Whether the store answered at all.
    pub fn given(&self) -> bool {
        !matches!(self, Answer::Nothing)
    }

    /// The outcome it records; `None` for no answer.
    pub fn outcome(&self) -> Option<Result<&Reply, &StoreError>> {
        match self {
            Answer::Reply(r) => Some(Ok(r)),
            Answer::Refused { error } => Some(Err(error)),
            Answer::Nothing => None,
        }
    }
}

/// One line of JSON, keys sorted (as reasons always quoted answers).
impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_value(self) {
            Ok(value) => write!(f, "{value}"),
            Err(_) => f.write_str("null"),
        }
    }
}

/// The tag every explorer counterexample carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ExplorerTag {
    /// `explorer-schedule`.
    #[default]
    #[serde(rename = "explorer-schedule")]
    ExplorerSchedule,
}

/// A schedule the explorer found that broke a property.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplorerCounterexample {
    /// Always `explorer-schedule`.
    pub kind: ExplorerTag,
    /// The property the schedule broke.
    pub property: Property,
    /// The schedule, from the initial state.
    pub schedule: Schedule,
    /// The schedule's steps as the report shows them.
    pub steps: Vec<ExplorerStep>,
    /// The schedule's operations as a typed history: each instance's
    /// invocation (the wire call, at the server time and instance clock it
    /// was invoked with) and its completion (ok, fail or info, at the server
    /// time it answered, with the clock it was invoked with). An operation
    /// its instance crashed in the middle of has no completion. Absent from
    /// counterexamples written before it was recorded.
    #[serde(default)]
    pub history: History,
}

/// One step of an explorer schedule as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplorerStep {
    /// Its number, from 0 (the start).
    pub step: usize,
    /// What happened, in words.
    pub what: String,
    /// The server clock after it.
    pub server_ms: i64,
    /// The Redis commands it delivered (absent at the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Vec<String>>,
    /// The answer of the operation it ended (null when it ended none; absent
    /// at the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
}

/// What a failed fault workload check saves to be replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultsCounterexample {
    /// The layout whose history failed.
    pub layout: LayoutKind,
    /// The run's seed (the workload's and plans' are drawn from it).
    pub seed: u64,
    /// The suite's sizes.
    pub config: FaultsConfig,
    /// The plans the nemeses played.
    pub plans: Vec<Plan>,
    /// The failing history, judged again by `storeproof replay` before the
    /// workload is run again.
    pub history: History,
}

/// The tag every crash counterexample carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum CrashTag {
    /// `crash-run`.
    #[default]
    #[serde(rename = "crash-run")]
    CrashRun,
}

/// What re-runs a failed crash check (its counterexample): the same seed
/// (kill moments and writers), sizes and backend. Thread timing is not
/// replayed, so a re-run repeats the schedule, not every interleaving of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashRerun {
    /// Always `crash-run`.
    pub kind: CrashTag,
    /// The run's seed.
    pub seed: u64,
    /// Kills with the required settings.
    pub kills: usize,
    /// Kills opted out.
    pub opt_out_kills: usize,
    /// Power cuts per setting.
    pub power_losses: usize,
    /// Writers.
    #[serde(default = "four")]
    pub instances: usize,
    /// `docker` or `process` (what ran; an older file may say nothing: auto).
    #[serde(default)]
    pub backend: String,
    /// The contracts written (an older file names none: every contract).
    #[serde(default = "every_contract")]
    pub contracts: Vec<Contract>,
    /// The first findings, in words.
    #[serde(default)]
    pub found: Vec<String>,
}

fn four() -> usize {
    4
}

fn every_contract() -> Vec<Contract> {
    Contract::COORDINATION.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::Action;
    use crate::explore::Op;
    use crate::nemesis::{Fault, Step as FaultStep};
    use serde_json::json;

    fn call() -> Call {
        Call {
            op: "lease.take".into(),
            args: json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
        }
    }

    /// Every variant read back from its own JSON is itself, not another
    /// variant that happens to fit: the untagged enum picks by tag or fields.
    #[test]
    fn each_variant_reads_back_as_itself() {
        let all = vec![
            Counterexample::Explorer(Box::new(ExplorerCounterexample {
                kind: ExplorerTag::ExplorerSchedule,
                property: Property::OneLiveHolder,
                schedule: Schedule {
                    skews: vec![0, 0],
                    actions: vec![Action::Start(0, Op::Take), Action::Continue(0)],
                },
                steps: vec![ExplorerStep {
                    step: 0,
                    what: "start".into(),
                    server_ms: 5,
                    commands: None,
                    answer: None,
                }],
                history: History::default(),
            })),
            Counterexample::Crash(CrashRerun {
                kind: CrashTag::CrashRun,
                seed: 1,
                kills: 2,
                opt_out_kills: 1,
                power_losses: 1,
                instances: 4,
                backend: "process".into(),
                contracts: vec![Contract::Lease],
                found: vec!["lost".into()],
            }),
            Counterexample::Race(Box::new(RaceCounterexample {
                kind: RaceKind::TakeRace,
                race: "take-take".into(),
                commands: vec![RaceCommand {
                    instance: "a".into(),
                    command: "EVALSHA x".into(),
                    clock_ms: None,
                }],
                a: RaceCall {
                    call: call(),
                    answer: Answer::Reply(Reply::Granted {
                        epoch: 1,
                        expires_at_ms: 9,
                    }),
                },
                b: RaceCall {
                    call: call(),
                    answer: Answer::Refused {
                        error: StoreError::new(crate::contract::ErrorKind::Unavailable, "x"),
                    },
                },
            })),
            Counterexample::Calls(CallsCounterexample {
                kind: CallsKind::OldHitsKept,
                calls: vec![LoggedCall {
                    prefix: Some("p:".into()),
                    clock_ms: Some(3),
                    call: call(),
                    answer: Answer::Nothing,
                }],
            }),
            Counterexample::Faults(Box::new(FaultsCounterexample {
                layout: LayoutKind::Durable,
                seed: 3,
                config: FaultsConfig::default(),
                plans: vec![Plan {
                    seed: 4,
                    steps: vec![FaultStep {
                        after_ms: 5,
                        fault: Fault::Delay { instance: 0, ms: 9 },
                    }],
                }],
                history: History::default(),
            })),
            Counterexample::Server(ServerCounterexample {
                kind: ServerTag::ServerAssumption,
                server: ServerSetup {
                    setup: "Replica".into(),
                    opt_out: None,
                },
            }),
            Counterexample::Scenario(ScenarioCounterexample {
                steps: vec![Step::At(5)],
                observed: Answer::Reply(Reply::Lease(None)),
            }),
        ];
        for cx in all {
            let json = serde_json::to_value(&cx).unwrap();
            let back: Counterexample = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(back, cx, "{json}");
        }
    }
}
