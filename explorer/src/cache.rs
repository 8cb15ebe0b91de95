//! The transition cache: what a command or a move of time did in a server
//! state (keys and time before, the input; the reply and keys after), and
//! what a store did given a request, a clock and replies (its next command
//! or its answer), shared by every world and skew of an exploration, with
//! the seeded sample of entries checked against the server and the store.

use std::hash::{Hash, Hasher};

use crate::state::*;

/// What the server holds under the prefix: every key's name, content and
/// absolute expiry, in name order. Two states with the same keyspace are the
/// same server state: every command reads the same from both. `DUMP` bytes
/// are not its identity (only how a state is moved onto a server): the same
/// hash dumps in another field order after a read or a `RESTORE`.
/// Each key by its id ([`KeyDump::id`]: name, content and expiry).
pub(crate) type Keyspace = Vec<u128>;

/// The keyspace of `keys` (a state's or a snapshot's).
pub(crate) fn keyspace_of(keys: &[KeyDump]) -> Keyspace {
    keys.iter().map(|k| k.id).collect()
}

/// What moved the server in a cached transition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Input {
    /// One command, byte for byte as instance `instance` sent it (the
    /// instance is part of the key: its connection's set-up, such as the
    /// protocol version, shapes the reply's bytes).
    Command {
        /// Which instance's connection sent it.
        instance: usize,
        /// The command's arguments.
        command: harness::gate::Command,
        /// The server was full (`maxmemory` reached): writes are refused.
        full: bool,
    },
    /// Server time moved to this instant.
    Tick {
        /// The new virtual time (ms).
        to: i64,
    },
}

/// A cache entry's key: the server's whole state (keyspace and time) and
/// what moved it. The server's answer depends on these only, never on the
/// instance clock the store was invoked with, so an entry is shared by
/// every skew and every world of an exploration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    keys: Keyspace,
    now: i64,
    input: Input,
}

/// What the server did: its reply (for a command) and the keys after.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The reply's bytes (`None` for a tick).
    pub reply: Option<harness::gate::Frame>,
    /// Every key under the prefix afterwards.
    pub keys: Vec<KeyDump>,
    /// Sent to the server again once already (see
    /// [`TransitionCache::claim_check`]): an entry is checked at most once.
    checked: std::sync::atomic::AtomicBool,
}

impl Outcome {
    /// The server's `reply` and the `keys` it held after.
    pub(crate) fn new(reply: Option<harness::gate::Frame>, keys: Vec<KeyDump>) -> Outcome {
        Outcome {
            reply,
            keys,
            checked: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether the server's `reply` to `command` says what this entry's
    /// does (see [`crate::unordered::replies_agree`]).
    pub(crate) fn agrees(
        &self,
        command: &harness::gate::Command,
        reply: &harness::gate::Frame,
    ) -> bool {
        self.reply
            .as_ref()
            .is_some_and(|r| crate::unordered::replies_agree(command, r, reply))
    }

    /// How `reply` (to `command`) and `keys` (what the server did for the
    /// same input in the same state) differ from this entry, in words;
    /// `None`: they agree. `keys` is `None` when the server's keys after
    /// could not be read exactly (then only the reply is compared).
    pub(crate) fn differs(
        &self,
        reply: Option<(&harness::gate::Command, &harness::gate::Frame)>,
        keys: Option<&[KeyDump]>,
    ) -> Option<String> {
        let short = |f: Option<&harness::gate::Frame>| {
            f.map_or("no reply".to_string(), |f| {
                let text = String::from_utf8_lossy(f.as_bytes())
                    .escape_debug()
                    .to_string();
                text.chars().take(120).collect()
            })
        };
        let agree = match reply {
            Some((command, reply)) => self.agrees(command, reply),
            None => self.reply.is_none(),
        };
        if !agree {
            let reply = reply.map(|(_, r)| r);
            return Some(format!(
                "the cache held the reply \"{}\", the server answered \"{}\"",
                short(self.reply.as_ref()),
                short(reply)
            ));
        }
        match keys {
            Some(keys) if keyspace_of(keys) != keyspace_of(&self.keys) => Some(format!(
                "the same reply, but the keys after differ: the cache held {} keys, the server {}",
                self.keys.len(),
                keys.len()
            )),
            _ => None,
        }
    }
}

/// The transition cache shared by every skew and world of an exploration
/// (issue 12): server state, time and input bytes to the server's reply and
/// keys after. Only outcomes read back from a server holding nothing but
/// the prefix's keys are put in it.
#[derive(Default)]
pub(crate) struct TransitionCache {
    map: std::sync::Mutex<std::collections::HashMap<CacheKey, std::sync::Arc<Outcome>>>,
    /// The seed of the sample of entries checked against the server again.
    check_seed: u64,
    /// One entry in this many is checked (0: none).
    check_one_in: u64,
    /// The guess of the command an operation sends next, by what the store
    /// was given (see [`TransitionCache::guess`]).
    guesses: std::sync::Mutex<std::collections::HashMap<GuessKey, Guess>>,
    /// What the store did next, by what it was given, its clock included
    /// (see [`TransitionCache::behaviour`]).
    behaviours: std::sync::Mutex<std::collections::HashMap<BehaviourKey, Behaviour>>,
}

/// What a store is given before its operation's next event: the instance,
/// the request, the replies so far and the instance's clock.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BehaviourKey {
    /// The instance, request and replies so far.
    pub given: GuessKey,
    /// The instance's clock when the operation was invoked.
    pub clock_ms: i64,
}

/// What an operation did next: sent a command, or answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// Its next command.
    Send(harness::gate::Command),
    /// Its answer.
    Answer(Result<harness::contract::Reply, harness::contract::StoreError>),
}

