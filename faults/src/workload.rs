//! The fault workload: instances that take trees, save and claim children,
//! apply each child's effect fenced by its tree's epoch, and hold a rate
//! slot around each outbound call — while a nemesis plays — then a drain
//! that settles every child and an end read the checkers judge.
//!
//! **Layouts** (docs/CONTRACTS.md §1.5). [`LayoutKind::Durable`]: leases,
//! fenced effects and outbound calls on one durable store, queue and rate
//! limits on Redis. [`LayoutKind::Coordination`]: leases, queue and rate limits
//! on Redis and no fencing set; a child's effect is its `completed` answer.
//!
//! **After the faults.** Once the nemesis is done, every instance reads each
//! of its stores through its own connections, asking again while the answer
//! is unknown (the suite judges a store that never answers again).
//!
//! **Time.** Lease and claim expiry run on a virtual clock that follows real
//! time while the workload runs (a ticker sets it to its start plus the real
//! time elapsed), so a paused or partitioned instance outlives its lease and
//! comes back a zombie. Every event records that clock as server time and as
//! the instance clock (the instances have no skew here: skew is the
//! explorer's subject).
//!
//! **Determinism.** Each instance draws its choices from its own generator
//! seeded from the workload's seed, so the same seed sends the same requests
//! in the same order per instance; how they interleave with each other and
//! with the nemesis depends on real timing, which is why the checkers judge
//! the recorded history, not a replay of it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::contract::{ChildState, ErrorKind, Reply, Request, StoreError};
use harness::server::VirtualClock;
use harness::store::StoreClient;
use harness::History;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::children::{AppliedEffect, EndEffects};
use crate::evidence::Boundary;
use crate::nemesis::{record_end, record_start, Ending, Fault};
pub use model::nemesis::LayoutKind;

/// The provider every instance's rate slots and hits are counted under.
pub const PROVIDER: &str = "provider";

/// The name the drain's instance is recorded under.
pub const DRAIN: &str = "drain";

/// The sizes and timings of one workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadOptions {
    /// The layout.
    pub layout: LayoutKind,
    /// Seeds every instance's choices.
    pub seed: u64,
    /// Rounds per instance: each saves one child and processes at most one.
    pub rounds: usize,
    /// Trees the children belong to.
    pub trees: usize,
    /// Lease lifetime, in virtual ms.
    pub lease_ttl_ms: i64,
    /// Claim lifetime, in virtual ms.
    pub claim_ttl_ms: i64,
    /// Concurrent rate slots allowed.
    pub slot_limit: i64,
    /// Slot lifetime, in virtual ms.
    pub slot_ttl_ms: i64,
    /// Hits allowed per window.
    pub hit_limit: i64,
    /// The hit window, in virtual ms.
    pub hit_window_ms: i64,
    /// The longest real pause between two rounds of an instance, in ms.
    pub max_think_ms: u64,
    /// How long a `rate.pause` the workload sends lasts, in virtual ms.
    #[serde(default = "default_pause_ms")]
    pub pause_ms: i64,
}

fn default_pause_ms() -> i64 {
    30
}

/// The chance a round starts with a `rate.pause`: rare, so that most
/// rounds' slots and hits are granted.
const PAUSE_CHANCE: f64 = 0.05;

impl WorkloadOptions {
    /// A workload of `rounds` rounds per instance in `layout`, with leases
    /// and claims shorter than the nemesis's longest pause (so zombies happen).
    pub fn new(layout: LayoutKind, seed: u64, rounds: usize) -> WorkloadOptions {
        WorkloadOptions {
            layout,
            seed,
            rounds,
            trees: 2,
            lease_ttl_ms: 150,
            claim_ttl_ms: 150,
            slot_limit: 2,
            slot_ttl_ms: 150,
            hit_limit: 3,
            hit_window_ms: 100,
            max_think_ms: 20,
            pause_ms: default_pause_ms(),
        }
    }
}

