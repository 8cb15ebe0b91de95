//! `--store`: which store is certified, parsed once into a [`StoreSpec`]
//! (by clap, so a wrong value is a usage error naming the choices), and the
//! factory that connects its instances.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use harness::server::VirtualClock;
use harness::store::external::ExternalStoreFactory;
use harness::store::StoreFactory;
use stores::redis::RedisStoreFactory;
use stores::sqlite::{SqliteClock, SqliteStoreFactory};

/// The database file of `builtin:sqlite`, one per run, in the run's workdir.
pub const SQLITE_FILE: &str = "builtin-sqlite.sqlite";

/// A store storeproof can certify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// The built-in Redis lease, queue and rate stores (`builtin:redis`).
    BuiltinRedis,
    /// The SQLite fencing set's lease store (`builtin:sqlite`,
    /// docs/CONTRACTS.md §1.4), on a fresh database file of the run's own.
    BuiltinSqlite,
    /// An adapter in any language speaking docs/PROTOCOL.md over JSON lines
    /// (`cmd:<command line>`).
    Command(String),
    /// A deliberately broken store of the sabotage set (`sabotage:<name>`).
    Sabotage(&'static str),
}

impl StoreSpec {
    /// The help text of `--store`, naming every sabotage of this version.
    pub fn help() -> String {
        format!(
            "The store: builtin:redis (default), builtin:sqlite (the SQLite fencing set's \
             lease store), cmd:'<command line>' (an adapter, docs/PROTOCOL.md), or a \
             deliberately broken one: {}",
            sabotage::named()
                .map(|n| format!("sabotage:{}", n.name))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// The factory of this store; durable files (kept execution ids, the
    /// SQLite store's database) go into `workdir`, never elsewhere; an
    /// adapter gets `adapter_timeout` per request. `server_clock` is the
    /// managed server's virtual clock, if the run has one: the SQLite store
    /// (and a sabotage built on it) reads its server time there, so moving
    /// that clock moves its leases' time too (without it, the system clock).
    pub fn factory(
        &self,
        workdir: &Path,
        adapter_timeout: Duration,
        server_clock: Option<Arc<VirtualClock>>,
    ) -> Arc<dyn StoreFactory> {
        let builtin = || RedisStoreFactory::new(workdir.join("kept-executions.sqlite"));
        match self {
            StoreSpec::BuiltinRedis => Arc::new(builtin()),
            StoreSpec::BuiltinSqlite => Arc::new(SqliteStoreFactory::new(
                workdir.join(SQLITE_FILE),
                SqliteClock::following(server_clock),
            )),
            StoreSpec::Command(command) => Arc::new(
                ExternalStoreFactory::new(command, workdir.to_path_buf())
                    .with_timeout(adapter_timeout),
            ),
            StoreSpec::Sabotage(name) => sabotage::by_name_following(name, workdir, server_clock)
                .unwrap_or_else(|| Arc::new(builtin())),
        }
    }
}

impl FromStr for StoreSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text == "builtin:redis" {
            return Ok(StoreSpec::BuiltinRedis);
        }
        if text == "builtin:sqlite" {
            return Ok(StoreSpec::BuiltinSqlite);
        }
        if let Some(command) = text.strip_prefix("cmd:") {
            let command = command.trim();
            if command.is_empty() {
                return Err(
                    "cmd: needs a command line, e.g. --store \"cmd:python3 my_adapter.py\"".into(),
                );
            }
            return Ok(StoreSpec::Command(command.to_string()));
        }
        if let Some(name) = text.strip_prefix("sabotage:") {
            return sabotage::find(name)
                .map(|n| StoreSpec::Sabotage(n.name))
                .ok_or_else(|| {
                    format!(
                        "unknown sabotaged store {name:?}; the sabotages are {}",
                        sabotage::named()
                            .map(|n| n.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                });
        }
        Err(format!(
            "unknown store {text:?}; use builtin:redis, builtin:sqlite, cmd:'<command line>' or sabotage:<name>"
        ))
    }
}

impl fmt::Display for StoreSpec {
    /// The spelling `--store` takes: it parses back to the same spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreSpec::BuiltinRedis => write!(f, "builtin:redis"),
            StoreSpec::BuiltinSqlite => write!(f, "builtin:sqlite"),
            StoreSpec::Command(command) => write!(f, "cmd:{command}"),
            StoreSpec::Sabotage(name) => write!(f, "sabotage:{name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses_back_to_itself() {
        let mut specs = vec![
            StoreSpec::BuiltinRedis,
            StoreSpec::BuiltinSqlite,
            StoreSpec::Command("python3 a.py --x".into()),
        ];
        specs.extend(sabotage::named().map(|n| StoreSpec::Sabotage(n.name)));
        for spec in specs {
            assert_eq!(spec.to_string().parse::<StoreSpec>(), Ok(spec));
        }
    }

    #[test]
    fn wrong_stores_are_refused_with_the_way_out() {
        for (text, says) in [
            ("cmd:  ", "needs a command line"),
            ("sabotage:nope", "the sabotages are"),
            ("redis", "use builtin:redis"),
        ] {
            let err = text.parse::<StoreSpec>().unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn the_help_names_every_store_it_accepts() {
        let help = StoreSpec::help();
        for n in sabotage::named() {
            assert!(help.contains(&format!("sabotage:{}", n.name)), "{help}");
        }
        for builtin in ["builtin:redis", "builtin:sqlite"] {
            assert!(help.contains(builtin), "{help}");
            assert!(builtin.parse::<StoreSpec>().is_ok(), "{builtin}");
        }
    }

    #[test]
    fn the_sqlite_store_lives_in_the_workdir_and_follows_the_servers_clock() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(VirtualClock::create(&dir.path().join("clock")).unwrap());
        let factory = SqliteStoreFactory::new(
            dir.path().join(SQLITE_FILE),
            SqliteClock::following(Some(clock.clone())),
        );
        clock.set_ms(5_000);
        assert_eq!(factory.clock().now_ms(), 5_000);
        let made = StoreSpec::BuiltinSqlite.factory(dir.path(), Duration::from_secs(1), None);
        assert_eq!(made.spec(), "builtin:sqlite");
        assert!(!made.keeps_state_in_redis());
    }
}
