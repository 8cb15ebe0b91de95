//! The explorer's state and actions: plain data, serialisable, and hashed
//! into a fingerprint that reads every time relative to the virtual now.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use harness::contract::{Reply, StoreError};
use harness::gate::Exchange;

use crate::drawn::Canon;
use crate::property::Property;
pub(crate) use crate::reading::Logical;
use crate::reading::{hash_item, rel, time_reply_ms, Template};

pub use model::explore::{Action, Op, Tick};

/// The server time every search and walk starts at: 379 ms past a whole
/// second (so off every whole second and minute). Under the relative
/// reading of times a state before the first operation a whole number of
/// seconds in is taken as the initial one, so a first operation runs at
/// this instant's phase in the second or half a lease from it; at a whole
/// second a store that reads time in whole seconds (the milliseconds
/// dropped) would answer as if it did not, and escape.
pub const START_MS: i64 = harness::server::VIRTUAL_EPOCH_MS + 379;

/// One key under the prefix, as dumped.
///
/// Cheap to clone (the dump and the content are shared): a state is
/// cloned for every successor, and a record of many fields is kilobytes.
#[derive(Debug, Clone)]
pub(crate) struct KeyDump {
    /// The full key name, prefix included.
    pub name: Vec<u8>,
    /// `DUMP` bytes, for `RESTORE … ABSTTL`.
    pub dump: Arc<[u8]>,
    /// Absolute expiry on the virtual clock (`PEXPIRETIME`), if any.
    pub expire_at: Option<i64>,
    /// Type and content, for the fingerprint.
    pub logical: Arc<Logical>,
    /// The key's identity: a 128-bit digest of its name, content (exactly,
    /// times absolute) and expiry, computed once. Two keys with the same
    /// id hold the same content (a collision is 2^-128 likely): the cache,
    /// the watch and the digests compare ids instead of reading the
    /// content again at every step.
    pub id: u128,
    /// Its items split into runs once, for the fingerprint (`None`: a key
    /// not read item by item).
    template: Option<Arc<Template>>,
    /// The instants its hash fields expire at on their own.
    fields_expire: Arc<[i64]>,
}

/// How the snapshot writes a hash field's own expiry into its value item
/// (`snapshot.lua`): the value's bytes, this, the absolute instant in ms.
const FIELD_EXPIRY: &[u8] = b"\0pexpireat:";

impl KeyDump {
    /// A key read back: its name, dump, expiry and content.
    pub(crate) fn new(
        name: Vec<u8>,
        dump: Vec<u8>,
        expire_at: Option<i64>,
        logical: Logical,
    ) -> KeyDump {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        name.hash(&mut h);
        expire_at.hash(&mut h);
        logical.hash(&mut h);
        KeyDump {
            name,
            dump: dump.into(),
            expire_at,
            template: Template::of(&logical).map(Arc::new),
            fields_expire: field_expiries(&logical).collect::<Vec<_>>().into(),
            logical: Arc::new(logical),
            id: h.digest128(),
        }
    }

    /// The instants its hash fields expire at on their own (`HPEXPIRE`),
    /// as the snapshot read them (read once: every tick asks).
    pub(crate) fn field_expiries(&self) -> impl Iterator<Item = i64> + '_ {
        self.fields_expire.iter().copied()
    }

    /// Whether the key, or a field of it, expires at or before `to`: then
    /// only the server can say what is left at `to`.
    pub(crate) fn expires_by(&self, to: i64) -> bool {
        self.expire_at.is_some_and(|e| e <= to) || self.field_expiries().any(|e| e <= to)
    }

    /// Whether the key, or a field of it, expires exactly at `at`.
    pub(crate) fn expires_at_instant(&self, at: i64) -> bool {
        self.expire_at == Some(at) || self.field_expiries().any(|e| e == at)
    }
}

