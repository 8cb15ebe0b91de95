//! Commands of an operation that only its own connection sees, run as soon
//! as they are next: a partial-order reduction, and the proof that it is
//! sound.
//!
//! The gate keeps each connection's transaction (`harness::gate::transaction`):
//! `MULTI`, `DISCARD`, `UNWATCH` and the errors of a misplaced `EXEC`,
//! `WATCH` or `MULTI` are answered by the gate from the connection's own
//! state; a command queued inside a transaction is answered by the
//! server's verdict on queueing it (`+QUEUED`, or `OOM` on a full server),
//! and changes nothing; `TIME` reads the server's clock and changes
//! nothing. Such a step of instance `i` (call it `l`):
//! - changes neither the keys, nor time, nor any ghost the judge keeps
//!   (`judge::stepped` reads only the keys, time and the other instances);
//! - is answered alike whatever another instance did before it: its reply
//!   depends on `i`'s connection and on nothing else, except that a queued
//!   command's depends on whether the server is full, and `TIME`'s on time;
//! - leaves every other action as possible as before, and after it.
//!
//! So in any schedule, `l` can be moved back, past every action of other
//! instances since `i`'s previous command, to right after that command,
//! the schedule staying a schedule of the same store whose steps answer
//! alike, keys and time after each of `i`'s later steps unchanged. Not
//! past a fill or free of the server (for a queued command) or a move of
//! time (for `TIME`): those stay offered beside `l`. Nor past a crash or a
//! lost reply of `i` itself, offered beside it too, or equivalent: a crash
//! forgets the operation in flight and its connection, so crashing before
//! `l` or after it ends in the same state. The only thing the move changes
//! is when `i` answers, when `l` is its last command: earlier, so the
//! operation's interval between invocation and answer only narrows. Every
//! check of the explorer judges an answer by some instant in that interval
//! (a grant, a refusal, a linearization point), so a schedule that breaks
//! a check still breaks it with the narrower interval: the violation is
//! found on the moved schedule, which the reduced search explores. The
//! step costs no depth, so every schedule within the depth is moved to one
//! within it; at most [`FREE_COMMANDS`] commands of one operation run
//! free, so a store that never ends an operation still ends the search.

use harness::gate::transaction::open_transaction;
use harness::gate::{Command, Exchange};

/// An operation's next command, as the explorer's reduction reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) enum Upcoming {
    /// Anything else (or not known): a step like any other.
    #[default]
    Other,
    /// Answered from its connection's own state: `MULTI`, `DISCARD`,
    /// `UNWATCH`, a misplaced `EXEC`, `WATCH` or `MULTI`.
    Local,
    /// Queued in an open transaction: answered by whether the server
    /// takes it, which only a full server changes.
    Queued,
    /// `TIME`: answered by the server's clock, which only time changes.
    Clock,
}

/// At most this many commands of one operation run free: the rest each
/// cost a step, so an operation that sends such commands forever still
/// ends the search.
pub(crate) const FREE_COMMANDS: usize = 32;

/// What `next`, sent after `delivered` on the same connection, is.
pub(crate) fn upcoming(delivered: &[Exchange], next: &Command) -> Upcoming {
    let open = open_transaction(delivered.iter().map(|e| &e.command)).is_some();
    match (next.name().as_str(), open) {
        ("EXEC", true) => Upcoming::Other,
        ("MULTI" | "DISCARD" | "WATCH", true) => Upcoming::Local,
        (_, true) => Upcoming::Queued,
        ("MULTI" | "DISCARD" | "UNWATCH" | "EXEC", false) => Upcoming::Local,
        ("TIME", false) => Upcoming::Clock,
        _ => Upcoming::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(commands: &[&[&str]]) -> Vec<Exchange> {
        commands
            .iter()
            .map(|c| Exchange {
                command: Command::new(c.iter().copied()),
                reply: harness::gate::Frame::new(b"+OK\r\n".to_vec()),
            })
            .collect()
    }

    fn next(args: &[&str]) -> Command {
        Command::new(args.iter().copied())
    }

    #[test]
    fn a_transaction_s_commands_are_local_or_queued_and_its_exec_is_not() {
        let none = sent(&[]);
        assert_eq!(upcoming(&none, &next(&["MULTI"])), Upcoming::Local);
        assert_eq!(upcoming(&none, &next(&["multi"])), Upcoming::Local);
        assert_eq!(upcoming(&none, &next(&["UNWATCH"])), Upcoming::Local);
        assert_eq!(upcoming(&none, &next(&["TIME"])), Upcoming::Clock);
        // A WATCH reads the key now: another instance's write before it
        // or after it is another story.
        assert_eq!(upcoming(&none, &next(&["WATCH", "k"])), Upcoming::Other);
        assert_eq!(
            upcoming(&none, &next(&["HSET", "k", "f", "v"])),
            Upcoming::Other
        );
        assert_eq!(
            upcoming(&none, &next(&["EVALSHA", "x", "0"])),
            Upcoming::Other
        );
        let open = sent(&[&["WATCH", "k"], &["TIME"], &["MULTI"]]);
        assert_eq!(
            upcoming(&open, &next(&["HSET", "k", "f", "v"])),
            Upcoming::Queued
        );
        // Inside a transaction TIME is queued, run at EXEC.
        assert_eq!(upcoming(&open, &next(&["TIME"])), Upcoming::Queued);
        assert_eq!(upcoming(&open, &next(&["EXEC"])), Upcoming::Other);
        assert_eq!(upcoming(&open, &next(&["DISCARD"])), Upcoming::Local);
        let closed = sent(&[&["MULTI"], &["HSET", "k", "f", "v"], &["EXEC"]]);
        assert_eq!(
            upcoming(&closed, &next(&["HGET", "k", "f"])),
            Upcoming::Other
        );
        assert_eq!(upcoming(&closed, &next(&["EXEC"])), Upcoming::Local);
    }
}
