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
    let mut rest = item;
    while let Some(first) = rest.first() {
        let digits = first.is_ascii_digit();
        let len = rest
            .iter()
            .position(|b| b.is_ascii_digit() != digits)
            .unwrap_or(rest.len());
        let (run, after) = rest.split_at(len);
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
        rest = after;
    }
    runs.hash(h);
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
}
