//! The sabotage set (docs/CONTRACTS.md §2.5): deliberately broken stores, each
//! of which a named check must catch. They wrap a real store and break one
//! promise:
//!
//! - [`Tampered`] corrupts the n-th answer of a run (every reply a
//!   conformance scenario receives is judged, so every corruption must fail
//!   the check);
//! - [`SideEffect`] keeps every answer right but also writes what it must
//!   not: kept execution ids into Redis, keys outside its prefix, kilobytes
//!   of padding per tree, a key for a request it refused as bad;
//! - [`ServerBlind`] never looks at the server it is given (it uses another)
//!   and [`RefusesAll`] refuses every server: the server-assumption checks
//!   must catch both.
//!
//! - [`ReadThenWriteLease`] makes its take (or its renew) of a read and then
//!   a write, which only `conformance.lease.take-races` can catch.
//!
//! - [`SplitRoundTrips`] makes a queue claim, a slot acquire or a hit of
//!   several round trips instead of one script, which only
//!   `conformance.queue.claim-races` (the claim) and `conformance.rate.races`
//!   (the acquire, the hit) can catch.
//!
//! - [`ClientClockLease`] decides lease expiry on the caller's clock, which
//!   `explorer.one-live-holder` must catch under a skewed second clock.
//!
//! The fault suite's four (issue 10), each caught by a named `faults.*` check:
//!
//! - [`BlindRetry`] retries a call once after `unavailable`
//!   (`faults.lease-linearizable`);
//! - [`CompleteAnyAttempt`] completes a child by its id only, whatever the
//!   attempt (`faults.children-once`);
//! - [`OomSwallowed`] answers a success when the server is full
//!   (`faults.full-server-refuses`, `faults.lease-linearizable`);
//! - `fence-outside-transaction`, the SQLite fencing set with its fence read
//!   outside the write's transaction
//!   ([`SqliteStoreFactory::with_fence_outside_transaction`]), which only
//!   the durable order of `faults.fencing` can catch.
//!
//! The built-in Redis store with one edit of one Lua script ([`LuaPatch`],
//! run by [`LuaSabotage`]): eighteen bugs of the shape public Redis lock,
//! lease, queue and rate-limit libraries really had (a release or renew that
//! does not compare the token, expiry boundaries off by one in the unsafe
//! direction, a TTL in the wrong unit, an epoch reused on takeover, a queue
//! that ignores depth, a claim that does not bump the attempt, refused hits
//! counted, a pause that shortens, slots on server time, …). Each names the
//! check that catches it; `docs/SABOTAGES.md` is the table.
//!
//! The matrix of sabotages against the checks that caught them comes with
//! the sabotage suite, which reads [`named`].
//!
//! ```rust
//! // Each sabotage names the check that must catch it.
//! let s = sabotage::find("lease-on-caller-clock").unwrap();
//! assert_eq!(s.caught_by, "explorer.one-live-holder");
//!
//! // A Lua sabotage is one edit of one built-in script, which must apply.
//! let release = sabotage::find("release-without-token").unwrap();
//! let patch = release.lua_patch().unwrap();
//! assert_eq!(patch.script, "lease_release.lua");
//! assert!(patch.apply().unwrap().contains(patch.replace));
//! ```

mod blind_retry;
mod client_clock;
mod complete_any_attempt;
mod conn;
mod corrupt;
mod crash_named;
mod explorer_named;
pub use explorer_named::read_back;
mod lua_patch;
mod oom_swallowed;
mod queue_rate_races;
mod read_then_write;
mod sabotaged;
mod wrappers;

pub use blind_retry::BlindRetry;
pub use client_clock::ClientClockLease;
pub use complete_any_attempt::CompleteAnyAttempt;
pub use corrupt::corrupt;
pub use lua_patch::{LuaPatch, LuaSabotage, PatchError};
pub use oom_swallowed::OomSwallowed;
pub use queue_rate_races::SplitRoundTrips;
pub use read_then_write::ReadThenWriteLease;
pub use sabotaged::{ClientSabotage, Invent, Sabotaged, SucceedOnError};
pub use wrappers::{Extra, Lie, Lying, RefusesAll, ServerBlind, SideEffect, Tampered};

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use harness::server::VirtualClock;
use harness::store::StoreFactory;
use harness::Verdict;
use stores::redis::RedisStoreFactory;
use stores::sqlite::{SqliteClock, SqliteStoreFactory};

