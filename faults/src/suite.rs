//! `--suite faults` (docs/CONTRACTS.md §2.3): the fault workload in each supported layout
//! on a Redis server of the suite's own, while a seeded nemesis plays —
//! lost replies, dropped and reset connections, latency, partitions, paused
//! instances (zombies), crash and clean restarts, a full server — then the
//! recorded history judged by the pure checkers: linearizability of each
//! tree's lease, children-once, fencing, rate bounds; and the full-server
//! scenario on its own.
//!
//! **Who is judged.** Each role (lease with its fencing set, queue, rate) is
//! played by the store under test when it offers that contract and keeps
//! its state in Redis (or, for the fencing set, offers it at all), else by
//! storeproof's reference (the built-in Redis stores, the SQLite fencing
//! set). A check judges only histories where the store under test played
//! its role: the reference is there to make the workload whole, never to be
//! blamed.
//!
//! **When a check is decided** (a check is about faults meeting the store).
//! A violation the checker finds fails it, whatever else happened. A pass
//! needs more, else the check is `unknown` with a sentence saying what was
//! missing: at least one fault (of the nemesis plans or the targeted
//! episodes) met an operation of the store under test that the check is
//! about ([`crate::evidence`]); the store answered some of those operations
//! other than the drain (which runs after the faults, on a direct
//! connection); and once every fault healed, every instance's reads of the
//! store were answered — an instance whose every operation after the last
//! fault ended unknown, while storeproof's server answers `PING` directly
//! and through every gate, fails the check (the store did not recover);
//! when storeproof's route does not answer, that is `unknown`. An operation
//! the store declined (`unsupported`) settles the check's layout as
//! skipped with the store's message; a declined read or pause is only
//! named.
//!
//! **Where.** A server of the suite's own (restarts and a full server are
//! destructive), started from the local `redis-server`. A store that keeps
//! its state outside Redis (`builtin:sqlite`) follows the virtual clock of
//! the run's managed server, so that clock is moved in step with the own
//! server's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use harness::contract::Contract;
use harness::contract::{ErrorKind, Request};
use harness::figures::{FaultsFigures, Figures, WorkloadFigures};
use harness::gate::drive::instance_name;
use harness::gate::{self, FaultRule, Gate};
use harness::server::{ManagedServer, ServerOptions, VirtualClock};
use harness::store::redis::RedisStoreFactory;
use harness::store::sqlite::{SqliteClock, SqliteStoreFactory};
use harness::store::{Hello, StoreClient, StoreFactory};
use harness::{
    CheckResult, CheckSpec, EventKind, Happened, History, Level, Needs, Progress, Subject, Suite,
    SuiteError, SuiteRun, Verdict,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::call_faults::{CallFault, CallGate, CallNemesis};
use crate::evidence::{self, Boundary};
use crate::fencing::DurableEnd;
use crate::nemesis::{Ending, FaultKind, Nemesis, Plan, PlanOptions};
use crate::workload::{self, Clients, EndState, LayoutKind, Recorder, Ticker, WorkloadOptions};
use crate::{children, fencing, full_server, linearizable, rate_bounds};

const SUITE: &str = "faults";

/// A MUST check of the fault suite.
const fn must(
    id: &'static str,
    contracts: &'static [Contract],
    needs: Needs,
    about: &'static str,
) -> CheckSpec {
    CheckSpec {
        id,
        level: Level::Must,
        contracts,
        needs,
        about,
    }
}

/// `faults.lease-linearizable`.
pub const LINEARIZABLE: CheckSpec = must(
    "faults.lease-linearizable",
    &[Contract::Lease],
    Needs::FaultServers,
    "under lost replies, dropped and reset connections, latency, partitions, paused instances and restarts, each tree's lease history is linearizable (an operation whose reply was lost may or may not have taken effect)",
);

/// `faults.children-once`.
pub const CHILDREN_ONCE: CheckSpec = must(
    "faults.children-once",
    &[Contract::Queue],
    Needs::FaultServers,
    "under the same faults, every saved child's effect is applied exactly once: none lost, none twice, none for a child never saved",
);

/// `faults.fencing`.
pub const FENCING: CheckSpec = must(
    "faults.fencing",
    &[Contract::Fenced],
    Needs::FaultServers,
    "under the same faults, no effect or outbound call of an older epoch takes effect after a newer one was granted, even when the zombie reaches the write first, and a call is begun at most once",
);

/// `faults.rate-bounds`.
pub const RATE_BOUNDS: CheckSpec = must(
    "faults.rate-bounds",
    &[Contract::Rate],
    Needs::FaultServers,
    "under the same faults, never more live slots or allowed hits than the limit, and nothing granted while paused, with unknown outcomes counted both ways",
);

/// `faults.full-server-refuses`.
pub const FULL_SERVER: CheckSpec = must(
    "faults.full-server-refuses",
    &[Contract::Lease, Contract::Queue, Contract::Rate],
    Needs::FullRedis,
    "while the server is full (maxmemory reached, noeviction) every write is refused with store_full or really lands: nothing acknowledged is lost, nothing granted twice",
);

/// A check the fault suite judges over its workloads: the variant picks
/// its role, its operations and its checker, so a new check is a variant
/// every match must judge (before, an id string fell through to the rate
/// bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadCheck {
    /// [`LINEARIZABLE`].
    Linearizable,
    /// [`CHILDREN_ONCE`].
    ChildrenOnce,
    /// [`FENCING`].
    Fencing,
    /// [`RATE_BOUNDS`].
    RateBounds,
}

impl WorkloadCheck {
    /// Every one, in report order.
    pub const ALL: [WorkloadCheck; 4] = [
        WorkloadCheck::Linearizable,
        WorkloadCheck::ChildrenOnce,
        WorkloadCheck::Fencing,
        WorkloadCheck::RateBounds,
    ];

    /// Its declaration.
    pub const fn spec(self) -> CheckSpec {
        match self {
            WorkloadCheck::Linearizable => LINEARIZABLE,
            WorkloadCheck::ChildrenOnce => CHILDREN_ONCE,
            WorkloadCheck::Fencing => FENCING,
            WorkloadCheck::RateBounds => RATE_BOUNDS,
        }
    }
}

/// Every check of the fault suite, typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultCheck {
    /// Judged over the workloads under faults.
    Workload(WorkloadCheck),
    /// [`FULL_SERVER`]: judged on a server of its own, filled up.
    FullServer,
}

