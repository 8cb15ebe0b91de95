//! What a check saw, as its evidence: one closed enum, as [`Figures`] is, so
//! every producer writes fields the compiler knows and the report reads
//! them, never guessing keys.
//!
//! Each variant serialises as its record alone (no wrapper, no tag): the
//! shape `report.json` has always had. Reading one back tries the variants
//! in order; records refuse fields they do not know, so a record only reads
//! as itself (a test round-trips every variant).
//!
//! [`Figures`]: crate::figures::Figures

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::contract::StoreError;
use crate::counterexample::{Answer, LoggedCall, RaceCall, RaceCommand, ServerSetup};
use crate::figures::{CrashFigures, ExplorerFigures, FaultMeeting, SeriesFigures, WorkloadFigures};
use crate::findings::children::ChildrenOnce;
use crate::findings::fencing::Fencing;
use crate::findings::full_server::FullServer;
use crate::findings::linearizable::TreeVerdict;
use crate::findings::rate::RateBounds;
use crate::layout::Layout;
use crate::recorded::CheckHistory;
use crate::{History, Verdict};

/// What one check saw. `None` (JSON `null`) when it saw nothing worth
/// keeping: a check settled before it ran, or one the harness could not start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Evidence {
    /// Nothing recorded.
    #[default]
    None,
    /// A fault check: one record per layout it judged.
    FaultLayouts(Vec<FaultLayout>),
    /// A conformance scenario: its recorded history and server observations.
    Scenario(Box<ScenarioEvidence>),
    /// A generated conformance check: what it generated, and the case that
    /// decided it.
    Generated(Box<GeneratedEvidence>),
    /// A race check: every race's schedules or rounds.
    Races(RacesEvidence),
    /// The calls of a cost check up to the one the store answered wrong.
    Calls(CallsEvidence),
    /// The kept-execution-ids check: the id searched for and where.
    KeptIds(KeptIdsEvidence),
    /// The prefix check: the keys the store wrote and where.
    Prefix(PrefixEvidence),
    /// The claim-cost check's measurement.
    ClaimCost(ClaimCostEvidence),
    /// The bytes-per-tree check's measurement.
    BytesPerTree(BytesPerTreeEvidence),
    /// The old-hits check's measurement.
    OldHits(OldHitsEvidence),
    /// A server-assumption check: the server given, and the store's answer.
    Server(ServerEvidence),
    /// The full-server check: what it found, over the workload's history.
    FullServer(Box<FullServerEvidence>),
    /// A fault check replayed from a saved history: both verdicts' evidence.
    Replayed(Box<ReplayedEvidence>),
    /// A crash check over a series of kills: what broke, with the first
    /// such kill's history.
    KillsFound(Box<KillsFoundEvidence>),
    /// A crash demonstration of loss: the reference store's figures (which
    /// decide it), the store's beside them, and the reference's loss shown.
    LossShown(Box<LossShownEvidence>),
    /// The down-server crash check: how the store answered while its
    /// server was down.
    DownServer(DownServerEvidence),
    /// A layout check: the layout and whether it assembled.
    Layout(LayoutEvidence),
    /// An explorer check: the exploration's figures.
    Explorer(Box<ExplorerEvidence>),
    /// The crash suite's backend check: the suite's figures.
    CrashFigures(Box<CrashFiguresEvidence>),
    /// A sabotage: which check was to catch it and what the run under it did.
    Sabotage(SabotageEvidence),
}

impl Evidence {
    /// The history the check recorded beside its findings (a scenario's
    /// calls, a kill's writes about what was lost, a full server's
    /// workload), if it holds one.
    pub fn history(&self) -> Option<&History> {
        match self {
            Evidence::Scenario(s) => Some(&s.recorded.history),
            Evidence::FullServer(f) => Some(&f.history),
            Evidence::KillsFound(k) => k.history.as_ref().map(|k| &k.history),
            Evidence::Generated(g) => g.case.as_ref().or(g.failing.as_ref())?.history(),
            _ => None,
        }
    }

    /// The calls of a check, up to the one the store answered wrong.
    pub fn calls(calls: &[LoggedCall]) -> Evidence {
        Evidence::Calls(CallsEvidence {
            calls: calls.to_vec(),
        })
    }

    /// Whether nothing was recorded.
    pub fn is_none(&self) -> bool {
        matches!(self, Evidence::None)
    }
}

