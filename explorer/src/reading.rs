//! How the fingerprint reads bytes: a key's content item by item, times
//! near now relative to it (alone or inside text, at a fixed width, or a
//! `TIME` reply's seconds and microseconds), every other run of bytes as it
//! is. Pure functions of the bytes and of now, no server, no state.

use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::drawn::Canon;

/// A key's content as the fingerprint reads it: exactly what the server
/// holds, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Logical {
    /// A key of a type read item by item (`kind`: string, hash, list, set,
    /// zset), its items in a canonical order (hash fields and set members
    /// sorted, a zset as member, score pairs in rank order, a list in
    /// order), each the exact bytes the server holds.
    Items {
        /// The key's type, as `TYPE` names it.
        kind: String,
        /// Its content.
        items: Vec<Vec<u8>>,
    },
    /// A key no item reading covers whole (a stream, with its entries,
    /// last id and consumer groups; a module's type): its `DUMP` bytes.
    /// Hashed as they are, never read relative to now.
    Exact(Vec<u8>),
    /// Structured content (the lease rows of a store with no Redis wire).
    Json(Value),
}

/// Times within this distance of now are read relative to it.
const NEAR_NOW_MS: i64 = 10_000_000_000;

/// The fingerprint's view of a time: relative to now, with the far past
/// collapsed (it can no longer matter, whatever the skew).
pub(crate) fn rel(t: i64, now: i64, far_ms: i64) -> i64 {
    let d = t - now;
    if d < -far_ms {
        i64::MIN
    } else {
        d
    }
}

fn hash_value<H: Hasher>(v: &Value, now: i64, far_ms: i64, h: &mut H) {
    match v {
        Value::String(s) => match canonical_int(s.as_bytes()) {
            Some(n) if (n - now).abs() < NEAR_NOW_MS => {
                1u8.hash(h);
                rel(n, now, far_ms).hash(h);
            }
            _ => {
                2u8.hash(h);
                s.hash(h);
            }
        },
        Value::Number(n) => match n.as_i64() {
            Some(n) if (n - now).abs() < NEAR_NOW_MS => {
                1u8.hash(h);
                rel(n, now, far_ms).hash(h);
            }
            _ => {
                3u8.hash(h);
                n.to_string().hash(h);
            }
        },
        Value::Array(a) => {
            4u8.hash(h);
            a.len().hash(h);
            for x in a {
                hash_value(x, now, far_ms, h);
            }
        }
        Value::Object(o) => {
            5u8.hash(h);
            for (k, x) in o {
                k.hash(h);
                hash_value(x, now, far_ms, h);
            }
        }
        other => other.to_string().hash(h),
    }
}

/// The instant (ms) a `TIME` reply spells (an array of two bulk strings,
/// seconds and microseconds, RESP2 or RESP3), when it falls on a whole
/// millisecond, as the virtual clock's do; `None` for anything else. The
/// reply has a request's shape: the gate's request parser reads it.
pub(crate) fn time_reply_ms(reply: &[u8]) -> Option<i64> {
    if reply.first() != Some(&b'*') {
        return None;
    }
    let parsed = harness::gate::resp::parse_request(reply).ok()??;
    let [secs, micros] = parsed.args.as_slice() else {
        return None;
    };
    let (secs, micros) = (canonical_int(secs)?, canonical_int(micros)?);
    (micros % 1000 == 0 && (0..1_000_000).contains(&micros))
        .then(|| secs.checked_mul(1000)?.checked_add(micros / 1000))
        .flatten()
}

/// The integer `bytes` spell in canonical decimal (no sign but `-`, no
/// leading zero, no space), if they do: only such text reads as a time, so
/// `"0012"` and `"12"`, which the server holds as different bytes, never
/// hash alike.
fn canonical_int(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let n: i64 = text.parse().ok()?;
    (n.to_string() == text).then_some(n)
}

