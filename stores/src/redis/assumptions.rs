//! What a Redis store assumes of its server (docs/PROTOCOL.md §7), checked on
//! connect.
//!
//! The I/O ([`read_facts`]) only reads; the judgement ([`assess`]) is a pure
//! function of what was read, so it can be tested on hand-written `CONFIG GET`
//! and `INFO` values.
//!
//! Order of judgement: deployment first (a replica or a cluster is refused
//! with no opt-out, even when durability is also short or opted out), then a
//! refused `CONFIG GET`, then durability (one error naming every short
//! setting, unless the caller opted out).

use std::collections::BTreeMap;

use redis::aio::MultiplexedConnection;
use redis::RedisError;

use harness::contract::{ErrorKind, StoreError};
use harness::store::OPT_OUT_WRITES_MAY_BE_LOST;

/// The durability settings a Redis store needs, with the value each must have.
pub const REQUIRED_DURABILITY: [(&str, &str); 4] = [
    ("appendonly", "yes"),
    ("appendfsync", "always"),
    ("no-appendfsync-on-rewrite", "no"),
    ("maxmemory-policy", "noeviction"),
];

/// What the store read from the server on connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFacts {
    /// `CONFIG GET` of each [`REQUIRED_DURABILITY`] setting: name → value.
    /// A setting the server did not report is absent. `Err` when the server
    /// refused `CONFIG GET` (a `config_refused` error naming it).
    pub config: Result<BTreeMap<String, String>, StoreError>,
    /// The text of `INFO replication`.
    pub info_replication: String,
    /// The text of `INFO cluster`.
    pub info_cluster: String,
}

/// Whether the caller opted out of the durability checks. The only opt-out
/// is [`OPT_OUT_WRITES_MAY_BE_LOST`]; anything else is a `bad_request`, so
/// that a misspelt opt-out is not silently ignored.
pub fn durability_opted_out(opt_out: Option<&str>) -> Result<bool, StoreError> {
    match opt_out {
        None => Ok(false),
        Some(OPT_OUT_WRITES_MAY_BE_LOST) => Ok(true),
        Some(other) => Err(StoreError::new(
            ErrorKind::BadRequest,
            format!(
                "unknown opt-out {other:?}: the only opt-out is {OPT_OUT_WRITES_MAY_BE_LOST} \
                 (and there is none for deployment)"
            ),
        )),
    }
}

/// The value of `name` in an `INFO` section's text (`name:value` lines).
pub fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|line| {
        let (key, value) = line.trim_end_matches('\r').split_once(':')?;
        (key == name).then_some(value.trim())
    })
}

