//! Running a layout's workload under its nemeses on a server of the suite's
//! own, and the full-server scenario.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use harness::contract::Contract;
use harness::gate::drive::instance_name;
use harness::gate::{self, FaultRule, Gate};
use harness::server::{ManagedServer, VirtualClock};
use harness::store::{Hello, StoreClient, StoreFactory};
use harness::{History, Progress, Subject, SuiteError};
use stores::redis::RedisStoreFactory;
use stores::sqlite::{SqliteClock, SqliteStoreFactory};

use crate::call_faults::{CallFault, CallGate, CallNemesis};
use crate::evidence::Boundary;
use crate::fencing::DurableEnd;
use crate::full_server;
use crate::nemesis::{self, FaultKind, Nemesis, Plan, PlanOptions};
use crate::workload::{self, Clients, LayoutKind, Recorder, Ticker, WorkloadOptions};

use super::roles::{Player, Roles, WorkloadRun};
use super::verdicts::figures_of;
use super::{FaultsConfig, FaultsSuite};

/// The seed of `layout`'s workload and plans, from the run's seed.
pub(super) fn layout_seed(seed: u64, layout: LayoutKind) -> u64 {
    match layout {
        LayoutKind::Coordination => seed,
        LayoutKind::Durable => seed ^ 0xD0AB_1E00,
    }
}

pub(super) fn setup(what: &str, e: impl std::fmt::Display) -> SuiteError {
    SuiteError::Setup(format!("the fault suite {what}: {e}"))
}

/// The options of `layout`'s workload at `config`'s size.
pub fn workload_options(config: &FaultsConfig, seed: u64, layout: LayoutKind) -> WorkloadOptions {
    WorkloadOptions::new(layout, layout_seed(seed, layout), config.rounds)
}

/// The Redis nemesis plan of a workload: every fault kind.
pub(super) fn redis_plan(config: &FaultsConfig, seed: u64) -> Plan {
    let mut options = PlanOptions::new(seed, config.instances, config.faults);
    options.max_gap_ms = 150;
    options.max_fault_ms = 300;
    nemesis::draw(&options)
}

/// The call-boundary plan for a lease store without a Redis wire: the
/// faults that mean something there.
pub(super) fn call_plan(config: &FaultsConfig, seed: u64) -> Plan {
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
    nemesis::draw(&options)
}

/// A connected client of `player` for `instance` under `prefix`, its Redis
/// commands sent to `url`.
pub(super) struct Connector<'s, 'a> {
    pub(super) subject: &'s Subject<'a>,
    pub(super) redis: RedisStoreFactory,
    pub(super) sqlite: SqliteStoreFactory,
}

