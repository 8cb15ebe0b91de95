//! One shape for every suite: the store under test as one [`Subject`], each
//! suite's checks declared once as [`CheckSpec`]s, and the [`Suite`] trait
//! `certify` drives (subject → suites → report).
//!
//! Whether a check can be decided at all is settled here, the same way for
//! every suite, before the suite runs: a check about contracts the store does
//! not claim, or about Redis state a store keeping none there, is outside the
//! claim; a check whose [`Needs`] the run cannot meet is skipped with the
//! reason. The suite then runs only what is left.

use std::sync::Arc;

use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use thiserror::Error;

use crate::check::{CheckResult, Verdict};
use crate::contract::{Contract, StoreError};
use crate::figures::Figures;
use crate::server::{ManagedServer, ServerKind, ServerOptions};
use crate::store::{Hello, StoreClient, StoreFactory};
pub use model::check::{CheckSpec, Needs};

/// Why a check about the Redis server's contents or the store's commands on
/// it cannot judge a store that keeps no state there.
const NOT_IN_REDIS: &str = "the store keeps its state outside Redis (a durable store: builtin:sqlite, or an adapter whose hello declared \"state\": \"durable\")";

/// What only a run can say of a check: whether it applies to the store
/// under test and whether the run can decide it.
trait Decidable {
    /// Why the check cannot apply to the store at all.
    fn not_applicable(&self, subject: &Subject<'_>) -> Option<String>;
    /// Why the run cannot decide the check.
    fn unmet_needs(&self, subject: &Subject<'_>) -> Option<String>;
}

impl Decidable for CheckSpec {
    /// Why the check cannot apply to the store at all, whatever the run:
    /// it is about Redis state (keys, the servers it accepts) the store
    /// claims not to keep. `None` for a store that keeps its state in Redis.
    /// Such a check is reported outside the claim with this reason, never
    /// passed vacuously.
    fn not_applicable(&self, subject: &Subject<'_>) -> Option<String> {
        if subject.factory.keeps_state_in_redis() {
            return None;
        }
        match self.needs {
            Needs::StoreKeys | Needs::AllKeys => Some(format!(
                "{NOT_IN_REDIS}: this check reads the store's keys on the Redis server, where it keeps none"
            )),
            Needs::FullRedis => Some(format!(
                "{NOT_IN_REDIS}: this check fills the Redis server under the store, which writes nothing there"
            )),
            Needs::OwnServers if self.contracts.is_empty() => Some(format!(
                "{NOT_IN_REDIS}: this check is about which Redis servers the store accepts, and it uses none"
            )),
            _ => None,
        }
    }

    /// Why the run cannot decide the check, or `None` when its needs are met
    /// (checks that cannot apply to the store are [`Self::not_applicable`]).
    fn unmet_needs(&self, subject: &Subject<'_>) -> Option<String> {
        let in_redis = subject.factory.keeps_state_in_redis();
        let managed = subject.server.managed().is_some();
        match self.needs {
            Needs::AnyServer | Needs::StoreKeys => None,
            // The store's kind first: no run could drive it.
            Needs::StoreCommands if !in_redis => Some(format!(
                "{NOT_IN_REDIS}: this check interleaves the store's Redis commands through a gate and restores the server's keyspace, so it cannot drive this store"
            )),
            Needs::Interleavings if !in_redis => (!crate::store::offers_sqlite_copy(
                subject.factory.as_ref(),
            ))
            .then(|| format!(
                    "{NOT_IN_REDIS} and offers no copy of itself to restore and explore, so this check cannot drive it"
                )),
            Needs::ManagedServer
            | Needs::AllKeys
            | Needs::StoreCommands
            | Needs::Interleavings
                if !managed =>
            {
                Some(
                "needs a managed server: it moves the server's clock, reads or restores its whole keyspace (this run uses --redis-url)".into(),
                )
            }
            Needs::ManagedServer | Needs::AllKeys | Needs::Interleavings => None,
            Needs::OwnServers if !in_redis => Some(format!(
                "{NOT_IN_REDIS}: this check runs the store against Redis servers of its own that it kills or restarts, which hold nothing of this store"
            )),
            Needs::OwnServers if !subject.may_start_servers => Some(
                "needs servers of its own, started from a local redis-server, and none was found (install redis-server or run scripts/setup)".into(),
            ),
            Needs::OwnServers => None,
            Needs::StoreCommands => None,
            Needs::FaultServers | Needs::FullRedis if !subject.may_start_servers => Some(
                "needs Redis servers of its own, started from a local redis-server, and none was found (install redis-server or run scripts/setup)".into(),
            ),
            Needs::FaultServers if !in_redis && !managed => Some(
                "needs a managed server: the store follows its clock, which the fault workload moves (this run uses --redis-url)".into(),
            ),
            Needs::FaultServers | Needs::FullRedis => None,
        }
    }
}

/// Where the store under test is pointed.
pub enum ServerRef<'a> {
    /// A server storeproof started: clock control and whole-keyspace reads allowed.
    Managed(&'a ManagedServer),
    /// A server someone else runs: only keys under the run's prefix are touched.
    External {
        /// The server's URL, e.g. `redis://127.0.0.1:6379/`.
        url: String,
    },
}

impl ServerRef<'_> {
    /// The URL stores connect to.
    pub fn url(&self) -> String {
        match self {
            ServerRef::Managed(s) => s.url(),
            ServerRef::External { url } => url.clone(),
        }
    }

    /// Whether storeproof controls this server.
    pub fn managed(&self) -> Option<&ManagedServer> {
        match self {
            ServerRef::Managed(s) => Some(s),
            ServerRef::External { .. } => None,
        }
    }
}

/// The store under test, once: what every suite gets.
pub struct Subject<'a> {
    /// What `--store` named, secrets redacted (e.g. `builtin:redis`).
    pub spec: String,
    /// Connects the store's instances.
    pub factory: Arc<dyn StoreFactory>,
    /// The opt-out passed to the store in every hello, if any.
    pub opt_out: Option<String>,
    /// Every key of the run starts with it; each suite adds its own part.
    pub run_prefix: String,
    /// The contracts the store claims (from its hello).
    pub contracts: Vec<Contract>,
    /// The server the store is pointed at.
    pub server: ServerRef<'a>,
    /// The seed of every random choice of the run.
    pub seed: u64,
    /// Whether checks may start servers of their own.
    pub may_start_servers: bool,
}