/// A scenario check's evidence: the recorded history the judge decided on
/// (cut at the deciding step), and how many calls it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioEvidence {
    /// Calls sent (valid and bad input).
    pub calls: usize,
    /// What the judge reads to decide again.
    #[serde(flatten)]
    pub recorded: CheckHistory,
}

/// What a generated check generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generation {
    /// The seed of the sequences.
    pub seed: u64,
    /// Sequences asked for.
    pub cases: u32,
    /// Sequences played against the store.
    pub played: usize,
}

/// A generated check's evidence: what it generated, and the evidence of
/// the case that settled it (`case`), or of the shrunk failing one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratedEvidence {
    /// What was generated.
    pub generated: Generation,
    /// The case that settled the check (undecided, skipped or warned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<Evidence>,
    /// The shortest failing case found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing: Option<Evidence>,
}

/// A race check's evidence: one record per race.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RacesEvidence {
    /// Each race, in the order they ran.
    pub races: Vec<RaceEvidence>,
}

/// One race's schedules (forced through the gate) or rounds (concurrent
/// calls, for a store outside Redis), as far as they ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaceEvidence {
    /// The race's name.
    pub race: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// Rounds of concurrent calls run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<usize>,
    /// Schedules run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedules: Option<usize>,
    /// What stopped it (the store's error, the harness's trouble or the
    /// store's `unsupported`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many interleavings there are at least, when not all ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<usize>,
    /// Whether every interleaving ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    /// The schedule or round no sequential order explains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing: Option<RaceRecord>,
    /// Every round of concurrent calls, each linearizable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<Vec<RaceRecord>>,
    /// Every interleaving run, each linearizable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleavings: Option<Vec<RaceRecord>>,
}

impl RaceEvidence {
    /// Race `race` with verdict `verdict`, nothing else recorded yet.
    pub fn of(race: &str, verdict: Verdict) -> RaceEvidence {
        RaceEvidence {
            race: race.to_string(),
            verdict,
            rounds: None,
            schedules: None,
            error: None,
            at_least: None,
            complete: None,
            failing: None,
            concurrent: None,
            interleavings: None,
        }
    }
}

/// One schedule (or round) of a race: the Redis commands as delivered
/// (none for concurrent rounds) and both calls with their answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaceRecord {
    /// The commands, in the order the gate delivered them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Vec<RaceCommand>>,
    /// The first raced call.
    pub a: RaceCall,
    /// The second raced call.
    pub b: RaceCall,
}

/// The calls of a cost check, up to the one the store answered wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallsEvidence {
    /// Every call sent, with its answer.
    pub calls: Vec<LoggedCall>,
}

/// The kept-execution-ids check's evidence: a kept id must not reach Redis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeptIdsEvidence {
    /// The execution id kept.
    pub marker: String,
    /// Keys searched for it, when none held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_searched: Option<usize>,
    /// The keys that hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<String>>,
    /// The calls sent.
    pub calls: Vec<LoggedCall>,
}

/// The prefix check's evidence: every key the store wrote for odd ids must
/// be under its prefix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixEvidence {
    /// The prefix the store was given.
    pub prefix: String,
    /// Keys that appeared during the calls.
    pub new_keys: usize,
    /// Those outside the prefix.
    pub outside: Vec<String>,
    /// The calls sent.
    pub calls: Vec<LoggedCall>,
}

/// What the claim-cost check measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimCostEvidence {
    /// Children completed on the measured queue before its claims.
    pub completed: usize,
    /// Commands of a claim on a fresh queue (the cheaper of two).
    pub fresh_claim_commands: u64,
    /// Commands of a claim after the completions (the cheaper of two, so a
    /// store that cleans up lazily on its next claim is not blamed).
    pub claim_after_completed_commands: u64,
    /// The most the second may exceed the first.
    pub slack_commands: u64,
    /// The commands the dearer measured claim ran, by name.
    pub commands: BTreeMap<String, u64>,
}

/// What the bytes-per-tree check measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BytesPerTreeEvidence {
    /// Trees taken.
    pub trees: usize,
    /// Keys found under the check's prefix.
    pub keys: usize,
    /// Their MEMORY USAGE, summed.
    pub bytes: u64,
    /// `bytes / trees`.
    pub bytes_per_tree: u64,
    /// The most a tree may cost before the check warns.
    pub limit_bytes_per_tree: u64,
}