impl Connector<'_, '_> {
    pub(super) async fn connect(
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

/// One connection of the store under test shared by the roles it plays for
/// one instance: one adapter process, as one instance of a deployment is.
/// An instance's rounds call one role at a time, so sharing changes no
/// order; it spares an adapter two interpreters per instance.
#[derive(Clone)]
struct SharedClient {
    client: Arc<tokio::sync::Mutex<Box<dyn StoreClient>>>,
    remembers: bool,
}

#[async_trait::async_trait]
impl StoreClient for SharedClient {
    async fn call(
        &mut self,
        call: &harness::contract::Call,
        clock_ms: i64,
    ) -> Result<harness::contract::Reply, harness::contract::StoreError> {
        self.client.lock().await.call(call, clock_ms).await
    }

    async fn reconnect(&mut self, clock_ms: i64) -> bool {
        self.client.lock().await.reconnect(clock_ms).await
    }

    fn remembers(&self) -> bool {
        self.remembers
    }
}

impl Connector<'_, '_> {
    /// `instance`'s clients for the lease, queue and rate roles, played by
    /// `players` in that order: those of the store under test share one
    /// connection ([`SharedClient`]), a reference store's are its own.
    async fn connect_roles(
        &self,
        [lease, queue, rate]: [Player; 3],
        instance: &str,
        prefix: &str,
        url: &str,
        clock_ms: i64,
    ) -> Result<Clients, SuiteError> {
        let mut shared: Option<SharedClient> = None;
        let mut role = async |player: Player| -> Result<Box<dyn StoreClient>, SuiteError> {
            if player != Player::Subject {
                return self.connect(player, instance, prefix, url, clock_ms).await;
            }
            let client = match &shared {
                Some(s) => s.clone(),
                None => {
                    let c = self
                        .connect(player, instance, prefix, url, clock_ms)
                        .await?;
                    let s = SharedClient {
                        remembers: c.remembers(),
                        client: Arc::new(tokio::sync::Mutex::new(c)),
                    };
                    shared = Some(s.clone());
                    s
                }
            };
            Ok(Box::new(client))
        };
        Ok(Clients {
            lease: role(lease).await?,
            queue: role(queue).await?,
            rate: role(rate).await?,
        })
    }
}

impl FaultsSuite {
    pub(super) async fn workload(
        &self,
        subject: &Subject<'_>,
        layout: LayoutKind,
        progress: &dyn Progress,
    ) -> Result<WorkloadRun, SuiteError> {
        let started = Instant::now();
        let options = workload_options(&self.config, subject.seed, layout);
        let roles = Roles::of(layout, subject);
        let mut server = ManagedServer::start(subject.server_options())
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
            let players = [roles.lease, roles.queue, roles.rate];
            let Clients {
                mut lease,
                queue,
                rate,
            } = connector
                .connect_roles(players, name, &prefix, &url, now)
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
            let clients = Clients { lease, queue, rate };
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
    pub(super) async fn full_server(
        &self,
        subject: &Subject<'_>,
    ) -> Result<(History, usize), SuiteError> {
        let server = ManagedServer::start(subject.server_options())
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
pub(super) async fn answers_ping(url: &str) -> Result<(), String> {
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

pub(super) async fn set_maxmemory(
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

#[cfg(test)]
mod shared_tests {
    use std::sync::Arc;

    use harness::contract::{Call, Contract};
    use harness::store::external::{adapters_started, ExternalStoreFactory};
    use harness::{ServerRef, Subject};
    use stores::redis::RedisStoreFactory;
    use stores::sqlite::{SqliteClock, SqliteStoreFactory};

    use super::{Connector, Player};

    /// Answers hello with `cases`, and every other request with a lease
    /// read of a free tree; never dials its server.
    const ADAPTER: &str = r#"while read line; do id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/'); case "$line" in *'"op":"hello"'*) echo "{\"id\":$id,\"ok\":{\"name\":\"shared\",\"version\":\"1\",\"contracts\":[\"lease\",\"queue\",\"rate\"],\"capabilities\":[\"cases\"]}}";; *) echo "{\"id\":$id,\"ok\":{\"lease\":null}}";; esac; done"#;

    #[tokio::test]
    async fn the_roles_the_store_under_test_plays_for_one_instance_share_one_adapter_process() {
        let dir = tempfile::tempdir().unwrap();
        let factory = Arc::new(ExternalStoreFactory::new(ADAPTER, dir.path().to_path_buf()));
        let subject = Subject {
            spec: "shared".into(),
            factory,
            opt_out: None,
            run_prefix: "sp:shared:".into(),
            contracts: Contract::COORDINATION.to_vec(),
            server: ServerRef::External {
                url: "redis://127.0.0.1:1/".into(),
            },
            seed: 0,
            may_start_servers: false,
        };
        let connector = Connector {
            subject: &subject,
            redis: RedisStoreFactory::new(dir.path().join("kept.sqlite")),
            sqlite: SqliteStoreFactory::new(dir.path().join("set.sqlite"), SqliteClock::System),
        };
        let before = adapters_started();
        let clients = connector
            .connect_roles(
                [Player::Subject; 3],
                "a",
                "sp:shared:a:",
                "redis://127.0.0.1:1/",
                0,
            )
            .await
            .unwrap();
        assert_eq!(
            adapters_started() - before,
            1,
            "one process serves the three roles"
        );
        let read = Call {
            op: "lease.read".into(),
            args: serde_json::json!({"tree": "t"}),
        };
        let mut clients = [clients.lease, clients.queue, clients.rate];
        for c in clients.iter_mut() {
            assert!(c.call(&read, 0).await.is_ok(), "every role is answered");
        }
    }
}