/// One instance's connections: the lease store (with its fencing set in the
/// durable layout), the queue and the rate limits.
pub struct Clients {
    /// Serves `lease.*` and, in the durable layout, `effect.*` and `call.*`.
    pub lease: Box<dyn StoreClient>,
    /// Serves `queue.*`.
    pub queue: Box<dyn StoreClient>,
    /// Serves `rate.*`.
    pub rate: Box<dyn StoreClient>,
}

/// Where events are recorded and the virtual clock read.
#[derive(Clone)]
pub struct Recorder {
    /// The workload's history, shared with the nemesis.
    pub history: Arc<Mutex<History>>,
    /// The virtual clock every store of the workload decides on.
    pub clock: Arc<VirtualClock>,
}

/// The longest the harness waits for one answer before recording the
/// outcome as unknown: far beyond any fault's length, so only a store that
/// truly hangs reaches it.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

impl Recorder {
    /// Sends `req` on `client` as `instance`, recording its invoke and its
    /// completion with the virtual clock's readings.
    pub async fn call(
        &self,
        instance: &str,
        client: &mut dyn StoreClient,
        req: &Request,
    ) -> Result<Reply, StoreError> {
        let call = req.to_call();
        let sent = self.clock.now_ms();
        lock(&self.history).invoke(instance, &call, Some(sent), sent);
        let out = match tokio::time::timeout(ANSWER_TIMEOUT, client.call(&call, sent)).await {
            Ok(out) => out,
            Err(_) => Err(StoreError::new(
                ErrorKind::Unavailable,
                format!(
                    "{}: no answer within {} s",
                    call.op,
                    ANSWER_TIMEOUT.as_secs()
                ),
            )),
        };
        let answered = self.clock.now_ms();
        lock(&self.history).complete(instance, &call.op, &out, Some(answered), answered);
        out
    }
}

/// The history's lock; a poisoned lock still holds every event recorded.
fn lock(history: &Mutex<History>) -> std::sync::MutexGuard<'_, History> {
    history.lock().unwrap_or_else(|p| p.into_inner())
}

/// Moves the virtual clock with real time while it lives: a ticker setting
/// the clock to where it stood plus the real time elapsed.
pub struct Ticker {
    handle: tokio::task::JoinHandle<()>,
}

impl Ticker {
    /// Starts moving every clock of `clocks` with real time, each from its
    /// current reading.
    pub fn start(clocks: Vec<Arc<VirtualClock>>) -> Ticker {
        let handle = tokio::spawn(async move {
            let bases: Vec<i64> = clocks.iter().map(|c| c.now_ms()).collect();
            let start = Instant::now();
            let mut every = tokio::time::interval(Duration::from_millis(2));
            loop {
                every.tick().await;
                let elapsed = i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX / 2);
                for (clock, base) in clocks.iter().zip(&bases) {
                    // Never backwards.
                    if base + elapsed > clock.now_ms() {
                        clock.set_ms(base + elapsed);
                    }
                }
            }
        });
        Ticker { handle }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

/// The id of the `n`-th child instance `who` saves under `tree`.
fn child_id(tree: &str, who: &str, n: usize) -> String {
    format!("{tree}.{who}{n}")
}

/// One instance running its rounds.
struct Worker<'a> {
    name: String,
    clients: Clients,
    rng: StdRng,
    rec: &'a Recorder,
    opts: &'a WorkloadOptions,
    /// tree → the epoch this instance believes it holds.
    held: BTreeMap<String, i64>,
}

