//! The named sabotages the crash suite must catch (see [`crate::named`]).
//!
//! Three keep queue writes (and one a rate pause) out of the append-only
//! file and the replication stream: `redis.set_repl(redis.REPL_NONE)` before a script's writes, which
//! Redis (7.0 included) then keeps in memory only. Two are one edit of one
//! script (the claim's, the complete's); the third edits all three queue
//! scripts (its entry says why). Every answer is right while the server
//! lives, so conformance cannot see them; only a restart shows them: the
//! crash suite's queue and pause checks.
//!
//! Two keep their state somewhere the killed server is not: in the store's
//! own process ([`state_in_process`], each instance a process of its own as
//! every adapter instance is) or on a server of their own
//! ([`IgnoresRedisUrl`]). The loss demonstrations (`crash.opt-out-loses`,
//! `crash.power-loss-everysec-loses`) cannot catch them: they are decided by
//! storeproof's reference store, never the store (PROTOCOL never asks a store
//! to lose writes). What catches them is their own doing: the first keeps
//! acknowledged epochs from the verifier, a new process, though the server
//! kept its data (`crash.acknowledged-epochs-survive`); the second answers a
//! new instance while the server it was given is down
//! (`crash.down-server-unavailable`).

mod ignores_redis_url;
mod state_in_process;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use harness::contract::StoreError;
use harness::store::{DurableState, Hello, StoreClient, StoreFactory, StoreInfo};

pub use ignores_redis_url::IgnoresRedisUrl;
use state_in_process::state_in_process;

use crate::{builtin, lua, Caught, How, LuaPatch, LuaSabotage, Named};

/// `sabotage:state-in-process` as an adapter runs: every instance is a
/// process of its own (PROTOCOL starts one per instance), so each has a
/// table of its own, begun empty when it starts; its writes are mirrored to
/// Redis and never read back.
struct EachInstanceAProcess {
    workdir: PathBuf,
}

impl EachInstanceAProcess {
    fn new(workdir: &Path) -> Self {
        EachInstanceAProcess {
            workdir: workdir.to_path_buf(),
        }
    }
}

#[async_trait]
impl StoreFactory for EachInstanceAProcess {
    fn spec(&self) -> String {
        "sabotage:state-in-process".into()
    }

    async fn durable_state(&self, prefix: &str) -> Result<Option<DurableState>, StoreError> {
        builtin(&self.workdir).durable_state(prefix).await
    }

    async fn connect(
        &self,
        hello: &Hello,
        clock_ms: i64,
    ) -> Result<(StoreInfo, Box<dyn StoreClient>), StoreError> {
        // A new process: a new table (its client keeps it alive).
        state_in_process(builtin(&self.workdir))
            .connect(hello, clock_ms)
            .await
    }
}

/// The save script with its writes kept out of the AOF and the replicas:
/// propagation switched off "for the sequence counter" and never back on.
const SAVE: LuaPatch = LuaPatch {
    script: "queue_save.lua",
    find: "local seq = redis.call('INCR', KEYS[3])",
    replace: "redis.set_repl(redis.REPL_NONE)\nlocal seq = redis.call('INCR', KEYS[3])",
};

/// The claim script with its claim mark kept out of the AOF and the replicas.
const CLAIM: LuaPatch = LuaPatch {
    script: "queue_claim.lua",
    find: "      redis.call('HSET', key, 'state', 'claimed',",
    replace:
        "      redis.set_repl(redis.REPL_NONE)\n      redis.call('HSET', key, 'state', 'claimed',",
};

/// The complete script with its done mark kept out of the AOF and the replicas.
const COMPLETE: LuaPatch = LuaPatch {
    script: "queue_complete.lua",
    find: "  redis.call('HSET', key, 'state', 'done')",
    replace: "  redis.set_repl(redis.REPL_NONE)\n  redis.call('HSET', key, 'state', 'done')",
};

/// This group's sabotages, in report order.
pub(crate) const NAMED: &[Named] = &[
    Named {
        name: "queue-not-propagated",
        breaks: "its queue scripts switch off propagation before their writes, so saved children are in the server's memory but never in its append-only file: acknowledged, then gone after a restart",
        real_bug: "queue scripts that call redis.set_repl(redis.REPL_NONE) as scripts written for a cache do (to keep scratch state out of the AOF and replicas) and never switch propagation back on before the writes that matter, so jobs live in memory only and vanish on a restart or failover",
        caught_by: "crash.acknowledged-children-survive",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| {
            // All three scripts, not the save alone: with only the save
            // kept out, a later (propagated) claim leaves half a record after
            // the restart, which the built-in cannot read and answers
            // `unavailable`, so the crash suite could decide nothing. With
            // all three out, the restarted server has no child at all.
            Arc::new(LuaSabotage::with_patches(
                "queue-not-propagated",
                &[SAVE, CLAIM, COMPLETE],
                builtin(w),
            ))
        }),
    },
    lua(
        "claim-not-propagated",
        "its claim script switches off propagation before marking the child claimed, so after a restart an acknowledged claim is gone and the child is handed out again",
        "claim (in-progress) marks treated as transient bookkeeping and kept out of the AOF and replicas (redis.set_repl(redis.REPL_NONE) in the claim script), so a restart or failover redelivers every job a worker was still running",
        "crash.acknowledged-claims-survive",
        CLAIM.script,
        CLAIM.find,
        CLAIM.replace,
    ),
    lua(
        "complete-not-propagated",
        "its complete script switches off propagation before marking the child done, so after a restart an acknowledged completion is gone and the child is claimed, not done",
        "an acknowledgement script whose effects are kept out of the AOF and replicas (redis.set_repl(redis.REPL_NONE) before its write), so a job acknowledged as done comes back after a restart or failover and runs twice",
        "crash.children-completed-once",
        COMPLETE.script,
        COMPLETE.find,
        COMPLETE.replace,
    ),
    lua(
        "pause-not-propagated",
        "its pause script switches off propagation before storing the pause, so after a restart an acknowledged provider pause is gone and calls go out while the provider asked for quiet",
        "a Retry-After pause treated as transient bookkeeping and kept out of the AOF and replicas (redis.set_repl(redis.REPL_NONE) in the pause script), so a restart or failover forgets every pause a provider asked for",
        "crash.acknowledged-pauses-survive",
        "rate_pause.lua",
        "redis.call('SET', KEYS[1], ARGV[1])",
        "redis.set_repl(redis.REPL_NONE)\nredis.call('SET', KEYS[1], ARGV[1])",
    ),
    Named {
        name: "state-in-process",
        breaks: "each instance answers from a table in its own process, mirroring every write to Redis but never reading it back, so a new process (the verifier after a restart) knows none of the epochs acknowledged though the server kept them: its state does not live on the server it was given",
        real_bug: "a lock or job table kept in the service's own memory (an in-process map or memory cache) and only mirrored to Redis, the single-process design that breaks once a second process or a server restart is involved",
        caught_by: "crash.acknowledged-epochs-survive",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(EachInstanceAProcess::new(w))),
    },
    Named {
        name: "ignores-redis-url",
        breaks: "it connects to a server of its own instead of the one its hello names, so nothing it keeps is on the server that crashes, and while that server is down it still answers ok",
        real_bug: "a Redis client built with the library's default connection (localhost:6379) instead of the configured URL, so it silently uses whatever Redis runs beside it",
        caught_by: "crash.down-server-unavailable",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(IgnoresRedisUrl::new(builtin(w)))),
    },
];
