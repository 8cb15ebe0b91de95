//! Symmetry between instances of one clock: two states that differ only by
//! a renaming of instances whose clocks agree (their places swapped, and
//! their holder names swapped in every key, reply and belief) go on alike
//! for a store that treats a holder name as an opaque string, so the search
//! keeps one of them. The fingerprint of a state is the least over its
//! renamings ([`Symmetry::fingerprint`]).
//!
//! Why the names are distinctive: the renaming rewrites bytes the server
//! holds, so a name must not occur by chance in anything else (one letter
//! would: `a` is in every prefix). Why it is checked: a store that hashes a
//! holder, compresses it, or orders holders by name is not symmetric, and a
//! merge would be wrong for it; the search computes the successors of both
//! states of a seeded sample of the merges it makes and gives the folding up
//! (searching again without it) at the first pair that goes on differently,
//! as it does for the relative reading of times (see [`crate::search`]).

use crate::reading::logical;
use crate::state::{keys_digest, KeyDump, Logical, State};

pub(crate) use crate::state::holder;

/// What every holder name starts with; the letter after it names the instance.
const STEM: &[u8] = b"sp_inst_";

/// The renamings of a set of instances that keep every instance's clock.
#[derive(Debug, Clone, Default)]
pub(crate) struct Symmetry {
    /// Every renaming but the identity: `perm[i]` is instance i's new index.
    perms: Vec<Vec<usize>>,
}

impl Symmetry {
    /// The renamings among instances of equal skew (none when every clock
    /// differs, or when `on` is false).
    pub(crate) fn of(skews: &[i64], on: bool) -> Symmetry {
        if !on || skews.len() > 4 {
            return Symmetry::default();
        }
        let mut perms = Vec::new();
        permutations(skews.len(), &mut Vec::new(), &mut perms);
        perms.retain(|p: &Vec<usize>| {
            p.iter().enumerate().any(|(i, j)| i != *j)
                && p.iter().enumerate().all(|(i, j)| skews[i] == skews[*j])
        });
        Symmetry { perms }
    }

    /// Whether any two instances may be renamed.
    pub(crate) fn folds(&self) -> bool {
        !self.perms.is_empty()
    }

    /// The fingerprint the search dedups on: the least of the state's and
    /// its renamings' (only its own for a state no renaming can be read of).
    pub(crate) fn fingerprint(&self, state: &State) -> u64 {
        let own = state.fingerprint();
        if self.perms.is_empty() || !renamable(state) {
            return own;
        }
        self.least(state, own)
    }

    /// The fingerprint the sampled check of a renaming compares successors
    /// on: [`fingerprint`](Self::fingerprint), but an operation in flight
    /// that remembers other keys than the ones held now is read only as
    /// remembering other keys, so that such a state is renamed too (its
    /// successors and its renaming's must agree on everything else). A
    /// state the search could not fold is still a successor whose renaming
    /// must show whether the store treats holders alike.
    pub(crate) fn check_print(&self, state: &State) -> u64 {
        if self.perms.is_empty() || !items_only(state) {
            return state.fingerprint();
        }
        let now = keys_digest(&state.keys);
        let mut coarse = state.clone();
        for p in coarse.insts.iter_mut().filter_map(|i| i.pending.as_mut()) {
            if p.quiet_since.is_some_and(|d| d != now) {
                p.quiet_since = Some(REMEMBERS_OTHER_KEYS);
            }
        }
        let own = coarse.fingerprint();
        self.least(&coarse, own)
    }

    /// The least of `own` and the fingerprints of `state`'s renamings.
    fn least(&self, state: &State, own: u64) -> u64 {
        self.perms
            .iter()
            .map(|p| renamed(state, p).fingerprint())
            .fold(own, u64::min)
    }
}

/// What an operation in flight remembers in [`Symmetry::check_print`] when
/// it remembers keys other than the ones held now.
const REMEMBERS_OTHER_KEYS: u64 = 0x005e_ed0f_07e5_u64;

/// Every permutation of `0..n`, in lexicographic order.
fn permutations(n: usize, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if prefix.len() == n {
        out.push(prefix.clone());
        return;
    }
    for i in 0..n {
        if !prefix.contains(&i) {
            prefix.push(i);
            permutations(n, prefix, out);
            prefix.pop();
        }
    }
}

