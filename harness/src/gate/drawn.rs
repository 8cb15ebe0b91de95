//! Values a store draws at random, told apart from the rest of its commands.
//!
//! A store may put a value it draws (a uuid per operation, a token per
//! process) into its commands. When an operation runs again from the same
//! state to be continued (the explorer replays its first commands from a
//! recording), the draw differs, and the command with it. Byte for byte
//! that is a store sending other commands on a re-run; up to a renaming of
//! the drawn value it is the same command. A [`Renaming`] is that renaming
//! for one run: the store's value ↔ the recorded one. Commands are renamed
//! on their way in (the server and the recording only ever see the recorded
//! value) and replies on their way out (the store only ever sees its own).
//!
//! What counts as drawn ([`drawn_like`]): a whole token (a maximal run of
//! ASCII letters, digits, `-` and `_`) of at least [`MIN_DRAWN`] bytes that
//! is not a number, differing in one place from a token of the same length.
//! Same length, so that a renamed RESP frame keeps every length prefix; not
//! a number, so that a time or a counter read from the process's own clock
//! or memory is never taken for a draw. A store is assumed to treat what it
//! draws as opaque: compared for equality, never ordered or parsed.

use super::Command;

/// The fewest bytes a drawn value has: a random token this short (a few
/// bytes of hex) could stand for something else by chance.
pub const MIN_DRAWN: usize = 10;

/// Whether `b` belongs in a token (see the module's doc).
fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Whether `token` looks like a value drawn at random: long enough, made of
/// token bytes only, and not a number.
pub fn drawn_like(token: &[u8]) -> bool {
    token.len() >= MIN_DRAWN
        && token.iter().all(|b| token_byte(*b))
        && !token.iter().all(|b| b.is_ascii_digit() || *b == b'-')
}

/// The tokens of `bytes` as (start, end) spans, in order.
pub fn tokens(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !token_byte(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && token_byte(bytes[i]) {
            i += 1;
        }
        out.push((start, i));
    }
    out
}

/// Replaces every occurrence of `from` in `bytes` by `to` (same length).
fn replace_all(bytes: &mut [u8], from: &[u8], to: &[u8]) -> bool {
    debug_assert_eq!(from.len(), to.len());
    if from.is_empty() || bytes.len() < from.len() {
        return false;
    }
    let mut changed = false;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            changed = true;
            i += from.len();
        } else {
            i += 1;
        }
    }
    changed
}