/// The instants the hash fields of `logical` expire at on their own, as
/// the snapshot writes them into their values ([`FIELD_EXPIRY`]).
fn field_expiries(logical: &Logical) -> impl Iterator<Item = i64> + '_ {
    let items: &[Vec<u8>] = match logical {
        Logical::Items { kind, items } if kind == "hash" => items,
        _ => &[],
    };
    items.iter().skip(1).step_by(2).filter_map(|value| {
        let at = value
            .windows(FIELD_EXPIRY.len())
            .rposition(|w| w == FIELD_EXPIRY)?;
        std::str::from_utf8(&value[at + FIELD_EXPIRY.len()..])
            .ok()?
            .parse()
            .ok()
    })
}

/// The holder name instance `i` sends (and its name in `hello`): the same
/// length for every instance, and text no store writes by chance.
pub(crate) fn holder(i: usize) -> &'static str {
    ["sp_inst_a", "sp_inst_b", "sp_inst_c", "sp_inst_d"]
        .get(i)
        .copied()
        .unwrap_or("sp_inst_x")
}

/// What an operation was invoked with, for judging its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Invoked {
    /// The instance clock it was invoked with.
    pub clock_ms: i64,
    /// How many grants had been acknowledged when it was invoked.
    pub acked_before: usize,
    /// Someone else may have held the tree at some instant since.
    pub contended: bool,
    /// The server was full at some instant since it was invoked.
    pub full_seen: bool,
    /// The keys' digest when it was invoked, while only its own commands
    /// have touched the server since.
    pub quiet_since: Option<u64>,
    /// The keys as the fingerprint read them then ([`crate::state::keys_print`]).
    pub quiet_print: u64,
}

/// An operation in progress: what was asked and the commands delivered so far.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The operation being run.
    pub op: Op,
    /// The instance clock the operation was invoked with: it keeps it until
    /// it answers (a re-run after a tick must send the same commands).
    pub clock_ms: i64,
    /// How many grants had been acknowledged when it was invoked (the
    /// ghost's length then): only those come before it; grants acknowledged
    /// while it was in flight are concurrent with it.
    pub acked_before: usize,
    /// Someone else may have held the tree at some instant since it was
    /// invoked (see [`State::contended`]): a busy answer is then no sign of
    /// a stuck tree.
    pub contended: bool,
    /// The Redis commands delivered so far, each with its reply.
    pub delivered: Vec<Exchange>,
    /// The server was full at some instant since it was invoked: a
    /// `store_full` answer is then the contract's refusal, not an error.
    pub full_seen: bool,
    /// The digest of the keys when it was invoked ([`keys_digest`]), while
    /// nothing but its own commands has touched the server since (no other
    /// instance's command, no move of time): a refusal must leave them so.
    pub quiet_since: Option<u64>,
    /// The keys when it was invoked as the fingerprint read them
    /// ([`keys_print`]): a state and its shift in time, or its renaming of
    /// drawn values, invoked it on keys that print alike.
    pub quiet_print: u64,
    /// The keys its connection `WATCH`es (the gate keeps its transaction,
    /// `harness::gate::Gate::emulate_transactions`).
    pub watch: Watch,
    /// What its next command is, for the reduction of [`crate::fused`]
    /// (not fingerprinted: it follows from the replies).
    pub upcoming: crate::fused::Upcoming,
    /// Commands it ran free since its last step that cost one: charged to
    /// the depth by its next command that costs ([`crate::fused`]).
    pub deferred: usize,
}

/// The keys an operation's connection watches, each with the digest of
/// its content when the `WATCH` ran, and whether one was modified since:
/// then its `EXEC` is aborted, as Redis aborts it. Modified means its
/// content or expiry changed at some step since (by anyone, the operation
/// itself included), which the explorer sees state by state; a write that
/// left a key exactly as it was is not seen (Redis would abort there too,
/// and a store that retries loses nothing by the difference).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Watch {
    /// Each watched key and its digest then ([`key_digest`]).
    pub keys: Vec<(Vec<u8>, u64)>,
    /// A watched key changed since its `WATCH`.
    pub dirty: bool,
}