/// A [`Next`] recorded, whether a process kept on trial did it, and
/// whether the store did otherwise since (then it is never used).
#[derive(Debug, Clone)]
struct Behaviour {
    next: Next,
    on_trial: bool,
    varies: bool,
    /// The store, run again given the same, did the same (not both runs
    /// on processes kept on trial): a key of the sample is answered from
    /// the record from then on.
    checked: bool,
}

/// What a store is given before it sends an operation's next command,
/// except its clock: the instance, the request and the replies so far.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct GuessKey {
    /// The instance.
    pub instance: usize,
    /// The request, as JSON text.
    pub request: String,
    /// The commands delivered so far with their replies.
    pub delivered: Vec<(harness::gate::Command, harness::gate::Frame)>,
}

/// The command last seen for a [`GuessKey`], and whether it ever changed.
#[derive(Debug, Clone)]
struct Guess {
    command: harness::gate::Command,
    /// Another clock (or anything else) made the store send another
    /// command: guessing for this key is given up.
    varies: bool,
}

impl TransitionCache {
    /// An empty cache that has one entry in `one_in` (a sample seeded with
    /// `seed`, the same whatever the threads) checked against the server
    /// again when it is next used (0: none).
    pub(crate) fn checking(seed: u64, one_in: u64) -> TransitionCache {
        TransitionCache {
            check_seed: seed,
            check_one_in: one_in,
            ..TransitionCache::default()
        }
    }

    /// Whether the entry `outcome` of `input` on the server holding `keys`
    /// at `now` is in the seeded sample and not yet checked: the server
    /// itself must then run that input again and agree with it.
    fn sampled(&self, keys: &[KeyDump], now: i64, input: &Input, outcome: &Outcome) -> bool {
        if self.check_one_in == 0 || outcome.checked.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        // DefaultHasher::new() has fixed keys: the same sample every run.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.check_seed.hash(&mut h);
        for k in keys {
            k.id.hash(&mut h);
        }
        now.hash(&mut h);
        input.hash(&mut h);
        h.finish().is_multiple_of(self.check_one_in)
    }

    /// Whether `outcome` would be checked now (nothing is claimed: the
    /// step that sends the input to the server claims it).
    pub(crate) fn would_check(
        &self,
        keys: &[KeyDump],
        now: i64,
        input: &Input,
        outcome: &Outcome,
    ) -> bool {
        self.sampled(keys, now, input, outcome)
    }