/// Judges what was read: `Ok` if the store may start on this server.
pub fn assess(facts: &ServerFacts, durability_opt_out: bool) -> Result<(), StoreError> {
    let durability = match &facts.config {
        Ok(config) => durability_shortfalls(config),
        Err(_) => Vec::new(),
    };

    let deployment = deployment_shortfalls(facts);
    if !deployment.is_empty() {
        let mut message = format!(
            "refusing this server: {}. There is no opt-out for deployment.",
            deployment
                .iter()
                .map(|(_, why)| why.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
        if !durability.is_empty() && !durability_opt_out {
            message.push_str(&format!(
                " Durability is also short: {}.",
                durability
                    .iter()
                    .map(|(_, why)| why.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        return Err(StoreError::new(ErrorKind::Deployment, message)
            .with_settings(deployment.into_iter().map(|(name, _)| name).collect()));
    }

    if let Err(refused) = &facts.config {
        return Err(refused.clone());
    }

    if durability.is_empty() || durability_opt_out {
        return Ok(());
    }
    let message = format!(
        "the server may lose acknowledged writes: {}. Set them, or pass --opt-out \
         {OPT_OUT_WRITES_MAY_BE_LOST} to accept that acknowledged writes may be lost",
        durability
            .iter()
            .map(|(_, why)| why.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    );
    Err(StoreError::new(ErrorKind::Durability, message)
        .with_settings(durability.into_iter().map(|(name, _)| name).collect()))
}

/// Each short durability setting with what is wrong and what to set.
fn durability_shortfalls(config: &BTreeMap<String, String>) -> Vec<(String, String)> {
    REQUIRED_DURABILITY
        .iter()
        .filter_map(|&(name, required)| match config.get(name) {
            Some(actual) if actual.trim().eq_ignore_ascii_case(required) => None,
            Some(actual) => Some((
                name.to_string(),
                format!("{name} is {actual} (set {name} {required})"),
            )),
            None => Some((
                name.to_string(),
                format!("CONFIG GET does not report {name} (set {name} {required})"),
            )),
        })
        .collect()
}

/// Each short deployment setting (`role`, `cluster_enabled`) with why.
fn deployment_shortfalls(facts: &ServerFacts) -> Vec<(String, String)> {
    let mut short = Vec::new();
    match info_field(&facts.info_replication, "role") {
        Some("master") => {}
        Some(role) => short.push((
            "role".to_string(),
            format!(
                "the server is a replica (role:{role}), not a primary; point redis_url at the \
                 primary (role:master)"
            ),
        )),
        None => short.push((
            "role".to_string(),
            "INFO replication does not report role; the store needs a primary (role:master)"
                .to_string(),
        )),
    }
    match info_field(&facts.info_cluster, "cluster_enabled") {
        Some("0") => {}
        Some(enabled) => short.push((
            "cluster_enabled".to_string(),
            format!(
                "cluster mode is on (cluster_enabled:{enabled}); the store needs a standalone \
                 primary (cluster_enabled:0)"
            ),
        )),
        None => short.push((
            "cluster_enabled".to_string(),
            "INFO cluster does not report cluster_enabled; the store needs a standalone primary \
             (cluster_enabled:0)"
                .to_string(),
        )),
    }
    short
}

/// Judges a failed `command` from the server's error `code` (`None` when the
/// failure was not an error reply: I/O, timeout, a closed connection) and
/// `detail`. An error reply is a refusal (`config_refused`), except the
/// transient ones a server gives while it starts or is busy, which leave the
/// server merely `unavailable`.
pub fn command_failure(command: &str, code: Option<&str>, detail: &str) -> StoreError {
    const TRANSIENT: [&str; 5] = ["LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN"];
    match code {
        None => StoreError::new(
            ErrorKind::Unavailable,
            format!("{command}: the server could not be reached: {detail}"),
        ),
        Some(code) if TRANSIENT.contains(&code) => StoreError::new(
            ErrorKind::Unavailable,
            format!("{command}: the server is not ready ({code} {detail}); try again"),
        ),
        // Redis 7.0 answers ACL denials with `NOPERM …`; later versions word
        // the rest differently, so only the prefix is matched.
        Some(code) if code.starts_with("NOPERM") => StoreError::new(
            ErrorKind::ConfigRefused,
            format!(
                "the server's ACL refuses {command} for this user ({code} {detail}), so its \
                 settings cannot be verified; allow {command} for this user"
            ),
        ),
        Some("ERR") if detail.starts_with("unknown command") => StoreError::new(
            ErrorKind::ConfigRefused,
            format!(
                "the server does not know {command} (renamed or disabled: {detail}), so its \
                 settings cannot be verified; give the store a connection where {command} works"
            ),
        ),
        Some(code) => StoreError::new(
            ErrorKind::ConfigRefused,
            format!(
                "the server refused {command} ({code} {detail}), so its settings cannot be \
                 verified"
            ),
        ),
    }
}

/// [`command_failure`] for a redis crate error.
pub fn redis_command_failure(command: &str, e: &RedisError) -> StoreError {
    let code = match e.kind() {
        redis::ErrorKind::Server(_) | redis::ErrorKind::Extension => e.code(),
        _ => None,
    };
    let detail = match code {
        Some(_) => e.detail().unwrap_or_default().to_string(),
        None => e.to_string(),
    };
    command_failure(command, code, &detail)
}

/// Reads what [`assess`] judges: `INFO replication`, `INFO cluster` and a
/// `CONFIG GET` per durability setting (one each, as multi-parameter
/// `CONFIG GET` only exists from Redis 7.0). A refused `INFO` ends the
/// reading (nothing can be judged without it); a refused `CONFIG GET` is
/// recorded so that deployment is still judged first.
pub async fn read_facts(conn: &mut MultiplexedConnection) -> Result<ServerFacts, StoreError> {
    let info_replication: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(conn)
        .await
        .map_err(|e| redis_command_failure("INFO replication", &e))?;
    let info_cluster: String = redis::cmd("INFO")
        .arg("cluster")
        .query_async(conn)
        .await
        .map_err(|e| redis_command_failure("INFO cluster", &e))?;
    let mut config = Ok(BTreeMap::new());
    for (name, _) in REQUIRED_DURABILITY {
        let got: Result<BTreeMap<String, String>, RedisError> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query_async(conn)
            .await;
        match got {
            Ok(values) => {
                if let (Ok(config), Some(value)) = (&mut config, values.get(name)) {
                    config.insert(name.to_string(), value.clone());
                }
            }
            Err(e) => {
                let failure = redis_command_failure("CONFIG GET", &e);
                if failure.kind == ErrorKind::ConfigRefused {
                    config = Err(failure);
                    break;
                }
                return Err(failure);
            }
        }
    }
    Ok(ServerFacts {
        config,
        info_replication,
        info_cluster,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIMARY: &str = "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n";
    const REPLICA: &str = "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\n";
    const STANDALONE: &str = "# Cluster\r\ncluster_enabled:0\r\n";
    const CLUSTER: &str = "# Cluster\r\ncluster_enabled:1\r\n";

    fn config(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn durable() -> BTreeMap<String, String> {
        config(&REQUIRED_DURABILITY)
    }

    fn facts(cfg: BTreeMap<String, String>, repl: &str, cluster: &str) -> ServerFacts {
        ServerFacts {
            config: Ok(cfg),
            info_replication: repl.into(),
            info_cluster: cluster.into(),
        }
    }

    #[test]
    fn a_durable_standalone_primary_passes() {
        assert_eq!(
            assess(&facts(durable(), PRIMARY, STANDALONE), false),
            Ok(())
        );
    }

    #[test]
    fn every_short_setting_is_named_in_one_error() {
        let mut cfg = durable();
        cfg.insert("appendfsync".into(), "everysec".into());
        cfg.insert("maxmemory-policy".into(), "allkeys-lru".into());
        let err = assess(&facts(cfg, PRIMARY, STANDALONE), false).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Durability);
        assert_eq!(err.settings, vec!["appendfsync", "maxmemory-policy"]);
        for needle in [
            "appendfsync is everysec",
            "set appendfsync always",
            "maxmemory-policy is allkeys-lru",
            "set maxmemory-policy noeviction",
            "--opt-out acknowledged-writes-may-be-lost",
        ] {
            assert!(err.message.contains(needle), "{needle} in {}", err.message);
        }
    }

    #[test]
    fn all_four_and_missing_ones_are_named() {
        let cfg = config(&[
            ("appendonly", "no"),
            ("appendfsync", "no"),
            ("no-appendfsync-on-rewrite", "yes"),
        ]);
        let err = assess(&facts(cfg, PRIMARY, STANDALONE), false).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Durability);
        assert_eq!(
            err.settings,
            vec![
                "appendonly",
                "appendfsync",
                "no-appendfsync-on-rewrite",
                "maxmemory-policy"
            ]
        );
        assert!(err.message.contains("does not report maxmemory-policy"));
    }

    #[test]
    fn the_opt_out_accepts_short_durability() {
        let mut cfg = durable();
        cfg.insert("appendonly".into(), "no".into());
        assert_eq!(assess(&facts(cfg, PRIMARY, STANDALONE), true), Ok(()));
    }

    #[test]
    fn a_replica_is_refused_even_with_the_opt_out() {
        for opt_out in [false, true] {
            let err = assess(&facts(durable(), REPLICA, STANDALONE), opt_out).unwrap_err();
            assert_eq!(err.kind, ErrorKind::Deployment);
            assert_eq!(err.settings, vec!["role"]);
            assert!(err.message.contains("role:slave"), "{}", err.message);
        }
    }

    #[test]
    fn deployment_comes_first_and_mentions_durability() {
        let mut cfg = durable();
        cfg.insert("appendfsync".into(), "everysec".into());
        let err = assess(&facts(cfg.clone(), REPLICA, CLUSTER), false).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Deployment);
        assert_eq!(err.settings, vec!["role", "cluster_enabled"]);
        assert!(err.message.contains("cluster_enabled:1"));
        assert!(err.message.contains("appendfsync is everysec"));
        let err = assess(&facts(cfg, REPLICA, CLUSTER), true).unwrap_err();
        assert!(!err.message.contains("appendfsync"));
    }

    #[test]
    fn a_cluster_is_refused() {
        let err = assess(&facts(durable(), PRIMARY, CLUSTER), true).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Deployment);
        assert_eq!(err.settings, vec!["cluster_enabled"]);
    }

    #[test]
    fn missing_info_fields_are_refused() {
        let err = assess(&facts(durable(), "", ""), false).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Deployment);
        assert_eq!(err.settings, vec!["role", "cluster_enabled"]);
    }

    #[test]
    fn a_refused_config_get_is_config_refused_after_deployment() {
        let refused = command_failure("CONFIG GET", Some("NOPERM"), "no permissions");
        let mut f = facts(durable(), PRIMARY, STANDALONE);
        f.config = Err(refused.clone());
        assert_eq!(assess(&f, true), Err(refused));
        f.info_replication = REPLICA.into();
        assert_eq!(assess(&f, true).unwrap_err().kind, ErrorKind::Deployment);
    }

    #[test]
    fn command_failures_are_classified() {
        let nope = command_failure(
            "CONFIG GET",
            Some("NOPERM"),
            "this user has no permissions to run the 'config|get' command",
        );
        assert_eq!(nope.kind, ErrorKind::ConfigRefused);
        assert!(nope.message.contains("CONFIG GET"));
        let renamed = command_failure(
            "INFO cluster",
            Some("ERR"),
            "unknown command 'INFO', with args beginning with: 'cluster' ",
        );
        assert_eq!(renamed.kind, ErrorKind::ConfigRefused);
        assert!(renamed.message.contains("INFO cluster"));
        assert_eq!(
            command_failure("INFO replication", None, "connection refused").kind,
            ErrorKind::Unavailable
        );
        assert_eq!(
            command_failure("INFO replication", Some("LOADING"), "loading the dataset").kind,
            ErrorKind::Unavailable
        );
    }

    #[test]
    fn only_the_one_opt_out_is_accepted() {
        assert_eq!(durability_opted_out(None), Ok(false));
        assert_eq!(
            durability_opted_out(Some(OPT_OUT_WRITES_MAY_BE_LOST)),
            Ok(true)
        );
        for bad in ["", "yes", "acknowledged-writes-may-be-lost "] {
            assert_eq!(
                durability_opted_out(Some(bad)).unwrap_err().kind,
                ErrorKind::BadRequest
            );
        }
    }

    #[test]
    fn info_fields_parse_with_crlf() {
        assert_eq!(info_field(PRIMARY, "role"), Some("master"));
        assert_eq!(info_field(PRIMARY, "connected_slaves"), Some("0"));
        assert_eq!(info_field(PRIMARY, "nope"), None);
    }
}
