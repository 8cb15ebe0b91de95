//! The nemesis: faults between instances and the server, each named for its
//! effect (turmoil's style), drawn from a seed and recorded in the history.
//!
//! A [`Plan`] is a list of [`Step`]s (wait, then one [`Fault`]) drawn from a
//! `StdRng` seeded with [`PlanOptions`]' seed: the same seed and options
//! always give the same plan. A [`Nemesis`] holds one [`Gate`] per instance
//! (instance `i` is named [`instance_name`]`(i)`) and applies a plan's steps
//! one after the other, never two faults at once, to those gates and a
//! [`ManagedServer`].
//!
//! **History.** Jepsen records nemesis operations as `info` events of a
//! `nemesis` process. Here each fault is recorded twice, under instance
//! [`NEMESIS`] and op `nemesis.<name>` ([`Fault::op`]), as events of their
//! own kind ([`harness::Happened::Nemesis`], JSON `kind: "nemesis"`): its
//! start, whose note holds the fault's fields ([`Fault::args`]), and its end,
//! whose note says how it ended ([`Ending`], or why it could not be
//! applied). They are neither invokes nor completions: checkers that pair an
//! instance's invokes with its completions skip them. `server_ms` is the
//! virtual clock when the server has one, else unknown; `clock_ms` (an
//! instance clock, which the nemesis has not) is the milliseconds since the
//! nemesis was made.
//!
//! **Stores without a Redis wire** (the SQLite fencing set runs in-process)
//! get the faults that make sense at the call boundary from
//! [`crate::call_faults`], recorded the same way.
//!
//! **Left out:** a zombie whose own clock stops (the gate can only hold its
//! commands, which is what [`Fault::PauseInstance`] does); a partition that
//! also delays replies to commands sent before it (they still come back).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use harness::gate::{self, FaultRule, Gate, Mode};
use harness::server::{ManagedServer, ServerError};
use harness::{History, NemesisNote, NemesisPhase};

use crate::evidence::Boundary;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The instance name nemesis events are recorded under.
pub const NEMESIS: &str = "nemesis";

/// How often the nemesis looks whether a one-shot fault has fired.
const POLL: Duration = Duration::from_millis(5);

pub use model::nemesis::{Fault, FaultKind, Plan, Step};

/// What a plan may contain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanOptions {
    /// The seed; the same options give the same plan.
    pub seed: u64,
    /// How many instances (gates) faults may target; at least 1.
    pub instances: usize,
    /// How many steps.
    pub steps: usize,
    /// The kinds to draw from (uniformly); empty: every kind.
    pub kinds: Vec<FaultKind>,
    /// The longest wait before a step, in milliseconds.
    pub max_gap_ms: u64,
    /// The longest delay, partition, fill or pause, in milliseconds.
    pub max_fault_ms: u64,
}

impl PlanOptions {
    /// `steps` steps over `instances` instances from every kind, with gaps
    /// and faults of at most 200 ms.
    pub fn new(seed: u64, instances: usize, steps: usize) -> PlanOptions {
        PlanOptions {
            seed,
            instances,
            steps,
            kinds: Vec::new(),
            max_gap_ms: 200,
            max_fault_ms: 200,
        }
    }
}

