//! The fault suite's schedule as data: the faults a nemesis applies, the
//! seeded plan of them, the layouts a workload runs in and the suite's
//! sizes. A failing workload's counterexample carries them, so a replay (and
//! a report) needs nothing of the fault suite's own.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::history::instance_name;

/// One fault, named for what the instance or the server lives through.
/// `instance` is an index into the nemesis's gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "fault")]
pub enum Fault {
    /// The instance's next command runs on the server, then its connection
    /// closes without the reply: the client cannot tell whether it ran.
    LoseReplyAfterApply {
        /// Whose command.
        instance: usize,
    },
    /// The instance's next command is never sent and never answered; its
    /// connection stays open and silent, so the client times out. The
    /// command did not run.
    DropBeforeApply {
        /// Whose command.
        instance: usize,
    },
    /// The instance's next command reaches the server `ms` late.
    Delay {
        /// Whose command.
        instance: usize,
        /// How late, in milliseconds.
        ms: u64,
    },
    /// The instance's next command gets a TCP reset instead of being sent:
    /// it did not run, and the client sees its connection fail.
    ResetConnection {
        /// Whose command.
        instance: usize,
    },
    /// For `for_ms`, none of the instance's commands reaches the server or
    /// is answered — set-up commands (`PING`, `HELLO`, `SCRIPT LOAD`) and
    /// new connections' included ([`Gate::partition`]); then it heals
    /// ([`Gate::heal`]): every connection that went silent is reset, so its
    /// client sees an error at once instead of waiting for its timeout, and
    /// new commands pass again. The cut commands never ran.
    Partition {
        /// Who is cut off.
        instance: usize,
        /// For how long, in milliseconds.
        for_ms: u64,
    },
    /// The server is killed and started again on its data (the AOF): keys
    /// stay, loaded scripts are gone (`EVALSHA` answers `NOSCRIPT`), open
    /// connections break. A crash-restart: SIGKILL, then AOF replay.
    RestartServer,
    /// The server shuts down cleanly (SIGTERM, handled as `SHUTDOWN`: its
    /// AOF flushed and fsynced, exit 0) and is started again on its data:
    /// keys stay, loaded scripts are gone, open connections break
    /// ([`ManagedServer::restart_clean`]).
    RestartServerCleanly,
    /// For `for_ms` the server is full: `maxmemory` below what it uses,
    /// with the preset's `noeviction`, so every write is refused with
    /// `OOM` and nothing is evicted; then `maxmemory` is put back.
    FillServer {
        /// For how long, in milliseconds.
        for_ms: u64,
    },
    /// For `for_ms` the instance's commands are held at its gate, then
    /// released in the order they were sent: from the server's side the
    /// instance stalled (past its lease, if `for_ms` exceeds it) and came
    /// back as a zombie acting on what it knew before.
    PauseInstance {
        /// Who stalls.
        instance: usize,
        /// For how long, in milliseconds.
        for_ms: u64,
    },
}

/// Which fault, without its parameters: what a [`Plan`] may draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// [`Fault::LoseReplyAfterApply`].
    LoseReplyAfterApply,
    /// [`Fault::DropBeforeApply`].
    DropBeforeApply,
    /// [`Fault::Delay`].
    Delay,
    /// [`Fault::ResetConnection`].
    ResetConnection,
    /// [`Fault::Partition`].
    Partition,
    /// [`Fault::RestartServer`].
    RestartServer,
    /// [`Fault::RestartServerCleanly`].
    RestartServerCleanly,
    /// [`Fault::FillServer`].
    FillServer,
    /// [`Fault::PauseInstance`].
    PauseInstance,
}

impl FaultKind {
    /// Every kind, in declaration order.
    pub const ALL: [FaultKind; 9] = [
        FaultKind::LoseReplyAfterApply,
        FaultKind::DropBeforeApply,
        FaultKind::Delay,
        FaultKind::ResetConnection,
        FaultKind::Partition,
        FaultKind::RestartServer,
        FaultKind::RestartServerCleanly,
        FaultKind::FillServer,
        FaultKind::PauseInstance,
    ];