impl Watch {
    /// Notes a command the operation's connection delivered, with the keys
    /// under the prefix as the server held them then.
    pub(crate) fn delivered(&mut self, command: &harness::gate::Command, keys: &[KeyDump]) {
        let name = command.name();
        match name.as_str() {
            "WATCH" => {
                for key in command.args.iter().skip(1) {
                    let digest = key_digest(keys, key);
                    self.keys.push((key.clone(), digest));
                }
            }
            "EXEC" | "DISCARD" | "UNWATCH" => *self = Watch::default(),
            _ => {}
        }
    }

    /// After any step: whether a watched key is no longer as it was.
    pub(crate) fn stepped(&mut self, keys: &[KeyDump]) {
        if !self.dirty {
            self.dirty = self.keys.iter().any(|(k, d)| key_digest(keys, k) != *d);
        }
    }
}

/// `command` as the transition cache keys it, after `delivered` on its
/// connection. The gate keeps transactions (see [`Watch`]): inside one a
/// command is only queued, and `EXEC` runs what was queued, or nothing when
/// a watched key was modified (`watch_dirty`) or a command was refused when
/// queued (`EXECABORT`, "previous errors", whatever the server holds now).
/// So a command in an open transaction is keyed apart from the same bytes
/// outside one, and `EXEC` by every command it runs, whether each was
/// refused when queued, and the watch; any other command is itself.
pub(crate) fn cache_command(
    delivered: &[Exchange],
    watch_dirty: bool,
    command: &harness::gate::Command,
) -> harness::gate::Command {
    let open = harness::gate::transaction::open_transaction_by(delivered, |e| &e.command);
    let Some(queued) = open else {
        return command.clone();
    };
    let mut args: Vec<Vec<u8>> = Vec::new();
    if command.is("EXEC") {
        args.push(b"\0storeproof:exec".to_vec());
        args.push(vec![u8::from(watch_dirty)]);
        for q in queued {
            // The same write queued on a server with room and refused on
            // a full one: the one `EXEC` runs it, the other aborts.
            let refused = harness::gate::transaction::refused_when_queued(q.reply.as_bytes());
            args.push(b"\0storeproof:queued".to_vec());
            args.push(vec![u8::from(refused)]);
            args.push(q.command.args.len().to_string().into_bytes());
            args.extend(q.command.args.iter().cloned());
        }
    } else {
        args.push(b"\0storeproof:in-transaction".to_vec());
    }
    args.extend(command.args.iter().cloned());
    harness::gate::Command { args }
}

/// The digest of key `name`'s content and expiry among `keys` (a missing
/// key has one of its own).
pub(crate) fn key_digest(keys: &[KeyDump], name: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match keys.iter().find(|k| k.name == name) {
        Some(k) => {
            1u8.hash(&mut h);
            k.id.hash(&mut h);
        }
        None => 0u8.hash(&mut h),
    }
    h.finish()
}

impl Pending {
    /// Operation `op`, invoked as `invoked` says, nothing delivered yet.
    pub(crate) fn started(op: Op, invoked: Invoked) -> Pending {
        let Invoked {
            clock_ms,
            acked_before,
            contended,
            full_seen,
            quiet_since,
            quiet_print,
        } = invoked;
        Pending {
            op,
            clock_ms,
            acked_before,
            contended,
            delivered: Vec::new(),
            full_seen,
            quiet_since,
            quiet_print,
            watch: Watch::default(),
            upcoming: crate::fused::Upcoming::Other,
            deferred: 0,
        }
    }

    /// The operation once `delivered` (what it has sent, ending with the
    /// command just answered) went to the server, leaving `keys`, and before
    /// `more`, its next command: the watched keys and the kind of step
    /// ahead follow.
    pub(crate) fn advanced(
        self,
        delivered: Vec<harness::gate::Exchange>,
        keys: &[KeyDump],
        more: &harness::gate::Command,
    ) -> Pending {
        let mut watch = self.watch;
        if let Some(e) = delivered.last() {
            watch.delivered(&e.command, keys);
        }
        let upcoming = crate::fused::upcoming(&delivered, more);
        Pending {
            delivered,
            watch,
            upcoming,
            ..self
        }
    }