impl Worker<'_> {
    async fn lease(&mut self, req: Request) -> Result<Reply, StoreError> {
        self.rec
            .call(&self.name, self.clients.lease.as_mut(), &req)
            .await
    }

    async fn queue(&mut self, req: Request) -> Result<Reply, StoreError> {
        self.rec
            .call(&self.name, self.clients.queue.as_mut(), &req)
            .await
    }

    async fn rate(&mut self, req: Request) -> Result<Reply, StoreError> {
        self.rec
            .call(&self.name, self.clients.rate.as_mut(), &req)
            .await
    }

    async fn round(&mut self, n: usize) {
        let tree = format!("t{}", self.rng.random_range(0..self.opts.trees));
        let child = child_id(&tree, &self.name, n);
        let depth = self.rng.random_range(0..3);
        let _ = self
            .queue(Request::QueueSave {
                child,
                depth,
                payload: tree,
            })
            .await;
        let claimed = self
            .queue(Request::QueueClaim {
                instance: self.name.clone(),
                claim_ttl_ms: self.opts.claim_ttl_ms,
            })
            .await;
        if let Ok(Reply::Claimed {
            child,
            payload,
            attempt,
            ..
        }) = claimed
        {
            self.process(&child, &payload, attempt).await;
        }
        // Now and then a short pause of the provider, so that "nothing
        // granted while paused" meets the other instances' grants.
        if self.rng.random_bool(PAUSE_CHANCE) {
            let until_ms = self.rec.clock.now_ms() + self.opts.pause_ms;
            let _ = self
                .rate(Request::RatePause {
                    provider: PROVIDER.into(),
                    until_ms,
                })
                .await;
        }
        if self.rng.random_bool(0.3) {
            let _ = self
                .rate(Request::RateHit {
                    provider: PROVIDER.into(),
                    limit: self.opts.hit_limit,
                    window_ms: self.opts.hit_window_ms,
                })
                .await;
        }
        let think = self.rng.random_range(0..=self.opts.max_think_ms);
        tokio::time::sleep(Duration::from_millis(think)).await;
    }

    /// The epoch this instance holds `tree` under now, taking or renewing
    /// its lease; `None` when it does not hold it.
    async fn hold(&mut self, tree: &str) -> Option<i64> {
        if let Some(&epoch) = self.held.get(tree) {
            let renewed = self
                .lease(Request::LeaseRenew {
                    tree: tree.into(),
                    holder: self.name.clone(),
                    epoch,
                    ttl_ms: self.opts.lease_ttl_ms,
                })
                .await;
            if let Ok(Reply::Renewed { .. }) = renewed {
                return Some(epoch);
            }
            self.held.remove(tree);
        }
        let taken = self
            .lease(Request::LeaseTake {
                tree: tree.into(),
                holder: self.name.clone(),
                ttl_ms: self.opts.lease_ttl_ms,
            })
            .await;
        let epoch = match taken {
            Ok(Reply::Granted { epoch, .. }) => epoch,
            // After a lost reply the live holder may be this instance: the
            // contract lets it adopt the epoch.
            Ok(Reply::Busy { holder, epoch, .. }) if holder == self.name => epoch,
            _ => return None,
        };
        self.held.insert(tree.to_string(), epoch);
        Some(epoch)
    }

    async fn process(&mut self, child: &str, tree: &str, attempt: i64) {
        let Some(epoch) = self.hold(tree).await else {
            return;
        };
        if self.opts.layout == LayoutKind::Durable {
            let applied = self
                .lease(Request::EffectApply {
                    tree: tree.into(),
                    holder: self.name.clone(),
                    epoch,
                    effect: child.into(),
                    payload: format!("{child}@{epoch}"),
                })
                .await;
            match applied {
                Ok(Reply::Applied {}) | Ok(Reply::Duplicate {}) => {}
                Ok(Reply::Fenced { .. }) => {
                    self.held.remove(tree);
                    return;
                }
                // Unknown or refused: the claim runs out and another
                // instance (or the drain) settles the child.
                _ => return,
            }
        }
        let slot = self
            .rate(Request::RateAcquireSlot {
                provider: PROVIDER.into(),
                holder: self.name.clone(),
                limit: self.opts.slot_limit,
                ttl_ms: self.opts.slot_ttl_ms,
            })
            .await;
        if let Ok(Reply::Acquired { slot }) = slot {
            if self.opts.layout == LayoutKind::Durable {
                let call = format!("call.{child}");
                let begun = self
                    .lease(Request::CallBegin {
                        tree: tree.into(),
                        holder: self.name.clone(),
                        epoch,
                        call: call.clone(),
                    })
                    .await;
                if let Ok(Reply::Begun {}) = begun {
                    let _ = self
                        .lease(Request::CallFinish {
                            call,
                            response: format!("response to {child}"),
                        })
                        .await;
                }
            }
            let _ = self
                .rate(Request::RateReleaseSlot {
                    provider: PROVIDER.into(),
                    slot,
                })
                .await;
        }
        let _ = self
            .queue(Request::QueueComplete {
                child: child.into(),
                instance: self.name.clone(),
                attempt,
            })
            .await;
        if self.rng.random_bool(0.5) {
            let released = self
                .lease(Request::LeaseRelease {
                    tree: tree.into(),
                    holder: self.name.clone(),
                    epoch,
                })
                .await;
            if released.is_ok() {
                self.held.remove(tree);
            }
        }
    }
}

