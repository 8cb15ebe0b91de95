//! One adapter process at work: its pipes, the requests written to it and
//! the answers read back, its stderr kept to quote with a failure; and, for
//! an adapter that offers `cases` (docs/PROTOCOL.md §3.3), the way back to
//! the idle pool when its instance is done.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use super::cases::IdleProcess;
use super::process::{kill_and_reap_later, kill_group, Started, STARTED};
use super::{printable, ExternalStoreFactory};
use crate::contract::{ErrorKind, StoreError};

/// The least time an adapter gets for `hello`: starting a process, loading
/// its libraries and checking its server take longer than one request, more
/// so on a loaded CI machine.
const HELLO_TIMEOUT_AT_LEAST: Duration = Duration::from_secs(30);

/// How much of an adapter's stderr is kept to show with a failure.
const STDERR_KEPT: usize = 4096;

/// How much of a malformed line is quoted in a failure.
pub(super) const QUOTED: usize = 200;

/// The longest answer line an adapter may write (1 MiB, newline included);
/// a longer one fails the instance instead of growing memory without end.
pub const MAX_LINE: usize = 1 << 20;

/// Keeps the first failure of an adapter's instances, with what to do
/// about it (the first one set stays).
pub(super) fn record_failure(failure: &OnceLock<String>, error: &StoreError, hint: &str) {
    let _ = failure.set(format!("{}; {hint}", error.message));
}

pub(super) fn adapter_failed(message: String) -> StoreError {
    StoreError::new(ErrorKind::AdapterFailed, message)
}

/// A short quotation of an adapter's line; `{:?}` escapes control characters.
pub(super) fn quote(text: &str) -> String {
    let t = text.trim_end();
    if t.chars().count() > QUOTED {
        format!("{:?}…", t.chars().take(QUOTED).collect::<String>())
    } else {
        format!("{t:?}")
    }
}

/// The last [`STDERR_KEPT`] bytes of an adapter's stderr, copied by a
/// thread of its own for as long as the process lives (a thread, not a
/// task: a process kept idle between cases outlives the runtime that
/// started it).
pub(super) struct StderrTail {
    kept: Mutex<VecDeque<u8>>,
    /// Set at stderr's end of file (the process group is gone).
    ended: AtomicBool,
}

impl StderrTail {
    /// Starts copying `stderr` into a new tail. Should no thread start, the
    /// pipe is kept open unread (the adapter still runs; its failures are
    /// then quoted without their stderr).
    pub(super) fn follow(stderr: std::process::ChildStderr) -> Arc<StderrTail> {
        let tail = Arc::new(StderrTail {
            kept: Mutex::new(VecDeque::with_capacity(STDERR_KEPT)),
            ended: AtomicBool::new(false),
        });
        let sink = tail.clone();
        let copy = move || {
            use std::io::Read;
            let mut stderr = stderr;
            let mut buf = [0u8; 1024];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut k) = sink.kept.lock() {
                    k.extend(&buf[..n]);
                    while k.len() > STDERR_KEPT {
                        k.pop_front();
                    }
                }
            }
            sink.ended.store(true, Ordering::Release);
        };
        let _ = std::thread::Builder::new()
            .name("adapter-stderr".into())
            .stack_size(64 * 1024)
            .spawn(copy);
        tail
    }

    /// The last few non-blank lines, made printable.
    fn tail(&self) -> String {
        let bytes: Vec<u8> = self
            .kept
            .lock()
            .map(|k| k.iter().copied().collect())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(printable)
            .collect();
        let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
        if tail.is_empty() {
            "its stderr is empty".into()
        } else {
            format!("its stderr ends: {tail}")
        }
    }
}

/// The two pipes of a process at work, on the current runtime.
struct Pipes {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// One adapter process at work.
pub(super) struct Adapter {
    pub(super) instance: String,
    /// `None` once dropped or handed back to the idle pool.
    child: Option<std::process::Child>,
    pgid: i32,
    /// `None` once handed back to the idle pool.
    pipes: Option<Pipes>,
    stderr: Arc<StderrTail>,
    timeout: Duration,
    next_id: u64,
    /// Set once the adapter failed; every later call answers it.
    dead: Option<StoreError>,
    /// A request was written and its answer not read to its end (the call
    /// was given up): the pipe is out of step, the process not to be reused.
    in_flight: bool,
    /// The prefixes of the cases this process served (a process is never
    /// handed a prefix twice: a second case on it is a new one).
    pub(super) served: HashSet<String>,
    /// Where its store keeps the first failure of its instances.
    failure: Arc<OnceLock<String>>,
}

impl Drop for Adapter {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            kill_and_reap_later(child, self.pgid);
        }
    }
}