    /// What it was invoked with, for judging its answer.
    pub(crate) fn invoked(&self) -> Invoked {
        Invoked {
            clock_ms: self.clock_ms,
            acked_before: self.acked_before,
            contended: self.contended,
            full_seen: self.full_seen,
            quiet_since: self.quiet_since,
            quiet_print: self.quiet_print,
        }
    }
}

/// A digest of what the server holds under the prefix: every key's name,
/// content ([`Logical`], never its `DUMP` bytes: a hash in the hashtable
/// encoding dumps its fields in table order, which a read or a `RESTORE`
/// changes while the content stays) and absolute expiry.
pub(crate) fn keys_digest(keys: &[KeyDump]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for k in keys {
        k.id.hash(&mut h);
    }
    h.finish()
}

/// The keys of `state` as its fingerprint reads them (times relative to
/// now, drawn values up to a renaming), alone.
pub(crate) fn keys_print(state: &State) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut canon = Canon::new(state.drawn.as_deref());
    state.hash_keys(
        &mut h,
        !state.absolute_times,
        state.far_past_ms(),
        &mut canon,
    );
    h.finish()
}

/// One simulated application instance.
#[derive(Debug, Clone)]
pub(crate) struct Inst {
    /// Its clock's offset from server time.
    pub skew_ms: i64,
    /// The epoch it believes it holds.
    pub held: Option<i64>,
    /// The claim it believes it holds: the child and the attempt.
    pub claim: Option<(u8, i64)>,
    /// The rate slot it believes it holds.
    pub slot: Option<String>,
    /// The operation it is in the middle of, if any.
    pub pending: Option<Pending>,
    /// Stopped for good: it takes no further step.
    pub crashed: bool,
}

/// An acknowledged grant (the ghost record).
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    /// The instance the lease was granted to.
    pub instance: usize,
    /// The epoch granted.
    pub epoch: i64,
    /// Server time until which the holder was promised the lease: the server
    /// time the acknowledged take or renew was invoked at plus its ttl.
    pub valid_until: i64,
    /// Server time until which the store may rightly still hold it: the
    /// time the take or renew was answered at plus its ttl. A store counts
    /// the lease from some instant between asking and answering (an
    /// operation of several commands decides in one of them), so a refusal
    /// before this is mutual exclusion, not a stuck tree.
    pub may_hold_until: i64,
    /// Acknowledged as released by its holder.
    pub released: bool,
}

/// What the last step did, for counterexamples (not part of the fingerprint).
#[derive(Debug, Clone, Default)]
pub(crate) struct Note {
    /// The Redis commands the step delivered, as text.
    pub commands: Vec<String>,
    /// The store's answer, when the step finished an operation.
    pub answer: Option<Result<Reply, StoreError>>,
}

