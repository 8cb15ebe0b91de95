//! Faults at the call boundary, for stores without a Redis wire (the SQLite
//! fencing set runs in-process, so no gate can stand between it and its
//! data): a [`FaultyClient`] wraps an instance's [`StoreClient`], a
//! [`CallGate`] per instance controls it, and a [`CallNemesis`] applies the
//! nemesis's [`Fault`]s whose meaning holds there ([`CALL_KINDS`]),
//! recorded in the history exactly as [`crate::nemesis::Nemesis`] records
//! them (nemesis events under [`NEMESIS`](crate::nemesis::NEMESIS)).
//!
//! What each fault does to the instance's next call (or its calls for a
//! while), with the same name as at the gate because it means the same:
//!
//! - [`Fault::LoseReplyAfterApply`]: the inner store runs the call, its
//!   answer is thrown away and the client gets `unavailable`.
//! - [`Fault::DropBeforeApply`] and [`Fault::ResetConnection`]: the client
//!   gets `unavailable` and the inner store never sees the call. (At the
//!   gate a dropped command leaves the client waiting for its timeout;
//!   here the wait is skipped: the client's view, an unknown outcome, is
//!   the same.)
//! - [`Fault::Delay`]: the call reaches the inner store `ms` late.
//! - [`Fault::Partition`]: for `for_ms`, every call gets `unavailable`
//!   without running.
//! - [`Fault::PauseInstance`]: for `for_ms`, the instance's calls wait at
//!   the boundary; then they go on in the order they came (a zombie acting
//!   on what it knew before the pause).
//!
//! The server faults ([`Fault::RestartServer`],
//! [`Fault::RestartServerCleanly`], [`Fault::FillServer`]) have no meaning
//! here and are refused with [`NemesisError::NotAtCallBoundary`].

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use harness::contract::{Call, ErrorKind, Reply, StoreError};
use harness::store::StoreClient;
use harness::History;
use stores::sqlite::SqliteClock;

use crate::evidence::Boundary;
use crate::nemesis::{record_end, record_start, Ending, Fault, FaultKind, NemesisError, Plan};

/// How often the call nemesis looks whether a one-shot fault has fired.
const POLL: Duration = Duration::from_millis(2);

/// The fault kinds a [`CallNemesis`] applies (give them to
/// [`PlanOptions::kinds`](crate::nemesis::PlanOptions::kinds)).
pub const CALL_KINDS: [FaultKind; 6] = [
    FaultKind::LoseReplyAfterApply,
    FaultKind::DropBeforeApply,
    FaultKind::Delay,
    FaultKind::ResetConnection,
    FaultKind::Partition,
    FaultKind::PauseInstance,
];

/// A one-shot fault armed for an instance's next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallFault {
    /// Run the call, then answer `unavailable`.
    LoseReplyAfterApply,
    /// Answer `unavailable` without running it.
    DropBeforeApply,
    /// Answer `unavailable` without running it (a broken connection).
    ResetConnection,
    /// Run it this much later.
    Delay(Duration),
}

#[derive(Debug, Default)]
struct CallState {
    armed: Option<CallFault>,
    partitioned: bool,
    /// Calls that reached the inner store.
    ran: u64,
}

#[derive(Debug, Default)]
struct CallShared {
    state: Mutex<CallState>,
    /// Held by the pause; every call holds it while it runs. tokio's mutex
    /// is fair (first come, first served), so held calls go on in the order
    /// they came.
    gate: Arc<tokio::sync::Mutex<()>>,
    pause: Mutex<Option<tokio::sync::OwnedMutexGuard<()>>>,
}

/// Controls the faults of one instance's calls; every [`FaultyClient`] made
/// by [`wrap`](CallGate::wrap) obeys it. Cheap to clone: clones share one
/// gate.
#[derive(Debug, Clone, Default)]
pub struct CallGate {
    shared: Arc<CallShared>,
}

impl CallGate {
    /// A gate with no fault in force.
    pub fn new() -> CallGate {
        CallGate::default()
    }

    /// `inner`, with this gate's faults applied to each of its calls.
    pub fn wrap(&self, inner: Box<dyn StoreClient>) -> FaultyClient {
        FaultyClient {
            inner,
            gate: self.clone(),
        }
    }

    /// Arms `fault` for the next call of any of the gate's clients (one at
    /// a time: it replaces a fault armed before).
    pub fn arm(&self, fault: CallFault) {
        self.state().armed = Some(fault);
    }

    /// The one-shot fault still armed, if no call took it yet.
    pub fn armed(&self) -> Option<CallFault> {
        self.state().armed
    }

    /// Removes the armed fault, if any.
    pub fn disarm(&self) {
        self.state().armed = None;
    }

