//! Driving operations through their gates one command at a time: what the
//! conformance take races and the explorer share. An operation runs as a
//! task of its own; [`next_step`] waits on the gate's own notifications (a
//! command held) and on the task (an answer), never by polling, with one
//! step timeout for every driver and one naming of the instances.

use std::time::Duration;

use thiserror::Error;
use tokio::task::JoinHandle;

use super::{Gate, Held};
use crate::contract::{Call, Reply, StoreError};
use crate::store::StoreClient;

/// How long an operation may take to send its next command, to be answered
/// once a command is released, or to answer.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(5);

pub use model::history::instance_name;

/// An operation in flight: it hands its client back with the answer.
pub type Operation = JoinHandle<(Box<dyn StoreClient>, Result<Reply, StoreError>)>;

/// Starts `call` on `client` with the instance clock `clock_ms`, as a task
/// of the current runtime (its commands go wherever the client points,
/// normally a gate).
pub fn start_operation(mut client: Box<dyn StoreClient>, call: Call, clock_ms: i64) -> Operation {
    tokio::spawn(async move {
        let out = client.call(&call, clock_ms).await;
        (client, out)
    })
}

/// What an operation did next.
pub enum Step {
    /// It sent a command, now held at its gate.
    Held(Held),
    /// It answered (its client back, for the next operation).
    Answered(Box<dyn StoreClient>, Result<Reply, StoreError>),
}

/// Why an operation could not be driven a step further.
#[derive(Debug, Error)]
pub enum DriveError {
    /// It neither sent a command nor answered within [`STEP_TIMEOUT`].
    #[error("neither answered nor sent a command within {}s", STEP_TIMEOUT.as_secs())]
    Stuck,
    /// Its task panicked or was cancelled.
    #[error("stopped unexpectedly: {0}")]
    TaskFailed(String),
}

/// Waits until `operation` holds a command at `gate` or answers (an answer
/// wins when both are there). A held command stays held, and is returned
/// again, until it is released; so "release, then `next_step`" steps
/// through an operation's commands. Nothing is released on a timeout: the
/// caller decides what to let go.
pub async fn next_step(gate: &Gate, operation: &mut Operation) -> Result<Step, DriveError> {
    tokio::select! {
        biased;
        joined = &mut *operation => {
            let (client, out) = joined.map_err(|e| DriveError::TaskFailed(e.to_string()))?;
            Ok(Step::Answered(client, out))
        }
        held = gate.next_held(STEP_TIMEOUT) => held.map(Step::Held).ok_or(DriveError::Stuck),
    }
}
