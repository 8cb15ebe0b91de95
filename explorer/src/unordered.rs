//! Replies whose order Redis leaves open: the same server content answers
//! `HGETALL` or `SMEMBERS` in the order of its hash table, which a read or a
//! `RESTORE` can change. Two such replies agree when they hold the same
//! elements; every other reply agrees only byte for byte.

use harness::gate::{Command, Frame};

/// Commands whose reply lists a hash's fields or a set's members in table
/// order (the order is not part of their contract).
const ORDER_FREE: &[&str] = &[
    "HGETALL", "HKEYS", "HVALS", "SMEMBERS", "SINTER", "SUNION", "SDIFF", "KEYS",
];

/// Whether `a` and `b`, two replies to `command` on servers holding the
/// same content, say the same: equal bytes, or for a command of
/// [`ORDER_FREE`] the same elements in any order (a hash's as field and
/// value pairs).
pub(crate) fn replies_agree(command: &Command, a: &Frame, b: &Frame) -> bool {
    if a == b {
        return true;
    }
    let name = command.name();
    if !ORDER_FREE.contains(&name.as_str()) {
        return false;
    }
    let pairs = name == "HGETALL";
    match (canonical(a, pairs), canonical(b, pairs)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The reply's elements sorted (as pairs for `pairs`), each as its RESP
/// text; `None` for a reply that is not a list, a map or a set.
fn canonical(frame: &Frame, pairs: bool) -> Option<Vec<String>> {
    let value = redis::parse_redis_value(frame.as_bytes()).ok()?;
    let mut items: Vec<String> = match value {
        redis::Value::Map(entries) => entries
            .iter()
            .map(|(k, v)| format!("{k:?}\u{0}{v:?}"))
            .collect(),
        redis::Value::Array(items) if pairs => {
            if items.len() % 2 != 0 {
                return None;
            }
            items
                .chunks(2)
                .map(|p| format!("{:?}\u{0}{:?}", p[0], p[1]))
                .collect()
        }
        redis::Value::Array(items) | redis::Value::Set(items) => {
            items.iter().map(|v| format!("{v:?}")).collect()
        }
        _ => return None,
    };
    items.sort();
    Some(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(text: &str) -> Frame {
        Frame::new(text.as_bytes().to_vec())
    }

    #[test]
    fn a_hash_read_in_another_order_agrees_and_other_content_does_not() {
        let hgetall = Command::new(["HGETALL", "k"]);
        let ab = frame("*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n");
        let ba = frame("*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n");
        // The same fields with the values swapped between them.
        let swapped = frame("*4\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nb\r\n$1\r\n1\r\n");
        assert!(replies_agree(&hgetall, &ab, &ba));
        assert!(!replies_agree(&hgetall, &ab, &swapped));
        let map_ab = frame("%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n");
        let map_ba = frame("%2\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n");
        assert!(replies_agree(&hgetall, &map_ab, &map_ba));
    }

    #[test]
    fn order_matters_for_every_other_command() {
        let lrange = Command::new(["LRANGE", "k", "0", "-1"]);
        let ab = frame("*2\r\n$1\r\na\r\n$1\r\nb\r\n");
        let ba = frame("*2\r\n$1\r\nb\r\n$1\r\na\r\n");
        assert!(!replies_agree(&lrange, &ab, &ba));
        assert!(replies_agree(&Command::new(["SMEMBERS", "k"]), &ab, &ba));
        assert!(replies_agree(&lrange, &ab, &ab));
    }
}
