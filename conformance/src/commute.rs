//! Which commands of two racing operations commute: the independence
//! relation that lets a race run one interleaving per equivalence class
//! (Mazurkiewicz trace) instead of every one.
//!
//! Two interleavings that differ only by swapping adjacent commands of
//! different instances that commute give every command the same reply and
//! leave the server the same: they are one behaviour, judged once. The
//! relation must be sound (never call two commands independent when their
//! order can matter), so it is small and conservative: a command is
//! *local* when it neither reads nor changes the keyspace (`TIME`, which
//! reads the clock, and the clock moves only as a step of its own that
//! commutes with nothing; `MULTI`; a command queued in a transaction, which
//! runs only at its `EXEC`; `UNWATCH`, `DISCARD`, `PING`), a *read* when it
//! only reads the keys it names (`WATCH` included: its order against a
//! write decides an abort, and a write commutes with no read here), and
//! anything else, scripts, functions and `EXEC` included, a *write* that
//! may touch any key. Locals commute with everything, reads with reads.
//! The interleavings run are those in the lexicographic normal form of
//! their class: no command of the second instance directly followed by a
//! command of the first that commutes with it (swapping them gives an
//! equivalent, smaller interleaving, which is run instead).

/// What a command does to the keyspace, for deciding what it commutes with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Class {
    /// Reads and changes no key.
    Local,
    /// Reads only; changes nothing.
    Read,
    /// May change any key (or its order against another command matters
    /// for some other reason).
    Write,
}

/// Commands that only read the keys they name.
const READS: &[&str] = &[
    "EXISTS",
    "EXPIRETIME",
    "GET",
    "HEXISTS",
    "HGET",
    "HGETALL",
    "HKEYS",
    "HLEN",
    "HMGET",
    "HSTRLEN",
    "HVALS",
    "LLEN",
    "LRANGE",
    "MGET",
    "PEXPIRETIME",
    "PTTL",
    "SCARD",
    "SISMEMBER",
    "SMEMBERS",
    "STRLEN",
    "TTL",
    "TYPE",
    "WATCH",
    "ZCARD",
    "ZRANGE",
    "ZRANGEBYSCORE",
    "ZRANK",
    "ZSCORE",
];

/// Commands that neither read nor change a key wherever they are sent.
const LOCALS: &[&str] = &["TIME", "MULTI", "UNWATCH", "DISCARD", "PING", "ECHO"];

/// The class of `name` (a command's first word) sent on a connection that
/// is (`in_multi`) or is not inside `MULTI`.
pub(crate) fn class(name: &str, in_multi: bool) -> Class {
    let name = name.to_ascii_uppercase();
    if in_multi && name != "EXEC" && name != "DISCARD" {
        // Queued: it runs at EXEC, which commutes with nothing.
        return Class::Local;
    }
    if LOCALS.contains(&name.as_str()) {
        Class::Local
    } else if READS.contains(&name.as_str()) {
        Class::Read
    } else {
        Class::Write
    }
}

/// Whether two commands of different instances commute. `None` is a step
/// that is not a command (the clock moving): it commutes with nothing.
pub(crate) fn independent(x: Option<&Class>, y: Option<&Class>) -> bool {
    matches!(
        (x, y),
        (Some(Class::Local), Some(_))
            | (Some(_), Some(Class::Local))
            | (Some(Class::Read), Some(Class::Read))
    )
}

/// Whether `name` leaves its connection inside a transaction after it ran
/// on a connection that was (`in_multi`) or was not.
pub(crate) fn in_multi_after(name: &str, in_multi: bool) -> bool {
    match name.to_ascii_uppercase().as_str() {
        "MULTI" => true,
        "EXEC" | "DISCARD" => false,
        _ => in_multi,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_commute_with_reads_and_writes_with_nothing_but_locals() {
        let read = class("hmget", false);
        let write = class("EVALSHA", false);
        let time = class("TIME", false);
        assert_eq!(read, Class::Read);
        assert_eq!(write, Class::Write);
        assert!(independent(Some(&read), Some(&class("WATCH", false))));
        assert!(!independent(Some(&read), Some(&write)));
        assert!(!independent(Some(&write), Some(&class("EXEC", true))));
        assert!(independent(Some(&time), Some(&write)));
        // The clock moving commutes with nothing, the clock's read included.
        assert!(!independent(None, Some(&time)));
        assert!(!independent(Some(&Class::Local), None));
    }

    #[test]
    fn a_command_queued_in_a_transaction_is_local_until_its_exec() {
        assert_eq!(class("HSET", true), Class::Local);
        assert_eq!(class("EXEC", true), Class::Write);
        assert_eq!(class("HSET", false), Class::Write);
        let mut in_multi = false;
        for (name, after) in [
            ("WATCH", false),
            ("MULTI", true),
            ("HSET", true),
            ("EXEC", false),
        ] {
            in_multi = in_multi_after(name, in_multi);
            assert_eq!(in_multi, after, "{name}");
        }
    }
}