/// Draws a plan from `options`: a function of the options alone.
pub fn draw(options: &PlanOptions) -> Plan {
    let mut rng = StdRng::seed_from_u64(options.seed);
    let kinds: &[FaultKind] = if options.kinds.is_empty() {
        &FaultKind::ALL
    } else {
        &options.kinds
    };
    let instances = options.instances.max(1);
    let max_fault = options.max_fault_ms.max(1);
    let steps = (0..options.steps)
        .map(|_| {
            let after_ms = rng.random_range(0..=options.max_gap_ms);
            let kind = kinds[rng.random_range(0..kinds.len())];
            let instance = rng.random_range(0..instances);
            let ms = rng.random_range(1..=max_fault);
            let fault = match kind {
                FaultKind::LoseReplyAfterApply => Fault::LoseReplyAfterApply { instance },
                FaultKind::DropBeforeApply => Fault::DropBeforeApply { instance },
                FaultKind::Delay => Fault::Delay { instance, ms },
                FaultKind::ResetConnection => Fault::ResetConnection { instance },
                FaultKind::Partition => Fault::Partition {
                    instance,
                    for_ms: ms,
                },
                FaultKind::RestartServer => Fault::RestartServer,
                FaultKind::RestartServerCleanly => Fault::RestartServerCleanly,
                FaultKind::FillServer => Fault::FillServer { for_ms: ms },
                FaultKind::PauseInstance => Fault::PauseInstance {
                    instance,
                    for_ms: ms,
                },
            };
            Step { after_ms, fault }
        })
        .collect();
    Plan {
        seed: options.seed,
        steps,
    }
}

/// How an applied fault ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// A one-shot fault hit a command.
    Fired,
    /// A one-shot fault found no command within the arming window and was
    /// disarmed.
    Disarmed,
    /// A fault with a duration ran its time and was healed.
    Healed,
    /// The server was restarted on its data and answers again.
    Restarted,
}

impl Ending {
    /// Every ending.
    const ALL: [Ending; 4] = [
        Ending::Fired,
        Ending::Disarmed,
        Ending::Healed,
        Ending::Restarted,
    ];

    /// The ending an end note's line names (`None`: the fault could not be
    /// applied).
    pub fn read(line: &str) -> Option<Ending> {
        Ending::ALL
            .into_iter()
            .find(|e| line.ends_with(e.describe()))
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Ending::Fired => "fired on a command",
            Ending::Disarmed => "disarmed: no command came while it was armed",
            Ending::Healed => "healed after its time",
            Ending::Restarted => "the server answers again on its data",
        }
    }
}

/// Why the nemesis could not apply a fault. Every message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum NemesisError {
    /// The fault names an instance that has no gate.
    #[error("fault {op} targets instance {instance} but the nemesis has {gates} gate(s); plan with PlanOptions::instances = {gates}")]
    NoSuchInstance {
        /// The fault's op.
        op: String,
        /// The index asked for.
        instance: usize,
        /// How many gates there are.
        gates: usize,
    },
    /// The fault has no meaning at the call boundary (a server fault given
    /// to a [`crate::call_faults::CallNemesis`]).
    #[error("fault {op} has no meaning at the call boundary of an in-process store; plan with PlanOptions::kinds = call_faults::CALL_KINDS")]
    NotAtCallBoundary {
        /// The fault's op.
        op: String,
    },
    /// The managed server could not be restarted or reached.
    #[error("the nemesis lost the server: {0}")]
    Server(#[from] ServerError),
    /// The server refused a command the nemesis sends (`CONFIG`).
    #[error("the server refused the nemesis's {command}: {source}; the nemesis needs the CONFIG command")]
    Redis {
        /// What was sent.
        command: String,
        /// The server's answer.
        source: redis::RedisError,
    },
}

/// Applies faults to one gate per instance and a managed server, and
/// records each in a history (see the [module docs](self)).
///
/// The nemesis owns its gates' fault rules and mode: applying a fault to a
/// gate clears that gate's earlier rules, and a pause ends in
/// [`Mode::PassThrough`]. A fault runs its course inside
/// [`apply`](Nemesis::apply): dropping that future midway leaves the fault
/// in force (a partition, pause or full server stays until healed by hand).
#[derive(Debug)]
pub struct Nemesis {
    gates: Vec<Gate>,
    armed_for: Duration,
    started: Instant,
}

impl Nemesis {
    /// A nemesis over `gates`, gate `i` being instance
    /// [`instance_name`]`(i)`'s. One-shot faults stay armed for 1 s.
    pub fn new(gates: Vec<Gate>) -> Nemesis {
        Nemesis {
            gates,
            armed_for: Duration::from_secs(1),
            started: Instant::now(),
        }
    }

