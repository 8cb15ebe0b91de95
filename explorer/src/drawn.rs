//! Values the store draws at random, learnt so that states differing only
//! by them are one.
//!
//! A store that writes a uuid per operation writes a new one each time an
//! operation runs: two paths to what is the same state leave different
//! bytes on the server. Byte for byte they are two states, and a search of
//! such a store finds a state per draw. Here such values are learnt, and the
//! fingerprint reads each as "the n-th drawn value met" instead of its bytes
//! ([`Canon`]): states equal up to a renaming of drawn values are one.
//!
//! A value is drawn when two runs of one operation, from one state with one
//! clock and the same replies, sent it at one place and something else
//! there ([`harness::gate::drawn`] says what can differ: whole tokens of ten
//! bytes or more that are not numbers). Learnt two ways: the first time an
//! operation sends a command at a given place of its run (its [`Slot`]), the
//! run is stopped before the command reaches the server and run again (a
//! probe): a place where the two runs differ draws; and a replay that
//! renamed a value (a command continued from the middle drew again) shows
//! the recorded one was drawn. Every value later sent at a drawing place is
//! drawn too.
//!
//! Sound for a store that treats what it draws as opaque (compared for
//! equality only); a seeded sample of the merges it makes is checked one
//! step ahead like every other reduction ([`crate::search`]).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use harness::gate::drawn::{drawn_like, tokens, Renaming};
use harness::gate::Command;

use model::explore::Op;

/// Where in an operation's run a command is sent: the operation, how many
/// commands it sent before, the command's name and arity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Slot {
    op: Op,
    index: usize,
    name: String,
    arity: usize,
}

impl Slot {
    /// The slot of `command`, sent by `op` after `index` others.
    pub(crate) fn of(op: Op, index: usize, command: &Command) -> Slot {
        Slot {
            op,
            index,
            name: command.name(),
            arity: command.args.len(),
        }
    }
}

/// What a slot is known to send.
#[derive(Debug, Clone)]
enum Known {
    /// Probed once: the command the first run sent.
    Probing(Command),
    /// Tokens drawn at these places: (argument, token within it).
    Draws(Vec<(usize, usize)>),
    /// The same bytes on both runs, or a difference that is no draw.
    Settled,
}

/// What the world does with a command held at a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// First seen here: stop this run before the command is sent and run
    /// the operation again.
    Again,
    /// Go on.
    Go,
}

/// The values learnt as drawn, shared by the states of one exploration
/// (read by their fingerprints).
#[derive(Debug, Default)]
pub(crate) struct Values {
    set: RwLock<HashSet<Vec<u8>>>,
    /// The merges a renaming made went on differently: read no value as
    /// drawn any more.
    off: std::sync::atomic::AtomicBool,
}