impl FaultCheck {
    /// The check declared with `id`, if the suite has one.
    pub fn of(id: &str) -> Option<FaultCheck> {
        if id == FULL_SERVER.id {
            return Some(FaultCheck::FullServer);
        }
        WorkloadCheck::ALL
            .into_iter()
            .find(|c| c.spec().id == id)
            .map(FaultCheck::Workload)
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

/// The fault suite.
#[derive(Debug, Clone, Default)]
pub struct FaultsSuite {
    config: FaultsConfig,
}

impl FaultsSuite {
    /// The suite with `config`'s sizes.
    pub fn new(config: FaultsConfig) -> Self {
        FaultsSuite { config }
    }
}

/// Who plays a role in a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Player {
    /// The store under test.
    Subject,
    /// storeproof's built-in Redis stores.
    ReferenceRedis,
    /// storeproof's SQLite fencing set.
    ReferenceSqlite,
}

impl Player {
    fn name(self) -> &'static str {
        match self {
            Player::Subject => "the store under test",
            Player::ReferenceRedis => "storeproof's built-in Redis stores",
            Player::ReferenceSqlite => "storeproof's SQLite fencing set",
        }
    }
}

/// The players of one layout's roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// Leases (with the fencing set in the durable layout).
    pub lease: Player,
    /// The queue.
    pub queue: Player,
    /// The rate limits.
    pub rate: Player,
}

impl Roles {
    fn of(layout: LayoutKind, subject: &Subject<'_>) -> Roles {
        let redis = subject.factory.keeps_state_in_redis();
        let on_redis = |c: Contract| {
            if redis && subject.claims(c) {
                Player::Subject
            } else {
                Player::ReferenceRedis
            }
        };
        Roles {
            lease: match layout {
                LayoutKind::Durable if subject.claims(Contract::Fenced) => Player::Subject,
                LayoutKind::Durable => Player::ReferenceSqlite,
                LayoutKind::Coordination => on_redis(Contract::Lease),
            },
            queue: on_redis(Contract::Queue),
            rate: on_redis(Contract::Rate),
        }
    }

    fn figures(&self) -> BTreeMap<String, String> {
        [
            ("lease", self.lease),
            ("queue", self.queue),
            ("rate", self.rate),
        ]
        .into_iter()
        .map(|(role, p)| (role.to_string(), p.name().to_string()))
        .collect()
    }
}

/// The layouts a subject is run in: a store that keeps its state in Redis
/// in both; a durable store only beside the Redis queue and rate limits.
fn layouts(subject: &Subject<'_>) -> Vec<LayoutKind> {
    if subject.factory.keeps_state_in_redis() {
        vec![LayoutKind::Coordination, LayoutKind::Durable]
    } else {
        vec![LayoutKind::Durable]
    }
}

/// What one workload left for the checkers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadRun {
    /// Its options (seed included).
    pub options: WorkloadOptions,
    /// Who played each role.
    pub roles: Roles,
    /// The plans the nemeses played (Redis gates; the call boundary of a
    /// store without a Redis wire).
    pub plans: Vec<Plan>,
    /// Why a nemesis stopped early, if one did (the harness's trouble, not
    /// the store's: the checks are then unknown).
    pub nemesis_trouble: Option<String>,
    /// The history, nemesis events included.
    pub history: History,
    /// What the drain and end read found.
    pub end: EndState,
    /// The durable end state, when the lease store keeps one.
    pub durable: DurableEnd,
    /// The lease store runs in-process, without a Redis wire: the gate's
    /// faults never meet its operations, the call boundary's do.
    #[serde(default)]
    pub lease_off_wire: bool,
    /// Once the faults healed, whether storeproof's own server answered
    /// `PING` directly and through every instance's gate (`None`), or why
    /// not: a store that does not answer again is blamed only when it did.
    #[serde(default)]
    pub route_trouble: Option<String>,
    /// Its figures.
    pub figures: WorkloadFigures,
}

/// The operations a fault check is about (its faults must meet one).
fn about(check: WorkloadCheck) -> fn(&Request) -> bool {
    match check {
        WorkloadCheck::Linearizable => |r| {
            matches!(
                r,
                Request::LeaseTake { .. }
                    | Request::LeaseRenew { .. }
                    | Request::LeaseRelease { .. }
                    | Request::LeaseRead { .. }
            )
        },
        WorkloadCheck::Fencing => lease_side,
        WorkloadCheck::ChildrenOnce => |r| r.op().starts_with("queue."),
        WorkloadCheck::RateBounds => |r| r.op().starts_with("rate."),
    }
}

/// Served by the lease store (with its fencing set).
fn lease_side(r: &Request) -> bool {
    let op = r.op();
    op.starts_with("lease.") || op.starts_with("effect.") || op.starts_with("call.")
}

/// Whether `r`'s commands pass `at`: every store talks through its
/// instance's gate but an in-process lease store, which only the call
/// boundary's faults reach.
fn behind(lease_off_wire: bool) -> impl Fn(&Request, Boundary) -> bool {
    move |r, at| match at {
        Boundary::Gate => !(lease_off_wire && lease_side(r)),
        Boundary::Call => lease_off_wire && lease_side(r),
    }
}

/// Who played the role `check` judges in `run`, and whether the check is
/// judged in its layout at all (fencing: the durable layout only).
fn judged_here(check: WorkloadCheck, run_roles: &Roles, layout: LayoutKind) -> bool {
    let played = match check {
        WorkloadCheck::Linearizable | WorkloadCheck::Fencing => run_roles.lease,
        WorkloadCheck::ChildrenOnce => run_roles.queue,
        WorkloadCheck::RateBounds => run_roles.rate,
    };
    played == Player::Subject && (check != WorkloadCheck::Fencing || layout == LayoutKind::Durable)
}

/// Operations a store may decline (`unsupported`) without leaving the other
/// rules of its check short: reads, and the pause (its rule then judges
/// nothing, which the reason says).
const DECLINABLE: [&str; 4] = ["lease.read", "queue.read", "rate.read", "rate.pause"];

/// The operations `about` accepts that the store declined (`unsupported`),
/// each op once with the store's first message; the drain's included (it
/// is the same store).
fn declined(history: &History, about: fn(&Request) -> bool) -> Vec<(String, String)> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut in_flight: BTreeMap<&str, Option<Request>> = BTreeMap::new();
    for e in &history.events {
        match &e.what {
            Happened::Invoke(call) => {
                in_flight.insert(&e.instance, Request::parse(call).ok().filter(about));
            }
            Happened::Fail { op, error } if error.kind == ErrorKind::Unsupported => {
                if let Some(Some(_)) = in_flight.remove(e.instance.as_str()) {
                    out.entry(op.clone())
                        .or_insert_with(|| error.message.clone());
                }
            }
            Happened::Nemesis { .. } => {}
            _ => {
                in_flight.remove(e.instance.as_str());
            }
        }
    }
    out.into_iter().collect()
}