/// The whole explored state. Outside the crate it is what a replay ended
/// in: which properties it broke ([`State::broke`], [`State::violation`])
/// and whether the harness could go on ([`State::harness_error`]).
#[derive(Debug, Clone)]
pub struct State {
    /// Server time (virtual, ms).
    pub(crate) now: i64,
    /// The server is full: every write is refused with `OOM`.
    pub(crate) full: bool,
    /// Every key under the prefix: the store's state on the server.
    pub(crate) keys: Vec<KeyDump>,
    /// The instances, by index.
    pub(crate) insts: Vec<Inst>,
    /// Every acknowledged grant so far, oldest first: what the properties are
    /// judged against.
    pub(crate) ghost: Vec<Grant>,
    /// What the queue's instances were told (empty when the queue is not
    /// explored).
    pub(crate) queue: crate::queue_ghost::QueueGhost,
    /// What the rate limits' instances were told (empty when the rate
    /// limits are not explored).
    pub(crate) rate: crate::rate_ghost::RateGhost,
    /// Broken properties (sticky): (property, what happened).
    pub(crate) violations: Vec<(Property, String)>,
    /// The properties of `violations` broken only by what an answer showed
    /// (an expiry), which leaves the store and the ghost as they were: the
    /// search goes on past them, so what such a store also breaks later
    /// (two live holders, say) is still found.
    pub(crate) followed_past: Vec<Property>,
    /// A renew by a holder whose epoch was superseded was reached (the first
    /// takeover race).
    pub(crate) zombie_renew_reached: bool,
    /// A release by a holder whose epoch was superseded was reached (the
    /// second takeover race).
    pub(crate) zombie_release_reached: bool,
    /// The latest server instant until which the store may still hold a
    /// lease nobody is promised: one a crash interrupted while it was being
    /// taken or renewed (the store may have written it; nobody was told),
    /// or being released. A refusal before it is not a stuck tree.
    pub(crate) unacked_until: Option<i64>,
    /// The operations the store answered `unsupported` (sticky), each with
    /// the store's first message: PROTOCOL lets an operation say so, which
    /// skips the checks about it; the answer changed nothing (the store does
    /// not offer the operation), so the search goes on past it.
    pub(crate) unsupported: Vec<(Op, String)>,
    /// Why the harness could not go on from this state: its own trouble
    /// (restore, snapshot, clock, a failed connect, a dead adapter, a store
    /// that sends other commands on a re-run), never a property the store
    /// broke. It makes the exploration undecided, not failed.
    pub harness_error: Option<String>,
    /// What the last step did (not part of the fingerprint).
    pub(crate) note: Note,
    /// Fingerprint times as absolute instants instead of relative to now
    /// (only to measure what the relative reading saves).
    pub(crate) absolute_times: bool,
    /// A reply was lost on this path ([`Action::Lose`]): no other is.
    pub(crate) lost_reply: bool,
    /// Steps taken from the initial state (not part of the fingerprint: the
    /// level-by-level search meets every state first at its least depth,
    /// see [`crate::search`]).
    pub(crate) steps: usize,
    /// The values learnt as drawn at random by the store, which the
    /// fingerprint reads up to a renaming ([`crate::drawn`]); `None`: none.
    pub(crate) drawn: Option<std::sync::Arc<crate::drawn::Values>>,
}

impl State {
    /// The initial state: an empty keyspace at `now`, one instance per skew.
    pub(crate) fn initial(now: i64, skews: &[i64]) -> State {
        State {
            now,
            full: false,
            keys: Vec::new(),
            insts: skews
                .iter()
                .map(|s| Inst {
                    skew_ms: *s,
                    held: None,
                    claim: None,
                    slot: None,
                    pending: None,
                    crashed: false,
                })
                .collect(),
            ghost: Vec::new(),
            queue: crate::queue_ghost::QueueGhost::new(),
            rate: crate::rate_ghost::RateGhost::default(),
            violations: Vec::new(),
            followed_past: Vec::new(),
            zombie_renew_reached: false,
            zombie_release_reached: false,
            unacked_until: None,
            unsupported: Vec::new(),
            harness_error: None,
            note: Note::default(),
            absolute_times: false,
            lost_reply: false,
            steps: 0,
            drawn: None,
        }
    }

    /// Hashes the state with times relative to now (`relative`), or
    /// absolute, and the values the store drew up to a renaming.
    pub(crate) fn hash_with<H: Hasher>(&self, h: &mut H, relative: bool, far_ms: i64) {
        let values = self.drawn.as_deref();
        self.hash_reading(h, relative, far_ms, &mut Canon::new(values));
    }

    /// Hashes the state as its fingerprint does, but every drawn value as
    /// its bytes: two states the fingerprint merges differ here when they
    /// differ by a renaming of drawn values (in time too, or not).
    pub(crate) fn hash_bytes<H: Hasher>(&self, h: &mut H) {
        let relative = !self.absolute_times;
        self.hash_reading(h, relative, self.far_past_ms(), &mut Canon::new(None));
    }

