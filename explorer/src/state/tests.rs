//! Unit tests of `state`.

use super::*;

use crate::reading::logical;

const NOW: i64 = 2_000_000_000_000;

/// The initial state at `now` holding one key of `kind` with `items`
/// (and `dump` as its DUMP bytes).
fn holding(now: i64, kind: &str, items: &[&[u8]], dump: &[u8]) -> State {
    let mut s = State::initial(now, &[0, 0]);
    s.keys.push(KeyDump::new(
        b"sp:x:k".to_vec(),
        dump.to_vec(),
        None,
        logical(kind, items.iter().map(|i| i.to_vec()).collect(), dump),
    ));
    s
}

/// Issue 19, item 9: the fingerprint hashes the bytes the server holds.
/// Before, content went through lossy UTF-8 (two invalid bytes both
/// read U+FFFD) and a stream hashed as empty, so different states were
/// one.
#[test]
fn the_fingerprint_tells_apart_every_byte_the_server_holds() {
    let fp = |s: &State| s.fingerprint();
    // Bytes that are not UTF-8.
    let a = holding(NOW, "hash", &[b"f", &[0xff]], b"d");
    let b = holding(NOW, "hash", &[b"f", &[0xfe]], b"d");
    assert_ne!(fp(&a), fp(&b));
    let a = holding(NOW, "string", &[&[0x80, 0x81]], b"d");
    let b = holding(NOW, "string", &[&[0xc0]], b"d");
    assert_ne!(fp(&a), fp(&b));
    // A stream: its DUMP bytes (entries, last id, groups).
    let a = holding(NOW, "stream", &[], b"stream one");
    let b = holding(NOW, "stream", &[], b"stream two");
    assert_ne!(fp(&a), fp(&b));
    // Text that reads as the same number but is other bytes.
    let a = holding(NOW, "string", &[b"0012"], b"d");
    let b = holding(NOW, "string", &[b"12"], b"d");
    assert_ne!(fp(&a), fp(&b));
    let a = holding(NOW, "string", &[b"+2000000000000"], b"d");
    let b = holding(NOW, "string", &[b"2000000000000"], b"d");
    assert_ne!(fp(&a), fp(&b));
    // Hash fields in any order are one hash; a list's order matters.
    let a = holding(NOW, "hash", &[b"f", b"1", b"g", b"2"], b"d");
    let b = holding(NOW, "hash", &[b"g", b"2", b"f", b"1"], b"d");
    assert_eq!(fp(&a), fp(&b));
    let a = holding(NOW, "list", &[b"1", b"2"], b"d");
    let b = holding(NOW, "list", &[b"2", b"1"], b"d");
    assert_ne!(fp(&a), fp(&b));
}

#[test]
fn a_hash_fields_own_expiry_is_read_from_its_value_item() {
    let key = |items: &[&[u8]]| {
        KeyDump::new(
            b"k".to_vec(),
            Vec::new(),
            None,
            Logical::Items {
                kind: "hash".into(),
                items: items.iter().map(|i| i.to_vec()).collect(),
            },
        )
    };
    let plain = key(&[b"a", b"1", b"b", b"2000"]);
    assert_eq!(plain.field_expiries().count(), 0);
    assert!(!plain.expires_by(i64::MAX));
    let timed = key(&[b"a", b"1", b"live", b"1\0pexpireat:2000"]);
    assert_eq!(timed.field_expiries().collect::<Vec<_>>(), vec![2000]);
    assert!(!timed.expires_by(1999));
    assert!(timed.expires_by(2000));
    assert!(timed.expires_at_instant(2000));
    assert!(!timed.expires_at_instant(2001));
}