/// How long `sabotage:fence-outside-transaction` waits between its fence
/// read and its write: long enough for a takeover to land in between under
/// the fault suite's timing.
pub const FENCE_PAUSE: Duration = Duration::from_millis(200);

/// The database file of `sabotage:fence-outside-transaction`, in the run's
/// workdir.
pub const SQLITE_FILE: &str = "sabotage-sqlite.sqlite";

/// What a sabotage is built from: the run's workdir (durable files go
/// there) and the managed server's virtual clock, if the run has one.
pub(crate) type Make = fn(&Path, Option<Arc<VirtualClock>>) -> Arc<dyn StoreFactory>;

/// The built-in Redis store, its kept execution ids in `workdir`.
pub(crate) fn builtin(workdir: &Path) -> RedisStoreFactory {
    RedisStoreFactory::new(workdir.join("kept-executions.sqlite"))
}

/// A sabotaged store selectable by name (`--store sabotage:<name>`), with
/// the check that must catch it.
pub struct Named {
    /// Its name after `sabotage:`.
    pub name: &'static str,
    /// The promise it breaks, in one sentence.
    pub breaks: &'static str,
    /// The real-world bug it stands for, in one sentence.
    pub real_bug: &'static str,
    /// The id of the check that must catch it (fail it). The `--suite
    /// sabotage` matrix reads it: the sabotage passes only if this check
    /// fails on it; a test runs each against its check.
    pub caught_by: &'static str,
    /// What its named check must say to have caught it.
    pub caught_when: Caught,
    pub(crate) how: How,
}

/// What the named check of a sabotage must say for the sabotage to count as
/// caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caught {
    /// It fails (or warns, for a SHOULD check): the usual case.
    Fails,
    /// It is undecided *for the reason the sabotage stands for*: a check that
    /// by design never blames the store (say `explorer.exploration-complete`,
    /// whose trouble is the harness's and so `unknown`) bites when it refuses
    /// to pass because of what the sabotage did. The text is a phrase the
    /// check's reason must contain: an `unknown` for any other reason (a
    /// server that would not start, a failed snapshot) catches nothing.
    Undecided(&'static str),
}

impl Caught {
    /// Whether a named check with `verdict` and `reason` says what this
    /// asks: a failure (or a warning: a SHOULD check's failure), or an
    /// `unknown` whose reason names the sabotage's cause.
    pub fn is_met(self, verdict: Verdict, reason: &str) -> bool {
        match self {
            Caught::Fails => matches!(verdict, Verdict::Fail | Verdict::Warn),
            Caught::Undecided(because) => verdict == Verdict::Unknown && reason.contains(because),
        }
    }
}

/// How a named sabotage is built.
pub(crate) enum How {
    /// A store of its own (or a wrapper) built by a function.
    Store(Make),
    /// The built-in Redis store with one edit of one script.
    Lua(LuaPatch),
}

impl Named {
    /// The one-script edit this sabotage is, when it is one.
    pub fn lua_patch(&self) -> Option<&LuaPatch> {
        match &self.how {
            How::Lua(patch) => Some(patch),
            How::Store(_) => None,
        }
    }
}

/// A named sabotage that is one edit of one built-in script.
pub(crate) const fn lua(
    name: &'static str,
    breaks: &'static str,
    real_bug: &'static str,
    caught_by: &'static str,
    script: &'static str,
    find: &'static str,
    replace: &'static str,
) -> Named {
    Named {
        name,
        breaks,
        real_bug,
        caught_by,
        caught_when: Caught::Fails,
        how: How::Lua(LuaPatch {
            script,
            find,
            replace,
        }),
    }
}

/// The sabotaged stores selectable by name, each with the check that must
/// catch it, in report order: the core set, then the crash suite's, then the
/// explorer's (each group in a module of its own).
pub fn named() -> impl Iterator<Item = &'static Named> + Clone {
    CORE.iter()
        .chain(crash_named::NAMED.iter())
        .chain(explorer_named::NAMED.iter())
}

/// The sabotage named `name`, if any.
pub fn find(name: &str) -> Option<&'static Named> {
    named().find(|n| n.name == name)
}

