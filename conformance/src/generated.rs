//! Generated conformance (`conformance.generated.<contract>`): proptest's
//! state-machine testing writes the scenarios no one thought of.
//!
//! The reference state machine is the contract's sequential model
//! ([`ContractModel`]) with the time of the sequence and what the model
//! granted (epochs per tree, slots per provider), so every generated step is
//! one the model can follow: a renew or release names a grant that exists,
//! a move of time lands on a deadline the model knows (a lease's expiry, a
//! claim's end, a slot's end, a window's edge, a pause's end) ±1 ms, or
//! steps by a few ms, a lease's length or a long pause. The ids come from
//! small pools so that operations collide.
//!
//! The contract leaves a store choices (a `busy` or a live read at the
//! exact expiry instant, `not_held` for a release of an expired lease, nulls
//! in a read of a lease that is not live, its own epochs and slot ids): the
//! judge's model follows the store's choice, and a renew or release names
//! its grant by the step of the take that made it ([`Patch::EpochOf`]), so
//! a grant the store legitimately did not make shifts no later one. A case
//! that still cannot be judged is `unknown`, never `fail`, and one met while
//! shrinking keeps the failure already found.
//!
//! The system under test is the store through the existing runner: each
//! generated sequence becomes a list of [`Step`]s, played by
//! [`run_scenario`] under a prefix of its own (a fresh key space per case)
//! and judged by the same pure judge as every hand-written scenario. A
//! failing sequence is shrunk by proptest to the shortest one that still
//! fails, and saved as a scenario counterexample (`steps`), which `replay`
//! plays again as it is.
//!
//! proptest's runner calls the test synchronously while the store is
//! async; the runner (which holds non-`Send` value trees) therefore lives on
//! a thread of its own and hands each case's steps to the check's task over
//! a channel, waiting for the verdict.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use proptest_state_machine::ReferenceStateMachine;
use tokio::sync::{mpsc, oneshot};

use super::runner::{run_scenario, Outcome, SubjectExt};
use super::scenario::{EpochRef, Patch, Step, YEAR_MS};
use super::{contracts_of, run_check, CheckDef, CheckKind};
use harness::contract::{ChildState, Contract};
use harness::contract::{ContractModel, Reply, Request};
use harness::counterexample::{Counterexample, ScenarioCounterexample};
use harness::evidence::{Evidence, GeneratedEvidence, Generation};
use harness::{CheckResult, CheckSpec, Level, Needs, Subject, Verdict};

/// Sequences per contract when `--cases` is not given.
pub const DEFAULT_CASES: u32 = 64;

/// The longest generated sequence, in transitions.
const MAX_TRANSITIONS: usize = 24;

/// How many shrinking runs a failure may take at most.
const MAX_SHRINK_ITERS: u32 = 400;

/// The model's time origin: only differences matter to it.
const ORIGIN_MS: i64 = harness::server::VIRTUAL_EPOCH_MS;

const TREES: [&str; 2] = ["t1", "t2"];
const HOLDERS: [&str; 3] = ["a", "b", "c"];
const CHILDREN: [&str; 3] = ["c1", "c2", "c3"];
const WORKERS: [&str; 2] = ["a", "b"];
const PROVIDERS: [&str; 2] = ["p1", "p2"];
/// Lease, claim and slot lengths: the shortest, one a step can straddle,
/// and a long one.
const TTLS: [i64; 4] = [1, 2, 50, 1000];
/// Rate windows, also the offsets from a hit to its window's edge.
const WINDOWS: [i64; 2] = [50, 1000];
/// Moves of time: a few ms, around a lease's length, a long pause.
const STEPS_MS: [i64; 7] = [1, 2, 49, 50, 999, 1000, 60_000];

/// A generated conformance check: which contract, how many sequences.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The contract whose operations are generated.
    pub contract: Contract,
    /// How many sequences are generated (before shrinking).
    pub cases: u32,
    /// A saved counterexample's steps: played as they are instead of
    /// generating (replay).
    pub replay: Option<Arc<Vec<Step>>>,
}