/// Runs every instance's rounds side by side, each with its own generator
/// (seed, instance index), while `nemesis` plays; returns when all rounds
/// and the nemesis are done, with the nemesis's outcome. Instances go on
/// past their `rounds` while the nemesis still plays (at most
/// [`MAX_ROUNDS_FACTOR`] times as many), so that every fault meets work.
pub async fn run<N, R>(
    opts: &WorkloadOptions,
    instances: Vec<(String, Clients)>,
    rec: &Recorder,
    nemesis: N,
) -> R
where
    N: std::future::Future<Output = R>,
{
    let playing = AtomicBool::new(true);
    let playing = &playing;
    let workers = instances
        .into_iter()
        .enumerate()
        .map(|(i, (name, clients))| {
            let seed = opts.seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1));
            let mut w = Worker {
                name,
                clients,
                rng: StdRng::seed_from_u64(seed),
                rec,
                opts,
                held: BTreeMap::new(),
            };
            async move {
                let most = opts.rounds.saturating_mul(MAX_ROUNDS_FACTOR);
                let mut n = 0;
                while n < opts.rounds || (playing.load(Ordering::SeqCst) && n < most) {
                    w.round(n).await;
                    n += 1;
                }
                // Every fault has healed once the nemesis is done: then the
                // store must answer again.
                while playing.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                w.recover().await;
            }
        });
    let nemesis = async {
        let outcome = nemesis.await;
        playing.store(false, Ordering::SeqCst);
        outcome
    };
    let (_, outcome) = tokio::join!(futures_util::future::join_all(workers), nemesis);
    outcome
}

/// How many times its `rounds` an instance may run while the nemesis plays.
pub const MAX_ROUNDS_FACTOR: usize = 20;

/// What the drain and the end read found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndState {
    /// Children whose save was sent (any outcome), by id.
    pub saved: BTreeSet<String>,
    /// Each child's effect as the end state shows it (durable: the fencing
    /// set's `duplicate` answer to a probe; coordination: `done`).
    pub effects: EndEffects,
    /// Whether the drain emptied the queue; when not, why.
    pub drained: Result<(), String>,
}