/// One run's renaming of drawn values: each pair is (the store's value,
/// the recorded value), both [`drawn_like`], of one length; a bijection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Renaming {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Renaming {
    /// No value renamed yet.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs (store's, recorded), in the order they were learnt.
    pub fn pairs(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.pairs
    }

    /// `command` as the recording spells it: every value of the store's
    /// replaced by the recorded one.
    pub fn to_recorded(&self, command: &Command) -> Command {
        let mut out = command.clone();
        for arg in &mut out.args {
            for (ours, recorded) in &self.pairs {
                replace_all(arg, ours, recorded);
            }
        }
        out
    }

    /// Reply bytes as the store must see them: every recorded value
    /// replaced by the store's. Lengths are kept, so a RESP frame stays
    /// well formed.
    pub fn to_store(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for (ours, recorded) in &self.pairs {
            replace_all(&mut out, recorded, ours);
        }
        out
    }

    /// Extends the renaming so that `got` (the store's command) renamed is
    /// `expected` (the recorded one), if they differ only in drawn values:
    /// same name and arity, and in every argument that differs, whole
    /// tokens at the same places, each pair [`drawn_like`] and consistent
    /// with the pairs learnt so far. Returns whether they now agree; on
    /// `false` the renaming is unchanged.
    pub fn unify(&mut self, expected: &Command, got: &Command) -> bool {
        let renamed = self.to_recorded(got);
        if renamed == *expected {
            return true;
        }
        if renamed.args.len() != expected.args.len()
            || !expected.args.first().is_some_and(|n| {
                renamed
                    .args
                    .first()
                    .is_some_and(|m| m.eq_ignore_ascii_case(n))
            })
        {
            return false;
        }
        let mut learnt = self.clone();
        for (e, g) in expected.args.iter().zip(&renamed.args) {
            if e == g {
                continue;
            }
            if e.len() != g.len() {
                return false;
            }
            let (te, tg) = (tokens(e), tokens(g));
            if te != tg {
                return false;
            }
            for (s, t) in te {
                let (recorded, ours) = (&e[s..t], &g[s..t]);
                if recorded == ours {
                    continue;
                }
                if !drawn_like(recorded) || !drawn_like(ours) || !learnt.admits(ours, recorded) {
                    return false;
                }
                if !learnt.pairs.iter().any(|(o, _)| o == ours) {
                    learnt.pairs.push((ours.to_vec(), recorded.to_vec()));
                }
            }
        }
        if learnt.to_recorded(got) != *expected {
            return false;
        }
        *self = learnt;
        true
    }

    /// Whether the pair (ours, recorded) keeps the renaming a bijection.
    fn admits(&self, ours: &[u8], recorded: &[u8]) -> bool {
        // No chains either (a value of the store's that is some recorded
        // one): renaming twice must change nothing.
        self.pairs.iter().all(|(o, r)| {
            (o.as_slice() == ours) == (r.as_slice() == recorded)
                && o.as_slice() != recorded
                && r.as_slice() != ours
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: &str = "3f2a9c1e-7b44-4d0e-9a51-0c6e2b7d8f10";
    const U2: &str = "b81d04a7-22c9-4f3a-8e6b-5d9c1a0f7e23";

    #[test]
    fn a_fresh_uuid_in_a_key_and_an_argument_is_renamed_both_ways() {
        let recorded = Command::new(["SET", &format!("lock:{{t}}:{U1}"), U1, "NX", "PX", "50"]);
        let got = Command::new(["SET", &format!("lock:{{t}}:{U2}"), U2, "NX", "PX", "50"]);
        let mut r = Renaming::default();
        assert!(r.unify(&recorded, &got));
        assert_eq!(r.to_recorded(&got), recorded);
        let reply = format!("${}\r\n{U1}\r\n", U1.len());
        assert_eq!(
            r.to_store(reply.as_bytes()),
            format!("${}\r\n{U2}\r\n", U2.len()).into_bytes()
        );
        // Learnt once, it renames later commands with no unification.
        let later = Command::new(["DEL", &format!("lock:{{t}}:{U2}")]);
        assert_eq!(
            r.to_recorded(&later),
            Command::new(["DEL", &format!("lock:{{t}}:{U1}")])
        );
    }

    #[test]
    fn numbers_short_tokens_and_other_shapes_are_never_renamed() {
        let mut r = Renaming::default();
        // A time: the store's clock, not a draw.
        assert!(!r.unify(
            &Command::new(["SET", "k", "1733480000123"]),
            &Command::new(["SET", "k", "1733480000456"])
        ));
        // Too short to be a draw.
        assert!(!r.unify(
            &Command::new(["SET", "k", "abc1"]),
            &Command::new(["SET", "k", "abc2"])
        ));
        // Another command, another arity, another length.
        assert!(!r.unify(
            &Command::new(["SET", "k", U1]),
            &Command::new(["GET", "k", U2])
        ));
        assert!(!r.unify(
            &Command::new(["SET", "k", U1]),
            &Command::new(["SET", "k", U2, "NX"])
        ));
        assert!(!r.unify(
            &Command::new(["SET", "k", U1]),
            &Command::new(["SET", "k", "short-token-xyz"])
        ));
        // A drawn value and another change in one command.
        assert!(!r.unify(
            &Command::new(["SET", "k", &format!("{U1}:1")]),
            &Command::new(["SET", "k", &format!("{U2}:2")])
        ));
        assert!(r.is_empty());
    }

    #[test]
    fn the_renaming_stays_a_bijection() {
        let mut r = Renaming::default();
        assert!(r.unify(
            &Command::new(["SET", "a", U1]),
            &Command::new(["SET", "a", U2])
        ));
        // The store's U2 is the recorded U1: it cannot also be another.
        let u3 = "0c6e2b7d-8f10-4d0e-9a51-3f2a9c1e7b44";
        assert!(!r.unify(
            &Command::new(["SET", "b", u3]),
            &Command::new(["SET", "b", U2])
        ));
        // Nor can another value of the store's be the recorded U1.
        assert!(!r.unify(
            &Command::new(["SET", "b", U1]),
            &Command::new(["SET", "b", u3])
        ));
        assert_eq!(r.pairs().len(), 1);
    }

    #[test]
    fn drawn_values_look_random() {
        assert!(drawn_like(U1.as_bytes()));
        assert!(drawn_like(b"9f86d081884c7d65"));
        assert!(!drawn_like(b"2000000001379"));
        assert!(!drawn_like(b"short"));
        assert!(!drawn_like(b"with space"));
        assert_eq!(tokens(b"a:{bc}-d e"), vec![(0, 1), (3, 5), (6, 8), (9, 10)]);
    }
}