/// Whether a renaming of `state` can be read: every key's content is read
/// item by item (a `DUMP` may be compressed, a row is not bytes), and no
/// operation in flight remembers keys other than the ones held now (their
/// digest cannot be renamed).
fn renamable(state: &State) -> bool {
    let items = items_only(state);
    let remembers_other = state.insts.iter().any(|i| {
        i.pending
            .as_ref()
            .and_then(|p| p.quiet_since)
            .is_some_and(|d| d != keys_digest(&state.keys))
    });
    items && !remembers_other
}

/// Whether every key's content is read item by item.
fn items_only(state: &State) -> bool {
    state
        .keys
        .iter()
        .all(|k| matches!(*k.logical, Logical::Items { .. }))
}

/// `bytes` with every holder name of instance i made instance `perm[i]`'s.
fn rename_bytes(bytes: &[u8], perm: &[usize]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let mut at = 0;
    while at + STEM.len() < out.len() {
        if &out[at..at + STEM.len()] == STEM {
            let letter = out[at + STEM.len()];
            let i = letter.wrapping_sub(b'a') as usize;
            if let Some(j) = perm.get(i) {
                out[at + STEM.len()] = b'a' + *j as u8;
            }
            at += STEM.len() + 1;
        } else {
            at += 1;
        }
    }
    out
}

/// One key renamed, its content put back in the order the snapshot reads
/// it in (hash fields and set members sorted, a zset by score then member).
fn rename_key(k: &KeyDump, perm: &[usize]) -> KeyDump {
    let logical = match &*k.logical {
        Logical::Items { kind, items } => {
            let items: Vec<Vec<u8>> = items.iter().map(|x| rename_bytes(x, perm)).collect();
            if kind == "zset" {
                let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = items
                    .chunks(2)
                    .map(|c| (c[0].clone(), c.get(1).cloned().unwrap_or_default()))
                    .collect();
                let score = |s: &[u8]| {
                    std::str::from_utf8(s)
                        .ok()
                        .and_then(|t| t.parse::<f64>().ok())
                        .unwrap_or(f64::NAN)
                };
                pairs.sort_by(|a, b| score(&a.1).total_cmp(&score(&b.1)).then(a.0.cmp(&b.0)));
                Logical::Items {
                    kind: kind.clone(),
                    items: pairs.into_iter().flat_map(|(m, s)| [m, s]).collect(),
                }
            } else {
                logical(kind, items, &k.dump)
            }
        }
        other => other.clone(),
    };
    KeyDump::new(
        rename_bytes(&k.name, perm),
        Vec::new(),
        k.expire_at,
        logical,
    )
}

