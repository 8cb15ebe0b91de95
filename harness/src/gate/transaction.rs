//! Transactions (`MULTI` … `EXEC`, `WATCH`) kept by the gate instead of the
//! server, for the explorer ([`super::Gate::emulate_transactions`]).
//!
//! The explorer moves the server from state to state by restoring it, and
//! re-runs an operation from its start with its earlier commands answered
//! from a recording: those never reach the server again, so a `MULTI`
//! answered from the recording leaves the new connection outside any
//! transaction (its `EXEC` then fails with "EXEC without MULTI"), and a
//! `WATCH` is never in force (a restore would touch every watched key
//! anyway). So the gate keeps each connection's transaction itself: `MULTI`
//! and `WATCH` are answered `+OK`, a command inside the transaction
//! `+QUEUED`, each one a step of its own that changes nothing on the
//! server, exactly as Redis queues them; at `EXEC` the whole transaction
//! goes to the server at once (`MULTI`, the queued commands, `EXEC`) and
//! the client gets `EXEC`'s reply. Whether a watched key was modified since
//! its `WATCH` is the explorer's to say (it sees every state in between:
//! [`super::Gate::set_watch_dirty`]); then `EXEC` is answered with a null,
//! as Redis answers an aborted transaction, and nothing is sent.

use super::Command;

/// A connection's transaction as the gate keeps it.
#[derive(Debug, Default)]
pub(crate) struct Transaction {
    /// The wire bytes of the commands queued since `MULTI`; `None` outside
    /// a transaction.
    queued: Option<Vec<Vec<u8>>>,
    /// Whether a `WATCH` is in force (until `EXEC`, `DISCARD` or `UNWATCH`).
    watching: bool,
    /// The connection speaks RESP3 (`HELLO 3`): a null is `_`.
    resp3: bool,
    /// A command of the open transaction was refused when queued: its
    /// `EXEC` is answered `EXECABORT`, as Redis answers it.
    refused: bool,
}

/// What to do with a scheduled command on a connection whose transaction
/// the gate keeps.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Answer the client with these bytes (and record them); the server is
    /// not told.
    Answer(Vec<u8>),
    /// Send the command to the server as usual.
    Send,
    /// Send these bytes (`MULTI`, the command, `DISCARD`) and answer the
    /// client with the middle reply: the server's own answer to queueing
    /// it (`+QUEUED`, or the error that aborts the transaction, such as
    /// `OOM` on a full server), with nothing kept or run.
    Queue {
        /// The command between `MULTI` and `DISCARD`.
        wire: Vec<u8>,
    },
    /// Send these bytes (`MULTI`, the queued commands, `EXEC`) and answer
    /// the client with the last reply, the first `skip` replies dropped.
    Execute {
        /// The whole transaction, as one write.
        wire: Vec<u8>,
        /// Replies before `EXEC`'s: `+OK` and one `+QUEUED` a command.
        skip: usize,
    },
}

/// The commands queued in the transaction `commands` (one connection's,
/// in order) leave open: `None` when no `MULTI` is open after them.
pub fn open_transaction<'a>(
    commands: impl IntoIterator<Item = &'a Command>,
) -> Option<Vec<&'a Command>> {
    open_transaction_by(commands, |c| c)
}

/// [`open_transaction`] over items that each carry a command (`command`
/// reads it), such as exchanges with their replies.
pub fn open_transaction_by<'a, T>(
    items: impl IntoIterator<Item = &'a T>,
    command: impl Fn(&T) -> &Command,
) -> Option<Vec<&'a T>> {
    let mut queued: Option<Vec<&T>> = None;
    for item in items {
        match command(item).name().as_str() {
            "MULTI" => queued = Some(Vec::new()),
            "EXEC" | "DISCARD" => queued = None,
            _ => {
                if let Some(q) = queued.as_mut() {
                    q.push(item);
                }
            }
        }
    }
    queued
}

/// Whether `reply`, a server's answer to queueing a command inside
/// `MULTI`, refused it (an error, RESP2's or RESP3's): the transaction's
/// `EXEC` is then aborted.
pub fn refused_when_queued(reply: &[u8]) -> bool {
    matches!(reply.first(), Some(b'-' | b'!'))
}

const OK: &[u8] = b"+OK\r\n";
const EXECABORT: &[u8] = b"-EXECABORT Transaction discarded because of previous errors.\r\n";

/// `EXEC`'s reply when the transaction the gate sent whole had a queued
/// command refused (`cause`, its error reply): a write refused by a server
/// that filled up after the command was queued. The client saw `+QUEUED`
/// when it queued it, so Redis itself would reject the `EXEC` with the
/// cause (`-EXECABORT Transaction discarded because of: OOM …`), not with
/// the "previous errors" a client hears only after an error it was shown.
/// Any other reply is returned as it is.
pub(crate) fn aborted_at_exec(reply: Vec<u8>, cause: &[u8]) -> Vec<u8> {
    if !reply.starts_with(b"-EXECABORT") {
        return reply;
    }
    let cause = cause.strip_prefix(b"-").unwrap_or(cause);
    let cause = cause.strip_suffix(b"\r\n").unwrap_or(cause);
    let mut out = b"-EXECABORT Transaction discarded because of: ".to_vec();
    out.extend_from_slice(cause);
    out.extend_from_slice(b"\r\n");
    out
}