/// The seed of `layout`'s workload and plans, from the run's seed.
fn layout_seed(seed: u64, layout: LayoutKind) -> u64 {
    match layout {
        LayoutKind::Coordination => seed,
        LayoutKind::Durable => seed ^ 0xD0AB_1E00,
    }
}

fn setup(what: &str, e: impl std::fmt::Display) -> SuiteError {
    SuiteError::Setup(format!("the fault suite {what}: {e}"))
}

/// The options of `layout`'s workload at `config`'s size.
pub fn workload_options(config: &FaultsConfig, seed: u64, layout: LayoutKind) -> WorkloadOptions {
    WorkloadOptions::new(layout, layout_seed(seed, layout), config.rounds)
}

/// The Redis nemesis plan of a workload: every fault kind.
fn redis_plan(config: &FaultsConfig, seed: u64) -> Plan {
    let mut options = PlanOptions::new(seed, config.instances, config.faults);
    options.max_gap_ms = 150;
    options.max_fault_ms = 300;
    Plan::generate(&options)
}

/// The call-boundary plan for a lease store without a Redis wire: the
/// faults that mean something there.
fn call_plan(config: &FaultsConfig, seed: u64) -> Plan {
    let mut options = PlanOptions::new(seed ^ 0xCA11, config.instances, config.faults / 2);
    options.kinds = vec![
        FaultKind::LoseReplyAfterApply,
        FaultKind::DropBeforeApply,
        FaultKind::Delay,
        FaultKind::Partition,
        FaultKind::PauseInstance,
    ];
    options.max_gap_ms = 150;
    options.max_fault_ms = 300;
    Plan::generate(&options)
}

/// A connected client of `player` for `instance` under `prefix`, its Redis
/// commands sent to `url`.
struct Connector<'s, 'a> {
    subject: &'s Subject<'a>,
    redis: RedisStoreFactory,
    sqlite: SqliteStoreFactory,
}

impl Connector<'_, '_> {
    async fn connect(
        &self,
        player: Player,
        instance: &str,
        prefix: &str,
        url: &str,
        clock_ms: i64,
    ) -> Result<Box<dyn StoreClient>, SuiteError> {
        let hello = Hello {
            instance: instance.into(),
            redis_url: url.into(),
            prefix: prefix.into(),
            opt_out: None,
        };
        let made = match player {
            Player::Subject => {
                return self
                    .subject
                    .connect_store(instance, prefix, url, clock_ms)
                    .await
                    .map_err(|e| {
                        SuiteError::unless_an_adapter_broke(self.subject.factory.as_ref())
                            .err()
                            .unwrap_or_else(|| setup("could not connect the store", e))
                    })
            }
            Player::ReferenceRedis => self.redis.connect(&hello, clock_ms).await,
            Player::ReferenceSqlite => self.sqlite.connect(&hello, clock_ms).await,
        };
        made.map(|(_, c)| c)
            .map_err(|e| setup("could not connect its reference store", e))
    }
}