/// The core set: stores of their own and one-script edits of the built-in.
const CORE: [Named; 35] = [
    Named {
        name: "read-then-write-take",
        breaks: "its take reads the lease and then writes it in a second command, so two instances can both be granted",
        real_bug: "lock code that checks with GET and then writes with a plain SET (no NX, no script), the check-then-act race Redis's SET NX lock pattern exists to avoid",
        caught_by: "conformance.lease.take-races",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(ReadThenWriteLease::new(builtin(w)))),
    },
    Named {
        name: "read-then-write-renew",
        breaks: "its renew reads the lease and then writes it in a second command, so a renew can overwrite a newer holder",
        real_bug: "an extend made of a GET that compares the token and a PEXPIRE in a second round trip, so the lease can expire and be taken over in between",
        caught_by: "conformance.lease.take-races",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(ReadThenWriteLease::renew(builtin(w)))),
    },
    Named {
        name: "two-round-trip-claim",
        breaks: "its claim finds the first claimable child in one command and marks it claimed in a second, so two workers can both claim the last ready child",
        real_bug: "a job queue that picks the next job with a read (ZRANGE, HGET of its state) and then marks it taken with a plain HSET in a second round trip, so two workers polling at once both run the same job",
        caught_by: "conformance.queue.claim-races",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(SplitRoundTrips::claim(builtin(w)))),
    },
    Named {
        name: "read-then-write-acquire",
        breaks: "its acquire counts the live slots in one command and adds its slot in a second, so two instances can both take the last slot",
        real_bug: "a Redis semaphore that checks ZCOUNT (or ZCARD) against the limit and then ZADDs its slot in a second round trip, without a script or WATCH/MULTI, so concurrent acquirers overshoot the limit",
        caught_by: "conformance.rate.races",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(SplitRoundTrips::acquire(builtin(w)))),
    },
    Named {
        name: "hit-counted-before-check",
        breaks: "its hit is added to the window first and checked afterwards, a hit over the limit taken back, so two hits racing for the last place both see one too many and are both refused",
        real_bug: "the sorted-set sliding window that ZADDs the request, then ZCOUNTs the window and ZREMs the request when over the limit, in separate round trips, so concurrent requests at the limit refuse each other and a free place goes unused",
        caught_by: "conformance.rate.races",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(SplitRoundTrips::hit(builtin(w)))),
    },
    Named {
        name: "save-split-in-two",
        breaks: "its save writes the child's record in one command and adds it to the claim index in a second, so a server that fills up between the two leaves a record no claim finds: the save answered store_full but changed the keys, and every retry answers exists",
        real_bug: "a job queue whose enqueue is HSET of the job then LPUSH/ZADD of its id without MULTI or a script: an OOM (or a crash) between them leaves an orphaned job that is never run, while the producer's retry sees it as already enqueued",
        caught_by: "explorer.queue.answered",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(SplitRoundTrips::save(builtin(w)))),
    },
    Named {
        name: "lease-on-caller-clock",
        breaks: "it decides lease expiry on the caller's clock instead of the server's",
        real_bug: "lease expiry computed on each client's own clock, which breaks as soon as two clients' clocks disagree (the objection raised against Redlock's timing assumptions)",
        caught_by: "explorer.one-live-holder",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(ClientClockLease::new(builtin(w)))),
    },
    Named {
        name: "accepts-replica",
        breaks: "its server check never looks at role or cluster_enabled, so it starts on a replica (or a cluster node) as if it were the primary",
        real_bug: "a lock client pointed at a read replica behind a load balancer or a Sentinel misconfiguration: its writes fail or vanish on failover, and two holders can both be granted",
        caught_by: "conformance.server.replica-refused",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| {
            Arc::new(builtin(w).blind_to(stores::redis::Blindness::Deployment))
        }),
    },
    Named {
        name: "durability-unchecked",
        breaks: "its server check never looks at the durability settings, so it accepts a server that may lose acknowledged writes without being told it may",
        real_bug: "a lock or queue run on Redis with the default appendfsync everysec (or no AOF at all): a crash loses the last second of grants, and an epoch is granted twice",
        caught_by: "conformance.server.appendfsync-everysec-refused",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| {
            Arc::new(builtin(w).blind_to(stores::redis::Blindness::Durability))
        }),
    },
    Named {
        name: "blind-retry",
        breaks: "after an unavailable answer it sends the same call again and answers that, so a take whose reply was lost comes back busy under its own epoch",
        real_bug: "a client that retries a non-idempotent command after a timeout, so the retry meets the effect of the first attempt whose reply was lost",
        caught_by: "faults.lease-linearizable",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(BlindRetry::new(builtin(w)))),
    },
    Named {
        name: "complete-any-attempt",
        breaks: "its queue.complete goes by child id only, so a worker whose claim expired still completes the child another worker re-claimed",
        real_bug: "a job queue that acknowledges a job by id alone, so a stalled worker whose job was handed out again still completes it",
        caught_by: "faults.children-once",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(CompleteAnyAttempt::new(builtin(w)))),
    },
    Named {
        name: "oom-swallowed",
        breaks: "when the server is full it answers a success instead of store_full, acknowledging writes that never landed",
        real_bug: "a wrapper that catches the server's error reply (here OOM under maxmemory) and reports success anyway",
        caught_by: "faults.full-server-refuses",
        caught_when: Caught::Fails,
        how: How::Store(|w, _| Arc::new(OomSwallowed::new(builtin(w)))),
    },
    Named {
        name: "fence-outside-transaction",
        breaks: "the SQLite fencing set checks the lease in one transaction and writes the effect in another, so a zombie's effect lands after a takeover",
        real_bug: "a fencing token checked in one transaction and the guarded write made in another, reopening the check-then-act gap fencing exists to close",
        caught_by: "faults.fencing",
        caught_when: Caught::Fails,
        how: How::Store(|w, clock| {
            Arc::new(
                SqliteStoreFactory::new(w.join(SQLITE_FILE), SqliteClock::following(clock))
                    .with_fence_outside_transaction(FENCE_PAUSE),
            )
        }),
    },
    // Leases.
    lua(
        "release-without-token",
        "its release frees the lease whoever names it, so a zombie's release frees its successor's lease",
        "the unlock as a plain DEL of the lock key without comparing the caller's token, which the Redis SET NX lock pattern warns frees a lock another client now holds",
        "conformance.lease.zombie-release-refused",
        "lease_release.lua",
        "rec[2] and rec[1] == ARGV[1] and rec[2] == ARGV[2] and rec[3] ~= '1'",
        "rec[2] and rec[3] ~= '1'",
    ),
    lua(
        "renew-ignores-holder",
        "its renew compares the epoch but not the holder, so another instance naming the epoch extends a lease it does not hold",
        "an extend that checks only part of the lock's identity (the counter, not the owner), so any client knowing the counter can extend a lock it does not own",
        "conformance.lease.renew-wrong-holder",
        "lease_renew.lua",
        "if live and rec[1] == ARGV[1] and rec[2] == ARGV[2] then",
        "if live and rec[2] == ARGV[2] then",
    ),
    lua(
        "renew-ignores-epoch",
        "its renew compares the holder but not the epoch, so a holder's stale lease (an older epoch) is renewed as the current one",
        "an extend keyed on a stable client or host name instead of the per-acquisition token, so a process's old lease is confused with its new one",
        "conformance.lease.renew-wrong-epoch",
        "lease_renew.lua",
        "if live and rec[1] == ARGV[1] and rec[2] == ARGV[2] then",
        "if live and rec[1] == ARGV[1] then",
    ),
    lua(
        "renew-at-expiry-instant",
        "its renew counts a lease as live at its expiry instant (<= instead of <), though a take there already finds it expired",
        "an expiry comparison off by one in the unsafe direction, so two code paths disagree on whether the lease has ended at the boundary",
        "conformance.lease.renew-after-expiry",
        "lease_renew.lua",
        "local live = rec[4] ~= '1' and now < tonumber(rec[3])",
        "local live = rec[4] ~= '1' and now <= tonumber(rec[3])",
    ),
    lua(
        "renew-after-release",
        "its renew ignores the released flag, so a released lease comes back to life",
        "an extend that only looks at the expiry and not at whether the lock was released, so an unlocked lock can be extended again",
        "conformance.lease.renew-after-release",
        "lease_renew.lua",
        "local live = rec[4] ~= '1' and now < tonumber(rec[3])",
        "local live = now < tonumber(rec[3])",
    ),
    lua(
        "take-expires-early",
        "its take finds a lease expired one millisecond before its expiry, while the holder still rightly holds it",
        "an expiry boundary off by one in the unsafe direction (the lock counted as free while its TTL still has a millisecond left)",
        "conformance.lease.expiry-before-instant",
        "lease_take.lua",
        "if rec[2] and rec[4] ~= '1' and now < tonumber(rec[3]) then",
        "if rec[2] and rec[4] ~= '1' and now + 1 < tonumber(rec[3]) then",
    ),
    lua(
        "ttl-in-wrong-unit",
        "its take converts the ttl to seconds and then uses the number as milliseconds, so a lease ends a thousand times too early",
        "a TTL mistaken between seconds and milliseconds (a seconds value handed to PEXPIRE), so a lock expires long before its holder thinks",
        "conformance.lease.take-free-tree",
        "lease_take.lua",
        "local expires = string.format('%d', now + ttl)",
        "local expires = string.format('%d', now + math.floor(ttl / 1000))",
    ),
    lua(
        "takeover-reuses-epoch",
        "a take of an expired or released lease keeps the old epoch instead of the next one, so the new holder's fence equals the zombie's",
        "a fencing token that is not incremented on takeover (the token reset or copied from the expired lock), so storage cannot tell the new holder from the old",
        "conformance.lease.expiry-after-instant",
        "lease_take.lua",
        "epoch = epoch + 1",
        "epoch = math.max(epoch, 1)",
    ),
    lua(
        "lease-record-expires",
        "its lease record is given a PEXPIRE of the ttl, so the epoch is forgotten once the lease expires and counts from 1 again",
        "a fencing counter kept in the lock key itself, which Redis deletes when the lock's TTL runs out, so tokens restart and repeat",
        "conformance.lease.epoch-survives-idle",
        "lease_take.lua",
        "return {'granted', epoch, expires}",
        "redis.call('PEXPIRE', key, ttl)\nreturn {'granted', epoch, expires}",
    ),
    // The child queue.
    lua(
        "claim-ignores-depth",
        "its queue orders children by save time alone, so a shallow child is claimed before a deeper one",
        "a priority queue implemented as a plain FIFO list, so the priority (here depth) given at save is silently ignored",
        "conformance.queue.order-deepest-first",
        "queue_save.lua",
        "local member = ARGV[4] .. ':'",
        "local member = string.rep('0', 19) .. ':'",
    ),
    lua(
        "claim-keeps-attempt",
        "a claim of a child whose claim expired hands it out under the same attempt, so the old and the new claimer share one attempt",
        "a stalled-job recovery that hands a job out again without incrementing its attempt counter, so the zombie's acknowledgement matches the new claim",
        "conformance.queue.claim-expiry-exact",
        "queue_claim.lua",
        "local attempt = tonumber(rec[3]) + 1",
        "local attempt = math.max(tonumber(rec[3]), 1)",
    ),
    lua(
        "reclaim-early",
        "a live claim is handed out again one millisecond before it expires",
        "a visibility-timeout comparison off by one in the unsafe direction, so a job is redelivered while its worker still holds it",
        "conformance.queue.claim-expiry-exact",
        "queue_claim.lua",
        "(rec[1] == 'claimed' and now >= tonumber(rec[2]))",
        "(rec[1] == 'claimed' and now + 1 >= tonumber(rec[2]))",
    ),
    lua(
        "complete-ignores-claim-expiry",
        "its complete accepts a claim that already expired, as long as nobody claimed the child again yet",
        "an acknowledgement that checks the job's owner but not whether its lock or visibility timeout ran out, so a worker that stalled past it still completes",
        "conformance.queue.complete-after-claim-expired",
        "queue_complete.lua",
        "rec[3] == ARGV[2]\n    and now < tonumber(rec[4]) then",
        "rec[3] == ARGV[2] then",
    ),
    lua(
        "done-children-stay-in-index",
        "its complete marks the child done but leaves it in the claim order, so every later claim walks every child ever completed",
        "a job queue that marks a job finished in its record but never removes it from the sorted set it claims from, so claims slow down as the queue ages",
        "conformance.queue.claim-cost-bounded",
        "queue_complete.lua",
        "  redis.call('ZREM', KEYS[2], rec[5])\n",
        "",
    ),
    // Rate limits.
    lua(
        "slot-expires-early",
        "a slot is counted as expired one millisecond before its expiry, so a limit of n admits n + 1 holders at that instant",
        "a semaphore's expiry boundary off by one in the unsafe direction (a holder's slot handed out while its TTL still runs)",
        "conformance.rate.slot-expiry",
        "rate_acquire_slot.lua",
        "redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf')",
        "redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%d', now + 1), '+inf')",
    ),
    lua(
        "window-off-by-one",
        "its window counts hits in (now − window + 1, now], so a hit is forgotten one millisecond early and limit + 1 hits pass in one window",
        "a sliding-window boundary off by one (window trimmed with the wrong inclusive/exclusive end), letting one request too many through",
        "conformance.rate.window-slides",
        "rate_hit.lua",
        "local low = '(' .. string.format('%d', now - window)",
        "local low = '(' .. string.format('%d', now - window + 1)",
    ),
    lua(
        "limited-hits-counted",
        "a limited hit is recorded too, so refused requests push the window's end further away",
        "the sorted-set sliding window that ZADDs every request before counting, so a client that keeps retrying while limited is never let through again",
        "conformance.rate.limited-hits-not-counted",
        "rate_hit.lua",
        "local oldest = redis.call('ZRANGEBYSCORE'",
        "redis.call('ZADD', KEYS[1], ARGV[1], 'limited:' .. redis.call('INCR', KEYS[3]))\nlocal oldest = redis.call('ZRANGEBYSCORE'",
    ),
    lua(
        "pause-can-shorten",
        "a pause overwrites the pause in force, so a shorter one (an earlier until) shortens a longer one",
        "a Retry-After pause stored with a plain SET, so a later, shorter Retry-After overwrites a longer one the provider asked for",
        "conformance.rate.pause-only-lengthens",
        "rate_pause.lua",
        "if current and cmp(current, ARGV[1]) >= 0 then",
        "if current and current == ARGV[1] then",
    ),
    lua(
        "slots-on-server-time",
        "its slots are decided on the Redis server's time instead of the caller's clock_ms",
        "slot expiry decided on the server's clock while callers reason on their own instance clock, so the two disagree whenever they are skewed",
        "conformance.rate.instance-clock-rules",
        "rate_acquire_slot.lua",
        "local paused = redis.call('GET', KEYS[2])",
        "local t = redis.call('TIME')\nARGV[1] = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))\nlocal paused = redis.call('GET', KEYS[2])",
    ),
    lua(
        "full-retry-at-expired-slot",
        "its full answer names the first stored slot's expiry as retry_at, even a slot that already expired",
        "a semaphore whose 'retry after' reads the head of its sorted set without trimming expired entries first, sending callers back at a time already past",
        "conformance.rate.full-retry-at-live-slot",
        "rate_acquire_slot.lua",
        "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])\nlocal first",
        "local first",
    ),
    lua(
        "hits-never-pruned",
        "it keeps every hit for good, though no window of up to a year can count it any more",
        "a sliding-window limiter that trims only when it refuses (or never), so a busy provider's sorted set grows without bound",
        "conformance.rate.old-hits-forgotten",
        "rate_hit.lua",
        "  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf',\n    string.format('%d', now - tonumber(ARGV[4])))\n",
        "",
    ),
    lua(
        "queue-records-expire",
        "it puts a one-day TTL on every saved child, so queued, claimed and done children vanish after a day idle, and a done child saved again is queued again",
        "a job queue that sets a \"safety\" EXPIRE on its job records so that abandoned jobs clean themselves up, losing jobs that wait (or sit done) longer than the TTL",
        "conformance.queue.records-survive-idle",
        "queue_save.lua",
        "redis.call('ZADD', KEYS[2], 0, member)\n",
        "redis.call('ZADD', KEYS[2], 0, member)\nredis.call('PEXPIRE', key, 86400000)\n",
    ),
];

/// The sabotaged store `name` (see [`named`]), keeping durable files in
/// `workdir`; a SQLite-based one reads the system clock (see
/// [`by_name_following`]).
pub fn by_name(name: &str, workdir: &Path) -> Option<Arc<dyn StoreFactory>> {
    by_name_following(name, workdir, None)
}

/// The sabotaged store `name`, keeping durable files in `workdir`; a
/// SQLite-based one reads its server time from `server_clock` when given
/// (the managed server's virtual clock, as `builtin:sqlite` does).
pub fn by_name_following(
    name: &str,
    workdir: &Path,
    server_clock: Option<Arc<VirtualClock>>,
) -> Option<Arc<dyn StoreFactory>> {
    let named = find(name)?;
    Some(match &named.how {
        How::Store(make) => make(workdir, server_clock),
        How::Lua(patch) => Arc::new(LuaSabotage::new(named.name, patch, builtin(workdir))),
    })
}
