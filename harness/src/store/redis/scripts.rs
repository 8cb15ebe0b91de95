//! The Lua scripts, one per Redis operation, each built once per process.
//!
//! `redis::Script` hashes its source on construction; keeping them in
//! `LazyLock`s means every instance and every call reuses the same hashes, and
//! `invoke_async` sends `EVALSHA` alone once the server knows the script.

use std::sync::LazyLock;

use redis::Script;

/// The source of `lua/<file>`, after the shared helpers of `lua/decimal.lua`.
macro_rules! source {
    ($file:literal) => {
        concat!(
            include_str!("../../../lua/decimal.lua"),
            include_str!(concat!("../../../lua/", $file))
        )
    };
}

/// Declares one script per operation from `harness/lua/<file>.lua`, plus the
/// list of all of them.
macro_rules! scripts {
    ($($name:ident => $op:literal, $file:literal;)*) => {
        $(
            #[doc = concat!("The script of `", $op, "` (`lua/", $file, "`).")]
            pub static $name: LazyLock<Script> =
                LazyLock::new(|| Script::new(source!($file)));
        )*

        /// Every script as `(operation, Lua source)`, in SPEC §6 order, so that
        /// servers in a pool can `SCRIPT LOAD` all of them ahead of a schedule.
        pub fn script_sources() -> Vec<(&'static str, &'static str)> {
            vec![$(($op, source!($file))),*]
        }

        /// Every script, to load at connect time.
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