    /// The same nemesis, keeping one-shot faults armed for `armed_for`
    /// waiting for a command before disarming them.
    pub fn with_armed_for(mut self, armed_for: Duration) -> Nemesis {
        self.armed_for = armed_for;
        self
    }

    /// Applies every step of `plan` in order (waiting `after_ms` before
    /// each), recording each fault's start and end in `history`. Stops at
    /// the first fault it cannot apply; what was applied is recorded.
    pub async fn run(
        &self,
        server: &mut ManagedServer,
        plan: &Plan,
        history: &Mutex<History>,
    ) -> Result<Vec<Ending>, NemesisError> {
        let mut endings = Vec::with_capacity(plan.steps.len());
        for step in &plan.steps {
            tokio::time::sleep(Duration::from_millis(step.after_ms)).await;
            endings.push(self.apply(server, &step.fault, history).await?);
        }
        Ok(endings)
    }

    /// Applies one fault and returns when it has ended (fired, disarmed,
    /// healed or restarted), its start and end recorded in `history`. On an
    /// error after the start, the end is recorded with the error's message.
    pub async fn apply(
        &self,
        server: &mut ManagedServer,
        fault: &Fault,
        history: &Mutex<History>,
    ) -> Result<Ending, NemesisError> {
        // An unknown instance is refused before anything is recorded.
        if let Some(i) = fault.instance() {
            self.gate(fault, i)?;
        }
        let (server_ms, clock_ms) = self.now(server);
        record_start(history, fault, Boundary::Gate, server_ms, clock_ms);
        let outcome = self.effect(server, fault).await;
        let (server_ms, clock_ms) = self.now(server);
        record_end(
            history,
            fault,
            Boundary::Gate,
            &outcome,
            server_ms,
            clock_ms,
        );
        outcome
    }

    async fn effect(
        &self,
        server: &mut ManagedServer,
        fault: &Fault,
    ) -> Result<Ending, NemesisError> {
        match *fault {
            Fault::LoseReplyAfterApply { instance } => {
                let g = self.gate(fault, instance)?;
                Ok(self.fire_once(g, gate::Fault::DropReplyAfterApply).await)
            }
            Fault::DropBeforeApply { instance } => {
                let g = self.gate(fault, instance)?;
                Ok(self.fire_once(g, gate::Fault::BlackHole).await)
            }
            Fault::Delay { instance, ms } => {
                let g = self.gate(fault, instance)?;
                let delay = gate::Fault::Delay(Duration::from_millis(ms));
                Ok(self.fire_once(g, delay).await)
            }
            Fault::ResetConnection { instance } => {
                let g = self.gate(fault, instance)?;
                Ok(self.fire_once(g, gate::Fault::ResetBeforeSend).await)
            }
            Fault::Partition { instance, for_ms } => {
                let g = self.gate(fault, instance)?;
                g.partition();
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
                g.heal();
                Ok(Ending::Healed)
            }
            Fault::PauseInstance { instance, for_ms } => {
                let g = self.gate(fault, instance)?;
                g.set_mode(Mode::Hold);
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
                // Back to pass-through releases the held commands in order.
                g.set_mode(Mode::PassThrough);
                Ok(Ending::Healed)
            }
            Fault::RestartServer => {
                server.restart().await?;
                Ok(Ending::Restarted)
            }
            Fault::RestartServerCleanly => {
                server.restart_clean().await?;
                Ok(Ending::Restarted)
            }
            Fault::FillServer { for_ms } => {
                let mut admin = server.admin().await?;
                let before = config_get(&mut admin, "maxmemory").await?;
                // 1 byte is below any server's use: with noeviction every
                // write is refused with OOM and nothing is evicted.
                config_set(&mut admin, "maxmemory", "1").await?;
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
                config_set(&mut admin, "maxmemory", &before).await?;
                Ok(Ending::Healed)
            }
        }
    }