/// Settles every child after the faults healed: moves the virtual clock past
/// every lease and claim (`rec`'s clock and `other_clocks`, the clocks of
/// the workload's other stores), then claims and processes children as instance
/// [`DRAIN`] until the queue answers `empty`; then reads each saved child's
/// end state (see [`EndState::effects`]).
pub async fn drain(
    opts: &WorkloadOptions,
    clients: Clients,
    rec: &Recorder,
    other_clocks: &[Arc<VirtualClock>],
) -> EndState {
    let saved: BTreeSet<String> = {
        let history = lock(&rec.history);
        history
            .events
            .iter()
            .filter_map(|e| match &e.what {
                harness::Happened::Invoke(call) => match Request::parse(call) {
                    Ok(Request::QueueSave { child, .. }) => Some(child),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let mut w = Worker {
        name: DRAIN.to_string(),
        clients,
        rng: StdRng::seed_from_u64(opts.seed),
        rec,
        opts,
        held: BTreeMap::new(),
    };
    // Every claim and lease of the workload has run out after this.
    let settle = opts
        .lease_ttl_ms
        .max(opts.claim_ttl_ms)
        .max(opts.slot_ttl_ms)
        + 1;
    rec.clock.advance_ms(settle);
    for clock in other_clocks {
        clock.advance_ms(settle);
    }
    // Each child needs one claim; a few more cover claims that end unknown.
    let budget = 2 * saved.len() + 10;
    let mut drained = Err(format!(
        "the queue still handed out children after {budget} claims"
    ));
    for _ in 0..budget {
        let claimed = w
            .queue(Request::QueueClaim {
                instance: DRAIN.into(),
                claim_ttl_ms: opts.claim_ttl_ms,
            })
            .await;
        match claimed {
            Ok(Reply::Empty {}) => {
                drained = Ok(());
                break;
            }
            Ok(Reply::Claimed {
                child,
                payload,
                attempt,
                ..
            }) => w.process_for_drain(&child, &payload, attempt).await,
            Ok(other) => {
                drained = Err(format!(
                    "queue.claim answered {} during the drain",
                    other.outcome()
                ));
                break;
            }
            Err(e) => {
                drained = Err(format!("queue.claim failed during the drain: {e}"));
                break;
            }
        }
    }
    let mut effects = EndEffects::default();
    if drained.is_ok() {
        for child in &saved {
            if let Some(applied) = w.end_of(child).await {
                if applied {
                    effects.applied.push(AppliedEffect {
                        child: child.clone(),
                        effect: child.clone(),
                    });
                }
            } else {
                drained = Err(format!("the end state of child {child} could not be read"));
                break;
            }
        }
    }
    EndState {
        saved,
        effects,
        drained,
    }
}

/// How many times each store is asked once the faults healed before its
/// instance counts as not answering again.
pub const RECOVERY_TRIES: usize = 8;

/// The real wait after the first of those tries; it doubles after each (at
/// most [`RECOVERY_WAIT_MAX`]), about 5 s in all: time for a store to
/// notice a broken connection and open a new one, with a client library's
/// backoff.
const RECOVERY_WAIT: Duration = Duration::from_millis(50);

/// The longest wait between two tries.
const RECOVERY_WAIT_MAX: Duration = Duration::from_secs(2);

impl Worker<'_> {
    /// After every fault healed, a read of each store (the lease store, the
    /// queue, the rate limits) through the instance's own connections,
    /// asked again while it answers `unavailable` (at most
    /// [`RECOVERY_TRIES`] times): a store that never answers again after
    /// its server is back is judged on these (`crate::evidence::not_recovered`).
    async fn recover(&mut self) {
        for role in 0..3 {
            let mut wait = RECOVERY_WAIT;
            for _ in 0..RECOVERY_TRIES {
                let out = match role {
                    0 => self.lease(Request::LeaseRead { tree: "t0".into() }).await,
                    1 => {
                        self.queue(Request::QueueRead {
                            child: "t0.recovery".into(),
                        })
                        .await
                    }
                    _ => {
                        self.rate(Request::RateRead {
                            provider: PROVIDER.into(),
                        })
                        .await
                    }
                };
                let unknown = matches!(&out, Err(e)
                    if matches!(e.kind, ErrorKind::Unavailable | ErrorKind::MalformedReply | ErrorKind::AdapterFailed));
                if !unknown {
                    break;
                }
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(RECOVERY_WAIT_MAX);
            }
        }
    }

    /// Processes a child the drain claimed, with no coin flips: always
    /// released, so the next child's tree is free.
    async fn process_for_drain(&mut self, child: &str, tree: &str, attempt: i64) {
        self.process(child, tree, attempt).await;
        if let Some(epoch) = self.held.remove(tree) {
            let _ = self
                .lease(Request::LeaseRelease {
                    tree: tree.into(),
                    holder: self.name.clone(),
                    epoch,
                })
                .await;
        }
    }

    /// Whether `child`'s effect shows in the end state; `None` when it
    /// cannot be read. Durable: a probe `effect.apply` of the child's effect
    /// id under a fresh lease answers `duplicate` when the effect was
    /// applied (and `applied` when it was not: the probe then lands, after
    /// the judged run). Coordination: `queue.read` shows the child `done`.
    async fn end_of(&mut self, child: &str) -> Option<bool> {
        if self.opts.layout == LayoutKind::Coordination {
            return match self
                .queue(Request::QueueRead {
                    child: child.into(),
                })
                .await
            {
                Ok(Reply::Child(Some(view))) => Some(view.state == ChildState::Done),
                // A save whose outcome was unknown may never have landed.
                Ok(Reply::Child(None)) => Some(false),
                _ => None,
            };
        }
        let tree = child.split('.').next()?.to_string();
        let epoch = self.hold(&tree).await?;
        let probe = self
            .lease(Request::EffectApply {
                tree,
                holder: self.name.clone(),
                epoch,
                effect: child.into(),
                payload: "end-state probe".into(),
            })
            .await;
        match probe {
            Ok(Reply::Duplicate {}) => Some(true),
            Ok(Reply::Applied {}) => Some(false),
            _ => None,
        }
    }
}

/// Loses the reply of an instance's next lease operation: the operation runs,
/// its answer never comes (a gate's or a call gate's one-shot fault).
pub struct LoseNextReply {
    /// Arms the fault for the instance's next command (or call).
    pub arm: Box<dyn Fn() + Send + Sync>,
    /// Where it plays: the instance's gate, or the call boundary of an
    /// in-process lease store.
    pub at: Boundary,
}

impl Worker<'_> {
    /// Sends `req` (to the store its op belongs to) with its reply lost by
    /// `lever`, the fault recorded as the nemesis records its own (start,
    /// then end: fired when the outcome came back unknown), so that it is
    /// evidence of a fault that met the operation.
    async fn with_reply_lost(
        &mut self,
        lever: &LoseNextReply,
        instance: usize,
        req: Request,
    ) -> Result<Reply, StoreError> {
        let fault = Fault::LoseReplyAfterApply { instance };
        let now = self.rec.clock.now_ms();
        record_start(&self.rec.history, &fault, lever.at, Some(now), now);
        (lever.arm)();
        let op = req.op();
        let out = if op.starts_with("rate.") {
            self.rate(req).await
        } else if op.starts_with("queue.") {
            self.queue(req).await
        } else {
            self.lease(req).await
        };
        let ending = if matches!(&out, Err(e) if e.kind == ErrorKind::Unavailable) {
            Ending::Fired
        } else {
            Ending::Disarmed
        };
        let now = self.rec.clock.now_ms();
        record_end::<String>(
            &self.rec.history,
            &fault,
            lever.at,
            &Ok(ending),
            Some(now),
            now,
        );
        out
    }
}

/// The targeted episodes every workload opens with, sequential and on
/// known trees, so that each fault a check is about meets the operation it
/// threatens at least once whatever the random plan draws (which spreads
/// its faults over every operation):
///
/// 1. **A lost take.** `a` takes `t1`, the reply is lost after the take
///    ran; `a` takes again (it may adopt the epoch a `busy` names as its
///    own), then releases. A client that retried the lost take blindly
///    answers `busy` to itself with no take in the history that granted it.
/// 2. **A stale completion.** `a` saves and claims `t0.stale`, stalls past
///    its claim; `b` claims it again and processes it (its effect, a slot,
///    its completion); then `a` completes with its old attempt, which must
///    be refused (`not_claimer`), never a second `completed`.
/// 3. **A zombie's effect** (durable layout). `a` takes `t1`, stalls past
///    its lease; `b` takes `t1` over; `a` applies an effect with its old
///    epoch, which must be `fenced`.
/// 4. **A zombie racing the takeover** (durable layout). `a` holds `t0` and
///    applies an effect; while that call is in flight `a`'s lease runs out
///    and `b` takes `t0` over. Either order is allowed, but in the durable
///    store's own order the stale effect must not land after the newer
///    grant.
///
/// 5. **A lost refusal** (coordination layout). `b` uses up the hit and
///    slot limits at one instant, then hits and acquires once more with
///    each reply lost after the limiter refused: a store that grants when
///    its answer is lost (fails open) grants beyond the limit.
/// 6. **A pause.** `b` pauses the provider while time stands still, then
///    hits and acquires: a grant while the pause it was answered is in
///    force breaks "nothing granted while paused".
///
/// Time moves only when an episode says so (the ticker is not running
/// yet): every clock of `clocks` jumps past the lease and claim lifetimes.
pub async fn episodes(
    opts: &WorkloadOptions,
    instances: &mut Vec<(String, Clients)>,
    lose_next_lease_reply: &[LoseNextReply],
    rec: &Recorder,
    clocks: &[Arc<VirtualClock>],
) {
    if instances.len() < 2 || lose_next_lease_reply.len() < 2 {
        return;
    }
    let stall = opts.lease_ttl_ms.max(opts.claim_ttl_ms) + 1;
    let pass_time = || {
        for c in clocks {
            c.advance_ms(stall);
        }
    };
    let mut workers: Vec<Worker<'_>> = instances
        .drain(..)
        .map(|(name, clients)| Worker {
            name,
            clients,
            rng: StdRng::seed_from_u64(opts.seed),
            rec,
            opts,
            held: BTreeMap::new(),
        })
        .collect();
    {
        // 1. A lost take.
        let (a, _) = pair(&mut workers);
        let take = Request::LeaseTake {
            tree: "t1".into(),
            holder: a.name.clone(),
            ttl_ms: opts.lease_ttl_ms,
        };
        let _ = a.with_reply_lost(&lose_next_lease_reply[0], 0, take).await;
        if let Some(epoch) = a.hold("t1").await {
            let _ = a
                .lease(Request::LeaseRelease {
                    tree: "t1".into(),
                    holder: a.name.clone(),
                    epoch,
                })
                .await;
        }
        a.held.clear();
    }
    {
        // 2. A stale completion.
        let (a, b) = pair(&mut workers);
        let child = "t0.stale".to_string();
        let _ = a
            .queue(Request::QueueSave {
                child: child.clone(),
                depth: 0,
                payload: "t0".into(),
            })
            .await;
        let first = a
            .queue(Request::QueueClaim {
                instance: a.name.clone(),
                claim_ttl_ms: opts.claim_ttl_ms,
            })
            .await;
        pass_time();
        if let Ok(Reply::Claimed {
            child: claimed,
            payload,
            attempt,
            ..
        }) = b
            .queue(Request::QueueClaim {
                instance: b.name.clone(),
                claim_ttl_ms: opts.claim_ttl_ms,
            })
            .await
        {
            b.process_for_drain(&claimed, &payload, attempt).await;
        }
        if let Ok(Reply::Claimed { child, attempt, .. }) = first {
            let _ = a
                .queue(Request::QueueComplete {
                    child,
                    instance: a.name.clone(),
                    attempt,
                })
                .await;
        }
    }
    if opts.layout == LayoutKind::Durable {
        // 3. A zombie's effect.
        let (a, b) = pair(&mut workers);
        if let Some(epoch) = a.hold("t1").await {
            pass_time();
            if b.hold("t1").await.is_some() {
                let _ = a
                    .lease(Request::EffectApply {
                        tree: "t1".into(),
                        holder: a.name.clone(),
                        epoch,
                        effect: "t1.zombie".into(),
                        payload: "written by a zombie".into(),
                    })
                    .await;
            }
            a.held.clear();
            b.held.clear();
        }
        // 4. A zombie racing the takeover: `a`'s apply is in flight when
        // its lease runs out and `b` takes over. A store that reads the
        // lease outside the write's transaction lets the stale write land
        // after the newer grant.
        let (a, b) = pair(&mut workers);
        if let Some(epoch) = a.hold("t0").await {
            let apply = a.lease(Request::EffectApply {
                tree: "t0".into(),
                holder: a.name.clone(),
                epoch,
                effect: "t0.race".into(),
                payload: "written while the lease ran out".into(),
            });
            let takeover = async {
                tokio::time::sleep(Duration::from_millis(RACE_HEAD_START_MS)).await;
                pass_time();
                b.hold("t0").await
            };
            let _ = tokio::join!(apply, takeover);
            a.held.clear();
            b.held.clear();
        }
    }
    if opts.layout == LayoutKind::Coordination {
        // 5. A lost refusal of the rate limiter. Only here is the lever the
        // gate's (every store of this layout talks Redis through it), so it
        // loses the reply of the instance's next command, whichever client
        // sends it.
        let (_, b) = pair(&mut workers);
        lost_rate_refusals(b, opts, &lose_next_lease_reply[1]).await;
    }
    {
        // 6. A pause. `b` pauses the provider while time stands still, then
        // hits and acquires: both must answer `paused` (a grant is judged
        // by the rate bounds). The pause ends before the workload starts.
        let (_, b) = pair(&mut workers);
        let until_ms = rec.clock.now_ms() + stall - 1;
        let _ = b
            .rate(Request::RatePause {
                provider: PROVIDER.into(),
                until_ms,
            })
            .await;
        let _ = b
            .rate(Request::RateHit {
                provider: PROVIDER.into(),
                limit: opts.hit_limit,
                window_ms: opts.hit_window_ms,
            })
            .await;
        if let Ok(Reply::Acquired { slot }) = b
            .rate(Request::RateAcquireSlot {
                provider: PROVIDER.into(),
                holder: b.name.clone(),
                limit: opts.slot_limit,
                ttl_ms: opts.slot_ttl_ms,
            })
            .await
        {
            let _ = b
                .rate(Request::RateReleaseSlot {
                    provider: PROVIDER.into(),
                    slot,
                })
                .await;
        }
    }
    // Every lease, claim, slot, hit and pause of the episodes runs out
    // before the workload.
    pass_time();
    instances.extend(workers.into_iter().map(|w| (w.name, w.clients)));
}

/// Episode 5: `w` uses up the hit limit and the slot limit at one instant,
/// then asks once more for each with the reply lost (`lose_next_reply`,
/// armed just before): the limiter refused both (`limited`, `full`), so
/// an answer other than `unavailable` is a grant beyond the limit, which
/// the rate bounds must catch. The slots are released again.
async fn lost_rate_refusals(
    w: &mut Worker<'_>,
    opts: &WorkloadOptions,
    lose_next_reply: &LoseNextReply,
) {
    let hit = || Request::RateHit {
        provider: PROVIDER.into(),
        limit: opts.hit_limit,
        window_ms: opts.hit_window_ms,
    };
    for _ in 0..opts.hit_limit {
        let _ = w.rate(hit()).await;
    }
    let _ = w.with_reply_lost(lose_next_reply, 1, hit()).await;
    let acquire = || Request::RateAcquireSlot {
        provider: PROVIDER.into(),
        holder: w.name.clone(),
        limit: opts.slot_limit,
        ttl_ms: opts.slot_ttl_ms,
    };
    let mut asks: Vec<Request> = (0..opts.slot_limit).map(|_| acquire()).collect();
    let last = acquire();
    let mut slots = Vec::new();
    for ask in asks.drain(..) {
        if let Ok(Reply::Acquired { slot }) = w.rate(ask).await {
            slots.push(slot);
        }
    }
    if let Ok(Reply::Acquired { slot }) = w.with_reply_lost(lose_next_reply, 1, last).await {
        slots.push(slot);
    }
    for slot in slots {
        let _ = w
            .rate(Request::RateReleaseSlot {
                provider: PROVIDER.into(),
                slot,
            })
            .await;
    }
}

/// How long the zombie's apply runs before the takeover starts, in real ms:
/// long enough for its transaction to begin.
const RACE_HEAD_START_MS: u64 = 30;

/// The first two workers, mutably.
fn pair<'w, 'a>(workers: &'w mut [Worker<'a>]) -> (&'w mut Worker<'a>, &'w mut Worker<'a>) {
    let (first, rest) = workers.split_at_mut(1);
    (&mut first[0], &mut rest[0])
}
