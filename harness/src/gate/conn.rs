//! One client connection through the gate: a small state machine driven by
//! one `select!` loop over the client socket, the upstream socket, the
//! release of a held command, a fault's delay and the gate's stop signal.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::resp::{encode_request, is_push, parse_request, FrameError, Splitter};
use super::transaction::{Kept, Transaction};
use super::{
    is_setup, is_subscription, stopped, Admission, Command, Exchange, Fault, Frame, Shared,
    UPSTREAM_CONNECT_TIMEOUT,
};

/// Bytes read from a socket at a time.
const READ_CHUNK: usize = 16 * 1024;

/// What the connection is doing with its current request.
enum Pending {
    /// Nothing outstanding: the next request may be read.
    Idle,
    /// A scheduled command waits for release.
    Held {
        release: oneshot::Receiver<()>,
        command: Command,
        wire: Vec<u8>,
    },
    /// A scheduled command waits out a [`Fault::Delay`].
    Delayed {
        until: Instant,
        command: Command,
        wire: Vec<u8>,
    },
    /// A request went upstream; its reply has not come back yet.
    AwaitReply {
        /// The scheduled command to record with the reply (`None` for
        /// set-up commands).
        record: Option<Command>,
        /// [`Fault::DropReplyAfterApply`]: close instead of answering.
        drop_reply: bool,
        /// Replies to drop before the one that answers (a transaction sent
        /// whole: `MULTI`'s and the queued commands').
        skip: usize,
        /// Replies to drop after it (a queued command's `DISCARD`).
        drain: usize,
        /// It answers a command queued in a transaction the gate keeps.
        queued: bool,
        /// The first error among the skipped replies of a transaction sent
        /// whole: a queued command the server refused at `EXEC` time.
        refused_by: Option<Vec<u8>>,
    },
    /// Replies to drop before the next request is read.
    Drain(usize),
    /// [`Fault::BlackHole`] or a partition: never answer (until a heal
    /// resets the connection).
    BlackHoled,
}

/// Why a connection ended.
enum End {
    ClientClosed,
    UpstreamClosed,
    Stopped,
    /// Close the client with a TCP reset (divergence, `ResetBeforeSend`).
    Reset(&'static str),
    /// Close the client normally.
    Close(String),
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::ClientClosed => f.write_str("client closed"),
            End::UpstreamClosed => f.write_str("server closed"),
            End::Stopped => f.write_str("gate stopped"),
            End::Reset(why) => write!(f, "reset: {why}"),
            End::Close(why) => write!(f, "closed: {why}"),
        }
    }
}

/// What woke the connection up.
enum Event {
    Stop,
    Released(bool),
    DelayOver,
    /// [`super::Gate::heal`] while black-holed.
    Healed,
    Client(std::io::Result<usize>),
    Upstream(std::io::Result<usize>),
}

/// Serves one accepted client connection until either side closes or the
/// gate stops; always tells `shared` when it is gone.
pub(super) async fn serve(shared: Arc<Shared>, connection: u64, mut client: TcpStream) {
    let _closed = ClosedGuard {
        shared: Arc::clone(&shared),
        connection,
    };
    let mut stop = shared.stop_signal();
    let heal = shared.heal_signal();
    let (host, port) = shared.upstream();
    let connect = tokio::time::timeout(UPSTREAM_CONNECT_TIMEOUT, TcpStream::connect((host, port)));
    let mut upstream = tokio::select! {
        () = stopped(&mut stop) => return,
        connected = connect => match connected {
            Ok(Ok(upstream)) => upstream,
            Ok(Err(e)) => {
                tracing::warn!(connection, error = %e, "gate cannot connect upstream; closing the client");
                return;
            }
            Err(_) => {
                tracing::warn!(connection, "gate upstream connect timed out; closing the client");
                return;
            }
        },
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let end = {
        let (client_read, client_write) = client.split();
        let (upstream_read, upstream_write) = upstream.split();
        let mut conn = Conn {
            shared: &shared,
            connection,
            client_read,
            client_write,
            upstream_read,
            upstream_write,
            from_client: Buffer::default(),
            from_upstream: Buffer::default(),
            splitter: Splitter::default(),
            pending: Pending::Idle,
            transaction: Transaction::default(),
            transaction_epoch: 0,
            stop,
            heal,
        };
        conn.run().await
    };
    tracing::debug!(connection, %end, "gate connection ended");
    if let End::Reset(_) = end {
        if let Err(e) = client.set_zero_linger() {
            tracing::debug!(connection, error = %e, "cannot set SO_LINGER 0; closing normally");
        }
    }
    // Dropping both sockets closes them.
}

/// Tells the gate that the connection is gone, however the task ends
/// (including abort).
struct ClosedGuard {
    shared: Arc<Shared>,
    connection: u64,
}

impl Drop for ClosedGuard {
    fn drop(&mut self) {
        self.shared.connection_closed(self.connection);
    }
}

struct Conn<'a> {
    shared: &'a Shared,
    connection: u64,
    client_read: ReadHalf<'a>,
    client_write: WriteHalf<'a>,
    upstream_read: ReadHalf<'a>,
    upstream_write: WriteHalf<'a>,
    from_client: Buffer,
    from_upstream: Buffer,
    /// Where the splitter got to in `from_upstream`.
    splitter: Splitter,
    pending: Pending,
    /// The connection's transaction, when the gate keeps it.
    transaction: Transaction,
    /// The gate's reset count the transaction belongs to.
    transaction_epoch: u64,
    stop: watch::Receiver<bool>,
    /// Changes on every heal of the gate.
    heal: watch::Receiver<u64>,
}