impl Subject<'_> {
    /// The same store, claims, prefix and seed, pointed at `server`.
    pub fn on_server<'s>(&self, server: ServerRef<'s>) -> Subject<'s> {
        Subject {
            spec: self.spec.clone(),
            factory: self.factory.clone(),
            opt_out: self.opt_out.clone(),
            run_prefix: self.run_prefix.clone(),
            contracts: self.contracts.clone(),
            server,
            seed: self.seed,
            may_start_servers: self.may_start_servers,
        }
    }

    /// The server kind of the run (`certify --server`): the kind of the
    /// managed server it runs on; `None` for the default binary or a
    /// `--redis-url` run. It travels with the run, never through process
    /// state, so runs on different servers may go side by side.
    pub fn server_kind(&self) -> Option<&ServerKind> {
        self.server
            .managed()
            .and_then(|s| s.options().server.as_ref())
    }

    /// The options of a server a suite starts for this run: the defaults,
    /// on the run's server kind ([`Subject::server_kind`]).
    pub fn server_options(&self) -> ServerOptions {
        ServerOptions::default().on_server(self.server_kind())
    }

    /// Whether the store claims `contract`.
    pub fn claims(&self, contract: Contract) -> bool {
        self.contracts.contains(&contract)
    }

    /// A fresh connection of storeproof's own to the target server.
    pub async fn admin(&self) -> Result<MultiplexedConnection, String> {
        let url = self.server.url();
        let client = redis::Client::open(url.as_str()).map_err(|e| e.to_string())?;
        client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| {
                format!(
                    "cannot connect to {}: {e}",
                    crate::server::redact_secrets(&url)
                )
            })
    }

    /// Connects instance `name` of the store under `prefix` to `url` (the
    /// server, or a gate in front of it). The error names the instance.
    pub async fn connect_store(
        &self,
        name: &str,
        prefix: &str,
        url: &str,
        clock_ms: i64,
    ) -> Result<Box<dyn StoreClient>, StoreError> {
        let hello = Hello {
            instance: name.into(),
            redis_url: url.into(),
            prefix: prefix.into(),
            opt_out: self.opt_out.clone(),
        };
        self.factory
            .connect_case(&hello, clock_ms)
            .await
            .map(|(_, client)| client)
            .map_err(|e| StoreError {
                message: format!("instance {name} could not connect: {}", e.message),
                ..e
            })
    }
}

/// Where a suite says how far it is (a progress bar on a terminal).
pub trait Progress: Send + Sync {
    /// A new part of `steps` steps begins, e.g. the crash suite's kills.
    fn part(&self, name: &str, steps: u64);
    /// One step of the current part is done.
    fn step(&self, label: &str);
    /// A line worth printing (a finding, a finished part).
    fn line(&self, text: &str);
}

