//! The store under test, as a suite gets it ([`harness::Subject`]).

use std::sync::Arc;

use harness::contract::Contract;
use harness::server::ManagedServer;
use harness::store::StoreFactory;
use harness::{ServerRef, Subject};

/// A URL nothing listens on (port 1): for suites that start servers of
/// their own, and for tests where every connection must fail.
pub const UNREACHABLE_URL: &str = "redis://127.0.0.1:1/";

/// A [`Subject`] being built: [`subject`] starts one, the methods change
/// what a test varies, and [`on`](SubjectBuilder::on) or
/// [`unreachable`](SubjectBuilder::unreachable) point it at its server.
pub struct SubjectBuilder {
    factory: Arc<dyn StoreFactory>,
    spec: String,
    run_prefix: String,
    contracts: Vec<Contract>,
    seed: u64,
    may_start_servers: bool,
}

/// The store `factory` makes, as the subject of a run: named by its own
/// spec, keys under `sp:test:`, every coordination contract claimed, no
/// opt-out, seed 0, and checks allowed to start servers of their own.
pub fn subject(factory: Arc<dyn StoreFactory>) -> SubjectBuilder {
    SubjectBuilder {
        spec: factory.spec(),
        factory,
        run_prefix: "sp:test:".into(),
        contracts: Contract::COORDINATION.to_vec(),
        seed: 0,
        may_start_servers: true,
    }
}

impl SubjectBuilder {
    /// Names the store `spec` in results and reports instead of its own spec.
    pub fn spec(self, spec: impl Into<String>) -> Self {
        SubjectBuilder {
            spec: spec.into(),
            ..self
        }
    }

    /// Every key of the run starts with `prefix` (tests sharing a server
    /// each take their own).
    pub fn prefix(self, prefix: impl Into<String>) -> Self {
        SubjectBuilder {
            run_prefix: prefix.into(),
            ..self
        }
    }

    /// The store claims `contracts` (its hello's), instead of every one.
    pub fn contracts(self, contracts: &[Contract]) -> Self {
        SubjectBuilder {
            contracts: contracts.to_vec(),
            ..self
        }
    }

    /// The seed of every random choice of the run.
    pub fn seed(self, seed: u64) -> Self {
        SubjectBuilder { seed, ..self }
    }

    /// Checks may not start servers of their own.
    pub fn no_own_servers(self) -> Self {
        SubjectBuilder {
            may_start_servers: false,
            ..self
        }
    }

    /// The subject, pointed at `server` (clock control and whole-keyspace
    /// reads allowed).
    pub fn on(self, server: &ManagedServer) -> Subject<'_> {
        self.pointed_at(ServerRef::Managed(server))
    }

    /// The subject, pointed at [`UNREACHABLE_URL`].
    pub fn unreachable(self) -> Subject<'static> {
        self.pointed_at(ServerRef::External {
            url: UNREACHABLE_URL.into(),
        })
    }

    fn pointed_at(self, server: ServerRef<'_>) -> Subject<'_> {
        Subject {
            spec: self.spec,
            factory: self.factory,
            opt_out: None,
            run_prefix: self.run_prefix,
            contracts: self.contracts,
            server,
            seed: self.seed,
            may_start_servers: self.may_start_servers,
        }
    }
}
