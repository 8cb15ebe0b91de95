//! The Lua scripts, one per Redis operation, each built once per process.
//!
//! `redis::Script` hashes its source on construction; keeping them in
//! `LazyLock`s means every instance and every call reuses the same hashes, and
//! `invoke_async` sends `EVALSHA` alone once the server knows the script.
//!
//! A factory may carry replacement sources for some scripts ([`Patched`]),
//! for the sabotage set and mutation testing: a variant of the built-in store
//! that differs by one edit of one script. The unpatched path still reads the
//! statics.

use std::sync::{Arc, LazyLock};

use redis::Script;

/// The source of `lua/<file>`, after the shared helpers of `lua/decimal.lua`.
macro_rules! source {
    ($file:literal) => {
        concat!(
            include_str!("../../lua/decimal.lua"),
            include_str!(concat!("../../lua/", $file))
        )
    };
}

/// Declares one script per operation from `stores/lua/<file>.lua`, plus the
/// list of all of them and an index naming each.
macro_rules! scripts {
    ($($name:ident => $op:literal, $file:literal;)*) => {
        $(
            #[doc = concat!("The script of `", $op, "` (`lua/", $file, "`).")]
            pub static $name: LazyLock<Script> =
                LazyLock::new(|| Script::new(source!($file)));
        )*

        /// One script of the store, by its static's name; its position is its
        /// index in [`script_files`] (and in a [`Patched`] set).
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Which {
            $($name),*
        }

        impl Which {
            /// The built-in script.
            pub(crate) fn builtin(self) -> &'static Script {
                match self {
                    $(Which::$name => &*$name),*
                }
            }
        }

        /// Every script as `(operation, Lua source)`, in the order of
        /// docs/PROTOCOL.md §4, so that servers in a pool can `SCRIPT LOAD` all
        /// of them ahead of a schedule.
        pub fn script_sources() -> Vec<(&'static str, &'static str)> {
            vec![$(($op, source!($file))),*]
        }

        /// Every script as `(file name under stores/lua, operation, Lua source
        /// as sent to Redis)`, in the order of [`script_sources`]. The source
        /// is the file after the shared helpers of `decimal.lua`.
        pub fn script_files() -> Vec<(&'static str, &'static str, &'static str)> {
            vec![$(($file, $op, source!($file))),*]
        }

        /// Every built-in script, to load at connect time.
        pub(crate) fn all() -> Vec<&'static Script> {
            vec![$(&*$name),*]
        }
    };
}

scripts! {
    LEASE_TAKE => "lease.take", "lease_take.lua";
    LEASE_RENEW => "lease.renew", "lease_renew.lua";
    LEASE_RELEASE => "lease.release", "lease_release.lua";
    LEASE_READ => "lease.read", "lease_read.lua";
    QUEUE_SAVE => "queue.save", "queue_save.lua";
    QUEUE_CLAIM => "queue.claim", "queue_claim.lua";
    QUEUE_COMPLETE => "queue.complete", "queue_complete.lua";
    QUEUE_READ => "queue.read", "queue_read.lua";
    RATE_ACQUIRE_SLOT => "rate.acquire_slot", "rate_acquire_slot.lua";
    RATE_RELEASE_SLOT => "rate.release_slot", "rate_release_slot.lua";
    RATE_HIT => "rate.hit", "rate_hit.lua";
    RATE_PAUSE => "rate.pause", "rate_pause.lua";
    RATE_READ => "rate.read", "rate_read.lua";
}

/// The source of the built-in script in `stores/lua/<file>` as sent to Redis
/// (after `decimal.lua`), or `None` when no script has that file name.
pub fn builtin_source(file: &str) -> Option<&'static str> {
    script_files()
        .into_iter()
        .find(|(f, _, _)| *f == file)
        .map(|(_, _, source)| source)
}

/// A script file name that names no script of the built-in store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no built-in Redis script is named {file:?} (the scripts are the files under stores/lua: {known})"
)]
pub struct UnknownScript {
    /// The name asked for.
    pub file: String,
    /// Every file name there is, comma-separated.
    pub known: String,
}

/// The replacement scripts a factory carries: one slot per script, `None`
/// where the built-in one runs. Empty (no allocation) when nothing is patched.
#[derive(Debug, Clone, Default)]
pub(crate) struct Patched {
    scripts: Option<Arc<Vec<Option<Script>>>>,
}

impl Patched {
    /// The same set with the script of `file` replaced by `source` (the whole
    /// source as sent to Redis, `decimal.lua` included when it is wanted).
    pub(crate) fn with(&self, file: &str, source: &str) -> Result<Patched, UnknownScript> {
        let files = script_files();
        let Some(at) = files.iter().position(|(f, _, _)| *f == file) else {
            return Err(UnknownScript {
                file: file.to_string(),
                known: files
                    .iter()
                    .map(|(f, _, _)| *f)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let mut scripts = match &self.scripts {
            Some(scripts) => scripts.as_ref().clone(),
            None => vec![None; files.len()],
        };
        scripts[at] = Some(Script::new(source));
        Ok(Patched {
            scripts: Some(Arc::new(scripts)),
        })
    }

    /// Whether any script is replaced.
    pub(crate) fn is_empty(&self) -> bool {
        self.scripts.is_none()
    }

    /// The script that runs for `which`: the replacement if there is one,
    /// else the built-in static.
    pub(crate) fn script(&self, which: Which) -> &Script {
        match &self.scripts {
            None => which.builtin(),
            Some(scripts) => match scripts.get(which as usize) {
                Some(Some(patched)) => patched,
                _ => which.builtin(),
            },
        }
    }

    /// Every replacement script, to load at connect time after the built-in
    /// ones.
    pub(crate) fn replacements(&self) -> impl Iterator<Item = &Script> {
        self.scripts.iter().flat_map(|s| s.iter().flatten())
    }
}