    /// The snake-case name, e.g. `lose_reply_after_apply`.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::LoseReplyAfterApply => "lose_reply_after_apply",
            FaultKind::DropBeforeApply => "drop_before_apply",
            FaultKind::Delay => "delay",
            FaultKind::ResetConnection => "reset_connection",
            FaultKind::Partition => "partition",
            FaultKind::RestartServer => "restart_server",
            FaultKind::RestartServerCleanly => "restart_server_cleanly",
            FaultKind::FillServer => "fill_server",
            FaultKind::PauseInstance => "pause_instance",
        }
    }
}

impl Fault {
    /// Its kind.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::LoseReplyAfterApply { .. } => FaultKind::LoseReplyAfterApply,
            Fault::DropBeforeApply { .. } => FaultKind::DropBeforeApply,
            Fault::Delay { .. } => FaultKind::Delay,
            Fault::ResetConnection { .. } => FaultKind::ResetConnection,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::RestartServer => FaultKind::RestartServer,
            Fault::RestartServerCleanly => FaultKind::RestartServerCleanly,
            Fault::FillServer { .. } => FaultKind::FillServer,
            Fault::PauseInstance { .. } => FaultKind::PauseInstance,
        }
    }

    /// The op it is recorded under: `nemesis.<kind name>`.
    pub fn op(&self) -> String {
        format!("nemesis.{}", self.kind().name())
    }

    /// The instance it targets, if it targets one.
    pub fn instance(&self) -> Option<usize> {
        match *self {
            Fault::LoseReplyAfterApply { instance }
            | Fault::DropBeforeApply { instance }
            | Fault::Delay { instance, .. }
            | Fault::ResetConnection { instance }
            | Fault::Partition { instance, .. }
            | Fault::PauseInstance { instance, .. } => Some(instance),
            Fault::RestartServer | Fault::RestartServerCleanly | Fault::FillServer { .. } => None,
        }
    }

    /// The arguments recorded with its start: its fields (without the
    /// `fault` tag), the instance also by name.
    pub fn args(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(map) = v.as_object_mut() {
            map.remove("fault");
            if let Some(i) = self.instance() {
                map.insert("instance_name".into(), json!(instance_name(i)));
            }
        }
        v
    }
}

/// One step of a plan: wait `after_ms`, then apply `fault`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// How long to wait after the previous step ended, in milliseconds.
    pub after_ms: u64,
    /// What to do then.
    pub fault: Fault,
}

/// A seeded sequence of faults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The seed it was drawn from.
    pub seed: u64,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// Which stores sit side by side (the two supported layouts of
/// docs/CONTRACTS.md §1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutKind {
    /// Redis queue and rate limits beside a durable lease store with its
    /// fencing set (fenced effects, outbound calls).
    Durable,
    /// Redis leases, queue and rate limits; no fencing set.
    Coordination,
}

impl LayoutKind {
    /// `durable` or `coordination`.
    pub fn name(self) -> &'static str {
        match self {
            LayoutKind::Durable => "durable",
            LayoutKind::Coordination => "coordination",
        }
    }
}

/// How big a fault run is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultsConfig {
    /// Rounds per instance per workload.
    pub rounds: usize,
    /// Instances side by side (2 or 3 make the races; at most 4).
    pub instances: usize,
    /// Faults per nemesis plan.
    pub faults: usize,
}

impl Default for FaultsConfig {
    /// The size `certify` runs: 3 instances, 30 rounds each, 16 faults per
    /// layout (about half a minute per layout on 2 cores).
    fn default() -> Self {
        FaultsConfig {
            rounds: 30,
            instances: 3,
            faults: 16,
        }
    }
}
