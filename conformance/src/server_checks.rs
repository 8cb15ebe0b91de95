//! The server-assumption checks (docs/PROTOCOL.md §7): a managed server per bad
//! setting, a replica, a cluster node, ACL users without CONFIG or INFO and a
//! renamed CONFIG; the store must refuse each with the right error kind, naming
//! each setting found short, and accept a durable server (and, with the
//! opt-out, a server whose only fault is durability).

use harness::counterexample::{
    Answer, Counterexample, ServerCounterexample, ServerSetup, ServerTag,
};
use harness::evidence::{Evidence, ServerEvidence};

use super::runner::Outcome;
use super::CheckDef;
use super::CheckKind;
use harness::contract::{ErrorKind, Request, StoreError};
use harness::server::{ManagedServer, Preset, ServerKind, ServerOptions};
use harness::store::{Hello, OPT_OUT_WRITES_MAY_BE_LOST};
use harness::Level::Must;
use harness::Subject;
use harness::{CheckSpec, Needs};

/// A server the check starts, and what the store must answer on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCase {
    /// How the server is started.
    pub setup: Setup,
    /// Whether the store is given the opt-out.
    pub opt_out: bool,
    /// What the store must answer: `None` accepts (and serves a take).
    pub refusal: Option<(ErrorKind, Vec<&'static str>)>,
}

/// The kinds of server the assumption checks start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setup {
    /// A preset plus extra directives.
    Server(Preset, Vec<(&'static str, &'static str)>),
    /// A durable replica of a durable primary.
    Replica,
    /// A durable server, reached as an ACL user with these rules.
    AclUser(&'static [&'static str]),
}