impl Values {
    /// How many values were learnt.
    pub(crate) fn len(&self) -> usize {
        self.set
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    fn add(&self, value: &[u8]) {
        if !drawn_like(value) {
            return;
        }
        let mut set = self.set.write().unwrap_or_else(PoisonError::into_inner);
        if !set.contains(value) {
            set.insert(value.to_vec());
        }
    }

    /// Stops reading values as drawn (a merge went on differently).
    pub(crate) fn turn_off(&self) {
        self.off.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether values are read as drawn.
    pub(crate) fn on(&self) -> bool {
        !self.off.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The learning of one exploration: slots and values.
#[derive(Debug, Default)]
pub(crate) struct Drawn {
    slots: Mutex<HashMap<Slot, Known>>,
    values: Arc<Values>,
}

impl Drawn {
    /// The values, for the states' fingerprints.
    pub(crate) fn values(&self) -> Arc<Values> {
        self.values.clone()
    }

    /// Instance's operation `op`, after `index` commands, sends `command`
    /// (as the server will see it): whether to probe, and the values it
    /// draws learnt.
    /// Without `probe`, a slot first seen is settled as it is (the store's
    /// next runs are not compared).
    pub(crate) fn held(&self, op: Op, index: usize, command: &Command, probe: bool) -> Probe {
        let slot = Slot::of(op, index, command);
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let known = match slots.get(&slot) {
            None if !probe => Known::Settled,
            None => {
                slots.insert(slot, Known::Probing(command.clone()));
                return Probe::Again;
            }
            Some(Known::Probing(first)) => {
                let mut renaming = Renaming::default();
                if first == command || !renaming.unify(first, command) {
                    Known::Settled
                } else {
                    Known::Draws(places(command, &renaming))
                }
            }
            Some(known) => known.clone(),
        };
        if let Known::Draws(places) = &known {
            for &(arg, token) in places {
                if let Some(value) = token_at(command, arg, token) {
                    self.values.add(value);
                }
            }
        }
        slots.insert(slot, known);
        Probe::Go
    }

    /// A replay renamed these (store's, recorded) pairs: the recorded ones
    /// were drawn.
    pub(crate) fn renamed(&self, pairs: &[(Vec<u8>, Vec<u8>)]) {
        for (_, recorded) in pairs {
            self.values.add(recorded);
        }
    }
}

/// The places (argument, token) of `command` that hold a value of the
/// store's in `renaming`.
fn places(command: &Command, renaming: &Renaming) -> Vec<(usize, usize)> {
    let ours: HashSet<&[u8]> = renaming.pairs().iter().map(|(o, _)| o.as_slice()).collect();
    let mut out = Vec::new();
    for (a, arg) in command.args.iter().enumerate() {
        for (t, (s, e)) in tokens(arg).into_iter().enumerate() {
            if ours.contains(&arg[s..e]) {
                out.push((a, t));
            }
        }
    }
    out
}

fn token_at(command: &Command, arg: usize, token: usize) -> Option<&[u8]> {
    let arg = command.args.get(arg)?;
    let (s, e) = *tokens(arg).get(token)?;
    Some(&arg[s..e])
}

/// A fingerprint's reading of drawn values: each the index of its first
/// appearance in the state (its bytes do not matter, only which are the
/// same).
pub(crate) struct Canon<'a> {
    values: Option<std::sync::RwLockReadGuard<'a, HashSet<Vec<u8>>>>,
    names: HashMap<Vec<u8>, u32>,
}

impl<'a> Canon<'a> {
    /// Reads the values of `values` as drawn (none: every byte as it is).
    pub(crate) fn new(values: Option<&'a Values>) -> Canon<'a> {
        let values = values
            .filter(|v| v.on())
            .map(|v| v.set.read().unwrap_or_else(PoisonError::into_inner))
            .filter(|set| !set.is_empty());
        Canon {
            values,
            names: HashMap::new(),
        }
    }

    /// Whether it reads no value as drawn: every byte is hashed as it is.
    pub(crate) fn reads_nothing(&self) -> bool {
        self.values.is_none()
    }

    /// Hashes `bytes`: each drawn token as its index, every stretch
    /// between them with `literal`.
    pub(crate) fn hash<H: Hasher>(
        &mut self,
        bytes: &[u8],
        h: &mut H,
        literal: &mut dyn FnMut(&[u8], &mut H),
    ) {
        let Some(set) = &self.values else {
            literal(bytes, h);
            return;
        };
        let mut at = 0;
        let mut pieces = 0usize;
        for (s, e) in tokens(bytes) {
            let token = &bytes[s..e];
            if e - s < harness::gate::drawn::MIN_DRAWN || !set.contains(token) {
                continue;
            }
            if s > at {
                literal(&bytes[at..s], h);
            }
            let next = self.names.len() as u32;
            let index = *self.names.entry(token.to_vec()).or_insert(next);
            0xD7u8.hash(h);
            index.hash(h);
            pieces += 1;
            at = e;
        }
        if pieces == 0 {
            literal(bytes, h);
            return;
        }
        if at < bytes.len() {
            literal(&bytes[at..], h);
        }
        pieces.hash(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: &str = "3f2a9c1e-7b44-4d0e-9a51-0c6e2b7d8f10";
    const U2: &str = "b81d04a7-22c9-4f3a-8e6b-5d9c1a0f7e23";

    fn print(values: Option<&Values>, items: &[&str]) -> u64 {
        let mut canon = Canon::new(values);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for item in items {
            canon.hash(item.as_bytes(), &mut h, &mut |b, h| b.hash(h));
        }
        h.finish()
    }

    #[test]
    fn a_probe_learns_where_a_slot_draws_and_every_value_sent_there_later() {
        let drawn = Drawn::default();
        let cmd = |u: &str| Command::new(["EVALSHA", "abc", "1", "k", "holder", u]);
        assert_eq!(drawn.held(Op::Take, 0, &cmd(U1), true), Probe::Again);
        assert_eq!(drawn.held(Op::Take, 0, &cmd(U2), true), Probe::Go);
        assert_eq!(drawn.values.len(), 1);
        let u3 = "0c6e2b7d-8f10-4d0e-9a51-3f2a9c1e7b44";
        assert_eq!(drawn.held(Op::Take, 0, &cmd(u3), true), Probe::Go);
        assert_eq!(drawn.values.len(), 2);
        // A slot that sends the same bytes twice draws nothing.
        let same = Command::new(["GET", "k"]);
        assert_eq!(drawn.held(Op::Read, 0, &same, true), Probe::Again);
        assert_eq!(drawn.held(Op::Read, 0, &same, true), Probe::Go);
        assert_eq!(drawn.values.len(), 2);
    }

    #[test]
    fn states_equal_up_to_a_renaming_of_drawn_values_print_alike_and_no_others() {
        let values = Values::default();
        values.add(U1.as_bytes());
        values.add(U2.as_bytes());
        let v = Some(&values);
        let a = print(v, &[&format!("lock:{U1}"), U1, "x"]);
        let b = print(v, &[&format!("lock:{U2}"), U2, "x"]);
        assert_eq!(a, b);
        // Which values are the same matters.
        let c = print(v, &[&format!("lock:{U1}"), U2, "x"]);
        assert_ne!(a, c);
        // A value never learnt is its bytes.
        let u3 = "0c6e2b7d-8f10-4d0e-9a51-3f2a9c1e7b44";
        assert_ne!(a, print(v, &[&format!("lock:{u3}"), u3, "x"]));
        // Off, every byte counts.
        values.turn_off();
        assert_ne!(print(v, &[U1]), print(v, &[U2]));
    }
}
