//! Replies whose order Redis leaves open: the same server content answers
//! `HGETALL` or `SMEMBERS` in the order of its hash table, which a read or a
//! `RESTORE` can change, and a cursor command's last page (`HSCAN`, …) in
//! the same order. Two such replies agree when they hold the same
//! elements; every other reply agrees only byte for byte.

use harness::gate::{Command, Frame};

/// Commands whose reply lists a hash's fields or a set's members in table
/// order (the order is not part of their contract).
const ORDER_FREE: &[&str] = &[
    "HGETALL", "HKEYS", "HVALS", "SMEMBERS", "SINTER", "SUNION", "SDIFF", "KEYS",
];

/// The cursor commands: a reply is a cursor and a page of elements in
/// table order. A page that ends the iteration (cursor `0`) holds every
/// element and agrees as a set (a hash's and a sorted set's as pairs); a
/// cursor that goes on names a place in one server's table, which another
/// server holding the same content need not share: only the same bytes
/// agree.
const SCANS: &[&str] = &["SCAN", "HSCAN", "SSCAN", "ZSCAN"];

/// The elements of a cursor command's reply that ends its iteration, as
/// [`canonical`] reads them; `None` for any other reply.
fn whole_scan(frame: &Frame, pairs: bool) -> Option<Vec<String>> {
    let value = redis::parse_redis_value(frame.as_bytes()).ok()?;
    let redis::Value::Array(parts) = value else {
        return None;
    };
    match parts.as_slice() {
        [redis::Value::BulkString(cursor), page] if cursor.as_slice() == b"0" => {
            canonical_value(page.clone(), pairs)
        }
        _ => None,
    }
}

/// Whether `a` and `b`, two replies to `command` on servers holding the
/// same content, say the same: equal bytes, or for a command of
/// [`ORDER_FREE`] the same elements in any order (a hash's as field and
/// value pairs).
pub(crate) fn replies_agree(command: &Command, a: &Frame, b: &Frame) -> bool {
    if a == b {
        return true;
    }
    let name = command.name();
    if SCANS.contains(&name.as_str()) {
        let pairs = name == "HSCAN" || name == "ZSCAN";
        return match (whole_scan(a, pairs), whole_scan(b, pairs)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        };
    }
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
    canonical_value(redis::parse_redis_value(frame.as_bytes()).ok()?, pairs)
}

/// [`canonical`] of a parsed reply.
fn canonical_value(value: redis::Value, pairs: bool) -> Option<Vec<String>> {
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
    fn a_whole_scan_agrees_in_any_order_and_a_page_only_byte_for_byte() {
        let hscan = Command::new(["HSCAN", "k", "0"]);
        let whole = |body: &str| frame(&format!("*2\r\n$1\r\n0\r\n{body}"));
        let ab = whole("*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n");
        let ba = whole("*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n");
        let swapped = whole("*4\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nb\r\n$1\r\n1\r\n");
        assert!(replies_agree(&hscan, &ab, &ba));
        assert!(!replies_agree(&hscan, &ab, &swapped));
        // A page with a cursor that goes on: the same elements, another
        // cursor or order, is another server's table.
        let page = |cursor: &str, body: &str| frame(&format!("*2\r\n$2\r\n{cursor}\r\n{body}"));
        let first = page("17", "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
        let other = page("29", "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
        assert!(replies_agree(&hscan, &first, &first));
        assert!(!replies_agree(&hscan, &first, &other));
        let sscan = Command::new(["SSCAN", "s", "0"]);
        let xy = whole("*2\r\n$1\r\nx\r\n$1\r\ny\r\n");
        let yx = whole("*2\r\n$1\r\ny\r\n$1\r\nx\r\n");
        let xz = whole("*2\r\n$1\r\nx\r\n$1\r\nz\r\n");
        assert!(replies_agree(&sscan, &xy, &yx));
        assert!(!replies_agree(&sscan, &xy, &xz));
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