    /// From now until [`heal`](CallGate::heal), every call is answered
    /// `unavailable` without running.
    pub fn partition(&self) {
        self.state().partitioned = true;
    }

    /// Ends a partition.
    pub fn heal(&self) {
        self.state().partitioned = false;
    }

    /// Whether the gate is partitioned now.
    pub fn is_partitioned(&self) -> bool {
        self.state().partitioned
    }

    /// From now until [`resume`](CallGate::resume), calls wait before
    /// reaching the inner store. Returns once calls are held (a call in
    /// the store now finishes first). Pausing twice is harmless. The
    /// gate's calls run one at a time, in the order they came, paused or
    /// not: an instance's calls are sequential anyway.
    pub async fn pause(&self) {
        if self.is_paused() {
            return;
        }
        let guard = Arc::clone(&self.shared.gate).lock_owned().await;
        *lock(&self.shared.pause) = Some(guard);
    }

    /// Ends a pause: the held calls go on, in the order they came.
    pub fn resume(&self) {
        let guard = lock(&self.shared.pause).take();
        drop(guard);
    }

    /// Whether calls are held now.
    pub fn is_paused(&self) -> bool {
        lock(&self.shared.pause).is_some()
    }

    /// How many calls reached the inner store (lost replies included).
    pub fn ran(&self) -> u64 {
        self.state().ran
    }

    fn state(&self) -> MutexGuard<'_, CallState> {
        lock(&self.shared.state)
    }
}

/// An instance's [`StoreClient`] with its [`CallGate`]'s faults applied:
/// it answers `unavailable` for the calls a fault cuts or whose reply it
/// loses, and otherwise exactly what the inner client answers.
pub struct FaultyClient {
    inner: Box<dyn StoreClient>,
    gate: CallGate,
}

impl std::fmt::Debug for FaultyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyClient")
            .field("gate", &self.gate)
            .finish_non_exhaustive()
    }
}

impl FaultyClient {
    /// The gate that controls it.
    pub fn gate(&self) -> &CallGate {
        &self.gate
    }
}

#[async_trait]
impl StoreClient for FaultyClient {
    async fn call(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        // The pause point: waits while paused. Held through the call, so
        // that held calls also reach the store in the order they came (the
        // store runs calls on a thread pool, where a later one could
        // overtake), and a pause waits for a call already in the store.
        let _turn = Arc::clone(&self.gate.shared.gate).lock_owned().await;
        let fault = {
            let mut state = self.gate.state();
            if state.partitioned {
                return Err(unavailable(call, "partitioned: the call never ran"));
            }
            state.armed.take()
        };
        match fault {
            Some(CallFault::DropBeforeApply) => Err(unavailable(
                call,
                "dropped before it ran: the call never ran",
            )),
            Some(CallFault::ResetConnection) => Err(unavailable(
                call,
                "connection reset before it ran: the call never ran",
            )),
            Some(CallFault::Delay(delay)) => {
                tokio::time::sleep(delay).await;
                self.run(call, clock_ms).await
            }
            Some(CallFault::LoseReplyAfterApply) => {
                // Whatever the store answered, the client never hears it.
                let _ = self.run(call, clock_ms).await;
                Err(unavailable(call, "reply lost after the call ran"))
            }
            None => self.run(call, clock_ms).await,
        }
    }
}

impl FaultyClient {
    async fn run(&mut self, call: &Call, clock_ms: i64) -> Result<Reply, StoreError> {
        self.gate.state().ran += 1;
        self.inner.call(call, clock_ms).await
    }
}

fn unavailable(call: &Call, why: &str) -> StoreError {
    StoreError::new(
        ErrorKind::Unavailable,
        format!("{}: {why} (fault at the call boundary)", call.op),
    )
}

/// Applies the nemesis's faults to one [`CallGate`] per instance (instance
/// `i` is [`instance_name`](harness::gate::drive::instance_name)`(i)`) and
/// records each in a history, as [`crate::nemesis::Nemesis`] does: one
/// fault at a time, its start and end as nemesis events under
/// [`NEMESIS`](crate::nemesis::NEMESIS). A fault runs its course inside
/// [`apply`](CallNemesis::apply); dropping that future midway leaves a
/// partition or pause in force.
#[derive(Debug)]
pub struct CallNemesis {
    gates: Vec<CallGate>,
    armed_for: Duration,
    started: Instant,
    clock: Option<SqliteClock>,
}

impl CallNemesis {
    /// A nemesis over `gates`. One-shot faults stay armed for 1 s; server
    /// time is unknown unless [`with_clock`](CallNemesis::with_clock).
    pub fn new(gates: Vec<CallGate>) -> CallNemesis {
        CallNemesis {
            gates,
            armed_for: Duration::from_secs(1),
            started: Instant::now(),
            clock: None,
        }
    }