impl Transaction {
    /// Notes a set-up command: `HELLO 3` makes nulls RESP3's, `HELLO 2`
    /// RESP2's.
    pub(crate) fn set_up(&mut self, command: &Command) {
        if command.is("HELLO") {
            match command.args.get(1).map(Vec::as_slice) {
                Some(b"3") => self.resp3 = true,
                Some(b"2") => self.resp3 = false,
                _ => {}
            }
        }
    }

    /// Forgets the transaction and the watches (the protocol stays).
    pub(crate) fn reset(&mut self) {
        self.queued = None;
        self.watching = false;
        self.refused = false;
    }

    /// Notes the server's answer to queueing a command ([`Kept::Queue`]):
    /// an error aborts the transaction at its `EXEC`.
    pub(crate) fn queued_reply(&mut self, reply: &[u8]) {
        if refused_when_queued(reply) {
            self.refused = true;
        }
    }

    /// Notes a command answered from the replay script with `reply`, the
    /// one recorded: the connection is where it was when it first ran.
    pub(crate) fn replayed(&mut self, command: &Command, wire: &[u8], reply: &[u8]) {
        if let Kept::Queue { .. } = self.live(command, wire, false) {
            self.queued_reply(reply);
        }
    }

    /// What to do with `command` (sent as `wire`) now; `watch_dirty`: a
    /// key watched on this connection was modified since its `WATCH`.
    pub(crate) fn live(&mut self, command: &Command, wire: &[u8], watch_dirty: bool) -> Kept {
        let error = |text: &str| Kept::Answer(format!("-ERR {text}\r\n").into_bytes());
        match command.name().as_str() {
            "MULTI" if self.queued.is_some() => error("MULTI calls can not be nested"),
            "MULTI" => {
                self.queued = Some(Vec::new());
                self.refused = false;
                Kept::Answer(OK.to_vec())
            }
            "WATCH" if self.queued.is_some() => error("WATCH inside MULTI is not allowed"),
            "WATCH" => {
                self.watching = true;
                Kept::Answer(OK.to_vec())
            }
            "UNWATCH" if self.queued.is_none() => {
                self.watching = false;
                Kept::Answer(OK.to_vec())
            }
            "DISCARD" => match self.queued.take() {
                Some(_) => {
                    self.watching = false;
                    self.refused = false;
                    Kept::Answer(OK.to_vec())
                }
                None => error("DISCARD without MULTI"),
            },
            "EXEC" => match self.queued.take() {
                None => error("EXEC without MULTI"),
                Some(queued) => {
                    let aborted = self.watching && watch_dirty;
                    self.watching = false;
                    if std::mem::take(&mut self.refused) {
                        return Kept::Answer(EXECABORT.to_vec());
                    }
                    if aborted {
                        let null: &[u8] = if self.resp3 { b"_\r\n" } else { b"*-1\r\n" };
                        return Kept::Answer(null.to_vec());
                    }
                    let skip = queued.len() + 1;
                    let mut all = super::resp::encode_request(&[b"MULTI".to_vec()]);
                    for q in &queued {
                        all.extend_from_slice(q);
                    }
                    all.extend_from_slice(wire);
                    Kept::Execute { wire: all, skip }
                }
            },
            _ => match self.queued.as_mut() {
                Some(queued) => {
                    queued.push(wire.to_vec());
                    let mut probe = super::resp::encode_request(&[b"MULTI".to_vec()]);
                    probe.extend_from_slice(wire);
                    probe.extend(super::resp::encode_request(&[b"DISCARD".to_vec()]));
                    Kept::Queue { wire: probe }
                }
                None => Kept::Send,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::resp::encode_request;

    fn run(tx: &mut Transaction, args: &[&str], dirty: bool) -> Kept {
        let command = Command::new(args.iter().copied());
        let wire = encode_request(&command.args);
        tx.live(&command, &wire, dirty)
    }

    #[test]
    fn an_exec_aborted_by_a_refused_queued_command_names_the_cause() {
        let oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
        let told = aborted_at_exec(EXECABORT.to_vec(), oom);
        assert_eq!(
            told,
            b"-EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.\r\n"
        );
        assert_eq!(
            aborted_at_exec(b"*1\r\n:1\r\n".to_vec(), oom),
            b"*1\r\n:1\r\n"
        );
    }

    #[test]
    fn a_transaction_goes_to_the_server_whole_at_exec() {
        let mut tx = Transaction::default();
        assert_eq!(run(&mut tx, &["GET", "k"], false), Kept::Send);
        assert_eq!(
            run(&mut tx, &["WATCH", "k"], false),
            Kept::Answer(OK.to_vec())
        );
        assert_eq!(run(&mut tx, &["MULTI"], false), Kept::Answer(OK.to_vec()));
        assert!(matches!(
            run(&mut tx, &["SET", "k", "v"], false),
            Kept::Queue { .. }
        ));
        let Kept::Execute { wire, skip } = run(&mut tx, &["EXEC"], false) else {
            panic!("EXEC not sent")
        };
        assert_eq!(skip, 2);
        let mut want = encode_request(&[b"MULTI".to_vec()]);
        want.extend(encode_request(&[
            b"SET".to_vec(),
            b"k".to_vec(),
            b"v".to_vec(),
        ]));
        want.extend(encode_request(&[b"EXEC".to_vec()]));
        assert_eq!(wire, want);
        // Outside a transaction again.
        assert_eq!(run(&mut tx, &["SET", "k", "w"], false), Kept::Send);
    }

    #[test]
    fn the_open_transaction_is_what_was_queued_since_the_last_multi() {
        let c = |args: &[&str]| Command::new(args.iter().copied());
        let sent = [c(&["GET", "k"]), c(&["MULTI"]), c(&["SET", "k", "v"])];
        let open = open_transaction(&sent).expect("open");
        assert_eq!(open, vec![&sent[2]]);
        let closed = [c(&["MULTI"]), c(&["SET", "k", "v"]), c(&["EXEC"])];
        assert!(open_transaction(&closed).is_none());
        assert!(open_transaction(&[c(&["GET", "k"])]).is_none());
    }

    #[test]
    fn a_command_refused_when_queued_aborts_exec() {
        let mut tx = Transaction::default();
        run(&mut tx, &["MULTI"], false);
        let Kept::Queue { wire } = run(&mut tx, &["SET", "k", "v"], false) else {
            panic!("not queued")
        };
        let mut probe = encode_request(&[b"MULTI".to_vec()]);
        probe.extend(encode_request(&[
            b"SET".to_vec(),
            b"k".to_vec(),
            b"v".to_vec(),
        ]));
        probe.extend(encode_request(&[b"DISCARD".to_vec()]));
        assert_eq!(wire, probe);
        tx.queued_reply(b"-OOM command not allowed when used memory > 'maxmemory'.\r\n");
        assert_eq!(
            run(&mut tx, &["EXEC"], false),
            Kept::Answer(EXECABORT.to_vec())
        );
        // The next transaction starts clean, also when replayed.
        let set = Command::new(["SET", "k", "v"]);
        tx.replayed(&Command::new(["MULTI"]), b"", OK);
        tx.replayed(&set, &encode_request(&set.args), b"+QUEUED\r\n");
        assert!(matches!(
            run(&mut tx, &["EXEC"], false),
            Kept::Execute { skip: 2, .. }
        ));
    }

    #[test]
    fn a_dirty_watch_aborts_exec_with_the_protocols_null() {
        let mut tx = Transaction::default();
        run(&mut tx, &["WATCH", "k"], false);
        run(&mut tx, &["MULTI"], false);
        run(&mut tx, &["SET", "k", "v"], false);
        assert_eq!(
            run(&mut tx, &["EXEC"], true),
            Kept::Answer(b"*-1\r\n".to_vec())
        );
        tx.set_up(&Command::new(["HELLO", "3"]));
        run(&mut tx, &["WATCH", "k"], false);
        run(&mut tx, &["MULTI"], false);
        assert_eq!(
            run(&mut tx, &["EXEC"], true),
            Kept::Answer(b"_\r\n".to_vec())
        );
        // Dirty, but nothing watched: the transaction runs.
        run(&mut tx, &["MULTI"], false);
        assert!(matches!(
            run(&mut tx, &["EXEC"], true),
            Kept::Execute { .. }
        ));
        // UNWATCH forgets the watch.
        run(&mut tx, &["WATCH", "k"], false);
        run(&mut tx, &["UNWATCH"], false);
        run(&mut tx, &["MULTI"], false);
        assert!(matches!(
            run(&mut tx, &["EXEC"], true),
            Kept::Execute { .. }
        ));
    }

    #[test]
    fn a_replayed_multi_leaves_the_connection_inside_the_transaction() {
        let mut tx = Transaction::default();
        let multi = Command::new(["MULTI"]);
        tx.replayed(&multi, &encode_request(&multi.args), OK);
        assert!(matches!(
            run(&mut tx, &["INCR", "n"], false),
            Kept::Queue { .. }
        ));
        assert!(matches!(
            run(&mut tx, &["EXEC"], false),
            Kept::Execute { skip: 2, .. }
        ));
        assert_eq!(
            run(&mut tx, &["EXEC"], false),
            Kept::Answer(b"-ERR EXEC without MULTI\r\n".to_vec())
        );
        assert_eq!(
            run(&mut tx, &["DISCARD"], false),
            Kept::Answer(b"-ERR DISCARD without MULTI\r\n".to_vec())
        );
    }
}