/// A progress sink that says nothing (tests, benches).
pub struct Silent;

impl Progress for Silent {
    fn part(&self, _: &str, _: u64) {}
    fn step(&self, _: &str) {}
    fn line(&self, _: &str) {}
}

/// What a suite's run found: one result per check it was asked to run, in
/// declaration order, and its figures.
pub struct SuiteRun {
    /// One result per check run.
    pub checks: Vec<CheckResult>,
    /// The suite's figures for the report's `stats`.
    pub figures: Figures,
}

/// Why a suite could not run at all: the run ends with this one line and no
/// report (exit 2). The store's own misbehaviour is never this: it is judged.
#[derive(Debug, Error)]
pub enum SuiteError {
    /// The store's adapter broke (exited, hung, wrote garbage): bad input.
    #[error("{0}")]
    AdapterFailed(String),
    /// The suite could not be set up (no Docker when asked for, no image).
    #[error("{0}")]
    Setup(String),
}

impl SuiteError {
    /// `Err(AdapterFailed)` once an adapter instance of `store` has broken
    /// (exited, hung, wrote garbage): what every suite asks before it
    /// reports, so that no verdict rests on a broken adapter's answers.
    /// The failure belongs to the store (the run's), never to the process.
    pub fn unless_an_adapter_broke(store: &dyn StoreFactory) -> Result<(), SuiteError> {
        match store.adapter_failure() {
            Some(line) => Err(SuiteError::AdapterFailed(line)),
            None => Ok(()),
        }
    }
}

/// A suite: its checks declared once, and how to run them.
#[async_trait]
pub trait Suite: Send + Sync {
    /// Its name as `--suite` and the report write it, e.g. `conformance`.
    fn name(&self) -> &'static str;

    /// Every check it can report, in report order.
    fn checks(&self) -> Vec<CheckSpec>;

    /// Runs `to_run` (checks of [`Suite::checks`], each within the store's
    /// claim and with its needs met) on `subject`; one result per check.
    async fn run(
        &self,
        subject: &Subject<'_>,
        to_run: &[CheckSpec],
        progress: &dyn Progress,
    ) -> Result<SuiteRun, SuiteError>;