/// The generated checks, one per contract, sized [`DEFAULT_CASES`].
pub(crate) fn checks() -> Vec<CheckDef> {
    [
        (
            "conformance.generated.lease",
            Contract::Lease,
            "generated sequences of takes, renews, releases and reads on a few trees and holders, with server time moved to ±1 ms of each expiry and instance clocks skewed, every reply as the lease model allows",
        ),
        (
            "conformance.generated.queue",
            Contract::Queue,
            "generated sequences of saves, claims, completions and reads on a few children and workers, with server time moved to ±1 ms of each claim's end, every reply as the queue model allows",
        ),
        (
            "conformance.generated.rate",
            Contract::Rate,
            "generated sequences of slot acquires and releases, hits, pauses and reads on a few providers, with the instance clock moved to ±1 ms of each slot's end, window edge and pause end, every reply as the rate model allows",
        ),
    ]
    .into_iter()
    .map(|(id, contract, about)| CheckDef {
        spec: CheckSpec {
            id,
            level: Level::Must,
            contracts: contracts_of(contract),
            // Deadlines to the millisecond: the server's clock is moved.
            needs: Needs::ManagedServer,
            about,
        },
        kind: CheckKind::Generated(Generated {
            contract,
            cases: DEFAULT_CASES,
            replay: None,
        }),
    })
    .collect()
}

/// One transition of the reference state machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Move {
    /// A valid request sent by `instance`, its patch resolved at run time
    /// from the store's own answers (as in a hand-written scenario).
    Call {
        /// The sending instance.
        instance: String,
        /// The request.
        request: Request,
        /// The epoch or slot it names, or the pause's end.
        patch: Option<Patch>,
    },
    /// Server time (and every instance clock) moves on by this many ms.
    Advance(i64),
    /// Time moves to the `which`-th deadline of `key` (see `deadlines`) plus `off`.
    ToDeadline {
        /// A tree, child or provider.
        key: String,
        /// Which of its deadlines, earliest first.
        which: usize,
        /// Offset from it, ms (−1, 0, +1).
        off: i64,
    },
    /// An instance clock is set this far from server time (for rate limits
    /// every instance's clock, only ever moved ahead).
    Skew {
        /// The instance (`None`: all of them).
        instance: Option<String>,
        /// The new offset, ms.
        to_ms: i64,
    },
}

/// The reference state: the model, the sequence's time and what the model
/// granted so far.
#[derive(Debug, Clone)]
pub struct RefState {
    contract: Contract,
    model: ContractModel,
    /// ms after the sequence's start.
    now: i64,
    /// Instance → clock offset from server time.
    skews: BTreeMap<String, i64>,
    /// Offset of every instance clock for rate limits.
    rate_skew: i64,
    /// Tree → (epoch, holder) of each grant, in order.
    grants: BTreeMap<String, Vec<(i64, String)>>,
    /// Provider → how many slots were acquired.
    slots: BTreeMap<String, usize>,
}

impl RefState {
    fn new(contract: Contract) -> Self {
        RefState {
            contract,
            model: ContractModel::default(),
            now: 0,
            skews: BTreeMap::new(),
            rate_skew: 0,
            grants: BTreeMap::new(),
            slots: BTreeMap::new(),
        }
    }

    fn skew(&self, instance: &str) -> i64 {
        match self.contract {
            Contract::Rate => self.rate_skew,
            _ => self.skews.get(instance).copied().unwrap_or(0),
        }
    }

    /// The deadlines of `key`, as ms after the sequence's start on server
    /// time, earliest first.
    fn deadlines(&self, key: &str) -> Vec<i64> {
        let mut at: Vec<i64> = match self.contract {
            Contract::Lease => self
                .model
                .lease
                .trees
                .get(key)
                .map(|r| vec![r.expires_at_ms])
                .unwrap_or_default(),
            Contract::Queue => self
                .model
                .queue
                .children
                .get(key)
                .filter(|c| c.state == ChildState::Claimed)
                .map(|c| vec![c.claim_expires_at_ms])
                .unwrap_or_default(),
            Contract::Rate => self
                .model
                .rate
                .providers
                .get(key)
                .map(|p| {
                    let mut v: Vec<i64> = p.slots.values().map(|(_, exp)| *exp).collect();
                    v.extend(p.paused_until_ms);
                    v.extend(
                        p.hits
                            .iter()
                            .flat_map(|h| WINDOWS.iter().map(move |w| h + w)),
                    );
                    // Rate deadlines are on the instance clock.
                    v.iter_mut().for_each(|t| *t -= self.rate_skew);
                    v
                })
                .unwrap_or_default(),
            Contract::Fenced => Vec::new(),
        };
        at.iter_mut().for_each(|t| *t -= ORIGIN_MS);
        at.sort_unstable();
        at.dedup();
        at
    }

    /// Where a move of time lands; `None`: it names no deadline.
    fn target(&self, m: &Move) -> Option<i64> {
        match m {
            Move::Advance(d) => Some(self.now + d),
            Move::ToDeadline { key, which, off } => {
                self.deadlines(key).get(*which).map(|t| t + off)
            }
            _ => None,
        }
    }