/// The integer a run of digits with leading zeros spells (`0002000000000500`).
fn padded_int(bytes: &[u8]) -> Option<i64> {
    if bytes.len() < 2 || bytes[0] != b'0' || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// Hashes one item's bytes: on absolute times exactly; relative to now
/// (`relative`), as runs of digits and runs of other bytes, a canonical
/// run near now (a time, alone like `2000000001000` or inside text like
/// `a|1|2000000001000`) relative to it, every other run exactly. Reading a
/// time relative to now is an assumption the search checks on a sample of
/// the merges it makes (see [`crate::search`]).
pub(crate) fn hash_item<H: Hasher>(item: &[u8], now: i64, far_ms: i64, relative: bool, h: &mut H) {
    if !relative {
        0u8.hash(h);
        item.hash(h);
        return;
    }
    let mut runs = 0usize;
    for (run, digits) in digit_runs(item) {
        match canonical_int(run).filter(|n| digits && (n - now).abs() < NEAR_NOW_MS) {
            Some(n) => {
                1u8.hash(h);
                rel(n, now, far_ms).hash(h);
            }
            // A time written at a fixed width (`%016d`, so that text order is
            // time order): its width and its time relative to now.
            None => match padded_int(run).filter(|n| digits && (n - now).abs() < NEAR_NOW_MS) {
                Some(n) => {
                    3u8.hash(h);
                    run.len().hash(h);
                    rel(n, now, far_ms).hash(h);
                }
                None => {
                    2u8.hash(h);
                    run.hash(h);
                }
            },
        }
        runs += 1;
    }
    runs.hash(h);
}

/// `item` cut into runs of digits and runs of other bytes, in order, each
/// with whether it is digits.
fn digit_runs(item: &[u8]) -> impl Iterator<Item = (&[u8], bool)> {
    let mut rest = item;
    std::iter::from_fn(move || {
        let digits = rest.first()?.is_ascii_digit();
        let len = rest
            .iter()
            .position(|b| b.is_ascii_digit() != digits)
            .unwrap_or(rest.len());
        let (run, after) = rest.split_at(len);
        rest = after;
        Some((run, digits))
    })
}

/// One run of an item's bytes (all digits, or none), read once: what
/// [`hash_item`] needs of it to hash it relative to any now.
#[derive(Debug, Clone)]
struct Run {
    /// The integer the run spells in canonical decimal, if it does.
    canonical: Option<i64>,
    /// The integer a run of digits with leading zeros spells, if it does.
    padded: Option<i64>,
    /// The run's length.
    len: usize,
    /// A digest of its bytes, hashed where [`hash_item`] hashes the bytes.
    digest: u64,
}

/// A key's items split into runs once ([`Logical::Items`]): a record of
/// many fields is fingerprinted at every state it is in, and parsing its
/// digits again each time was most of the explorer's work on such stores.
/// Hashes as [`Logical::hash_at`] reads times relative to now, with each
/// run's bytes replaced by their digest (an equality of digests is an
/// equality of bytes but for a 2^-64 chance), where no drawn value is read.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    kind: String,
    items: Vec<ItemRuns>,
}

/// One item's runs, with what lets most items be hashed whole.
#[derive(Debug, Clone)]
struct ItemRuns {
    runs: Vec<Run>,
    /// The least and greatest integer its runs spell (`None`: none does).
    ints: Option<(i64, i64)>,
    /// A digest of every run's digest: the item when no integer in it is
    /// near now (then [`hash_item`] reads every run as its bytes).
    digest: u64,
}

impl Template {
    /// The template of `logical`, if it is read item by item.
    pub(crate) fn of(logical: &Logical) -> Option<Template> {
        let Logical::Items { kind, items } = logical else {
            return None;
        };
        let items = items
            .iter()
            .map(|item| {
                let runs: Vec<Run> = digit_runs(item)
                    .map(|(run, digits)| Run {
                        canonical: digits.then(|| canonical_int(run)).flatten(),
                        padded: digits.then(|| padded_int(run)).flatten(),
                        len: run.len(),
                        digest: xxhash_rust::xxh3::xxh3_64(run),
                    })
                    .collect();
                let ints = runs
                    .iter()
                    .flat_map(|r| r.canonical.into_iter().chain(r.padded))
                    .fold(None, |acc: Option<(i64, i64)>, n| {
                        Some(acc.map_or((n, n), |(lo, hi)| (lo.min(n), hi.max(n))))
                    });
                let mut h = xxhash_rust::xxh3::Xxh3::new();
                for r in &runs {
                    r.digest.hash(&mut h);
                }
                runs.len().hash(&mut h);
                ItemRuns {
                    digest: h.digest(),
                    runs,
                    ints,
                }
            })
            .collect();
        Some(Template {
            kind: kind.clone(),
            items,
        })
    }