impl FaultsSuite {
    async fn workload(
        &self,
        subject: &Subject<'_>,
        layout: LayoutKind,
        progress: &dyn Progress,
    ) -> Result<WorkloadRun, SuiteError> {
        let started = Instant::now();
        let options = workload_options(&self.config, subject.seed, layout);
        let roles = Roles::of(layout, subject);
        let mut server = ManagedServer::start(ServerOptions::default())
            .await
            .map_err(|e| setup("could not start its own server", e))?;
        let own_clock = server
            .clock()
            .cloned()
            .ok_or_else(|| setup("started a server", "it has no virtual clock"))?;
        // storeproof's SQLite set (the store that offers a copy of itself)
        // follows the run's managed server's clock, given when it was made:
        // both clocks move together. Any other durable store (an adapter)
        // reads `TIME` from the server it is handed, this suite's own.
        let subject_clock = subject.server.managed().and_then(|s| s.clock().cloned());
        let follows_run_clock = !subject.factory.keeps_state_in_redis()
            && harness::store::offers_sqlite_copy(subject.factory.as_ref());
        let mut clocks: Vec<Arc<VirtualClock>> = vec![own_clock.clone()];
        let lease_clock = match (roles.lease, &subject_clock) {
            (Player::Subject, Some(c)) if follows_run_clock => {
                clocks.push(c.clone());
                c.clone()
            }
            _ => own_clock.clone(),
        };
        let connector = Connector {
            subject,
            redis: RedisStoreFactory::new(server.dir().join("reference-kept.sqlite")),
            sqlite: SqliteStoreFactory::new(
                server.dir().join("reference-fencing-set.sqlite"),
                SqliteClock::Virtual(own_clock.clone()),
            ),
        };
        let prefix = format!("{}faults:{}:", subject.run_prefix, layout.name());
        let sqlite_lease = roles.lease == Player::ReferenceSqlite
            || (roles.lease == Player::Subject && !subject.factory.keeps_state_in_redis());

        let mut gates = Vec::new();
        let mut call_gates = Vec::new();
        let mut instances = Vec::new();
        let mut levers: Vec<workload::LoseNextReply> = Vec::new();
        for i in 0..self.config.instances {
            let name = instance_name(i);
            let gate = Gate::start(&server.url())
                .await
                .map_err(|e| setup("could not start a gate", e))?;
            let url = gate.url();
            let now = lease_clock.now_ms();
            let mut lease = connector
                .connect(roles.lease, name, &prefix, &url, now)
                .await?;
            if sqlite_lease {
                let call_gate = CallGate::new();
                lease = Box::new(call_gate.wrap(lease));
                let lever = call_gate.clone();
                levers.push(workload::LoseNextReply {
                    arm: Box::new(move || lever.arm(CallFault::LoseReplyAfterApply)),
                    at: Boundary::Call,
                });
                call_gates.push(call_gate);
            } else {
                let lever = gate.clone();
                levers.push(workload::LoseNextReply {
                    arm: Box::new(move || {
                        lever.inject(FaultRule::once(gate::Fault::DropReplyAfterApply))
                    }),
                    at: Boundary::Gate,
                });
            }
            let clients = Clients {
                lease,
                queue: connector
                    .connect(roles.queue, name, &prefix, &url, now)
                    .await?,
                rate: connector
                    .connect(roles.rate, name, &prefix, &url, now)
                    .await?,
            };
            gates.push(gate);
            instances.push((name.to_string(), clients));
        }

        let rec = Recorder {
            history: Arc::new(Mutex::new(History::default())),
            clock: lease_clock.clone(),
        };
        let seed = options.seed;
        let mut plans = vec![redis_plan(&self.config, seed)];
        if sqlite_lease {
            plans.push(call_plan(&self.config, seed));
        }
        progress.line(&format!(
            "faults: {} layout, {} instances, {} rounds each, {} faults",
            layout.name(),
            self.config.instances,
            options.rounds,
            plans.iter().map(|p| p.steps.len()).sum::<usize>()
        ));
        let nemesis =
            Nemesis::new(gates.clone()).with_armed_for(std::time::Duration::from_millis(400));
        let call_nemesis = CallNemesis::new(call_gates)
            .with_armed_for(std::time::Duration::from_millis(400))
            .with_clock(SqliteClock::Virtual(lease_clock.clone()));
        workload::episodes(&options, &mut instances, &levers, &rec, &clocks).await;
        let ticker = Ticker::start(clocks.clone());
        let history = rec.history.clone();
        let redis_plan = plans[0].clone();
        let call_plan_played = plans.get(1).cloned();
        let trouble = workload::run(&options, instances, &rec, async {
            let redis = nemesis.run(&mut server, &redis_plan, &history);
            let call = async {
                match &call_plan_played {
                    Some(plan) => call_nemesis.run(plan, &history).await.map(|_| ()),
                    None => Ok(()),
                }
            };
            let (redis, call) = tokio::join!(redis, call);
            let mut trouble = Vec::new();
            if let Err(e) = redis {
                trouble.push(e.to_string());
            }
            if let Err(e) = call {
                trouble.push(e.to_string());
            }
            (!trouble.is_empty()).then(|| trouble.join("; "))
        })
        .await;
        drop(ticker);
        for g in &gates {
            g.clear_faults();
        }
        // The instances' reads after the faults healed are judged only if
        // storeproof's own route answers: directly, and through each gate.
        let mut route_trouble = Vec::new();
        for (what, url) in std::iter::once(("directly".to_string(), server.url())).chain(
            gates
                .iter()
                .enumerate()
                .map(|(i, g)| (format!("through {}'s gate", instance_name(i)), g.url())),
        ) {
            if let Err(e) = answers_ping(&url).await {
                route_trouble.push(format!("{what}: {e}"));
            }
        }
        let route_trouble = (!route_trouble.is_empty()).then(|| route_trouble.join("; "));
        // The drain talks to the server directly: no gate, no fault.
        let direct = server.url();
        let now = lease_clock.now_ms();
        let drain_clients = Clients {
            lease: connector
                .connect(roles.lease, workload::DRAIN, &prefix, &direct, now)
                .await?,
            queue: connector
                .connect(roles.queue, workload::DRAIN, &prefix, &direct, now)
                .await?,
            rate: connector
                .connect(roles.rate, workload::DRAIN, &prefix, &direct, now)
                .await?,
        };
        let others: Vec<Arc<VirtualClock>> = clocks
            .iter()
            .filter(|c| !Arc::ptr_eq(c, &lease_clock))
            .cloned()
            .collect();
        let end = workload::drain(&options, drain_clients, &rec, &others).await;
        // The durable store's own order of grants and effects (the fencing
        // check's durable-order rule), read from its storage, never the wire.
        let durable = match (layout, roles.lease) {
            (LayoutKind::Durable, Player::Subject) => subject.factory.durable_state(&prefix).await,
            (LayoutKind::Durable, Player::ReferenceSqlite) => {
                connector.sqlite.durable_state(&prefix).await
            }
            _ => Ok(None),
        }
        .map_err(|e| setup("could not read the durable store's end state", e))?
        .map(|state| DurableEnd::from_state(&state))
        .unwrap_or_default();
        drop(gates);
        let _ = server.stop().await;
        let history = std::mem::take(&mut *rec.history.lock().unwrap_or_else(|p| p.into_inner()));
        let figures = figures_of(
            layout,
            &roles,
            self.config.instances,
            &history,
            &end,
            sqlite_lease,
            started,
        );
        Ok(WorkloadRun {
            options,
            roles,
            plans,
            nemesis_trouble: trouble,
            history,
            end,
            durable,
            lease_off_wire: sqlite_lease,
            route_trouble,
            figures,
        })
    }

    /// The full-server scenario's history, and the event from which the
    /// server has room again.
    async fn full_server(&self, subject: &Subject<'_>) -> Result<(History, usize), SuiteError> {
        let server = ManagedServer::start(ServerOptions::default())
            .await
            .map_err(|e| setup("could not start its own server", e))?;
        let clock = server
            .clock()
            .cloned()
            .ok_or_else(|| setup("started a server", "it has no virtual clock"))?;
        let prefix = format!("{}faults:full:", subject.run_prefix);
        let mut client = subject
            .connect_store("a", &prefix, &server.url(), clock.now_ms())
            .await
            .map_err(|e| {
                SuiteError::unless_an_adapter_broke(subject.factory.as_ref())
                    .err()
                    .unwrap_or_else(|| setup("could not connect the store", e))
            })?;
        let rec = Recorder {
            history: Arc::new(Mutex::new(History::default())),
            clock,
        };
        let admin = server
            .admin()
            .await
            .map_err(|e| setup("could not reach its own server", e))?;
        let claimed: Vec<Contract> = Contract::COORDINATION
            .into_iter()
            .filter(|c| subject.claims(*c))
            .collect();
        let fill = set_maxmemory(admin.clone(), "1");
        let unfill = set_maxmemory(admin, "0");
        let ran = full_server::run(client.as_mut(), &rec, &claimed, fill, unfill).await;
        // The judge blames an answer other than store_full on the store
        // only because the server stayed up: a server that went away is
        // the harness's trouble.
        let up = match server.admin().await {
            Ok(mut admin) => redis::cmd("PING")
                .query_async::<String>(&mut admin)
                .await
                .is_ok(),
            Err(_) => false,
        };
        let _ = server.stop().await;
        let room_from = ran.map_err(|e| setup("could not fill its own server", e))?;
        if !up {
            return Err(setup(
                "lost its own server during the full-server scenario",
                "it no longer answers PING",
            ));
        }
        let history = std::mem::take(&mut *rec.history.lock().unwrap_or_else(|p| p.into_inner()));
        Ok((history, room_from))
    }
}