    /// The request with its patch filled in from the model's grants; `None`:
    /// it names a grant or slot the model never gave.
    fn patched(&self, request: &Request, patch: &Option<Patch>) -> Option<Request> {
        let mut req = request.clone();
        match (&mut req, patch) {
            (_, None) => {}
            (
                Request::LeaseRenew { tree, epoch, .. } | Request::LeaseRelease { tree, epoch, .. },
                Some(Patch::Epoch(r)),
            ) => {
                let (granted, _) = self
                    .grants
                    .get(tree.as_str())?
                    .get(r.grant.checked_sub(1)?)?;
                *epoch = granted + r.plus;
            }
            (Request::RateReleaseSlot { provider, slot }, Some(Patch::Slot(k))) => {
                if *k == 0 || self.slots.get(provider.as_str()).copied().unwrap_or(0) < *k {
                    return None;
                }
                // The model's own slot ids count 1, 2, 3, … per provider.
                *slot = k.to_string();
            }
            (Request::RatePause { until_ms, .. }, Some(Patch::UntilFromStart(off))) => {
                *until_ms = ORIGIN_MS + off;
            }
            _ => return None,
        }
        Some(req)
    }

    fn valid(&self, m: &Move) -> bool {
        match m {
            Move::Call { request, patch, .. } => self.patched(request, patch).is_some(),
            Move::Advance(d) => *d > 0,
            Move::ToDeadline { .. } => self.target(m).is_some_and(|t| t >= self.now),
            Move::Skew { instance, to_ms } => match self.contract {
                Contract::Rate => instance.is_none() && *to_ms >= self.rate_skew,
                _ => instance.is_some(),
            },
        }
    }

    fn apply(&mut self, m: &Move) {
        match m {
            Move::Call {
                instance,
                request,
                patch,
            } => {
                let Some(req) = self.patched(request, patch) else {
                    return;
                };
                let server = ORIGIN_MS + self.now;
                let reply = self.model.apply(&req, server, server + self.skew(instance));
                match (&req, reply) {
                    (Request::LeaseTake { tree, holder, .. }, Reply::Granted { epoch, .. }) => self
                        .grants
                        .entry(tree.clone())
                        .or_default()
                        .push((epoch, holder.clone())),
                    (Request::RateAcquireSlot { provider, .. }, Reply::Acquired { .. }) => {
                        *self.slots.entry(provider.clone()).or_default() += 1
                    }
                    _ => {}
                }
            }
            Move::Advance(_) | Move::ToDeadline { .. } => {
                if let Some(t) = self.target(m) {
                    self.now = self.now.max(t);
                }
            }
            Move::Skew { instance, to_ms } => match instance {
                Some(i) => {
                    self.skews.insert(i.clone(), *to_ms);
                }
                None => self.rate_skew = self.rate_skew.max(*to_ms),
            },
        }
    }