    /// Hashes the content with times near `now` relative to it, as
    /// [`hash_item`] reads each item (runs by digest).
    pub(crate) fn hash_at<H: Hasher>(&self, now: i64, far_ms: i64, h: &mut H) {
        0u8.hash(h);
        self.kind.hash(h);
        self.items.len().hash(h);
        let near = |n: &i64| (n - now).abs() < NEAR_NOW_MS;
        // A stretch of items read as their bytes, folded into one word
        // (the hasher's small writes were the cost): (items, their mix).
        let mut stretch = (0usize, 0u64);
        let flush = |stretch: &mut (usize, u64), h: &mut H| {
            if stretch.0 > 0 {
                4u8.hash(h);
                stretch.0.hash(h);
                stretch.1.hash(h);
                *stretch = (0, 0);
            }
        };
        for item in &self.items {
            // No integer in it near now: every run is read as its bytes.
            let far = item.ints.is_none_or(|(lo, hi)| {
                hi.saturating_sub(now) <= -NEAR_NOW_MS || lo.saturating_sub(now) >= NEAR_NOW_MS
            });
            if far {
                stretch.0 += 1;
                stretch.1 = (stretch.1 ^ item.digest)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .rotate_left(29);
                continue;
            }
            flush(&mut stretch, h);
            let runs = &item.runs;
            for run in runs {
                match (run.canonical.filter(near), run.padded.filter(near)) {
                    (Some(n), _) => {
                        1u8.hash(h);
                        rel(n, now, far_ms).hash(h);
                    }
                    (None, Some(n)) => {
                        3u8.hash(h);
                        run.len.hash(h);
                        rel(n, now, far_ms).hash(h);
                    }
                    (None, None) => {
                        2u8.hash(h);
                        run.digest.hash(h);
                    }
                }
            }
            runs.len().hash(h);
        }
        flush(&mut stretch, h);
    }
}

/// The content exactly (times absolute): two keys hash alike when the
/// server holds the same content in them, whatever their encoding.
impl Hash for Logical {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.hash_at(0, i64::MAX, false, h, &mut Canon::new(None));
    }
}

impl Logical {
    /// Hashes the content, times near now relative to it (`relative`).
    pub(crate) fn hash_at<H: Hasher>(
        &self,
        now: i64,
        far_ms: i64,
        relative: bool,
        h: &mut H,
        canon: &mut Canon,
    ) {
        match self {
            Logical::Items { kind, items } => {
                0u8.hash(h);
                kind.hash(h);
                items.len().hash(h);
                for item in items {
                    canon.hash(item, h, &mut |b, h| hash_item(b, now, far_ms, relative, h));
                }
            }
            Logical::Exact(bytes) => {
                1u8.hash(h);
                bytes.hash(h);
            }
            Logical::Json(v) if relative => {
                2u8.hash(h);
                hash_value(v, now, far_ms, h);
            }
            Logical::Json(v) => {
                2u8.hash(h);
                v.to_string().hash(h);
            }
        }
    }
}

/// The instance of `last` (an instance and the instant it last did
/// something) if that instant is `now`: what the fingerprint keeps of it,
/// since only an act at this very instant can still race the next step.
pub(crate) fn acted_now(last: Option<(usize, i64)>, now: i64) -> Option<usize> {
    last.filter(|(_, t)| *t == now).map(|(i, _)| i)
}