    fn gate(&self, fault: &Fault, instance: usize) -> Result<&Gate, NemesisError> {
        self.gates
            .get(instance)
            .ok_or_else(|| NemesisError::NoSuchInstance {
                op: fault.op(),
                instance,
                gates: self.gates.len(),
            })
    }

    /// Arms `fault` for the next command on `gate` and waits until a command took it (the gate
    /// removes a rule whose count ran out) or the arming window passed.
    async fn fire_once(&self, gate: &Gate, fault: gate::Fault) -> Ending {
        gate.clear_faults();
        gate.inject(FaultRule::once(fault));
        let deadline = Instant::now() + self.armed_for;
        while !gate.faults().is_empty() {
            if Instant::now() >= deadline {
                gate.clear_faults();
                return Ending::Disarmed;
            }
            tokio::time::sleep(POLL).await;
        }
        Ending::Fired
    }

    /// Server time (the virtual clock, when on) and the nemesis's own clock.
    fn now(&self, server: &ManagedServer) -> (Option<i64>, i64) {
        let server_ms = server.clock().map(|c| c.now_ms());
        let own = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        (server_ms, own)
    }
}

/// Records `fault`'s start under [`NEMESIS`]: a [`harness::Happened::Nemesis`] event
/// (kind `nemesis`) whose note holds the fault's fields ([`Fault::args`])
/// and the boundary it plays at (`at`).
pub(crate) fn record_start(
    history: &Mutex<History>,
    fault: &Fault,
    at: Boundary,
    server_ms: Option<i64>,
    clock_ms: i64,
) {
    let note = NemesisNote {
        phase: NemesisPhase::Start,
        fault: args_at(fault, at),
        ending: None,
    };
    lock(history).nemesis(NEMESIS, &fault.op(), note, server_ms, clock_ms);
}

/// The fault's fields and where it played (`at`): which operations it can
/// meet ([`crate::evidence`]).
fn args_at(fault: &Fault, at: Boundary) -> Value {
    let mut args = fault.args();
    if let Some(map) = args.as_object_mut() {
        map.insert("at".into(), json!(at.name()));
    }
    args
}

/// Records `fault`'s end under [`NEMESIS`], saying how it ended (or why it
/// could not be applied).
pub(crate) fn record_end<E: std::fmt::Display>(
    history: &Mutex<History>,
    fault: &Fault,
    at: Boundary,
    outcome: &Result<Ending, E>,
    server_ms: Option<i64>,
    clock_ms: i64,
) {
    let op = fault.op();
    let ending = match outcome {
        Ok(ending) => format!("{op} {}", ending.describe()),
        Err(e) => format!("{op} could not be applied: {e}"),
    };
    let note = NemesisNote {
        phase: NemesisPhase::End,
        fault: args_at(fault, at),
        ending: Some(ending),
    };
    lock(history).nemesis(NEMESIS, &op, note, server_ms, clock_ms);
}

/// The history, even if a panicking holder poisoned its lock (an append-only
/// list stays consistent).
fn lock(history: &Mutex<History>) -> std::sync::MutexGuard<'_, History> {
    history
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn config_get(
    admin: &mut redis::aio::MultiplexedConnection,
    key: &str,
) -> Result<String, NemesisError> {
    let pair: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(key)
        .query_async(admin)
        .await
        .map_err(|source| NemesisError::Redis {
            command: format!("CONFIG GET {key}"),
            source,
        })?;
    Ok(pair.get(1).cloned().unwrap_or_else(|| "0".to_string()))
}

async fn config_set(
    admin: &mut redis::aio::MultiplexedConnection,
    key: &str,
    value: &str,
) -> Result<(), NemesisError> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(key)
        .arg(value)
        .query_async::<()>(admin)
        .await
        .map_err(|source| NemesisError::Redis {
            command: format!("CONFIG SET {key} {value}"),
            source,
        })
}