/// Whether the Redis server at `url` answers `PING` (within 5 s).
async fn answers_ping(url: &str) -> Result<(), String> {
    let ping = async {
        let client = redis::Client::open(url)?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await
    };
    match tokio::time::timeout(std::time::Duration::from_secs(5), ping).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("PING failed: {e}")),
        Err(_) => Err("PING had no answer within 5 s".into()),
    }
}

async fn set_maxmemory(
    mut admin: redis::aio::MultiplexedConnection,
    value: &'static str,
) -> Result<(), String> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(value)
        .query_async::<()>(&mut admin)
        .await
        .map_err(|e| format!("CONFIG SET maxmemory {value}: {e}"))
}

fn figures_of(
    layout: LayoutKind,
    roles: &Roles,
    instances: usize,
    history: &History,
    end: &EndState,
    lease_off_wire: bool,
    started: Instant,
) -> WorkloadFigures {
    let trees: std::collections::BTreeSet<String> = linearizable::lease_ops(history)
        .0
        .into_iter()
        .map(|op| op.tree)
        .collect();
    let mut f = WorkloadFigures {
        layout: layout.name().to_string(),
        stores: roles.figures(),
        instances,
        children_saved: end.saved.len(),
        children_done: end.effects.applied.len(),
        trees_judged: if roles.lease == Player::Subject {
            trees.len()
        } else {
            0
        },
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        ..WorkloadFigures::default()
    };
    for fault in evidence::played(history) {
        let name = fault.kind.name().to_string();
        match fault.ended {
            Some(Ending::Disarmed) => *f.disarmed.entry(name).or_default() += 1,
            Some(_) => *f.faults.entry(name).or_default() += 1,
            // Not applied: the nemesis's trouble says why.
            None => {}
        }
    }
    for check in WorkloadCheck::ALL {
        if judged_here(check, roles, layout) {
            let met = evidence::meetings(history, about(check), behind(lease_off_wire));
            f.met.insert(check.spec().id.to_string(), met);
        }
    }
    let mut invoked = 0;
    for e in &history.events {
        match (&e.what, e.what.kind()) {
            (_, EventKind::Invoke) => invoked += 1,
            (_, EventKind::Ok) => f.ok += 1,
            (_, EventKind::Fail) => f.refused += 1,
            (_, EventKind::Info) => f.unknown += 1,
            _ => {}
        }
    }
    f.operations = invoked;
    // Sent and never answered: unknown too.
    f.unknown += invoked.saturating_sub(f.ok + f.refused + f.unknown);
    f
}

/// One check's verdict over the workloads, with its evidence.
struct Judged {
    verdict: Verdict,
    reason: String,
    evidence: Value,
    failing: Option<usize>,
}