/// What the old-hits check measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OldHitsEvidence {
    /// Hits sent a year and more before the last one.
    pub old_hits: i64,
    /// MEMORY USAGE of the provider after its last hit.
    pub bytes_after_old_hits: u64,
    /// MEMORY USAGE of a provider that only ever had that last hit.
    pub bytes_of_one_hit: u64,
    /// The most the first may exceed the second.
    pub slack_bytes: u64,
}

/// A server-assumption check's evidence: the server the store was given,
/// and how it answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerEvidence {
    /// The server given.
    pub server: ServerSetup,
    /// The error the store connected (or took) with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StoreError>,
    /// The store's answer to a take on an accepted server (left out when
    /// none was sent: the store does not claim the lease contract).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
}

/// The full-server check's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FullServerEvidence {
    /// What it found.
    pub found: FullServer,
    /// The workload's history.
    pub history: History,
}

/// A fault check replayed from a saved history: the saved history judged
/// again, and a fresh run with the saved seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayedEvidence {
    /// The saved history's evidence, judged again.
    pub saved: Evidence,
    /// The fresh run's evidence.
    pub again: Evidence,
}

/// What a fault check judged in one layout's workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultLayout {
    /// The layout (`redis`, `durable`, …).
    pub layout: String,
    /// Whether the check held there.
    pub holds: bool,
    /// The checker's findings.
    pub detail: FaultDetail,
    /// Per fault kind: how its faults met the check's operations.
    pub faults_met: BTreeMap<String, FaultMeeting>,
    /// Instances whose operations after the last fault healed all ended
    /// unknown, with how many.
    pub not_recovered: Vec<(String, usize)>,
    /// The workload's figures.
    pub figures: WorkloadFigures,
}

/// One fault checker's findings in a layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FaultDetail {
    /// Linearizability: the trees no order explains.
    Linearizable(LinearizableDetail),
    /// Children-once.
    Children(ChildrenOnce),
    /// Fencing.
    Fencing(Fencing),
    /// Rate bounds.
    Rate(RateBounds),
}

/// The linearizability checker's findings, cut to what broke.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearizableDetail {
    /// Each tree no order explains, with why.
    pub not_linearizable: BTreeMap<String, TreeVerdict>,
    /// Trees judged.
    pub trees: usize,
}

/// A part of one kill's history in a failed crash check's evidence: `kill`
/// and the `events` (the [`History`] shape) of the requests about the first
/// trees, children or providers the check found lost in that kill, each
/// event keeping its index in the kill's whole history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KillHistory {
    /// The kill, from 1.
    pub kill: usize,
    /// Its events about what was lost.
    #[serde(flatten)]
    pub history: History,
}

/// A crash check over a series of kills.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillsFoundEvidence {
    /// The series' figures.
    pub figures: SeriesFigures,
    /// What broke, one line each.
    pub found: Vec<String>,
    /// The first kill where something broke, about what was lost there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<KillHistory>,
}

/// A crash demonstration of loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossShownEvidence {
    /// The reference store's figures: they decide it.
    pub reference: SeriesFigures,
    /// The store's, reported beside them.
    pub store: SeriesFigures,
    /// The reference store's first loss, in words.
    pub example: Option<String>,
}

/// The down-server crash check's evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DownServerEvidence {
    /// Writes tried while the server was down.
    pub probes: usize,
    /// Refused (as the contract asks).
    pub refused: usize,
    /// Never answered.
    pub silent: usize,
    /// Acknowledged: the store's state is not on that server.
    pub acknowledged: usize,
    /// Probes not judged because storeproof's server still answered PING.
    pub server_up: usize,
}

/// A layout check's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutEvidence {
    /// The layout judged.
    pub layout: Option<Layout>,
    /// Whether it assembled.
    pub assembled: bool,
    /// Why it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
}

/// An explorer check's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplorerEvidence {
    /// The exploration's figures.
    pub figures: ExplorerFigures,
    /// What a step is, for a store with no Redis wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

/// The crash suite's figures, as the backend check's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashFiguresEvidence {
    /// The suite's figures.
    pub figures: CrashFigures,
}