    /// Hashes the keys as [`State::hash_with`] reads them.
    fn hash_keys<H: Hasher>(&self, h: &mut H, relative: bool, far_ms: i64, canon: &mut Canon) {
        let now = if relative { self.now } else { 0 };
        let far = if relative { far_ms } else { i64::MAX };
        for k in &self.keys {
            canon.hash(&k.name, h, &mut |b, h| b.hash(h));
            k.expire_at.map(|t| rel(t, now, far)).hash(h);
            match &k.template {
                // No drawn value to read in it: its runs, parsed once.
                Some(t) if relative && canon.reads_nothing() => t.hash_at(now, far, h),
                _ => k.logical.hash_at(now, far, relative, h, canon),
            }
        }
    }

    fn hash_reading<H: Hasher>(&self, h: &mut H, relative: bool, far_ms: i64, canon: &mut Canon) {
        let now = if relative { self.now } else { 0 };
        if relative {
            // Only shifts by whole seconds are merged ([`crate::SHIFT_GRAIN_MS`]).
            self.now.rem_euclid(crate::SHIFT_GRAIN_MS).hash(h);
        } else {
            self.now.hash(h);
        }
        let far = if relative { far_ms } else { i64::MAX };
        self.full.hash(h);
        self.lost_reply.hash(h);
        self.hash_keys(h, relative, far_ms, canon);
        for i in &self.insts {
            i.skew_ms.hash(h);
            i.held.hash(h);
            i.claim.hash(h);
            i.slot.hash(h);
            i.crashed.hash(h);
            match &i.pending {
                None => 0u8.hash(h),
                Some(p) => {
                    p.op.hash(h);
                    // The instant it was invoked at on the server: a store
                    // that decides on the caller's clock goes on differently.
                    rel(p.clock_ms - i.skew_ms, now, far).hash(h);
                    p.acked_before.hash(h);
                    p.contended.hash(h);
                    p.full_seen.hash(h);
                    // Unchanged since it was invoked, or the keys then: a
                    // digest of the keys now says nothing more than they do
                    // (and a renaming of the state keeps it so).
                    match p.quiet_since {
                        None => 0u8.hash(h),
                        Some(d) if d == keys_digest(&self.keys) => 1u8.hash(h),
                        // The keys it was invoked on, as read then: not
                        // their bytes, which a shift in time or a renaming
                        // of drawn values changes.
                        Some(_) => {
                            2u8.hash(h);
                            p.quiet_print.hash(h);
                        }
                    }
                    // The replies, not the commands: a deterministic store's
                    // commands follow from the state, and a store that sends
                    // other commands on a re-run must still fingerprint the
                    // same so that its path can be rebuilt and reported.
                    // A reply may carry a time (a read-then-write take's
                    // read answers the server's `TIME`): read like a key's.
                    p.delivered.len().hash(h);
                    for e in &p.delivered {
                        // `TIME` answers seconds and microseconds apart:
                        // read as the one instant they spell.
                        let instant = e
                            .command
                            .is("TIME")
                            .then(|| time_reply_ms(e.reply.as_bytes()));
                        if let (true, Some(Some(ms))) = (relative, instant) {
                            4u8.hash(h);
                            rel(ms, now, far).hash(h);
                            continue;
                        }
                        canon.hash(e.reply.as_bytes(), h, &mut |b, h| {
                            hash_item(b, now, far, relative, h)
                        });
                    }
                    // A watch the next EXEC would find modified: only
                    // where a key is watched (the states of a store that
                    // never watches keep their fingerprints).
                    if !p.watch.keys.is_empty() {
                        p.watch.dirty.hash(h);
                    }
                }
            }
        }
        for g in &self.ghost {
            g.instance.hash(h);
            g.epoch.hash(h);
            g.released.hash(h);
            // An ended promise is just ended.
            (g.valid_until > self.now).hash(h);
            if g.valid_until > self.now {
                rel(g.valid_until, now, far).hash(h);
            }
            (g.may_hold_until > self.now).hash(h);
            if g.may_hold_until > self.now {
                rel(g.may_hold_until, now, far).hash(h);
            }
        }
        self.queue.hash_at(self.now, &|t| rel(t, now, far), h);
        self.rate
            .hash_at(self.now, self.rate_horizon(), &|t| rel(t, now, far), h);
        // Like a promise: once it ran out it no longer matters.
        self.unacked_until
            .filter(|t| *t > self.now)
            .map(|t| rel(t, now, far))
            .hash(h);
        for (p, _) in &self.violations {
            p.hash(h);
        }
        self.followed_past.hash(h);
        for (op, _) in &self.unsupported {
            op.hash(h);
        }
        self.zombie_renew_reached.hash(h);
        self.zombie_release_reached.hash(h);
        self.harness_error.is_some().hash(h);
    }