fn judge(check: WorkloadCheck, runs: &[WorkloadRun]) -> Judged {
    let spec = check.spec();
    let mut parts = Vec::new();
    let mut evidence = Vec::new();
    let mut failing = None;
    let mut unknown = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut judged = 0;
    for (i, run) in runs.iter().enumerate() {
        let layout = run.options.layout.name();
        if !judged_here(check, &run.roles, run.options.layout) {
            continue;
        }
        judged += 1;
        if let Some(trouble) = &run.nemesis_trouble {
            unknown.push(format!(
                "{layout} layout: the nemesis stopped early ({trouble})"
            ));
            continue;
        }
        // `unsupported`: the store declines what it does not offer. A
        // declined read or pause changes nothing the other rules judge (it
        // is named); any other declined operation settles this layout as
        // skipped with the store's message, never failed.
        let (harmless, blocking): (Vec<_>, Vec<_>) = declined(&run.history, about(check))
            .into_iter()
            .partition(|(op, _)| DECLINABLE.contains(&op.as_str()));
        if !blocking.is_empty() {
            let said: Vec<String> = blocking
                .iter()
                .map(|(op, message)| format!("{op} (unsupported: {message})"))
                .collect();
            skipped.push(format!(
                "{layout} layout: the store declined {}",
                said.join(", ")
            ));
            continue;
        }
        let harmless: Vec<String> = harmless
            .iter()
            .map(|(op, message)| format!("{op} (unsupported: {message})"))
            .collect();
        // A store that refused every request of the contract leaves nothing
        // to judge: that is no pass (conformance blames the refusals). The
        // drain's answers come after the faults, on a direct connection:
        // they never count.
        let contract = spec.contracts.first().copied();
        let answered = run
            .history
            .events
            .iter()
            .filter(|e| e.instance != workload::DRAIN)
            .filter(
                |e| matches!(&e.what, Happened::Ok { op, .. } if Contract::of_op(op) == contract),
            )
            .count();
        if answered == 0 {
            unknown.push(format!(
                "{layout} layout: the store answered none of the workload's {} operations with a reply: nothing to judge",
                contract.map_or("", Contract::name)
            ));
            continue;
        }
        let (holds, undecided, detail, summary) = match check {
            WorkloadCheck::Linearizable => {
                let v = linearizable::check(&run.history);
                let undecided = v
                    .trees
                    .values()
                    .any(|t| matches!(t, linearizable::TreeVerdict::Undecided { .. }));
                let bad: BTreeMap<&String, &linearizable::TreeVerdict> = v
                    .trees
                    .iter()
                    .filter(|(_, t)| matches!(t, linearizable::TreeVerdict::NotLinearizable { .. }))
                    .collect();
                (
                    bad.is_empty(),
                    undecided,
                    json!({"not_linearizable": bad, "trees": v.trees.len()}),
                    format!("{} trees, {} not linearizable", v.trees.len(), bad.len()),
                )
            }
            WorkloadCheck::ChildrenOnce => {
                if let Err(why) = &run.end.drained {
                    unknown.push(format!("{layout} layout: {why}"));
                    continue;
                }
                let v = children::check(&run.history, &run.end.effects);
                (
                    v.holds(),
                    false,
                    json!(v),
                    format!(
                        "{} children acknowledged, {} ambiguous, {} violations",
                        v.acknowledged,
                        v.ambiguous,
                        v.violations.len()
                    ),
                )
            }
            WorkloadCheck::Fencing => {
                let v = fencing::check(&run.history, &run.durable);
                let applied: Vec<&str> = v
                    .rules
                    .iter()
                    .filter(|r| r.applied)
                    .map(|r| r.rule.as_str())
                    .collect();
                let not: Vec<String> = v
                    .not_applied()
                    .iter()
                    .map(|r| format!("{} ({})", r.rule, r.why))
                    .collect();
                let mut summary = format!(
                    "{} violations; rules applied: {}",
                    v.violations.len(),
                    if applied.is_empty() {
                        "none".to_string()
                    } else {
                        applied.join(", ")
                    }
                );
                if !not.is_empty() {
                    summary.push_str(&format!("; not applied: {}", not.join("; ")));
                }
                (v.holds(), false, json!(v), summary)
            }
            WorkloadCheck::RateBounds => {
                let v = rate_bounds::check(&run.history);
                let pause_rule = if v.pauses > 0 {
                    format!(
                        "{} replies named a pause, grants judged against them",
                        v.pauses
                    )
                } else {
                    "no reply named a pause: \"nothing granted while paused\" judged nothing"
                        .to_string()
                };
                (
                    v.holds(),
                    false,
                    json!(v),
                    format!(
                        "{} violations, {} unknown outcomes counted both ways; {pause_rule}",
                        v.violations.len(),
                        v.unknown.len()
                    ),
                )
            }
        };
        // A violation is the store's doing whatever else happened; a pass
        // needs more: its faults met the store, and the store answered
        // again once they healed.
        let (mut holds, mut summary) = (holds, summary);
        let met = evidence::meetings(&run.history, about(check), behind(run.lease_off_wire));
        let stuck = evidence::not_recovered(&run.history, about(check));
        if holds && !stuck.is_empty() {
            let who: Vec<String> = stuck
                .iter()
                .map(|(instance, n)| format!("instance {instance}'s {n}"))
                .collect();
            let who = who.join(", ");
            match &run.route_trouble {
                None => {
                    holds = false;
                    summary = format!(
                        "the store did not answer again after the faults healed: {who} operations of this check sent after the last fault ended (each store read again {} times over about 5 s) all ended unknown, while storeproof's server answered PING directly and through every instance's gate; {summary}", workload::RECOVERY_TRIES
                    );
                }
                Some(trouble) => {
                    unknown.push(format!(
                        "{layout} layout: {who} operations after the faults healed ended unknown, and storeproof's own route did not answer ({trouble}): not the store's doing"
                    ));
                    continue;
                }
            }
        }
        if holds && evidence::met(&met) == 0 {
            let missed: usize = met.values().map(|m| m.missed).sum();
            let disarmed: usize = met.values().map(|m| m.disarmed).sum();
            unknown.push(format!(
                "{layout} layout: none of the faults played met an operation of the store under test this check is about ({missed} took effect elsewhere, {disarmed} one-shot faults disarmed unfired): no fault was judged"
            ));
            continue;
        }
        if !holds {
            failing.get_or_insert(i);
        } else if undecided {
            unknown.push(format!(
                "{layout} layout: the search ran out of its budget on some tree"
            ));
        }
        if !harmless.is_empty() {
            summary.push_str(&format!(
                "; not judged, the store declined: {}",
                harmless.join(", ")
            ));
        }
        let met_by_kind: Vec<String> = met
            .iter()
            .filter(|(_, m)| m.met > 0)
            .map(|(kind, m)| format!("{kind} ×{}", m.met))
            .collect();
        parts.push(format!(
            "{layout} layout: {summary}; faults that met its operations: {}",
            met_by_kind.join(", ")
        ));
        evidence.push(json!({
            "layout": layout,
            "holds": holds,
            "detail": detail,
            "faults_met": met,
            "not_recovered": stuck,
            "figures": run.figures,
        }));
    }
    let reason = parts
        .iter()
        .chain(&skipped)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    let evidence = Value::Array(evidence);
    if failing.is_none() && unknown.is_empty() && parts.is_empty() && !skipped.is_empty() {
        return Judged {
            verdict: Verdict::Skipped,
            reason: skipped.join("; "),
            evidence,
            failing: None,
        };
    }
    if judged == 0 {
        return Judged {
            verdict: Verdict::Skipped,
            reason: "no workload had the store under test in this check's role".into(),
            evidence,
            failing: None,
        };
    }
    let verdict = if failing.is_some() {
        Verdict::Fail
    } else if !unknown.is_empty() {
        return Judged {
            verdict: Verdict::Unknown,
            reason: unknown.join("; "),
            evidence,
            failing: None,
        };
    } else {
        Verdict::Pass
    };
    Judged {
        verdict,
        reason,
        evidence,
        failing,
    }
}

fn judge_full_server(history: &History, room_from: usize, claimed: &[Contract]) -> Judged {
    let v = full_server::judge(history, claimed, room_from);
    let verdict = if !v.violations.is_empty() {
        Verdict::Fail
    } else if v.refused_full == 0 {
        return Judged {
            verdict: Verdict::Unknown,
            reason: "no write was refused with store_full: the server did not fill, so the check could not be decided".into(),
            evidence: json!({"found": v, "history": history}),
            failing: None,
        };
    } else {
        Verdict::Pass
    };
    let mut reason = format!(
        "{} writes refused with store_full while full, {} broken promises",
        v.refused_full,
        v.violations.len()
    );
    if !v.declined.is_empty() {
        // Declined operations are not judged: say which.
        reason.push_str(&format!(
            "; not judged, the store declined them: {}",
            v.declined.join("; ")
        ));
    }
    Judged {
        verdict,
        reason,
        evidence: json!({"found": v, "history": history}),
        failing: None,
    }
}

/// What a failed workload check saves to be replayed.
#[derive(Debug, Clone, Serialize, Deserialize)]
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