/// A sabotage's evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SabotageEvidence {
    /// The sabotaged store, as `--store` names it.
    pub store: String,
    /// The check that must catch it.
    pub caught_by: String,
    /// That check's verdict under the sabotage (`None`: it did not run).
    pub named_verdict: Option<Verdict>,
    /// The checks that failed or warned.
    pub failed: Vec<String>,
    /// The suites run.
    pub suites: Vec<String>,
    /// Why the probe refused the sabotaged store, if it did.
    pub probe_refused: Option<String>,
    /// storeproof's own trouble in the run.
    pub trouble: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Call, ErrorKind, Reply, StoreError};
    use crate::findings::fencing::FencingRule;
    use crate::findings::linearizable::Step;
    use crate::recorded::{KeyspaceRead, Observation};
    use crate::Level;
    use serde_json::json;

    fn history() -> History {
        let mut h = History::default();
        let call = Call {
            op: "lease.take".into(),
            args: json!({"tree": "t", "holder": "a", "ttl_ms": 100}),
        };
        h.invoke("a", &call, Some(5), 5);
        let granted = Reply::Granted {
            epoch: 1,
            expires_at_ms: 105,
        };
        h.complete("a", "lease.take", &Ok(granted), Some(5), 5);
        h
    }

    fn logged() -> LoggedCall {
        LoggedCall {
            prefix: None,
            clock_ms: Some(3),
            call: Call {
                op: "lease.read".into(),
                args: json!({"tree": "t"}),
            },
            answer: Answer::Reply(Reply::Lease(None)),
        }
    }

    fn race_call() -> RaceCall {
        RaceCall {
            call: logged().call,
            answer: Answer::Refused {
                error: StoreError::new(ErrorKind::Unavailable, "down"),
            },
        }
    }

    fn scenario() -> Evidence {
        Evidence::Scenario(Box::new(ScenarioEvidence {
            calls: 1,
            recorded: CheckHistory {
                check: "conformance.lease.take-busy".into(),
                level: Level::Must,
                start_ms: 5,
                history: history(),
                observations: vec![Observation::Keyspace {
                    step: 0,
                    before: KeyspaceRead::Unchanged,
                    after: KeyspaceRead::Failed("gone".into()),
                }],
            },
        }))
    }

    fn fault_layout(detail: FaultDetail) -> FaultLayout {
        FaultLayout {
            layout: "redis".into(),
            holds: false,
            detail,
            faults_met: BTreeMap::from([("partition".into(), FaultMeeting::default())]),
            not_recovered: vec![("a".into(), 2)],
            figures: WorkloadFigures::default(),
        }
    }

    /// One value of every variant (and every fault detail), each with the
    /// fields that tell it apart.
    fn every_variant() -> Vec<Evidence> {
        let step = Step {
            invoke_event: 0,
            op: "lease.take".into(),
            instance: "a".into(),
            took_effect: None,
            earliest_ms: Some(5),
            latest_ms: None,
        };
        let lin = LinearizableDetail {
            not_linearizable: BTreeMap::from([(
                "t".into(),
                TreeVerdict::NotLinearizable {
                    at_event: 1,
                    op_event: 0,
                    concurrent: vec![],
                    longest_partial: vec![step],
                    why: Some("b's lease.take answered granted; it had to be busy".into()),
                },
            )]),
            trees: 1,
        };
        let fencing = Fencing {
            violations: vec![],
            unread: vec![3],
            rules: vec![FencingRule {
                rule: "begun-once".into(),
                applied: true,
                why: "two begins".into(),
            }],
        };
        let series = SeriesFigures::default();
        vec![
            Evidence::None,
            Evidence::FaultLayouts(vec![
                fault_layout(FaultDetail::Linearizable(lin)),
                fault_layout(FaultDetail::Children(ChildrenOnce::default())),
                fault_layout(FaultDetail::Fencing(fencing)),
                fault_layout(FaultDetail::Rate(RateBounds::default())),
            ]),
            scenario(),
            Evidence::Generated(Box::new(GeneratedEvidence {
                generated: Generation {
                    seed: 1,
                    cases: 2,
                    played: 2,
                },
                case: None,
                failing: Some(scenario()),
            })),
            Evidence::Generated(Box::new(GeneratedEvidence {
                generated: Generation {
                    seed: 1,
                    cases: 2,
                    played: 2,
                },
                case: None,
                failing: None,
            })),
            Evidence::Races(RacesEvidence {
                races: vec![
                    RaceEvidence {
                        schedules: Some(1),
                        complete: Some(true),
                        interleavings: Some(vec![RaceRecord {
                            commands: Some(vec![RaceCommand {
                                instance: "clock".into(),
                                command: "the server clock moves to 7".into(),
                                clock_ms: Some(7),
                            }]),
                            a: race_call(),
                            b: race_call(),
                        }]),
                        ..RaceEvidence::of("take-take", Verdict::Pass)
                    },
                    RaceEvidence {
                        rounds: Some(2),
                        error: Some("reset".into()),
                        ..RaceEvidence::of("take-release", Verdict::Unknown)
                    },
                ],
            }),
            Evidence::calls(&[logged()]),
            Evidence::KeptIds(KeptIdsEvidence {
                marker: "m".into(),
                keys_searched: Some(3),
                keys: None,
                calls: vec![logged()],
            }),
            Evidence::Prefix(PrefixEvidence {
                prefix: "p:".into(),
                new_keys: 2,
                outside: vec!["x".into()],
                calls: vec![logged()],
            }),
            Evidence::ClaimCost(ClaimCostEvidence {
                completed: 1,
                fresh_claim_commands: 2,
                claim_after_completed_commands: 3,
                slack_commands: 4,
                commands: BTreeMap::from([("evalsha".into(), 2)]),
            }),
            Evidence::BytesPerTree(BytesPerTreeEvidence {
                trees: 1,
                keys: 1,
                bytes: 100,
                bytes_per_tree: 100,
                limit_bytes_per_tree: 1024,
            }),
            Evidence::OldHits(OldHitsEvidence {
                old_hits: 1,
                bytes_after_old_hits: 2,
                bytes_of_one_hit: 3,
                slack_bytes: 4,
            }),
            Evidence::Server(ServerEvidence {
                server: ServerSetup {
                    setup: "Replica".into(),
                    opt_out: None,
                },
                error: Some(StoreError::new(ErrorKind::Deployment, "a replica")),
                answer: None,
            }),
            Evidence::FullServer(Box::new(FullServerEvidence {
                found: FullServer::default(),
                history: history(),
            })),
            Evidence::Replayed(Box::new(ReplayedEvidence {
                saved: Evidence::FaultLayouts(vec![]),
                again: Evidence::None,
            })),
            Evidence::KillsFound(Box::new(KillsFoundEvidence {
                figures: series.clone(),
                found: vec!["kill 1, tree-1: gone".into()],
                history: Some(KillHistory {
                    kill: 1,
                    history: history(),
                }),
            })),
            Evidence::LossShown(Box::new(LossShownEvidence {
                reference: series.clone(),
                store: series,
                example: Some("tree-1: gone".into()),
            })),
            Evidence::DownServer(DownServerEvidence {
                probes: 1,
                refused: 1,
                silent: 0,
                acknowledged: 0,
                server_up: 0,
            }),
            Evidence::Layout(LayoutEvidence {
                layout: Some(Layout::coordination_set()),
                assembled: true,
                refusal: None,
            }),
            Evidence::Explorer(Box::new(ExplorerEvidence {
                figures: ExplorerFigures::default(),
                step: Some("a step is one operation".into()),
            })),
            // The explorer's figures alone: what a crash figures record
            // (all its fields optional) would read too, were it tried first.
            Evidence::Explorer(Box::new(ExplorerEvidence {
                figures: ExplorerFigures::default(),
                step: None,
            })),
            Evidence::CrashFigures(Box::new(CrashFiguresEvidence {
                figures: CrashFigures::default(),
            })),
            Evidence::Sabotage(SabotageEvidence {
                store: "sabotage:blind-retry".into(),
                caught_by: "faults.lease-linearizable".into(),
                named_verdict: Some(Verdict::Fail),
                failed: vec!["faults.lease-linearizable".into()],
                suites: vec!["faults".into()],
                probe_refused: None,
                trouble: vec![],
            }),
        ]
    }

    /// The report is written through JSON and read back (secrets are
    /// redacted on the way), and `storeproof merge` reads shards: each
    /// variant must read back as itself, never as a neighbour with the
    /// same fields.
    #[test]
    fn each_variant_reads_back_as_itself() {
        for e in every_variant() {
            let json = serde_json::to_value(&e).unwrap();
            let back: Evidence =
                serde_json::from_value(json.clone()).unwrap_or_else(|err| panic!("{err}: {json}"));
            assert_eq!(back, e, "{json}");
        }
    }

    #[test]
    fn the_recorded_history_is_found_wherever_a_variant_keeps_one() {
        let with: Vec<Evidence> = every_variant()
            .into_iter()
            .filter(|e| e.history().is_some())
            .collect();
        // The scenario, the generated case's, the full server's and the kill's.
        assert_eq!(with.len(), 4, "{with:?}");
        assert!(with.iter().all(|e| e.history() == Some(&history())));
    }
}