    /// The same nemesis, keeping one-shot faults armed for `armed_for`
    /// waiting for a call before disarming them.
    pub fn with_armed_for(mut self, armed_for: Duration) -> CallNemesis {
        self.armed_for = armed_for;
        self
    }

    /// The same nemesis, recording `clock` (the store's database clock) as
    /// each event's server time.
    pub fn with_clock(mut self, clock: SqliteClock) -> CallNemesis {
        self.clock = Some(clock);
        self
    }

    /// Applies every step of `plan` in order (waiting `after_ms` before
    /// each). Stops at the first fault it cannot apply; what was applied is
    /// recorded.
    pub async fn run(
        &self,
        plan: &Plan,
        history: &Mutex<History>,
    ) -> Result<Vec<Ending>, NemesisError> {
        let mut endings = Vec::with_capacity(plan.steps.len());
        for step in &plan.steps {
            tokio::time::sleep(Duration::from_millis(step.after_ms)).await;
            endings.push(self.apply(&step.fault, history).await?);
        }
        Ok(endings)
    }

    /// Applies one fault and returns when it has ended (fired, disarmed or
    /// healed), its start and end recorded in `history`. A fault with no
    /// meaning at the call boundary, or for an instance without a gate, is
    /// refused before anything is recorded.
    pub async fn apply(
        &self,
        fault: &Fault,
        history: &Mutex<History>,
    ) -> Result<Ending, NemesisError> {
        let gate = self.gate(fault)?;
        let (server_ms, clock_ms) = self.now();
        record_start(history, fault, Boundary::Call, server_ms, clock_ms);
        let ending = match *fault {
            Fault::LoseReplyAfterApply { .. } => {
                self.fire_once(gate, CallFault::LoseReplyAfterApply).await
            }
            Fault::DropBeforeApply { .. } => self.fire_once(gate, CallFault::DropBeforeApply).await,
            Fault::ResetConnection { .. } => self.fire_once(gate, CallFault::ResetConnection).await,
            Fault::Delay { ms, .. } => {
                let delay = CallFault::Delay(Duration::from_millis(ms));
                self.fire_once(gate, delay).await
            }
            Fault::Partition { for_ms, .. } => {
                gate.partition();
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
                gate.heal();
                Ending::Healed
            }
            Fault::PauseInstance { for_ms, .. } => {
                gate.pause().await;
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
                gate.resume();
                Ending::Healed
            }
            // Refused by `gate` above.
            Fault::RestartServer | Fault::RestartServerCleanly | Fault::FillServer { .. } => {
                return Err(not_here(fault));
            }
        };
        let (server_ms, clock_ms) = self.now();
        record_end::<NemesisError>(
            history,
            fault,
            Boundary::Call,
            &Ok(ending),
            server_ms,
            clock_ms,
        );
        Ok(ending)
    }

    /// The gate `fault` targets, or why it cannot be applied here.
    fn gate(&self, fault: &Fault) -> Result<&CallGate, NemesisError> {
        let Some(instance) = fault.instance() else {
            return Err(not_here(fault));
        };
        self.gates
            .get(instance)
            .ok_or_else(|| NemesisError::NoSuchInstance {
                op: fault.op(),
                instance,
                gates: self.gates.len(),
            })
    }

    /// Arms `fault` for the gate's next call and waits until a call took
    /// it or the arming window passed.
    async fn fire_once(&self, gate: &CallGate, fault: CallFault) -> Ending {
        gate.arm(fault);
        let deadline = Instant::now() + self.armed_for;
        while gate.armed().is_some() {
            if Instant::now() >= deadline {
                gate.disarm();
                return Ending::Disarmed;
            }
            tokio::time::sleep(POLL).await;
        }
        Ending::Fired
    }

    /// The database clock (when given) and the nemesis's own clock.
    fn now(&self) -> (Option<i64>, i64) {
        let server_ms = self.clock.as_ref().map(SqliteClock::now_ms);
        let own = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        (server_ms, own)
    }
}

fn not_here(fault: &Fault) -> NemesisError {
    NemesisError::NotAtCallBoundary { op: fault.op() }
}

/// A lock that survives a panicking holder (the state is plain data).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_kinds_are_the_instance_faults() {
        for kind in FaultKind::ALL {
            let at_boundary = CALL_KINDS.contains(&kind);
            let server_fault = matches!(
                kind,
                FaultKind::RestartServer | FaultKind::RestartServerCleanly | FaultKind::FillServer
            );
            assert_ne!(at_boundary, server_fault, "{kind:?}");
        }
    }
}