/// A key's content as the fingerprint reads it, byte for byte: hash fields
/// sorted, a set sorted, a zset as (member, score) pairs in rank order, a
/// string or a list in order; any other type (a stream: entries, last id,
/// consumer groups) by its exact `DUMP` bytes, which hold all of it.
pub(crate) fn logical(kind: &str, items: Vec<Vec<u8>>, dump: &[u8]) -> Logical {
    let items = match kind {
        "hash" => {
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(f), Some(v)) = (it.next(), it.next()) {
                pairs.push((f, v));
            }
            pairs.sort();
            pairs.into_iter().flat_map(|(f, v)| [f, v]).collect()
        }
        "set" => {
            let mut members = items;
            members.sort();
            members
        }
        "string" | "list" | "zset" => items,
        _ => return Logical::Exact(dump.to_vec()),
    };
    Logical::Items {
        kind: kind.to_string(),
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_reply_reads_as_the_instant_it_spells() {
        let reply = |secs: &str, micros: &str| {
            format!(
                "*2\r\n${}\r\n{secs}\r\n${}\r\n{micros}\r\n",
                secs.len(),
                micros.len()
            )
        };
        assert_eq!(
            time_reply_ms(reply("2000000000", "379000").as_bytes()),
            Some(2_000_000_000_379)
        );
        assert_eq!(
            time_reply_ms(reply("2000000000", "0").as_bytes()),
            Some(2_000_000_000_000)
        );
        // Not on a whole millisecond, not TIME's shape: no instant.
        assert_eq!(
            time_reply_ms(reply("2000000000", "379001").as_bytes()),
            None
        );
        assert_eq!(time_reply_ms(b"$2\r\n12\r\n"), None);
        assert_eq!(time_reply_ms(b"*2\r\n$1\r\nx\r\n$1\r\n0\r\n"), None);
    }

    /// The reading by item, `logical.hash_at` (the reference), and by
    /// template tell apart exactly the same pairs of contents and nows.
    #[test]
    fn a_template_tells_apart_what_the_item_by_item_reading_does() {
        const NOW: i64 = 2_000_000_000_000;
        let hash = |items: &[String], now: i64, template: bool| {
            let logical = Logical::Items {
                kind: "hash".into(),
                items: items.iter().map(|s| s.clone().into_bytes()).collect(),
            };
            let mut h = std::collections::hash_map::DefaultHasher::new();
            if template {
                Template::of(&logical)
                    .expect("items")
                    .hash_at(now, 20_000, &mut h);
            } else {
                logical.hash_at(now, 20_000, true, &mut h, &mut Canon::new(None));
            }
            h.finish()
        };
        // A wide record: many fields whose numbers are far from now, a
        // time near it, one alone and one inside text, and a padded one.
        let record = |expires: i64, meta: &str, padded: i64| -> Vec<String> {
            let mut items = vec![
                "expires_at".to_string(),
                expires.to_string(),
                "log".to_string(),
                format!("taken|{}|sp_inst_a", expires - 5000),
                "padded".to_string(),
                format!("{padded:016}"),
            ];
            for i in 1..=130 {
                items.push(format!("meta:{i}"));
                items.push(format!("{meta}:{i}"));
            }
            items
        };
        let cases = [
            (record(NOW + 1000, "a", NOW), NOW),
            // The same shifted in time: one state.
            (record(NOW + 3000, "a", NOW + 2000), NOW + 2000),
            // Another time left: another state.
            (record(NOW + 1500, "a", NOW), NOW),
            // One far field other: another state.
            (record(NOW + 1000, "b", NOW), NOW),
            // Everything in the far past (collapsed alike).
            (record(NOW - 100_000, "a", NOW - 200_000), NOW),
            (record(NOW - 900_000, "a", NOW - 300_000), NOW),
            // Numbers far above now read as bytes.
            (record(NOW + 20_000_000_000, "a", NOW), NOW),
            (record(NOW + 20_000_000_001, "a", NOW), NOW),
        ];
        for (a, now_a) in &cases {
            for (b, now_b) in &cases {
                let reference = hash(a, *now_a, false) == hash(b, *now_b, false);
                let template = hash(a, *now_a, true) == hash(b, *now_b, true);
                assert_eq!(
                    reference,
                    template,
                    "{:?} at {now_a} vs {:?} at {now_b}",
                    &a[..6],
                    &b[..6]
                );
            }
        }
        // The reference itself merges the shifted pair and the far past,
        // and parts the rest: the cases test something.
        assert_eq!(
            hash(&cases[0].0, NOW, true),
            hash(&cases[1].0, NOW + 2000, true)
        );
        assert_eq!(hash(&cases[4].0, NOW, true), hash(&cases[5].0, NOW, true));
        assert_ne!(hash(&cases[0].0, NOW, true), hash(&cases[2].0, NOW, true));
        assert_ne!(hash(&cases[0].0, NOW, true), hash(&cases[3].0, NOW, true));
        assert_ne!(hash(&cases[6].0, NOW, true), hash(&cases[7].0, NOW, true));
    }
}
