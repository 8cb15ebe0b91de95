//! Sabotages that are the built-in Redis store with one edit of one of its
//! Lua scripts ([`LuaPatch`]): everything else (server checks, keys, reply
//! parsing) stays the built-in's, so the named check has only that edit to
//! catch.

use async_trait::async_trait;
use harness::contract::{ErrorKind, StoreError};
use harness::store::{DurableState, Hello, StoreClient, StoreFactory, StoreInfo};
use stores::redis::{builtin_source, RedisStoreFactory, UnknownScript};

/// One edit of one built-in script: the only occurrence of `find` in the
/// source of `stores/lua/<script>` (as sent to Redis, `decimal.lua` in
/// front) replaced by `replace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LuaPatch {
    /// The script's file name under `stores/lua`, e.g. `lease_renew.lua`.
    pub script: &'static str,
    /// The text replaced; it must occur exactly once in the script.
    pub find: &'static str,
    /// What it is replaced with.
    pub replace: &'static str,
}

/// Why a [`LuaPatch`] does not apply. A changed script must never turn a
/// sabotage silently into the built-in store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// No built-in script has that file name.
    #[error(transparent)]
    UnknownScript(#[from] UnknownScript),
    /// `find` occurs nowhere, or more than once, in the script: the script
    /// changed since the patch was written.
    #[error(
        "the patch of {script} expects {find:?} exactly once in it but finds it {found} times; \
         the script changed, so rewrite the patch against its new source"
    )]
    NotOnce {
        /// The script's file name.
        script: &'static str,
        /// The text looked for.
        find: &'static str,
        /// How often it occurs.
        found: usize,
    },
}

impl LuaPatch {
    /// The patched source, or why the patch does not apply. Guarantees the
    /// result differs from the built-in source by exactly this one edit.
    pub fn apply(&self) -> Result<String, PatchError> {
        let source = builtin_source(self.script).ok_or_else(|| UnknownScript {
            file: self.script.to_string(),
            known: stores::redis::script_files()
                .iter()
                .map(|(f, _, _)| *f)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        let found = source.matches(self.find).count();
        if found != 1 || self.find == self.replace {
            return Err(PatchError::NotOnce {
                script: self.script,
                find: self.find,
                found,
            });
        }
        Ok(source.replacen(self.find, self.replace, 1))
    }

    /// `inner` with this patch applied to its script.
    pub fn patch(&self, inner: RedisStoreFactory) -> Result<RedisStoreFactory, PatchError> {
        let source = self.apply()?;
        Ok(inner.with_patched_script(self.script, &source)?)
    }
}

/// The built-in Redis store with one [`LuaPatch`], run as
/// `sabotage:<name>`. When the patch does not apply, every connect is
/// refused with the reason (`adapter_failed`, the harness's own finding), so
/// the run reports trouble instead of judging the unpatched store.
pub struct LuaSabotage {
    name: &'static str,
    store: Result<RedisStoreFactory, PatchError>,
}

impl LuaSabotage {
    /// `inner` with `patch` applied, named `sabotage:<name>`.
    pub fn new(name: &'static str, patch: &LuaPatch, inner: RedisStoreFactory) -> Self {
        Self::with_patches(name, std::slice::from_ref(patch), inner)
    }

    /// `inner` with every one of `patches` applied (each to its own
    /// script), named `sabotage:<name>`; refused as [`new`](Self::new) is
    /// when one does not apply.
    pub fn with_patches(
        name: &'static str,
        patches: &[LuaPatch],
        inner: RedisStoreFactory,
    ) -> Self {
        LuaSabotage {
            name,
            store: patches
                .iter()
                .try_fold(inner, |store, patch| patch.patch(store)),
        }
    }

    /// Why the patch did not apply, if it did not.
    pub fn error(&self) -> Option<&PatchError> {
        self.store.as_ref().err()
    }
}

#[async_trait]
impl StoreFactory for LuaSabotage {
    fn spec(&self) -> String {
        format!("sabotage:{}", self.name)
    }

    async fn durable_state(&self, prefix: &str) -> Result<Option<DurableState>, StoreError> {
        match &self.store {
            Ok(store) => store.durable_state(prefix).await,
            Err(_) => Ok(None),
        }
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        match &self.store {
            Ok(store) => store.connect(hello, clock_ms).await,
            Err(e) => Err(StoreError::new(
                ErrorKind::AdapterFailed,
                format!("sabotage:{} cannot be built: {e}", self.name),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_whose_text_is_gone_fails_loudly() {
        let gone = LuaPatch {
            script: "lease_take.lua",
            find: "no such text",
            replace: "x",
        };
        let err = gone.apply().unwrap_err();
        assert!(matches!(err, PatchError::NotOnce { found: 0, .. }), "{err}");
        assert!(err.to_string().contains("lease_take.lua"), "{err}");

        // Text found twice is as bad: which one was meant?
        let twice = LuaPatch {
            script: "lease_take.lua",
            find: "local ",
            replace: "local  ",
        };
        assert!(matches!(
            twice.apply(),
            Err(PatchError::NotOnce { found, .. }) if found > 1
        ));

        let unknown = LuaPatch {
            script: "lease_steal.lua",
            find: "x",
            replace: "y",
        };
        let err = unknown.apply().unwrap_err();
        assert!(err.to_string().contains("lease_take.lua"), "{err}");
    }

    #[test]
    fn a_patch_changes_its_one_text_and_nothing_else() {
        let patch = LuaPatch {
            script: "lease_take.lua",
            find: "epoch = epoch + 1",
            replace: "epoch = epoch + 2",
        };
        let source = patch.apply().unwrap();
        let builtin = builtin_source("lease_take.lua").unwrap();
        assert_eq!(source.replacen("epoch + 2", "epoch + 1", 1), builtin);
    }

    #[tokio::test]
    async fn a_store_whose_patch_does_not_apply_refuses_to_connect() {
        let dir = tempfile::tempdir().unwrap();
        let patch = LuaPatch {
            script: "lease_take.lua",
            find: "no such text",
            replace: "x",
        };
        let store = LuaSabotage::new(
            "gone",
            &patch,
            RedisStoreFactory::new(dir.path().join("kept.sqlite")),
        );
        assert!(store.error().is_some());
        let hello = Hello {
            instance: "a".into(),
            redis_url: "redis://127.0.0.1:1".into(),
            prefix: "sp:x:".into(),
            opt_out: None,
        };
        let err = store.connect(&hello, 0).await.err().unwrap();
        assert_eq!(err.kind, ErrorKind::AdapterFailed);
        assert!(err.message.contains("sabotage:gone"), "{}", err.message);
    }
}