fn case(
    id: &'static str,
    about: &'static str,
    setup: Setup,
    opt_out: bool,
    refusal: Option<(ErrorKind, Vec<&'static str>)>,
) -> CheckDef {
    CheckDef {
        spec: CheckSpec {
            id,
            level: Must,
            contracts: &[],
            needs: Needs::OwnServers,
            about,
        },
        kind: CheckKind::Server(ServerCase {
            setup,
            opt_out,
            refusal,
        }),
    }
}

pub(super) fn checks() -> Vec<CheckDef> {
    use ErrorKind::{ConfigRefused, Deployment, Durability};
    let preset = |p| Setup::Server(p, vec![]);
    vec![
        case(
            "conformance.server.durable-accepted",
            "a durable primary (appendonly yes, appendfsync always, no-appendfsync-on-rewrite no, noeviction) is accepted",
            preset(Preset::Durable),
            false,
            None,
        ),
        case(
            "conformance.server.appendonly-no-refused",
            "a server with appendonly no is refused with a durability error naming appendonly",
            preset(Preset::AppendonlyNo),
            false,
            Some((Durability, vec!["appendonly"])),
        ),
        case(
            "conformance.server.appendfsync-everysec-refused",
            "a server with appendfsync everysec is refused with a durability error naming appendfsync",
            preset(Preset::AppendfsyncEverysec),
            false,
            Some((Durability, vec!["appendfsync"])),
        ),
        case(
            "conformance.server.rewrite-without-fsync-refused",
            "a server with no-appendfsync-on-rewrite yes is refused with a durability error naming it",
            preset(Preset::RewriteWithoutFsync),
            false,
            Some((Durability, vec!["no-appendfsync-on-rewrite"])),
        ),
        case(
            "conformance.server.evicting-policy-refused",
            "a server with maxmemory-policy allkeys-lru is refused with a durability error naming maxmemory-policy",
            preset(Preset::EvictingLru),
            false,
            Some((Durability, vec!["maxmemory-policy"])),
        ),
        case(
            "conformance.server.each-short-setting-named",
            "a server with appendfsync everysec and maxmemory-policy allkeys-lru is refused with one error naming both",
            Setup::Server(
                Preset::Durable,
                vec![("appendfsync", "everysec"), ("maxmemory-policy", "allkeys-lru")],
            ),
            false,
            Some((Durability, vec!["appendfsync", "maxmemory-policy"])),
        ),
        case(
            "conformance.server.opt-out-accepted",
            "with the opt-out acknowledged-writes-may-be-lost, a server whose only faults are durability settings is accepted",
            Setup::Server(
                Preset::Durable,
                vec![("appendfsync", "everysec"), ("maxmemory-policy", "allkeys-lru")],
            ),
            true,
            None,
        ),
        case(
            "conformance.server.replica-refused",
            "a replica is refused with a deployment error, even with the opt-out",
            Setup::Replica,
            true,
            Some((Deployment, vec![])),
        ),
        case(
            "conformance.server.cluster-refused",
            "a cluster node is refused with a deployment error, even with the opt-out",
            Setup::Server(Preset::Durable, vec![("cluster-enabled", "yes")]),
            true,
            Some((Deployment, vec![])),
        ),
        case(
            "conformance.server.config-denied-refused",
            "a connection whose user may not run CONFIG (ACL NOPERM) is refused with config_refused",
            Setup::AclUser(&["~*", "&*", "+@all", "-config"]),
            false,
            Some((ConfigRefused, vec![])),
        ),
        case(
            "conformance.server.info-denied-refused",
            "a connection whose user may not run INFO (ACL NOPERM) is refused with config_refused",
            Setup::AclUser(&["~*", "&*", "+@all", "-info"]),
            false,
            Some((ConfigRefused, vec![])),
        ),
        case(
            "conformance.server.config-renamed-refused",
            "a server where CONFIG is renamed away is refused with config_refused",
            Setup::Server(Preset::Durable, vec![("rename-command", "CONFIG \"\"")]),
            false,
            Some((ConfigRefused, vec![])),
        ),
    ]
}

/// The servers a case started; dropped (killed and removed) with it.
struct Started {
    /// Held, never read: the servers live exactly as long as the case.
    _servers: Vec<ManagedServer>,
    url: String,
}

impl ServerCase {
    /// Starts the case's servers, of the run's server kind (`kind`).
    async fn start(&self, kind: Option<&ServerKind>) -> Result<Started, String> {
        let fail = |e: harness::server::ServerError| format!("could not start the server: {e}");
        match &self.setup {
            Setup::Server(preset, extra) => {
                let mut opts = ServerOptions::with_preset(*preset)
                    .on_server(kind)
                    .with_virtual_clock(false);
                for (k, v) in extra {
                    opts = opts.with_config(*k, *v);
                }
                let s = ManagedServer::start(opts).await.map_err(fail)?;
                let url = s.url();
                Ok(Started {
                    _servers: vec![s],
                    url,
                })
            }
            Setup::Replica => {
                let primary = ManagedServer::start(
                    ServerOptions::default()
                        .on_server(kind)
                        .with_virtual_clock(false),
                )
                .await
                .map_err(fail)?;
                let replica = ManagedServer::start(
                    ServerOptions::default()
                        .on_server(kind)
                        .with_virtual_clock(false)
                        .with_replica_of(primary.port()),
                )
                .await
                .map_err(fail)?;
                let url = replica.url();
                Ok(Started {
                    _servers: vec![primary, replica],
                    url,
                })
            }
            Setup::AclUser(rules) => {
                let s = ManagedServer::start(
                    ServerOptions::default()
                        .on_server(kind)
                        .with_virtual_clock(false),
                )
                .await
                .map_err(fail)?;
                let url = s
                    .add_acl_user("storeproof-limited", "limited-pass", rules)
                    .await
                    .map_err(|e| format!("could not add the ACL user: {e}"))?;
                Ok(Started {
                    _servers: vec![s],
                    url,
                })
            }
        }
    }

    /// Runs the case on servers of its own (`Needs::OwnServers`, settled by
    /// `plan` before it runs), the store's instance under `prefix`: a
    /// process kept from an earlier case (docs/PROTOCOL.md §3.3) must check
    /// this server again, as a process just started would.
    pub(crate) async fn run(&self, target: &Subject<'_>, prefix: &str) -> Outcome {
        let started = match self.start(target.server_kind()).await {
            Ok(s) => s,
            Err(e) => return Outcome::unknown(e, Evidence::None),
        };
        let hello = Hello {
            instance: "a".into(),
            redis_url: started.url.clone(),
            prefix: prefix.to_string(),
            opt_out: self.opt_out.then(|| OPT_OUT_WRITES_MAY_BE_LOST.to_string()),
        };
        let server = ServerSetup {
            setup: format!("{:?}", self.setup),
            opt_out: hello.opt_out.clone(),
        };
        let evidence = |error: Option<StoreError>, answer: Option<Answer>| {
            Evidence::Server(ServerEvidence {
                server: server.clone(),
                error,
                answer,
            })
        };
        let connected = target
            .factory
            .connect_case(&hello, harness::server::VIRTUAL_EPOCH_MS)
            .await;
        // An adapter that failed is bad input, not the store's verdict on
        // the server: nothing can be judged.
        if let Err(e) = &connected {
            if e.kind == ErrorKind::AdapterFailed {
                return Outcome::unknown(e.message.clone(), evidence(Some(e.clone()), None));
            }
        }
        let outcome = match (&self.refusal, connected) {
            (None, Ok((_, mut client))) => {
                let take = Request::LeaseTake {
                    tree: "t".into(),
                    holder: "a".into(),
                    ttl_ms: 1000,
                };
                let answer = if target
                    .contracts
                    .contains(&harness::contract::Contract::Lease)
                {
                    Some(client.call(&take.to_call(), 0).await)
                } else {
                    None
                };
                match answer {
                    Some(Err(e)) => Outcome::store_error(
                        "accepted the server but then refused a take",
                        e.clone(),
                        evidence(Some(e), None),
                    ),
                    _ => Outcome::pass(
                        String::new(),
                        evidence(None, answer.map(|a| Answer::of(&a))),
                    ),
                }
            }
            (None, Err(e)) => Outcome::fail(
                format!("the store refused a server it must accept: {e}"),
                evidence(Some(e.clone()), None),
                None,
            ),
            (Some((kind, _)), Ok(_)) => Outcome::fail(
                format!("the store accepted the server; it must refuse it with {kind}"),
                evidence(None, None),
                Some(Counterexample::Server(ServerCounterexample {
                    kind: ServerTag::ServerAssumption,
                    server,
                })),
            ),
            (Some((kind, settings)), Err(e)) => {
                let missing: Vec<&str> = settings
                    .iter()
                    .filter(|s| !e.settings.iter().any(|got| got == *s) || !e.message.contains(*s))
                    .copied()
                    .collect();
                if e.kind != *kind {
                    Outcome::fail(
                        format!(
                            "refused with {} where {kind} was due: {}",
                            e.kind, e.message
                        ),
                        evidence(Some(e.clone()), None),
                        None,
                    )
                } else if !missing.is_empty() {
                    Outcome::fail(
                        format!(
                            "the {kind} error does not name {}: settings {:?}, message {:?}",
                            missing.join(", "),
                            e.settings,
                            e.message
                        ),
                        evidence(Some(e.clone()), None),
                        None,
                    )
                } else {
                    Outcome::pass(
                        format!("refused: {}", e.message),
                        evidence(Some(e.clone()), None),
                    )
                }
            }
        };
        drop(started);
        outcome
    }
}