/// `state` with instance i put at `perm[i]` and every trace of its holder
/// name renamed: keys, replies of operations in flight, beliefs and every
/// ghost record. Only fingerprinted, never restored (a renamed `DUMP` no
/// longer matches its checksum).
pub(crate) fn renamed(state: &State, perm: &[usize]) -> State {
    let digest_before = keys_digest(&state.keys);
    // The fingerprint reads no `DUMP` (only the digest of an operation in
    // flight does, and that is the keys' own, below), no message and no
    // note: they are left out rather than copied.
    let mut keys: Vec<KeyDump> = state.keys.iter().map(|k| rename_key(k, perm)).collect();
    keys.sort_by(|a, b| a.name.cmp(&b.name));
    let digest_after = keys_digest(&keys);
    let mut insts = state.insts.clone();
    for (i, inst) in state.insts.iter().enumerate() {
        let mut inst = inst.clone();
        inst.slot = inst
            .slot
            .map(|x| String::from_utf8_lossy(&rename_bytes(x.as_bytes(), perm)).into_owned());
        if let Some(p) = inst.pending.as_mut() {
            for e in &mut p.delivered {
                e.reply = harness::gate::Frame::new(rename_bytes(e.reply.as_bytes(), perm));
            }
            if p.quiet_since == Some(digest_before) {
                p.quiet_since = Some(digest_after);
            }
        }
        insts[perm[i]] = inst;
    }
    let mut s = State {
        now: state.now,
        full: state.full,
        keys,
        insts,
        ghost: state.ghost.clone(),
        queue: state.queue.clone(),
        rate: state.rate.clone(),
        violations: state
            .violations
            .iter()
            .map(|(p, _)| (*p, String::new()))
            .collect(),
        followed_past: state.followed_past.clone(),
        zombie_renew_reached: state.zombie_renew_reached,
        zombie_release_reached: state.zombie_release_reached,
        unacked_until: state.unacked_until,
        unsupported: state
            .unsupported
            .iter()
            .map(|(o, _)| (*o, String::new()))
            .collect(),
        harness_error: state.harness_error.as_ref().map(|_| String::new()),
        note: Default::default(),
        absolute_times: state.absolute_times,
        lost_reply: state.lost_reply,
        steps: state.steps,
        drawn: state.drawn.clone(),
    };
    let to = |i: usize| perm.get(i).copied().unwrap_or(i);
    for g in &mut s.ghost {
        g.instance = to(g.instance);
    }
    let q = &mut s.queue;
    for c in &mut q.claims {
        c.instance = to(c.instance);
    }
    for x in [&mut q.last_claim, &mut q.last_expiry_complete]
        .into_iter()
        .flatten()
    {
        x.0 = to(x.0);
    }
    let r = &mut s.rate;
    for x in &mut r.slots {
        x.instance = to(x.instance);
        x.slot = String::from_utf8_lossy(&rename_bytes(x.slot.as_bytes(), perm)).into_owned();
    }
    for x in &mut r.hits {
        x.instance = to(x.instance);
    }
    for x in &mut r.pauses {
        x.instance = to(x.instance);
    }
    for x in &mut r.maybe_pauses {
        x.0 = to(x.0);
    }
    for x in [&mut r.last_acquire, &mut r.last_hit].into_iter().flatten() {
        x.0 = to(x.0);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_instances_of_one_clock_are_renamed() {
        assert!(!Symmetry::of(&[0, 500], true).folds());
        assert_eq!(Symmetry::of(&[0, 0], true).perms, vec![vec![1, 0]]);
        assert_eq!(Symmetry::of(&[0, 0, 500], true).perms, vec![vec![1, 0, 2]]);
        assert_eq!(Symmetry::of(&[0, 0, 0], true).perms.len(), 5);
        assert!(!Symmetry::of(&[0, 0], false).folds());
    }

    #[test]
    fn holder_names_are_swapped_wherever_they_are_and_nothing_else_is() {
        let perm = [1, 0, 2];
        assert_eq!(
            rename_bytes(b"sp:x:sp_inst_a|sp_inst_b|sp_inst_c|a b", &perm),
            b"sp:x:sp_inst_b|sp_inst_a|sp_inst_c|a b".to_vec()
        );
        // A stem at the very end, or followed by no instance's letter, stays.
        assert_eq!(rename_bytes(b"sp_inst_", &perm), b"sp_inst_".to_vec());
        assert_eq!(rename_bytes(b"sp_inst_z", &perm), b"sp_inst_z".to_vec());
    }

    #[test]
    fn a_renamed_set_and_zset_are_read_in_the_snapshots_order() {
        let key = |kind: &str, items: &[&[u8]]| {
            KeyDump::new(
                b"k".to_vec(),
                vec![],
                None,
                Logical::Items {
                    kind: kind.into(),
                    items: items.iter().map(|x| x.to_vec()).collect(),
                },
            )
        };
        let items = |k: KeyDump| match &*k.logical {
            Logical::Items { items, .. } => items.clone(),
            _ => unreachable!(),
        };
        let set = rename_key(&key("set", &[b"sp_inst_a", b"sp_inst_c"]), &[2, 1, 0]);
        assert_eq!(
            items(set),
            vec![b"sp_inst_a".to_vec(), b"sp_inst_c".to_vec()]
        );
        let zset = rename_key(
            &key(
                "zset",
                &[b"sp_inst_a", b"5", b"sp_inst_b", b"5", b"x", b"10"],
            ),
            &[1, 0],
        );
        assert_eq!(
            items(zset),
            [&b"sp_inst_a"[..], b"5", b"sp_inst_b", b"5", b"x", b"10"]
                .iter()
                .map(|x| x.to_vec())
                .collect::<Vec<_>>()
        );
    }
}