impl Adapter {
    /// A process for `instance` (a spare or a new one), its pipes on the
    /// current runtime.
    pub(super) fn spawn(
        factory: &ExternalStoreFactory,
        instance: &str,
    ) -> Result<Adapter, StoreError> {
        let cannot_start = |e: &dyn std::fmt::Display| {
            let error = adapter_failed(format!(
                "cannot start the adapter of instance {instance} (sh -c {:?}): {e}",
                factory.command
            ));
            record_failure(&factory.failure, &error, "fix the adapter's command line");
            error
        };
        let Started {
            child,
            pgid,
            stdin,
            stdout,
            stderr,
        } = factory
            .process_for(instance)
            .map_err(|e| cannot_start(&e))?;
        let stderr = StderrTail::follow(stderr);
        let idle = IdleProcess {
            child,
            pgid,
            stdin,
            stdout,
            stderr,
            next_id: 0,
            served: HashSet::new(),
        };
        let adapter = Adapter::resume(idle, factory, instance).map_err(|e| cannot_start(&e))?;
        STARTED.fetch_add(1, Ordering::Relaxed);
        Ok(adapter)
    }

    /// A process started before (a new one, or one idle between cases) at
    /// work again, its pipes on the current runtime. `Err` (the process
    /// killed) when the pipes cannot be moved there.
    pub(super) fn resume(
        idle: IdleProcess,
        factory: &ExternalStoreFactory,
        instance: &str,
    ) -> std::io::Result<Adapter> {
        let IdleProcess {
            child,
            pgid,
            stdin,
            stdout,
            stderr,
            next_id,
            served,
        } = idle;
        let pipes = ChildStdin::from_std(stdin).and_then(|stdin| {
            Ok(Pipes {
                stdin,
                stdout: BufReader::new(ChildStdout::from_std(stdout)?),
            })
        });
        let pipes = match pipes {
            Ok(p) => p,
            Err(e) => {
                kill_and_reap_later(child, pgid);
                return Err(e);
            }
        };
        Ok(Adapter {
            instance: instance.to_string(),
            child: Some(child),
            pgid,
            pipes: Some(pipes),
            stderr,
            timeout: factory.timeout,
            next_id,
            dead: None,
            in_flight: false,
            served,
            failure: factory.failure.clone(),
        })
    }

    /// The process, idle, for a later case: `None` (and it is killed when
    /// the adapter drops) unless it is alive, in step (every request
    /// answered, nothing unread) and has not failed.
    pub(super) fn idle(&mut self) -> Option<IdleProcess> {
        if self.dead.is_some() || self.in_flight {
            return None;
        }
        if !self.pipes.as_ref()?.stdout.buffer().is_empty() {
            return None;
        }
        if !matches!(self.child.as_mut()?.try_wait(), Ok(None)) {
            return None;
        }
        let Pipes { stdin, stdout } = self.pipes.take()?;
        let stdin = stdin.into_owned_fd().ok()?;
        let stdout = stdout.into_inner().into_owned_fd().ok()?;
        let child = self.child.take()?;
        Some(IdleProcess {
            child,
            pgid: self.pgid,
            stdin: std::process::ChildStdin::from(stdin),
            stdout: std::process::ChildStdout::from(stdout),
            stderr: self.stderr.clone(),
            next_id: self.next_id,
            served: std::mem::take(&mut self.served),
        })
    }

    /// The process's exit status, waited for at most `most`.
    async fn exit_status(&mut self, most: Duration) -> Option<std::process::ExitStatus> {
        let deadline = tokio::time::Instant::now() + most;
        loop {
            match self.child.as_mut().map(std::process::Child::try_wait) {
                Some(Ok(Some(status))) => return Some(status),
                Some(Ok(None)) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                _ => return None,
            }
        }
    }

    fn stderr_tail(&self) -> String {
        self.stderr.tail()
    }