    /// Claims the check of `outcome` if it is in the sample and unchecked:
    /// `true` once per entry, for the step that then compares it with what
    /// the server does.
    pub(crate) fn claim_check(
        &self,
        keys: &[KeyDump],
        now: i64,
        input: &Input,
        outcome: &Outcome,
    ) -> bool {
        self.sampled(keys, now, input, outcome)
            && !outcome
                .checked
                .swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// The outcome of `input` on the server holding `keys` at `now`, if
    /// one was recorded.
    pub(crate) fn get(
        &self,
        keys: &[KeyDump],
        now: i64,
        input: &Input,
    ) -> Option<std::sync::Arc<Outcome>> {
        let key = CacheKey {
            keys: keyspace_of(keys),
            now,
            input: input.clone(),
        };
        self.map.lock().ok()?.get(&key).cloned()
    }

    /// Records the outcome of `input` on the server holding `keys` at `now`.
    pub(crate) fn put(&self, keys: &[KeyDump], now: i64, input: Input, outcome: Outcome) {
        let key = CacheKey {
            keys: keyspace_of(keys),
            now,
            input,
        };
        if let Ok(mut map) = self.map.lock() {
            map.entry(key)
                .or_insert_with(|| std::sync::Arc::new(outcome));
        }
    }

    /// The command the store sent last time it was given `key` (with any
    /// clock), unless it has sent different ones. Only a guess: the gate
    /// answers it only if the store sends exactly these bytes.
    pub(crate) fn guess(&self, key: &GuessKey) -> Option<harness::gate::Command> {
        let guesses = self.guesses.lock().ok()?;
        guesses
            .get(key)
            .filter(|g| !g.varies)
            .map(|g| g.command.clone())
    }

    /// Records that the store, given `key`, sent `command`.
    pub(crate) fn saw(&self, key: GuessKey, command: &harness::gate::Command) {
        if let Ok(mut guesses) = self.guesses.lock() {
            let g = guesses.entry(key).or_insert_with(|| Guess {
                command: command.clone(),
                varies: false,
            });
            if g.command != *command {
                g.varies = true;
            }
        }
    }

    /// What the store did next last time it was given `key`, to be used
    /// instead of asking it: `None` if nothing is recorded, if a process
    /// kept on trial recorded it and such processes are no longer
    /// `trusted`, or if `key` is in the seeded sample and the store has
    /// not yet been run on it again (what it does then is compared with
    /// the record, [`TransitionCache::behaved`]), or if the store did
    /// otherwise since (its answer is not a function of what it is given:
    /// a slot name drawn at random, say; then every such step runs the
    /// store, as before the cache, and each run is one of its possible
    /// answers).
    ///
    /// A key of the sample is checked by one more run, as a transition of
    /// the sample is ([`TransitionCache::claim_check`]): running the store
    /// at each visit of it forever checked nothing more of a store that
    /// agreed, and cost a store of many commands an operation (one key a
    /// command) a run of the store at a third of its operations.
    pub(crate) fn behaviour(&self, key: &BehaviourKey, trusted: bool) -> Option<Next> {
        if self.check_one_in == 0 {
            return None;
        }
        let behaviours = self.behaviours.lock().ok()?;
        behaviours
            .get(key)
            .filter(|b| !b.varies && (trusted || !b.on_trial))
            // Hashed only for a record not yet checked.
            .filter(|b| b.checked || !self.behaviour_sampled(key))
            .map(|b| b.next.clone())
    }

    /// Records that the store, given `key`, did `next` (`on_trial`: on a
    /// process kept on trial). A record it contradicts is used no more;
    /// how they differ, in words, with whether a process on trial did
    /// either (what it remembered may be why).
    /// The difference comes with whether a process on trial did either.
    pub(crate) fn behaved(
        &self,
        key: BehaviourKey,
        next: Next,
        on_trial: bool,
    ) -> Option<(String, bool)> {
        let mut behaviours = self.behaviours.lock().ok()?;
        match behaviours.get_mut(&key) {
            None => {
                behaviours.insert(
                    key,
                    Behaviour {
                        next,
                        on_trial,
                        varies: false,
                        checked: false,
                    },
                );
                None
            }
            Some(b) if b.next == next => {
                b.on_trial &= on_trial;
                // Agreeing with the record is its check, unless both runs
                // were on processes kept on trial (their memory may be why).
                b.checked |= !b.on_trial;
                None
            }
            Some(b) if b.on_trial && !on_trial => {
                // What a fresh process did is the store's behaviour.
                let was = std::mem::replace(&mut b.next, next.clone());
                b.on_trial = false;
                b.varies = true;
                Some((
                    format!(
                        "{} where a process kept on trial did {}",
                        describe(&next),
                        describe(&was)
                    ),
                    true,
                ))
            }
            Some(b) => {
                b.varies = true;
                Some((
                    format!(
                        "{} where it did {} before",
                        describe(&next),
                        describe(&b.next)
                    ),
                    on_trial || b.on_trial,
                ))
            }
        }
    }

    /// Whether `key`'s steps are in the seeded sample that runs the store
    /// again to check its record.
    fn behaviour_sampled(&self, key: &BehaviourKey) -> bool {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.check_seed, "behaviour").hash(&mut h);
        key.hash(&mut h);
        h.finish().is_multiple_of(self.check_one_in)
    }

