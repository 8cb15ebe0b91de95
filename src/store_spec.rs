//! `--store`: which store is certified, parsed once into a [`StoreSpec`]
//! (by clap, so a wrong value is a usage error naming the choices), and the
//! factory that connects its instances.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use harness::store::external::ExternalStoreFactory;
use harness::store::redis::RedisStoreFactory;
use harness::store::StoreFactory;

/// A store storeproof can certify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// The built-in Redis lease, queue and rate stores (`builtin:redis`).
    BuiltinRedis,
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
            "The store: builtin:redis (default), cmd:'<command line>' (an adapter, \
             docs/PROTOCOL.md), or a deliberately broken one: {}",
            sabotage::NAMED
                .iter()
                .map(|n| format!("sabotage:{}", n.name))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// The factory of this store; durable files (kept execution ids) go
    /// into `workdir`, an adapter gets `adapter_timeout` per request.
    pub fn factory(&self, workdir: &Path, adapter_timeout: Duration) -> Arc<dyn StoreFactory> {
        let builtin = || RedisStoreFactory::new(workdir.join("kept-executions.sqlite"));
        match self {
            StoreSpec::BuiltinRedis => Arc::new(builtin()),
            StoreSpec::Command(command) => Arc::new(
                ExternalStoreFactory::new(command, workdir.to_path_buf())
                    .with_timeout(adapter_timeout),
            ),
            StoreSpec::Sabotage(name) => {
                sabotage::by_name(name, workdir).unwrap_or_else(|| Arc::new(builtin()))
            }
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
            return Err("builtin:sqlite is not in this version of storeproof yet; use builtin:redis or cmd:'<command line>'".into());
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
            return sabotage::NAMED
                .iter()
                .find(|n| n.name == name)
                .map(|n| StoreSpec::Sabotage(n.name))
                .ok_or_else(|| {
                    format!(
                        "unknown sabotaged store {name:?}; the sabotages are {}",
                        sabotage::NAMED.map(|n| n.name).join(", ")
                    )
                });
        }
        Err(format!(
            "unknown store {text:?}; use builtin:redis, cmd:'<command line>' or sabotage:<name>"
        ))
    }
}

impl fmt::Display for StoreSpec {
    /// The spelling `--store` takes: it parses back to the same spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreSpec::BuiltinRedis => write!(f, "builtin:redis"),
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
            StoreSpec::Command("python3 a.py --x".into()),
        ];
        specs.extend(sabotage::NAMED.iter().map(|n| StoreSpec::Sabotage(n.name)));
        for spec in specs {
            assert_eq!(spec.to_string().parse::<StoreSpec>(), Ok(spec));
        }
    }

    #[test]
    fn wrong_stores_are_refused_with_the_way_out() {
        for (text, says) in [
            ("builtin:sqlite", "not in this version"),
            ("cmd:  ", "needs a command line"),
            ("sabotage:nope", "the sabotages are"),
            ("redis", "use builtin:redis"),
        ] {
            let err = text.parse::<StoreSpec>().unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn the_help_names_every_sabotage_and_no_store_it_refuses() {
        let help = StoreSpec::help();
        for n in sabotage::NAMED {
            assert!(help.contains(&format!("sabotage:{}", n.name)), "{help}");
        }
        assert!(!help.contains("builtin:sqlite"), "{help}");
    }
}