    /// Runs `check` again on `subject` from the counterexample its failure
    /// saved (`storeproof replay`): the check's result now. `Err` when the
    /// counterexample cannot be read as this suite's, or the run could not
    /// be done.
    async fn replay(
        &self,
        subject: &Subject<'_>,
        check: &CheckSpec,
        counterexample: Option<&model::counterexample::Counterexample>,
        progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError>;
}

/// Splits `checks` (already selected by `--check`) into the results that
/// need no run (outside the claim or not applicable to the store, or needs
/// unmet: skipped with the reason) and the checks the suite must run.
pub fn plan(
    suite: &str,
    checks: Vec<CheckSpec>,
    subject: &Subject<'_>,
) -> (Vec<CheckResult>, Vec<CheckSpec>) {
    let mut settled = Vec::new();
    let mut to_run = Vec::new();
    for spec in checks {
        if let Some(why) = spec
            .outside_claim(&subject.contracts)
            .or_else(|| spec.not_applicable(subject))
        {
            settled.push(CheckResult {
                level: spec.level,
                about: spec.about.to_string(),
                ..CheckResult::outside_claim(spec.id, suite, why)
            });
        } else if let Some(why) = spec.unmet_needs(subject) {
            settled.push(CheckResult {
                level: spec.level,
                about: spec.about.to_string(),
                ..CheckResult::undecided(spec.id, suite, Verdict::Skipped, why)
            });
        } else {
            to_run.push(spec);
        }
    }
    (settled, to_run)
}

/// The results of `declared` in the order the suite declares them: each
/// check's result from `found`, and a check the suite left without one
/// `unknown` (never dropped: a missing verdict must not read as a pass).
pub fn in_declared_order(
    suite: &str,
    declared: &[CheckSpec],
    mut found: Vec<CheckResult>,
) -> Vec<CheckResult> {
    declared
        .iter()
        .map(|spec| match found.iter().position(|r| r.id == spec.id) {
            Some(i) => found.swap_remove(i),
            None => spec.result(
                suite,
                Verdict::Unknown,
                "the suite reported no verdict for this check (storeproof's trouble)",
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Level;

    const LEASE_CHECK: CheckSpec = CheckSpec {
        id: "x.lease",
        level: Level::Must,
        contracts: &[Contract::Lease],
        needs: Needs::AnyServer,
        about: "a lease check",
    };

    #[test]
    fn a_check_is_outside_the_claim_only_when_none_of_its_contracts_is_claimed() {
        assert!(LEASE_CHECK.outside_claim(&[Contract::Lease]).is_none());
        let why = LEASE_CHECK.outside_claim(&[Contract::Queue]).unwrap();
        assert!(why.contains("lease contract"), "{why}");
        let server = CheckSpec {
            contracts: &[],
            ..LEASE_CHECK
        };
        assert!(server.outside_claim(&[]).is_none());
    }

    #[test]
    fn a_check_the_suite_left_without_a_verdict_is_unknown_not_dropped() {
        let other = CheckSpec {
            id: "x.other",
            ..LEASE_CHECK
        };
        let found = vec![other.result("x", Verdict::Pass, "held")];
        let results = in_declared_order("x", &[LEASE_CHECK, other], found);
        assert_eq!(
            results
                .iter()
                .map(|r| (r.id.as_str(), r.verdict))
                .collect::<Vec<_>>(),
            vec![("x.lease", Verdict::Unknown), ("x.other", Verdict::Pass)]
        );
        assert!(results[0].leaves_incomplete());
    }

    /// A store that is never connected: only its claims about its state matter.
    struct NeverConnected {
        in_redis: bool,
    }

    #[async_trait]
    impl StoreFactory for NeverConnected {
        fn spec(&self) -> String {
            "never-connected".into()
        }

        fn keeps_state_in_redis(&self) -> bool {
            self.in_redis
        }

        async fn connect(
            &self,
            hello: &Hello,
            _: i64,
        ) -> Result<(crate::store::StoreInfo, Box<dyn StoreClient>), StoreError> {
            panic!("planning connected instance {}", hello.instance)
        }
    }

    fn subject(in_redis: bool) -> Subject<'static> {
        Subject {
            spec: "never-connected".into(),
            factory: Arc::new(NeverConnected { in_redis }),
            opt_out: None,
            run_prefix: "sp:plan:".into(),
            contracts: vec![Contract::Lease],
            server: ServerRef::External {
                url: "redis://127.0.0.1:1/".into(),
            },
            seed: 0,
            may_start_servers: true,
        }
    }

    #[test]
    fn checks_of_redis_state_are_outside_the_claim_of_a_store_keeping_none_there() {
        let with = |needs, contracts| CheckSpec {
            needs,
            contracts,
            ..LEASE_CHECK
        };
        let (redis, sqlite) = (subject(true), subject(false));
        let lease: &'static [Contract] = &[Contract::Lease];
        let about_keys = with(Needs::StoreKeys, lease);
        let about_servers = with(Needs::OwnServers, &[]);
        let crashes = with(Needs::OwnServers, lease);
        let explores = with(Needs::StoreCommands, lease);
        let replies = with(Needs::AnyServer, lease);
        for spec in [about_keys, about_servers, crashes, explores, replies] {
            assert_eq!(spec.not_applicable(&redis), None, "{spec:?}");
        }
        assert_eq!(about_keys.unmet_needs(&redis), None);
        assert!(explores.unmet_needs(&redis).unwrap().contains("managed"));

        let (settled, to_run) = plan(
            "x",
            vec![about_keys, about_servers, crashes, explores, replies],
            &sqlite,
        );
        // A store outside Redis still gets its replies judged.
        assert_eq!(to_run, vec![replies]);
        let got: Vec<(&str, Verdict, bool)> = settled
            .iter()
            .map(|r| (r.reason.as_str(), r.verdict, r.outside_claim))
            .collect();
        assert_eq!(got.len(), 4, "{got:?}");
        // Keys and accepted servers: not this store's to keep; the crash
        // and the explorer: its claimed contract, undecided.
        for (i, outside) in [true, true, false, false].into_iter().enumerate() {
            let (reason, verdict, outside_claim) = got[i];
            assert_eq!(verdict, Verdict::Skipped, "{reason}");
            assert_eq!(outside_claim, outside, "{reason}");
            assert!(reason.contains("outside Redis"), "{reason}");
        }
        assert!(settled[0].reason.contains("keys"));
        assert!(settled[1].reason.contains("servers the store accepts"));
        assert!(settled[2].leaves_incomplete() && settled[3].leaves_incomplete());
        assert!(!settled[0].leaves_incomplete() && !settled[1].leaves_incomplete());
    }

    #[test]
    fn a_should_check_that_breaks_is_a_warning() {
        let should = CheckSpec {
            level: Level::Should,
            ..LEASE_CHECK
        };
        assert_eq!(should.result("x", Verdict::Fail, "").verdict, Verdict::Warn);
        assert_eq!(
            LEASE_CHECK.result("x", Verdict::Fail, "").verdict,
            Verdict::Fail
        );
    }
}