    /// How many entries it holds.
    pub(crate) fn len(&self) -> usize {
        self.map.lock().map_or(0, |m| m.len())
    }
}

/// What an operation did, in words.
fn describe(next: &Next) -> String {
    match next {
        Next::Send(command) => format!("sent `{command}`"),
        Next::Answer(out) => format!("answered {out:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::gate::Command;

    fn key(n: usize) -> BehaviourKey {
        BehaviourKey {
            given: GuessKey {
                instance: 0,
                request: format!("{{\"n\":{n}}}"),
                delivered: Vec::new(),
            },
            clock_ms: 0,
        }
    }

    fn send(arg: &str) -> Next {
        Next::Send(Command::new(["GET", arg]))
    }

    /// With every key in the sample (one in one): a record is used only
    /// once the store, run again, agreed with it; a run that disagrees
    /// makes the key run the store from then on; two runs both on
    /// processes kept on trial check nothing.
    #[test]
    fn a_sampled_behaviour_is_answered_from_the_record_once_a_second_run_agreed() {
        let cache = TransitionCache::checking(7, 1);
        let (agrees, differs, on_trial) = (key(1), key(2), key(3));
        for k in [&agrees, &differs, &on_trial] {
            assert!(cache
                .behaved(k.clone(), send("a"), k == &on_trial)
                .is_none());
            assert_eq!(cache.behaviour(k, true), None, "unchecked: the store runs");
        }
        assert!(cache.behaved(agrees.clone(), send("a"), false).is_none());
        assert_eq!(cache.behaviour(&agrees, true), Some(send("a")));

        assert!(cache.behaved(differs.clone(), send("b"), false).is_some());
        assert_eq!(cache.behaviour(&differs, true), None);
        assert!(cache.behaved(differs.clone(), send("a"), false).is_none());
        assert_eq!(
            cache.behaviour(&differs, true),
            None,
            "it varies: always run"
        );

        assert!(cache.behaved(on_trial.clone(), send("a"), true).is_none());
        assert_eq!(cache.behaviour(&on_trial, true), None, "both on trial");
        assert!(cache.behaved(on_trial.clone(), send("a"), false).is_none());
        assert_eq!(cache.behaviour(&on_trial, true), Some(send("a")));
    }

    /// Out of the sample a record is used at once, and never with no
    /// sample at all (one in zero: nothing is taken from a record).
    #[test]
    fn an_unsampled_behaviour_is_answered_from_its_first_record() {
        let cache = TransitionCache::checking(7, u64::MAX);
        let k = key(1);
        cache.behaved(k.clone(), send("a"), false);
        assert_eq!(cache.behaviour(&k, true), Some(send("a")));
        let off = TransitionCache::checking(7, 0);
        off.behaved(k.clone(), send("a"), false);
        off.behaved(k.clone(), send("a"), false);
        assert_eq!(off.behaviour(&k, true), None);
    }
}