    /// The moves of time that can be generated from here.
    fn time_moves(&self, keys: &'static [&'static str]) -> BoxedStrategy<Move> {
        let advance = select(&STEPS_MS[..]).prop_map(Move::Advance).boxed();
        let due: Vec<(String, usize)> = keys
            .iter()
            .flat_map(|k| {
                self.deadlines(k)
                    .into_iter()
                    .enumerate()
                    .filter(|(_, t)| *t + 1 >= self.now)
                    .map(|(i, _)| (k.to_string(), i))
                    .collect::<Vec<_>>()
            })
            .collect();
        if due.is_empty() {
            return advance;
        }
        let to_deadline = (select(due), -1i64..=1)
            .prop_map(|((key, which), off)| Move::ToDeadline { key, which, off })
            .boxed();
        prop_oneof![1 => advance, 2 => to_deadline].boxed()
    }

    fn skew_moves(&self) -> BoxedStrategy<Move> {
        match self.contract {
            Contract::Rate => {
                let from = self.rate_skew;
                select(vec![1_500, 60_000, YEAR_MS])
                    .prop_map(move |by| Move::Skew {
                        instance: None,
                        to_ms: from + by,
                    })
                    .boxed()
            }
            _ => (
                select(&HOLDERS[..]),
                select(vec![0, -1_500, 1_500, -YEAR_MS, YEAR_MS]),
            )
                .prop_map(|(i, to_ms)| Move::Skew {
                    instance: Some(i.to_string()),
                    to_ms,
                })
                .boxed(),
        }
    }

    fn lease_calls(&self) -> BoxedStrategy<Move> {
        let take = (select(&HOLDERS[..]), select(&TREES[..]), select(&TTLS[..]))
            .prop_map(|(h, t, ttl_ms)| {
                call(
                    h,
                    Request::LeaseTake {
                        tree: t.into(),
                        holder: h.into(),
                        ttl_ms,
                    },
                    None,
                )
            })
            .boxed();
        let read = select(&TREES[..])
            .prop_map(|t| call("c", Request::LeaseRead { tree: t.into() }, None))
            .boxed();
        let granted: Vec<(String, usize, String)> = self
            .grants
            .iter()
            .flat_map(|(tree, g)| {
                g.iter()
                    .enumerate()
                    .map(|(i, (_, h))| (tree.clone(), i + 1, h.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        if granted.is_empty() {
            return prop_oneof![3 => take, 1 => read].boxed();
        }
        // Mostly the grant's own holder and epoch, sometimes another holder
        // or a neighbouring epoch.
        let named = (
            select(granted),
            prop_oneof![4 => Just(None), 1 => select(&HOLDERS[..]).prop_map(Some)],
            prop_oneof![4 => Just(0i64), 1 => Just(-1i64), 1 => Just(1i64)],
        );
        let renew = (named.clone(), select(&TTLS[..]))
            .prop_map(|(((tree, grant, holder), other, plus), ttl_ms)| {
                let holder = other.map_or(holder, str::to_string);
                call(
                    &holder.clone(),
                    Request::LeaseRenew {
                        tree,
                        holder,
                        epoch: 0,
                        ttl_ms,
                    },
                    Some(Patch::Epoch(EpochRef { grant, plus })),
                )
            })
            .boxed();
        let release = named
            .prop_map(|((tree, grant, holder), other, plus)| {
                let holder = other.map_or(holder, str::to_string);
                call(
                    &holder.clone(),
                    Request::LeaseRelease {
                        tree,
                        holder,
                        epoch: 0,
                    },
                    Some(Patch::Epoch(EpochRef { grant, plus })),
                )
            })
            .boxed();
        prop_oneof![3 => take, 3 => renew, 2 => release, 1 => read].boxed()
    }

    fn queue_calls(&self) -> BoxedStrategy<Move> {
        let save = (select(&CHILDREN[..]), 0i64..=2)
            .prop_map(|(c, depth)| {
                call(
                    "a",
                    Request::QueueSave {
                        child: c.into(),
                        depth,
                        payload: format!("{c}@{depth}"),
                    },
                    None,
                )
            })
            .boxed();
        let claim = (select(&WORKERS[..]), select(&TTLS[..]))
            .prop_map(|(w, claim_ttl_ms)| {
                call(
                    w,
                    Request::QueueClaim {
                        instance: w.into(),
                        claim_ttl_ms,
                    },
                    None,
                )
            })
            .boxed();
        let read = select(&CHILDREN[..])
            .prop_map(|c| call("b", Request::QueueRead { child: c.into() }, None))
            .boxed();
        let complete_any = (select(&CHILDREN[..]), select(&WORKERS[..]), 1i64..=2)
            .prop_map(|(c, w, attempt)| complete(c, w, attempt))
            .boxed();
        let claimed: Vec<(String, String, i64)> = self
            .model
            .queue
            .children
            .iter()
            .filter_map(|(id, c)| Some((id.clone(), c.claimer.clone()?, c.attempt)))
            .collect();
        if claimed.is_empty() {
            return prop_oneof![3 => save, 3 => claim, 1 => read, 1 => complete_any].boxed();
        }
        // The claim's own worker and attempt, or one of them off.
        let complete_named = (
            select(claimed),
            prop_oneof![4 => Just(None), 1 => select(&WORKERS[..]).prop_map(Some)],
            prop_oneof![4 => Just(0i64), 1 => Just(-1i64), 1 => Just(1i64)],
        )
            .prop_map(|((c, w, attempt), other, plus)| {
                complete(&c, other.unwrap_or(&w), attempt + plus)
            })
            .boxed();
        prop_oneof![2 => save, 3 => claim, 3 => complete_named, 1 => read, 1 => complete_any]
            .boxed()
    }

    fn rate_calls(&self) -> BoxedStrategy<Move> {
        let acquire = (
            select(&WORKERS[..]),
            select(&PROVIDERS[..]),
            1i64..=2,
            select(&WINDOWS[..]),
        )
            .prop_map(|(h, p, limit, ttl_ms)| {
                call(
                    h,
                    Request::RateAcquireSlot {
                        provider: p.into(),
                        holder: h.into(),
                        limit,
                        ttl_ms,
                    },
                    None,
                )
            })
            .boxed();
        let hit = (
            select(&WORKERS[..]),
            select(&PROVIDERS[..]),
            1i64..=2,
            select(&WINDOWS[..]),
        )
            .prop_map(|(w, p, limit, window_ms)| {
                call(
                    w,
                    Request::RateHit {
                        provider: p.into(),
                        limit,
                        window_ms,
                    },
                    None,
                )
            })
            .boxed();
        // A pause ends a little after the instance clock's now.
        let clock = self.now + self.rate_skew;
        let pause = (select(&PROVIDERS[..]), select(vec![1i64, 50, 1000]))
            .prop_map(move |(p, d)| {
                call(
                    "a",
                    Request::RatePause {
                        provider: p.into(),
                        until_ms: 0,
                    },
                    Some(Patch::UntilFromStart(clock + d)),
                )
            })
            .boxed();
        let read = select(&PROVIDERS[..])
            .prop_map(|p| call("b", Request::RateRead { provider: p.into() }, None))
            .boxed();
        let unknown = select(&PROVIDERS[..])
            .prop_map(|p| {
                call(
                    "b",
                    Request::RateReleaseSlot {
                        provider: p.into(),
                        slot: "never-given".into(),
                    },
                    None,
                )
            })
            .boxed();
        let acquired: Vec<(String, usize)> = self
            .slots
            .iter()
            .flat_map(|(p, n)| (1..=*n).map(|k| (p.clone(), k)).collect::<Vec<_>>())
            .collect();
        if acquired.is_empty() {
            return prop_oneof![3 => acquire, 3 => hit, 1 => pause, 1 => read, 1 => unknown]
                .boxed();
        }
        let release = select(acquired)
            .prop_map(|(provider, k)| {
                call(
                    "a",
                    Request::RateReleaseSlot {
                        provider,
                        slot: String::new(),
                    },
                    Some(Patch::Slot(k)),
                )
            })
            .boxed();
        prop_oneof![
            3 => acquire,
            2 => release,
            3 => hit,
            1 => pause,
            1 => read,
            1 => unknown
        ]
        .boxed()
    }
}

fn call(instance: &str, request: Request, patch: Option<Patch>) -> Move {
    Move::Call {
        instance: instance.into(),
        request,
        patch,
    }
}

fn complete(child: &str, worker: &str, attempt: i64) -> Move {
    call(
        worker,
        Request::QueueComplete {
            child: child.into(),
            instance: worker.into(),
            attempt,
        },
        None,
    )
}

/// Which contract a [`Machine`] generates for.
pub trait Kind {
    /// The contract.
    const CONTRACT: Contract;
}

/// The lease contract's machine.
#[derive(Debug)]
pub struct LeaseKind;
impl Kind for LeaseKind {
    const CONTRACT: Contract = Contract::Lease;
}

/// The queue contract's machine.
#[derive(Debug)]
pub struct QueueKind;
impl Kind for QueueKind {
    const CONTRACT: Contract = Contract::Queue;
}

/// The rate contract's machine.
#[derive(Debug)]
pub struct RateKind;
impl Kind for RateKind {
    const CONTRACT: Contract = Contract::Rate;
}

/// The reference state machine of contract `K`: the sequential model.
#[derive(Debug)]
pub struct Machine<K>(PhantomData<K>);

impl<K: Kind> ReferenceStateMachine for Machine<K> {
    type State = RefState;
    type Transition = Move;

    fn init_state() -> BoxedStrategy<RefState> {
        Just(RefState::new(K::CONTRACT)).boxed()
    }

    fn transitions(state: &RefState) -> BoxedStrategy<Move> {
        let (calls, keys): (_, &'static [&'static str]) = match state.contract {
            Contract::Lease => (state.lease_calls(), &TREES),
            Contract::Queue => (state.queue_calls(), &CHILDREN),
            _ => (state.rate_calls(), &PROVIDERS),
        };
        prop_oneof![6 => calls, 3 => state.time_moves(keys), 1 => state.skew_moves()].boxed()
    }

    fn apply(mut state: RefState, m: &Move) -> RefState {
        state.apply(m);
        state
    }

    fn preconditions(state: &RefState, m: &Move) -> bool {
        state.valid(m)
    }
}

/// A generated sequence as scenario steps, and for each transition the index
/// of the step it became (a skew: of the next step).
///
/// A renew or release names its grant by the step of the take that made it
/// in the reference ([`Patch::EpochOf`]), not by how many grants came
/// before: a store may answer `busy` where the reference granted (at the
/// expiry instant), and the grants after it must still name the right takes.
pub fn to_steps(initial: &RefState, moves: &[Move]) -> (Vec<Step>, Vec<usize>) {
    let mut state = initial.clone();
    let mut steps = Vec::with_capacity(moves.len());
    let mut step_of = Vec::with_capacity(moves.len());
    // Tree → the step of each of the reference's grants, in order.
    let mut grant_steps: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for m in moves {
        step_of.push(steps.len());
        match m {
            Move::Call {
                instance,
                request,
                patch,
            } => {
                let patch = match (request, patch) {
                    (
                        Request::LeaseRenew { tree, .. } | Request::LeaseRelease { tree, .. },
                        Some(Patch::Epoch(r)),
                    ) => grant_steps
                        .get(tree)
                        .and_then(|g| g.get(r.grant.checked_sub(1)?))
                        .map(|&step| Patch::EpochOf { step, plus: r.plus })
                        .or_else(|| patch.clone()),
                    _ => patch.clone(),
                };
                if let Request::LeaseTake { tree, .. } = request {
                    let before = state.grants.get(tree).map_or(0, Vec::len);
                    let mut after = state.clone();
                    after.apply(m);
                    if after.grants.get(tree).map_or(0, Vec::len) > before {
                        grant_steps
                            .entry(tree.clone())
                            .or_default()
                            .push(steps.len());
                    }
                }
                steps.push(Step::Call {
                    instance: instance.clone(),
                    request: request.clone(),
                    skew_ms: state.skew(instance),
                    patch,
                })
            }
            Move::Advance(_) | Move::ToDeadline { .. } => {
                if let Some(t) = state.target(m) {
                    steps.push(Step::At(t.max(state.now)));
                }
            }
            Move::Skew { .. } => {}
        }
        state.apply(m);
    }
    (steps, step_of)
}

/// The 32-byte proptest seed of `contract`'s check in a run seeded `seed`.
fn rng_seed(seed: u64, contract: Contract) -> [u8; 32] {
    // splitmix64: a different, fixed stream per contract from the one seed.
    let mut x = seed ^ (contract as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut out = [0u8; 32];
    for chunk in out.chunks_mut(8) {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes());
    }
    out
}

/// A case the proptest thread asks the check's task to play.
struct Case {
    steps: Vec<Step>,
    answer: oneshot::Sender<Played>,
}

/// What playing a case decided.
enum Played {
    Pass,
    /// Failed at this step.
    Fail(usize, String),
}

/// What the cases played so far decided, and what each answers proptest.
#[derive(Default)]
struct Cases {
    played: usize,
    /// The shortest failure seen: proptest's shrinking ends on it.
    shortest: Option<(usize, Outcome)>,
    /// A case the harness could not decide (or the store does not support)
    /// before any failure: it settles the check; later cases are not played.
    settled: Option<Outcome>,
    warned: Option<Outcome>,
}

impl Cases {
    /// Records one played case (`len` steps) and says what proptest hears.
    fn record(&mut self, outcome: Outcome, len: usize) -> Played {
        self.played += 1;
        match outcome.verdict {
            Verdict::Fail => {
                let len = match &outcome.counterexample {
                    Some(Counterexample::Scenario(c)) => c.steps.len(),
                    _ => len,
                };
                let reason = outcome.reason.clone();
                if self.shortest.as_ref().is_none_or(|(l, _)| len <= *l) {
                    self.shortest = Some((len, outcome));
                }
                Played::Fail(len.saturating_sub(1), reason)
            }
            Verdict::Pass => Played::Pass,
            Verdict::Warn => {
                self.warned.get_or_insert(outcome);
                Played::Pass
            }
            // While shrinking a failure, a smaller case that cannot be
            // judged (or is skipped) proves nothing: it does not fail, so
            // proptest keeps the failure already found.
            _ if self.shortest.is_some() => Played::Pass,
            _ => {
                self.settled = Some(outcome);
                Played::Pass
            }
        }
    }
}

/// What the proptest thread ends with.
enum Ended {
    Passed,
    Failed,
    Aborted(String),
}

impl Generated {
    /// Runs the check as check number `n` of the run: `cases` generated
    /// sequences from the run's seed, each under its own prefix; a failure
    /// is shrunk and reported as the shortest failing scenario found.
    pub(crate) async fn run(&self, target: &Subject<'_>, spec: &CheckSpec, n: usize) -> Outcome {
        if let Some(steps) = &self.replay {
            return run_scenario(target, spec, &target.check_prefix(n), steps).await;
        }
        let seed = target.seed;
        let contract = self.contract;
        let cases = self.cases.max(1);
        let (to_task, mut from_thread) = mpsc::unbounded_channel::<Case>();
        let (ended_tx, ended_rx) = oneshot::channel::<Ended>();
        let thread = std::thread::Builder::new()
            .name(format!("generated-{contract}"))
            .spawn(move || {
                let ended = match contract {
                    Contract::Lease => explore::<LeaseKind>(seed, cases, &to_task),
                    Contract::Queue => explore::<QueueKind>(seed, cases, &to_task),
                    _ => explore::<RateKind>(seed, cases, &to_task),
                };
                // The task may have stopped listening; nothing to tell then.
                let _ = ended_tx.send(ended);
            });
        if let Err(e) = thread {
            return Outcome::harness_trouble("start the generator's thread", e, Evidence::None);
        }
        let base = target.check_prefix(n);
        let mut cases_seen = Cases::default();
        while let Some(case) = from_thread.recv().await {
            if cases_seen.settled.is_some() {
                let _ = case.answer.send(Played::Pass);
                continue;
            }
            let prefix = format!("{base}g{}:", cases_seen.played);
            let outcome = run_scenario(target, spec, &prefix, &case.steps).await;
            let answer = cases_seen.record(outcome, case.steps.len());
            let _ = case.answer.send(answer);
        }
        let Cases {
            played,
            shortest,
            settled,
            warned,
        } = cases_seen;
        let ended = ended_rx
            .await
            .unwrap_or(Ended::Aborted("the generator's thread stopped".into()));
        let generated = Generation {
            seed,
            cases,
            played,
        };
        let wrap = |case: Option<Evidence>, failing: Option<Evidence>| {
            Evidence::Generated(Box::new(GeneratedEvidence {
                generated,
                case,
                failing,
            }))
        };
        if let Some(mut o) = settled {
            o.evidence = wrap(Some(std::mem::take(&mut o.evidence)), None);
            return o;
        }
        match (ended, shortest) {
            (Ended::Failed, Some((len, mut o))) => {
                o.reason = format!(
                    "a generated sequence shrunk to {len} steps fails: {}",
                    o.reason
                );
                o.evidence = wrap(None, Some(std::mem::take(&mut o.evidence)));
                o
            }
            (Ended::Aborted(why), _) => {
                Outcome::harness_trouble("generate sequences", why, wrap(None, None))
            }
            (_, _) => match warned {
                Some(mut o) => {
                    o.evidence = wrap(Some(std::mem::take(&mut o.evidence)), None);
                    o
                }
                None => Outcome::pass(
                    format!("{played} generated sequences, every reply as the model allows"),
                    wrap(None, None),
                ),
            },
        }
    }
}

/// Replays generated check `def` from its counterexample: the shrunk
/// scenario's steps, played and judged as a scenario.
pub(crate) async fn replay(
    subject: &Subject<'_>,
    def: &CheckDef,
    counterexample: &ScenarioCounterexample,
) -> CheckResult {
    let mut def = def.clone();
    if let CheckKind::Generated(g) = &mut def.kind {
        g.replay = Some(Arc::new(counterexample.steps.clone()));
    }
    run_check(subject, 0, &def).await
}

/// proptest's runner over `K`'s machine, asking the task to play each case.
fn explore<K: Kind>(seed: u64, cases: u32, to_task: &mpsc::UnboundedSender<Case>) -> Ended {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: MAX_SHRINK_ITERS,
        max_global_rejects: 16 * 1024,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &rng_seed(seed, K::CONTRACT));
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = Machine::<K>::sequential_strategy(1..=MAX_TRANSITIONS);
    let result = runner.run(&strategy, |(initial, moves, seen)| {
        let (steps, step_of) = to_steps(&initial, &moves);
        let (answer, played) = oneshot::channel();
        to_task
            .send(Case { steps, answer })
            .map_err(|_| TestCaseError::fail("the check stopped"))?;
        match played.blocking_recv() {
            Ok(Played::Pass) => Ok(()),
            Ok(Played::Fail(step, why)) => {
                // Transitions after the failing step were never seen:
                // proptest drops them first when shrinking.
                if let Some(seen) = seen {
                    let n = step_of.iter().filter(|s| **s <= step).count();
                    seen.store(n, Ordering::SeqCst);
                }
                Err(TestCaseError::fail(why))
            }
            Err(_) => Err(TestCaseError::fail("the check stopped")),
        }
    });
    match result {
        Ok(()) => Ended::Passed,
        Err(TestError::Fail(..)) => Ended::Failed,
        Err(TestError::Abort(why)) => Ended::Aborted(why.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;

    fn sample<K: Kind>(seed: u64, n: usize) -> Vec<Vec<Step>> {
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &rng_seed(seed, K::CONTRACT));
        let mut runner = TestRunner::new_with_rng(Config::default(), rng);
        let strategy = Machine::<K>::sequential_strategy(1..=MAX_TRANSITIONS);
        (0..n)
            .map(|_| {
                let (initial, moves, _) = strategy.new_tree(&mut runner).unwrap().current();
                to_steps(&initial, &moves).0
            })
            .collect()
    }

    #[test]
    fn the_same_seed_generates_the_same_sequences_and_another_seed_others() {
        assert_eq!(sample::<LeaseKind>(7, 8), sample::<LeaseKind>(7, 8));
        assert_ne!(sample::<LeaseKind>(7, 8), sample::<LeaseKind>(8, 8));
        assert_ne!(rng_seed(7, Contract::Lease), rng_seed(7, Contract::Queue));
    }

    #[test]
    fn every_generated_sequence_is_one_the_model_follows() {
        for seq in sample::<LeaseKind>(1, 64)
            .into_iter()
            .chain(sample::<QueueKind>(1, 64))
            .chain(sample::<RateKind>(1, 64))
        {
            super::super::runner::dry_run(&seq).unwrap_or_else(|e| panic!("{e}: {seq:?}"));
        }
    }

    #[test]
    fn renews_and_releases_name_the_step_of_the_take_that_granted() {
        let take = |h: &str| Move::Call {
            instance: h.into(),
            request: Request::LeaseTake {
                tree: "t1".into(),
                holder: h.into(),
                ttl_ms: 50,
            },
            patch: None,
        };
        let release_second = Move::Call {
            instance: "b".into(),
            request: Request::LeaseRelease {
                tree: "t1".into(),
                holder: "b".into(),
                epoch: 0,
            },
            patch: Some(Patch::Epoch(EpochRef { grant: 2, plus: -1 })),
        };
        // a's take (step 0), a busy take by c (step 1), time to the expiry
        // instant (step 2), b's take granted in the reference (step 3).
        let moves = [
            take("a"),
            take("c"),
            Move::Advance(50),
            take("b"),
            release_second,
        ];
        let (steps, _) = to_steps(&RefState::new(Contract::Lease), &moves);
        let Step::Call { patch, .. } = &steps[4] else {
            panic!("{steps:?}")
        };
        assert_eq!(patch, &Some(Patch::EpochOf { step: 3, plus: -1 }));
        super::super::runner::dry_run(&steps).unwrap();
    }

    fn outcome(verdict: Verdict, reason: &str) -> Outcome {
        Outcome {
            verdict,
            reason: reason.into(),
            evidence: Evidence::None,
            counterexample: None,
        }
    }

    #[test]
    fn an_unknown_met_while_shrinking_keeps_the_failure_found() {
        let mut cases = Cases::default();
        assert!(matches!(
            cases.record(outcome(Verdict::Pass, ""), 3),
            Played::Pass
        ));
        assert!(matches!(
            cases.record(outcome(Verdict::Fail, "broke"), 6),
            Played::Fail(5, _)
        ));
        // A shrunk case that can no longer be judged, or is skipped: not a
        // failure to proptest, and it settles nothing.
        for v in [Verdict::Unknown, Verdict::Skipped] {
            assert!(matches!(cases.record(outcome(v, "?"), 2), Played::Pass));
        }
        assert!(cases.settled.is_none());
        assert_eq!(
            cases
                .shortest
                .as_ref()
                .map(|(l, o)| (*l, o.reason.as_str())),
            Some((6, "broke"))
        );
        // Before any failure, an unknown settles the check.
        let mut cases = Cases::default();
        cases.record(outcome(Verdict::Unknown, "no server"), 2);
        assert_eq!(
            cases.settled.map(|o| o.reason),
            Some("no server".to_string())
        );
    }

    #[test]
    fn sequences_reach_expiry_instants_and_renew_named_grants() {
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &rng_seed(3, Contract::Lease));
        let mut runner = TestRunner::new_with_rng(Config::default(), rng);
        let strategy = Machine::<LeaseKind>::sequential_strategy(1..=MAX_TRANSITIONS);
        let (mut renews, mut at_expiry) = (0, 0);
        for _ in 0..64 {
            let (mut state, moves, _) = strategy.new_tree(&mut runner).unwrap().current();
            for m in &moves {
                if let Move::ToDeadline { key, off: 0, .. } = m {
                    let expiry = state.model.lease.trees[key.as_str()].expires_at_ms;
                    assert_eq!(state.target(m), Some(expiry - ORIGIN_MS));
                    at_expiry += 1;
                }
                if let Move::Call {
                    request: Request::LeaseRenew { .. },
                    ..
                } = m
                {
                    renews += 1;
                }
                state.apply(m);
            }
        }
        assert!(renews > 10, "{renews} renews");
        assert!(at_expiry > 10, "{at_expiry} moves to an expiry instant");
    }
}