impl Conn<'_> {
    async fn run(&mut self) -> End {
        loop {
            if let Err(end) = self.progress().await {
                return end;
            }
            let event = self.next_event().await;
            if let Err(end) = self.handle(event).await {
                return end;
            }
        }
    }

    /// Does everything possible without waiting: answers replies that are
    /// complete, starts requests that are complete.
    async fn progress(&mut self) -> Result<(), End> {
        loop {
            match &self.pending {
                Pending::AwaitReply { .. } => {
                    let Some(frame) = self.upstream_frame()? else {
                        return Ok(());
                    };
                    if is_push(&frame) {
                        self.send_client(&frame).await?;
                        continue;
                    }
                    if let Pending::AwaitReply {
                        skip, refused_by, ..
                    } = &mut self.pending
                    {
                        if *skip > 0 {
                            *skip -= 1;
                            if frame.first() == Some(&b'-') && refused_by.is_none() {
                                *refused_by = Some(frame);
                            }
                            continue;
                        }
                    }
                    let (record, drop_reply, drain, queued, refused_by) =
                        match std::mem::replace(&mut self.pending, Pending::Idle) {
                            Pending::AwaitReply {
                                record,
                                drop_reply,
                                drain,
                                queued,
                                refused_by,
                                ..
                            } => (record, drop_reply, drain, queued, refused_by),
                            _ => (None, false, 0, false, None), // matched above: cannot happen
                        };
                    let frame = match refused_by {
                        Some(cause) => super::transaction::aborted_at_exec(frame, &cause),
                        None => frame,
                    };
                    if queued {
                        self.transaction.queued_reply(&frame);
                    }
                    if drain > 0 {
                        self.pending = Pending::Drain(drain);
                    }
                    if let Some(command) = record {
                        self.shared.record(Exchange {
                            command,
                            reply: Frame::new(frame.clone()),
                        });
                    }
                    if drop_reply {
                        return Err(End::Close("reply dropped by fault".into()));
                    }
                    self.send_client(&frame).await?;
                }
                Pending::Idle => {
                    self.forward_unsolicited().await?;
                    let request = match parse_request(self.from_client.bytes()) {
                        Ok(Some(request)) => request,
                        Ok(None) => return Ok(()),
                        Err(e) => {
                            let reply = format!("-ERR {}\r\n", one_line(&e.to_string()));
                            let _ = self.client_write.write_all(reply.as_bytes()).await;
                            return Err(End::Close(e.to_string()));
                        }
                    };
                    let raw = self.from_client.take(request.len);
                    if request.args.is_empty() {
                        continue; // Redis ignores empty requests without a reply.
                    }
                    let wire = if request.inline {
                        encode_request(&request.args)
                    } else {
                        raw
                    };
                    // The server and the recording see the values the store
                    // drew as the replay renamed them (`super::drawn`).
                    let command = Command { args: request.args };
                    match self.shared.to_recorded(&command) {
                        Some(renamed) => {
                            let wire = encode_request(&renamed.args);
                            self.start(renamed, wire).await?
                        }
                        None => self.start(command, wire).await?,
                    }
                }
                Pending::Drain(left) => {
                    let left = *left;
                    let Some(frame) = self.upstream_frame()? else {
                        return Ok(());
                    };
                    if is_push(&frame) {
                        self.send_client(&frame).await?;
                    } else {
                        self.pending = if left > 1 {
                            Pending::Drain(left - 1)
                        } else {
                            Pending::Idle
                        };
                    }
                }
                Pending::Held { .. } | Pending::Delayed { .. } | Pending::BlackHoled => {
                    self.forward_unsolicited().await?;
                    return Ok(());
                }
            }
        }
    }

    /// Starts one request read from the client.
    async fn start(&mut self, command: Command, wire: Vec<u8>) -> Result<(), End> {
        // A partition cuts set-up commands too: a reconnecting client's
        // `PING` or `SCRIPT LOAD` must not get through either.
        if self.shared.partitioned() {
            self.black_hole(&command);
            return Ok(());
        }
        if is_setup(&command) {
            self.shared.note_setup(&command);
            self.transaction.set_up(&command);
            self.send_upstream(&wire).await?;
            if !is_subscription(&command) {
                self.pending = Pending::AwaitReply {
                    record: None,
                    drop_reply: false,
                    skip: 0,
                    drain: 0,
                    queued: false,
                    refused_by: None,
                };
            }
            return Ok(());
        }
        match self.shared.admit(self.connection, &command) {
            Admission::Forward => self.forward(command, wire).await,
            Admission::Hold(release) => {
                tracing::trace!(connection = self.connection, %command, "gate holds");
                self.pending = Pending::Held {
                    release,
                    command,
                    wire,
                };
                Ok(())
            }
            Admission::Answer(reply) => {
                if self.kept_transaction().0 {
                    self.transaction.replayed(&command, &wire, &reply.bytes);
                }
                self.send_client(&reply.bytes).await
            }
            Admission::Diverged => Err(End::Reset("diverged from the replay script")),
            Admission::Stopped => Err(End::Stopped),
        }
    }

    /// Leaves the connection silent: `command` is never sent nor answered.
    /// Only heals that come later reset it.
    fn black_hole(&mut self, command: &Command) {
        tracing::debug!(connection = self.connection, %command, "gate black-holes");
        self.heal.borrow_and_update();
        self.pending = Pending::BlackHoled;
    }

    /// Sends a scheduled command upstream, unless a partition or a fault
    /// says otherwise.
    async fn forward(&mut self, command: Command, wire: Vec<u8>) -> Result<(), End> {
        // A command released (or let through) during a partition is cut too.
        if self.shared.partitioned() {
            self.black_hole(&command);
            return Ok(());
        }
        let fault = self.shared.take_fault(&command);
        if let Some(fault) = fault {
            tracing::debug!(connection = self.connection, %command, ?fault, "gate fault");
        }
        match fault {
            None => self.send_scheduled(command, wire, false).await,
            Some(Fault::DropReplyAfterApply) => self.send_scheduled(command, wire, true).await,
            Some(Fault::Delay(delay)) => {
                self.pending = Pending::Delayed {
                    until: Instant::now() + delay,
                    command,
                    wire,
                };
                Ok(())
            }
            Some(Fault::ResetBeforeSend) => Err(End::Reset("reset by fault")),
            Some(Fault::RefuseBeforeSend) => self.send_client(super::REFUSED_REPLY).await,
            Some(Fault::BlackHole) => {
                self.black_hole(&command);
                Ok(())
            }
        }
    }

    async fn send_scheduled(
        &mut self,
        command: Command,
        wire: Vec<u8>,
        drop_reply: bool,
    ) -> Result<(), End> {
        let (kept, watch_dirty) = self.kept_transaction();
        let (wire, skip, drain, queued) =
            match kept.then(|| self.transaction.live(&command, &wire, watch_dirty)) {
                None | Some(Kept::Send) => (wire, 0, 0, false),
                Some(Kept::Execute { wire, skip }) => (wire, skip, 0, false),
                // Queued: the server says now whether it would queue it (a
                // full server refuses a write here), then forgets it.
                Some(Kept::Queue { wire }) => (wire, 1, 1, true),
                Some(Kept::Answer(reply)) => {
                    // Kept at the gate: recorded as the server's answer would be.
                    self.shared.record(Exchange {
                        command,
                        reply: Frame::new(reply.clone()),
                    });
                    if drop_reply {
                        return Err(End::Close("reply dropped by fault".into()));
                    }
                    return self.send_client(&reply).await;
                }
            };
        self.send_upstream(&wire).await?;
        self.pending = Pending::AwaitReply {
            record: Some(command),
            drop_reply,
            skip,
            drain,
            queued,
            refused_by: None,
        };
        Ok(())
    }

    /// Whether the gate keeps transactions, and whether a watched key was
    /// modified; the connection's transaction is forgotten first if the
    /// gate reset them since it was begun.
    fn kept_transaction(&mut self) -> (bool, bool) {
        let (kept, dirty, epoch) = self.shared.transactions();
        if epoch != self.transaction_epoch {
            self.transaction_epoch = epoch;
            self.transaction.reset();
        }
        (kept, dirty)
    }

    /// Waits for the next thing that can move the connection on.
    async fn next_event(&mut self) -> Event {
        let Conn {
            client_read,
            upstream_read,
            pending,
            stop,
            heal,
            ..
        } = self;
        let mut client_buf = [0u8; READ_CHUNK];
        let mut upstream_buf = [0u8; READ_CHUNK];
        let step = async {
            match pending {
                Pending::Held { release, .. } => Event::Released(release.await.is_ok()),
                Pending::Delayed { until, .. } => {
                    tokio::time::sleep_until(*until).await;
                    Event::DelayOver
                }
                Pending::BlackHoled => match heal.changed().await {
                    Ok(()) => Event::Healed,
                    // The gate is going away: its stop signal ends us.
                    Err(_) => std::future::pending().await,
                },
                _ => std::future::pending().await,
            }
        };
        let event = tokio::select! {
            biased;
            () = stopped(stop) => Event::Stop,
            event = step => event,
            read = upstream_read.read(&mut upstream_buf) => Event::Upstream(read),
            read = client_read.read(&mut client_buf) => Event::Client(read),
        };
        match event {
            Event::Client(Ok(n)) if n > 0 => self.from_client.extend(&client_buf[..n]),
            Event::Upstream(Ok(n)) if n > 0 => self.from_upstream.extend(&upstream_buf[..n]),
            _ => {}
        }
        event
    }

    async fn handle(&mut self, event: Event) -> Result<(), End> {
        match event {
            Event::Stop => Err(End::Stopped),
            Event::Client(Ok(0)) | Event::Client(Err(_)) => Err(End::ClientClosed),
            Event::Upstream(Ok(0)) | Event::Upstream(Err(_)) => Err(End::UpstreamClosed),
            Event::Client(Ok(_)) | Event::Upstream(Ok(_)) => Ok(()),
            Event::Released(false) => Err(End::Stopped),
            Event::Released(true) => {
                let Pending::Held { command, wire, .. } =
                    std::mem::replace(&mut self.pending, Pending::Idle)
                else {
                    return Ok(());
                };
                self.forward(command, wire).await
            }
            Event::DelayOver => {
                let Pending::Delayed { command, wire, .. } =
                    std::mem::replace(&mut self.pending, Pending::Idle)
                else {
                    return Ok(());
                };
                if self.shared.partitioned() {
                    self.black_hole(&command);
                    return Ok(());
                }
                self.send_scheduled(command, wire, false).await
            }
            // Free the silent connection: its client sees a reset at once.
            Event::Healed => Err(End::Reset("healed: the silent connection is freed")),
        }
    }

    /// Takes the first complete frame the server sent, if there is one.
    fn upstream_frame(&mut self) -> Result<Option<Vec<u8>>, End> {
        match self.splitter.next_len(self.from_upstream.bytes()) {
            Ok(Some(n)) => Ok(Some(self.from_upstream.take(n))),
            Ok(None) => Ok(None),
            Err(e) => Err(upstream_garbage(e)),
        }
    }

    /// Passes on frames the server sent while no request is outstanding
    /// (push frames, RESP2 pub/sub messages).
    async fn forward_unsolicited(&mut self) -> Result<(), End> {
        while let Some(frame) = self.upstream_frame()? {
            self.send_client(&frame).await?;
        }
        Ok(())
    }

    /// Sends `bytes` to the client, the recorded values renamed back to the
    /// ones the store drew (`super::drawn`; lengths are kept).
    async fn send_client(&mut self, bytes: &[u8]) -> Result<(), End> {
        let renamed = self.shared.to_store(bytes);
        self.client_write
            .write_all(renamed.as_deref().unwrap_or(bytes))
            .await
            .map_err(|_| End::ClientClosed)
    }

    async fn send_upstream(&mut self, bytes: &[u8]) -> Result<(), End> {
        self.upstream_write
            .write_all(bytes)
            .await
            .map_err(|_| End::UpstreamClosed)
    }
}

/// Bytes received and not yet handled. Consuming from the front is O(1)
/// (an offset), so a long pipeline in one buffer is not copied once per
/// request; the buffer compacts when the consumed part dominates.
#[derive(Default)]
struct Buffer {
    data: Vec<u8>,
    start: usize,
}

impl Buffer {
    fn bytes(&self) -> &[u8] {
        &self.data[self.start..]
    }

    fn extend(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start >= self.data.len() / 2 {
            self.data.drain(..self.start);
            self.start = 0;
        }
        self.data.extend_from_slice(bytes);
    }

    /// Removes and returns the first `n` bytes (`n <= bytes().len()`).
    fn take(&mut self, n: usize) -> Vec<u8> {
        let end = (self.start + n).min(self.data.len());
        let taken = self.data[self.start..end].to_vec();
        self.start = end;
        if self.start == self.data.len() {
            self.data.clear();
            self.start = 0;
        }
        taken
    }
}

fn upstream_garbage(e: FrameError) -> End {
    tracing::warn!(error = %e, "gate got bytes from the server that are not RESP; closing");
    End::Close(format!("server sent {e}"))
}

fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}