    /// Whether `property` has been broken.
    pub fn broke(&self, property: Property) -> bool {
        self.violations.iter().any(|(p, _)| *p == property)
    }

    /// What happened when `property` was broken, if it was.
    pub fn violation(&self, property: Property) -> Option<&str> {
        self.violations
            .iter()
            .find(|(p, _)| *p == property)
            .map(|(_, m)| m.as_str())
    }

    /// The operations the store answered `unsupported`, with its message.
    pub fn unsupported(&self) -> &[(Op, String)] {
        &self.unsupported
    }

    pub(crate) fn violate(&mut self, property: Property, what: String) {
        if !self.broke(property) {
            self.violations.push((property, what));
        }
    }

    /// Records `property` broken by what an answer showed, and goes on
    /// (see `followed_past`).
    pub(crate) fn violate_and_go_on(&mut self, property: Property, what: String) {
        if !self.broke(property) {
            self.violations.push((property, what));
            self.followed_past.push(property);
        }
    }

    /// Whether the search stops here: the harness's trouble, or a property
    /// broken that is not followed past.
    pub(crate) fn stops(&self) -> bool {
        self.harness_error.is_some() || self.stopped_by_violation()
    }

    /// Whether a property broken here is one the search does not follow
    /// past.
    pub(crate) fn stopped_by_violation(&self) -> bool {
        self.violations
            .iter()
            .any(|(p, _)| !self.followed_past.contains(p))
    }
}

impl Hash for State {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.hash_with(h, !self.absolute_times, self.far_past_ms());
    }
}

impl State {
    /// The earliest clock any rate judgement from this state on can decide
    /// at: that of an operation in flight (it keeps the clock it was
    /// invoked with) or any live instance's clock now. A time at or before
    /// it can no longer make a slot live; one at or before it less a
    /// window, a hit counted.
    pub(crate) fn rate_horizon(&self) -> i64 {
        self.insts
            .iter()
            .filter(|i| !i.crashed)
            .map(|i| {
                i.pending
                    .as_ref()
                    .map_or(self.now + i.skew_ms, |p| p.clock_ms)
            })
            .min()
            .unwrap_or(self.now)
    }

    /// How far back of server now a time no longer matters, so that the
    /// fingerprint reads every earlier time alike: [`crate::FAR_PAST_MS`]
    /// beyond the clock of the instance furthest behind or ahead. A time an
    /// instance wrote on its own clock (a rate slot's expiry, a hit) sits
    /// its skew away from server time, and a skew of an hour (`--skews`)
    /// put the hits of a window an hour back: read alike at a fixed 20
    /// leases, a hit inside the window and one outside it were one state.
    pub(crate) fn far_past_ms(&self) -> i64 {
        let skew = self
            .insts
            .iter()
            .map(|i| i.skew_ms.abs())
            .max()
            .unwrap_or(0);
        crate::FAR_PAST_MS + skew
    }

    /// The fingerprint: the relative-time hash the search dedups on.
    pub(crate) fn fingerprint(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint() == other.fingerprint()
    }
}

impl Eq for State {}

#[cfg(test)]
mod tests;