#[async_trait]
impl Suite for FaultsSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn checks(&self) -> Vec<CheckSpec> {
        vec![
            LINEARIZABLE,
            CHILDREN_ONCE,
            FENCING,
            RATE_BOUNDS,
            FULL_SERVER,
        ]
    }

    async fn run(
        &self,
        subject: &Subject<'_>,
        to_run: &[CheckSpec],
        progress: &dyn Progress,
    ) -> Result<SuiteRun, SuiteError> {
        let started = Instant::now();
        let wants_workload = to_run.iter().any(|c| c.id != FULL_SERVER.id);
        let mut runs = Vec::new();
        if wants_workload {
            let all = layouts(subject);
            progress.part("faults", all.len() as u64);
            // The layouts run side by side: each has its own server, gates,
            // prefix and clocks, and most of a workload's time is spent
            // waiting out its fault plan, not computing.
            let ran = futures_util::future::join_all(all.into_iter().map(|layout| async move {
                let run = self.workload(subject, layout, progress).await;
                progress.step(layout.name());
                run
            }))
            .await;
            for run in ran {
                runs.push(run?);
            }
            SuiteError::unless_an_adapter_broke(subject.factory.as_ref())?;
        }
        let claimed: Vec<Contract> = Contract::COORDINATION
            .into_iter()
            .filter(|c| subject.claims(*c))
            .collect();
        let full = if to_run.iter().any(|c| c.id == FULL_SERVER.id) {
            Some(self.full_server(subject).await?)
        } else {
            None
        };
        SuiteError::unless_an_adapter_broke(subject.factory.as_ref())?;
        let mut checks = Vec::new();
        for spec in to_run {
            let check_started = Instant::now();
            let judged = match FaultCheck::of(spec.id) {
                Some(FaultCheck::FullServer) => match &full {
                    Some((h, room_from)) => judge_full_server(h, *room_from, &claimed),
                    None => continue,
                },
                Some(FaultCheck::Workload(check)) => judge(check, &runs),
                None => Judged {
                    verdict: Verdict::Unknown,
                    reason: "not a check of the faults suite".into(),
                    evidence: Value::Null,
                    failing: None,
                },
            };
            let mut result = spec.result(SUITE, judged.verdict, judged.reason);
            result.evidence = judged.evidence;
            if let Some(i) = judged.failing {
                let run = &runs[i];
                result.counterexample = serde_json::to_value(FaultsCounterexample {
                    layout: run.options.layout,
                    seed: subject.seed,
                    config: self.config.clone(),
                    plans: run.plans.clone(),
                    history: run.history.clone(),
                })
                .ok();
            }
            result.seconds = check_started.elapsed().as_secs_f64();
            checks.push(result);
        }
        let figures = FaultsFigures {
            seed: subject.seed,
            workloads: runs.iter().map(|r| r.figures.clone()).collect(),
            seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        };
        Ok(SuiteRun {
            checks,
            figures: Figures::Faults(figures),
        })
    }

    async fn replay(
        &self,
        subject: &Subject<'_>,
        check: &CheckSpec,
        counterexample: Option<&Value>,
        progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError> {
        // The saved history is judged again (the checkers are pure: this
        // always reproduces its verdict) and the same seeded workload runs
        // again on the store given now (its interleaving depends on real
        // timing, the targeted episodes do not); the result is the new run's.
        // Only a workload check saves a history (the full server's check
        // runs a server of its own).
        let saved = counterexample
            .and_then(|v| serde_json::from_value::<FaultsCounterexample>(v.clone()).ok());
        if let (Some(saved), Some(FaultCheck::Workload(workload))) =
            (saved, FaultCheck::of(check.id))
        {
            progress.line(&format!(
                "faults: the saved {} history, judged again",
                saved.layout.name()
            ));
            let suite = FaultsSuite::new(saved.config.clone());
            let again = suite.workload(subject, saved.layout, progress).await?;
            let saved_run = WorkloadRun {
                history: saved.history.clone(),
                ..again.clone()
            };
            let first = judge(workload, std::slice::from_ref(&saved_run));
            let second = judge(workload, std::slice::from_ref(&again));
            // The verdict is the run's now (after a fix it passes); the
            // saved history's is shown beside it.
            let mut result = check.result(
                SUITE,
                second.verdict,
                format!(
                    "run again with seed {}: {} ({}); the saved history judged again: {} ({})",
                    saved.seed,
                    second.verdict.word(),
                    second.reason,
                    first.verdict.word(),
                    first.reason
                ),
            );
            result.evidence = json!({"saved": first.evidence, "again": second.evidence});
            return Ok(result);
        }
        let run = self
            .run(subject, std::slice::from_ref(check), progress)
            .await?;
        run.checks
            .into_iter()
            .next()
            .ok_or_else(|| SuiteError::Setup(format!("{} gave no verdict", check.id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 20, item 3: every check the suite declares has its typed
    /// identity (its role, operations and checker follow from the
    /// variant), and an id it does not declare has none: judged `unknown`,
    /// never silently as the rate bounds.
    #[test]
    fn every_declared_check_is_a_variant_and_no_other_id_is() {
        let suite = FaultsSuite::new(FaultsConfig::default());
        for spec in harness::Suite::checks(&suite) {
            let check = FaultCheck::of(spec.id).unwrap_or_else(|| panic!("{}", spec.id));
            if let FaultCheck::Workload(w) = check {
                assert_eq!(w.spec().id, spec.id);
            }
        }
        assert_eq!(FaultCheck::of("faults.rate-bounds-2"), None);
        assert_eq!(FaultCheck::of(""), None);
        assert_eq!(
            FaultCheck::of(RATE_BOUNDS.id),
            Some(FaultCheck::Workload(WorkloadCheck::RateBounds))
        );
    }
    use harness::contract::{Call, ErrorKind, Reply, StoreError};

    fn run_with(history: History) -> WorkloadRun {
        WorkloadRun {
            options: WorkloadOptions::new(LayoutKind::Coordination, 1, 1),
            roles: Roles {
                lease: Player::Subject,
                queue: Player::Subject,
                rate: Player::Subject,
            },
            plans: Vec::new(),
            nemesis_trouble: None,
            history,
            end: EndState {
                saved: Default::default(),
                effects: Default::default(),
                drained: Ok(()),
            },
            durable: DurableEnd::default(),
            lease_off_wire: false,
            route_trouble: None,
            figures: WorkloadFigures::default(),
        }
    }

    fn take(h: &mut History, outcome: Result<Reply, StoreError>) {
        take_as(h, "a", outcome);
    }

    fn take_as(h: &mut History, who: &str, outcome: Result<Reply, StoreError>) {
        let call = Call {
            op: "lease.take".into(),
            args: json!({"tree": "t", "holder": who, "ttl_ms": 100}),
        };
        h.invoke(who, &call, Some(0), 0);
        h.complete(who, "lease.take", &outcome, Some(1), 1);
    }

    /// A partition of instance `a` around what `inside` records.
    fn partitioned(h: &mut History, inside: impl FnOnce(&mut History)) {
        let fault = crate::nemesis::Fault::Partition {
            instance: 0,
            for_ms: 10,
        };
        let history = Mutex::new(std::mem::take(h));
        crate::nemesis::record_start(&history, &fault, Boundary::Gate, None, 0);
        let mut inner = history.into_inner().unwrap_or_else(|p| p.into_inner());
        inside(&mut inner);
        let history = Mutex::new(inner);
        crate::nemesis::record_end::<String>(
            &history,
            &fault,
            Boundary::Gate,
            &Ok(Ending::Healed),
            None,
            0,
        );
        *h = history.into_inner().unwrap_or_else(|p| p.into_inner());
    }

    fn granted() -> Reply {
        Reply::Granted {
            epoch: 1,
            expires_at_ms: 100,
        }
    }

    #[test]
    fn a_check_whose_faults_met_none_of_its_operations_is_unknown() {
        // The take was answered, but no fault met it.
        let mut h = History::default();
        take(&mut h, Ok(granted()));
        let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
        assert_eq!(judged.verdict, Verdict::Unknown, "{}", judged.reason);
        assert!(
            judged.reason.contains("none of the faults played met"),
            "{}",
            judged.reason
        );
        // A partition of `a` while its take was in flight: decided.
        let mut h = History::default();
        partitioned(&mut h, |h| take(h, Ok(granted())));
        let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
        assert_eq!(judged.verdict, Verdict::Pass, "{}", judged.reason);
        assert!(judged.reason.contains("partition ×1"), "{}", judged.reason);
        // A partition of `a` while only b worked: not decided.
        let mut h = History::default();
        partitioned(&mut h, |h| take_as(h, "b", Ok(granted())));
        assert_eq!(
            judge(WorkloadCheck::Linearizable, &[run_with(h)]).verdict,
            Verdict::Unknown
        );
    }

    #[test]
    fn a_store_that_never_answers_again_after_the_faults_healed_fails_when_the_route_answers() {
        let unavailable = || Err(StoreError::new(ErrorKind::Unavailable, "connection reset"));
        let mut h = History::default();
        partitioned(&mut h, |h| take(h, Ok(granted())));
        // Everything after the fault healed ended unknown.
        for _ in 0..3 {
            take(&mut h, unavailable());
        }
        let judged = judge(WorkloadCheck::Linearizable, &[run_with(h.clone())]);
        assert_eq!(judged.verdict, Verdict::Fail, "{}", judged.reason);
        assert!(
            judged.reason.contains("did not answer again"),
            "{}",
            judged.reason
        );
        // storeproof's own route did not answer: not the store's doing.
        let mut run = run_with(h);
        run.route_trouble = Some("directly: PING failed".into());
        let judged = judge(WorkloadCheck::Linearizable, &[run]);
        assert_eq!(judged.verdict, Verdict::Unknown, "{}", judged.reason);
    }

    #[test]
    fn a_disarmed_fault_is_counted_apart_never_as_played() {
        let fault = crate::nemesis::Fault::LoseReplyAfterApply { instance: 0 };
        let history = Mutex::new(History::default());
        crate::nemesis::record_start(&history, &fault, Boundary::Gate, None, 0);
        crate::nemesis::record_end::<String>(
            &history,
            &fault,
            Boundary::Gate,
            &Ok(Ending::Disarmed),
            None,
            0,
        );
        let mut h = history.into_inner().unwrap_or_else(|p| p.into_inner());
        partitioned(&mut h, |h| take(h, Ok(granted())));
        let roles = run_with(History::default()).roles;
        let end = run_with(History::default()).end;
        let f = figures_of(
            LayoutKind::Coordination,
            &roles,
            1,
            &h,
            &end,
            false,
            Instant::now(),
        );
        assert_eq!(
            f.faults,
            [("partition".to_string(), 1)].into_iter().collect()
        );
        assert_eq!(
            f.disarmed,
            [("lose_reply_after_apply".to_string(), 1)]
                .into_iter()
                .collect()
        );
        let met = &f.met[LINEARIZABLE.id];
        assert_eq!(met["partition"].met, 1);
        assert_eq!(met["lose_reply_after_apply"].disarmed, 1);
        assert_eq!(f.met[CHILDREN_ONCE.id]["partition"].missed, 1);
    }

    #[test]
    fn a_violation_fails_even_when_no_fault_met_it() {
        // Two overlapping grants of one tree: no fault needed to blame it.
        let mut h = History::default();
        take_as(&mut h, "a", Ok(granted()));
        take_as(&mut h, "b", Ok(granted()));
        let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
        assert_eq!(judged.verdict, Verdict::Fail, "{}", judged.reason);
    }

    #[test]
    fn an_unsupported_answer_skips_the_check_with_the_store_s_message_never_fails_it() {
        let no = || Err(StoreError::new(ErrorKind::Unsupported, "no renewals here"));
        let mut h = History::default();
        partitioned(&mut h, |h| take(h, Ok(granted())));
        let renew = Call {
            op: "lease.renew".into(),
            args: json!({"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": 100}),
        };
        h.invoke("a", &renew, Some(2), 2);
        h.complete("a", "lease.renew", &no(), Some(3), 3);
        // Overlapping grants too: still no failure, the store declined.
        take_as(&mut h, "b", Ok(granted()));
        let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
        assert_eq!(judged.verdict, Verdict::Skipped, "{}", judged.reason);
        assert!(
            judged
                .reason
                .contains("lease.renew (unsupported: no renewals here)"),
            "{}",
            judged.reason
        );
        // A declined read is named, and the rest is judged.
        let mut h = History::default();
        partitioned(&mut h, |h| take(h, Ok(granted())));
        let read = Call {
            op: "lease.read".into(),
            args: json!({"tree": "t"}),
        };
        h.invoke("a", &read, Some(2), 2);
        h.complete(
            "a",
            "lease.read",
            &Err(StoreError::new(ErrorKind::Unsupported, "no reads")),
            Some(3),
            3,
        );
        let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
        assert_eq!(judged.verdict, Verdict::Pass, "{}", judged.reason);
        assert!(
            judged.reason.contains("declined: lease.read"),
            "{}",
            judged.reason
        );
    }

    #[test]
    fn the_drain_s_answers_never_decide_a_check() {
        // Every operation under the fault was refused; only the drain (after
        // the faults, on a direct connection) was answered.
        let mut h = History::default();
        partitioned(&mut h, |h| {
            take(h, Err(StoreError::new(ErrorKind::BadRequest, "no")))
        });
        take_as(&mut h, workload::DRAIN, Ok(granted()));
        let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
        assert_eq!(judged.verdict, Verdict::Unknown, "{}", judged.reason);
        assert!(
            judged.reason.contains("nothing to judge"),
            "{}",
            judged.reason
        );
    }

    #[test]
    fn a_store_that_refused_everything_is_never_a_pass() {
        let mut h = History::default();
        partitioned(&mut h, |h| {
            take(h, Err(StoreError::new(ErrorKind::BadRequest, "no")))
        });
        let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
        assert_eq!(judged.verdict, Verdict::Unknown, "{}", judged.reason);
        assert!(
            judged.reason.contains("nothing to judge"),
            "{}",
            judged.reason
        );

        let mut h = History::default();
        partitioned(&mut h, |h| take(h, Ok(granted())));
        assert_eq!(
            judge(WorkloadCheck::Linearizable, &[run_with(h)]).verdict,
            Verdict::Pass
        );
    }
}