#[test]
fn a_time_near_now_reads_relative_to_it_and_a_stream_never_does() {
    let fp = |s: &State| s.fingerprint();
    let a = holding(NOW, "hash", &[b"expires_at", b"2000000001000"], b"d");
    let b = holding(NOW + 1000, "hash", &[b"expires_at", b"2000000002000"], b"d");
    assert_eq!(fp(&a), fp(&b));
    // Less than a second apart: a store reading time in whole seconds
    // could tell them apart (crate::SHIFT_GRAIN_MS).
    let half = holding(NOW + 500, "hash", &[b"expires_at", b"2000000001500"], b"d");
    assert_ne!(fp(&a), fp(&half));
    // The same content a shift apart, on absolute times: two states.
    let (mut a, mut b) = (a, b);
    a.absolute_times = true;
    b.absolute_times = true;
    assert_ne!(fp(&a), fp(&b));
    // A time inside text reads relative too.
    let a = holding(NOW, "string", &[b"a|1|2000000001000"], b"d");
    let b = holding(NOW + 1000, "string", &[b"a|1|2000000002000"], b"d");
    assert_eq!(fp(&a), fp(&b));
    let b = holding(NOW + 1000, "string", &[b"a|2|2000000002000"], b"d");
    assert_ne!(fp(&a), fp(&b));
    let a = holding(NOW, "stream", &[], b"2000000001000-0");
    let b = holding(NOW + 1000, "stream", &[], b"2000000002000-0");
    assert_ne!(fp(&a), fp(&b));
}

/// Issue 40, item 8: times more than 20 s back all read alike, and a
/// skew of an hour put an instance's own times there. The far past
/// now starts beyond the clock furthest from server time.
#[test]
fn the_far_past_lies_beyond_every_instances_clock() {
    let at = |skews: &[i64], t: i64| {
        let mut s = holding(
            NOW,
            "hash",
            &[b"expires_at", t.to_string().as_bytes()],
            b"d",
        );
        s.insts = State::initial(NOW, skews).insts;
        s.fingerprint()
    };
    // An hour and 30 s back and an hour and 60 s back: nothing can
    // tell them apart when every clock is server time.
    assert_eq!(at(&[0, 0], NOW - 3_630_000), at(&[0, 0], NOW - 3_660_000));
    // On a clock an hour behind, a slot expiring half a second ahead
    // of it and one that ran out a second before it: two states.
    let behind = [0, -3_600_000];
    assert_ne!(at(&behind, NOW - 3_599_500), at(&behind, NOW - 3_601_000));
    assert_eq!(
        State::initial(NOW, &behind).far_past_ms(),
        crate::FAR_PAST_MS + 3_600_000
    );
}

/// An `EXEC` whose queued write was refused when queued (a full
/// server: `EXECABORT`, "previous errors") is another transition than
/// the same `EXEC` whose write was queued before the server filled (the
/// server refuses it at `EXEC`, naming the cause). Keyed alike, one was
/// answered from the other's cache entry, and two states a shift of
/// time apart were found to go on differently (a RESP3 redis-py take).
#[test]
fn an_exec_is_cached_by_whether_its_queued_commands_were_refused() {
    use harness::gate::{Command, Frame};
    let ex = |args: &[&str], reply: &[u8]| Exchange {
        command: Command::new(args.iter().copied()),
        reply: Frame::new(reply.to_vec()),
    };
    let queued = |reply: &[u8]| {
        vec![
            ex(&["WATCH", "k"], b"+OK\r\n"),
            ex(&["MULTI"], b"+OK\r\n"),
            ex(&["HSET", "k", "f", "v"], reply),
        ]
    };
    let exec = Command::new(["EXEC"]);
    let ok = cache_command(&queued(b"+QUEUED\r\n"), false, &exec);
    let refused = cache_command(&queued(b"-OOM no room\r\n"), false, &exec);
    assert_ne!(ok, refused);
    assert_ne!(ok, cache_command(&queued(b"+QUEUED\r\n"), true, &exec));
    // Outside a transaction a command is itself.
    let get = Command::new(["GET", "k"]);
    assert_eq!(
        cache_command(&queued(b"+QUEUED\r\n")[..1], false, &get),
        get
    );
    assert_ne!(cache_command(&queued(b"+QUEUED\r\n"), false, &get), get);
}