    /// Waits (at most `most`) until stderr reached its end of file, so that
    /// an exited adapter's last words are read before they are quoted.
    async fn stderr_ended(&self, most: Duration) {
        let deadline = tokio::time::Instant::now() + most;
        while !self.stderr.ended.load(Ordering::Acquire) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Sends one request and reads its answer: `Ok(Ok(value))` for `ok`,
    /// `Ok(Err(store error))` for `error`, `Err` when the adapter failed.
    pub(super) async fn request(
        &mut self,
        op: &str,
        args: &Value,
        clock_ms: i64,
    ) -> Result<Result<Value, StoreError>, StoreError> {
        if let Some(dead) = &self.dead {
            return Err(dead.clone());
        }
        let id = self.next_id;
        self.next_id += 1;
        let what = format!("request {id} ({op} {args})");
        let line =
            json!({"id": id, "op": op, "args": args, "clock_ms": clock_ms}).to_string() + "\n";
        // Until the answer is read whole: a call given up midway leaves the
        // pipe out of step, and the process is then not reused.
        self.in_flight = true;
        let outcome = self.exchange(&line, &what, id, op == "hello").await;
        self.in_flight = false;
        if let Err((e, hint)) = &outcome {
            self.dead = Some(e.clone());
            kill_group(self.pgid);
            record_failure(&self.failure, e, hint);
        }
        outcome.map_err(|(e, _)| e)
    }

    /// One request and its answer; `Err` carries the failure and what to
    /// do about it.
    async fn exchange(
        &mut self,
        line: &str,
        what: &str,
        id: u64,
        hello: bool,
    ) -> Result<Result<Value, StoreError>, (StoreError, &'static str)> {
        const FIX: &str = "fix the adapter or its command line";
        let instance = self.instance.clone();
        let Some(Pipes { stdin, stdout }) = self.pipes.as_mut() else {
            return Err((
                adapter_failed(format!(
                    "the adapter of instance {instance} was already put away"
                )),
                FIX,
            ));
        };
        let mut raw = Vec::new();
        let read = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await?;
            // One byte past the cap tells an overlong line from one that
            // exactly fills it.
            (&mut *stdout)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut raw)
                .await
        };
        let limit = if hello {
            self.timeout.max(HELLO_TIMEOUT_AT_LEAST)
        } else {
            self.timeout
        };
        let read = tokio::time::timeout(limit, read).await;
        let n = match read {
            Err(_) => {
                return Err((
                    adapter_failed(format!(
                        "the adapter of instance {instance} did not answer {what} within {}s; {}",
                        limit.as_secs_f64(),
                        self.stderr_tail()
                    )),
                    "fix the adapter or raise --adapter-timeout",
                ))
            }
            Ok(Err(e)) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err((
                    adapter_failed(format!(
                        "cannot talk to the adapter of instance {instance} during {what}: {e}; {}",
                        self.stderr_tail()
                    )),
                    FIX,
                ))
            }
            Ok(Err(_)) => 0,
            Ok(Ok(n)) => n,
        };
        if n == 0 {
            // EOF: the adapter exited. Give its stderr a moment to arrive.
            let status = match self.exit_status(Duration::from_secs(2)).await {
                Some(s) => s.to_string(),
                None => "closed its stdout".to_string(),
            };
            // The reader ends at stderr's EOF, which an exited adapter's
            // process group gives at once (unless a child of it lives on).
            self.stderr_ended(Duration::from_secs(2)).await;
            return Err((
                adapter_failed(format!(
                    "the adapter of instance {instance} exited ({status}) during {what}; {}",
                    self.stderr_tail()
                )),
                FIX,
            ));
        }
        if raw.len() > MAX_LINE && !raw.ends_with(b"\n") {
            return Err((
                adapter_failed(format!(
                    "the adapter of instance {instance} answered {what} with a line longer than \
                     {MAX_LINE} bytes (1 MiB) and no newline; an answer is one JSON object on \
                     one line; {}",
                    self.stderr_tail()
                )),
                FIX,
            ));
        }
        let answer = String::from_utf8_lossy(&raw);
        let malformed = |why: &str| {
            (
                adapter_failed(format!(
                    "the adapter of instance {instance} answered {what} with {why}: {}",
                    quote(&answer)
                )),
                FIX,
            )
        };
        let value: Value =
            serde_json::from_str(&answer).map_err(|_| malformed("a line that is not JSON"))?;
        if value.get("id").and_then(Value::as_u64) != Some(id) {
            return Err(malformed(&format!("an answer whose id is not {id}")));
        }
        match (value.get("ok"), value.get("error")) {
            (Some(ok), None) => Ok(Ok(ok.clone())),
            (None, Some(err)) => match serde_json::from_value::<StoreError>(err.clone()) {
                Ok(e)
                    if !matches!(e.kind, ErrorKind::AdapterFailed | ErrorKind::MalformedReply) =>
                {
                    Ok(Err(StoreError {
                        message: printable(&e.message),
                        ..e
                    }))
                }
                _ => Err(malformed(
                    "an error that is not {\"kind\", \"message\"} with a known kind",
                )),
            },
            _ => Err(malformed("a JSON line with neither \"ok\" nor \"error\"")),
        }
    }
}
