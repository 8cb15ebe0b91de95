//! `storeproof mutate`: the mutation score of the built-in stores' Lua.
//!
//! Every built-in script (`stores/lua/*.lua`, not the shared `decimal.lua`)
//! is mutated one change at a time ([`generate`]); each mutant is the
//! built-in Redis store with that one script replaced
//! (`RedisStoreFactory::with_patched_script`), run through the conformance
//! checks of the script's contract until one fails (killed) or none does
//! (survived). Jobs run side by side, each on a managed server of its own;
//! every decided mutant is appended to `mutants.jsonl` in the output
//! directory at once, so a rerun skips what an earlier run decided.
//!
//! ```rust
//! use mutate::{mutants, MutantKind};
//!
//! let body = "if tonumber(ARGV[1]) < 10 then\n  return 1\nend\nreturn 0\n";
//! let all = mutants("example.lua", body).unwrap();
//! // `<` loosened to `<=`, on line 1, among the others.
//! let loosened = all
//!     .iter()
//!     .find(|m| m.kind == MutantKind::Comparison && m.after.contains("<="))
//!     .unwrap();
//! assert_eq!(loosened.line, 1);
//! assert!(all.iter().all(|m| m.body != body));
//! // Ids are a hash of the script's name and text: a rerun finds the same.
//! assert_eq!(mutants("example.lua", body).unwrap(), all);
//! ```

pub mod generate;
mod report;

use std::collections::{BTreeMap, VecDeque};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conformance::{all_checks, run_check, CheckDef, CheckKind};
use harness::contract::Contract;
use harness::server::{ManagedServer, ServerOptions};
use harness::{ServerRef, Subject, Verdict};
use serde::{Deserialize, Serialize};
use stores::redis::{script_files, RedisStoreFactory};

pub use generate::{mutants, shuffle, LexError, Mutant, MutantKind};
pub use report::{write_reports, Report};

/// The shared helpers every script is sent after; never mutated.
const DECIMAL: &str = include_str!("../../stores/lua/decimal.lua");

/// The file, in `--out`, where each decided mutant is appended as one JSON line.
pub const RESULTS_FILE: &str = "mutants.jsonl";

/// What can stop a mutation run (a mutant's verdict never does).
#[derive(Debug, thiserror::Error)]
pub enum MutateError {
    /// A built-in script could not be tokenized.
    #[error("cannot tokenize {script}: {source}")]
    Lex {
        /// The script.
        script: String,
        /// Why.
        source: LexError,
    },
    /// A built-in script's source does not start with `decimal.lua`.
    #[error("the source of {0} does not start with decimal.lua; the mutant generator cannot find the script's own text")]
    NoPrefix(String),
    /// A mutant names no built-in script.
    #[error(transparent)]
    UnknownScript(#[from] stores::redis::UnknownScript),
    /// A managed server could not be started.
    #[error("cannot start a managed redis-server: {0}")]
    Server(String),
    /// The output directory or a file in it could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MutateError + '_ {
    move |source| MutateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How a mutant fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A check failed (or a SHOULD check warned) on it.
    Killed,
    /// Every check of its contract passed.
    Survived,
    /// No check failed but at least one could not decide (the harness's
    /// own trouble): undecided, run again on the next run.
    Unknown,
}

/// One mutant's outcome, as appended to [`RESULTS_FILE`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutantResult {
    /// The mutant's stable id.
    pub id: String,
    /// Its script.
    pub script: String,
    /// The first line changed.
    pub line: usize,
    /// The kind of change.
    pub kind: MutantKind,
    /// The lines as they were.
    pub before: String,
    /// The lines as the mutant has them.
    pub after: String,
    /// How it fared.
    pub status: Status,
    /// The check that killed it.
    pub killed_by: Option<String>,
    /// That check's reason (first line), or the undecided checks' reasons.
    pub reason: String,
    /// Checks run on it.
    pub checks_run: usize,
    /// Seconds it took.
    pub seconds: f64,
}

impl MutantResult {
    /// The `-`/`+` diff of the changed lines.
    pub fn diff(&self) -> String {
        Mutant {
            id: self.id.clone(),
            script: self.script.clone(),
            line: self.line,
            kind: self.kind,
            before: self.before.clone(),
            after: self.after.clone(),
            body: String::new(),
        }
        .diff()
    }
}

/// How a run goes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where `mutants.jsonl` and the reports go.
    pub out: PathBuf,
    /// Mutants run side by side, each job on a server of its own.
    pub jobs: usize,
    /// Orders the mutants and seeds the generated checks.
    pub seed: u64,
    /// Sequences per generated conformance check.
    pub cases: u32,
    /// How long one check may take; a check cut short decides nothing
    /// (the mutant is undecided unless another check kills it).
    pub check_timeout: Duration,
}

/// The contract a script serves, by its operation's name.
fn contract_of(op: &str) -> Option<Contract> {
    match op.split('.').next() {
        Some("lease") => Some(Contract::Lease),
        Some("queue") => Some(Contract::Queue),
        Some("rate") => Some(Contract::Rate),
        _ => None,
    }
}

/// The contract the script `file` serves.
pub fn script_contract(file: &str) -> Option<Contract> {
    script_files()
        .into_iter()
        .find(|(f, _, _)| *f == file)
        .and_then(|(_, op, _)| contract_of(op))
}

/// Every mutant of every built-in script, in script then source order.
pub fn all_mutants() -> Result<Vec<Mutant>, MutateError> {
    let mut out = Vec::new();
    for (file, _, source) in script_files() {
        let body = source
            .strip_prefix(DECIMAL)
            .ok_or_else(|| MutateError::NoPrefix(file.to_string()))?;
        out.extend(mutants(file, body).map_err(|source| MutateError::Lex {
            script: file.to_string(),
            source,
        })?);
    }
    Ok(out)
}

/// The checks a mutant of a `contract` script runs, in order: scenarios and
/// special checks first (cheap, pointed), the generated sequences last.
fn checks_for(contract: Contract, cases: u32) -> Vec<Arc<CheckDef>> {
    let (mut first, mut last): (Vec<_>, Vec<_>) = all_checks()
        .into_iter()
        .filter(|d| d.contract() == Some(contract))
        .partition(|d| !matches!(d.kind, CheckKind::Generated(_)));
    for d in &mut last {
        let mut def = (**d).clone();
        if let CheckKind::Generated(g) = &mut def.kind {
            g.cases = cases.max(1);
        }
        *d = Arc::new(def);
    }
    first.extend(last);
    first
}

/// The results an earlier run decided (killed or survived), by id; a later
/// line about the same mutant wins. Unreadable lines (a run killed mid-write)
/// are ignored: their mutants run again.
pub fn decided(out: &Path) -> Result<BTreeMap<String, MutantResult>, MutateError> {
    let path = out.join(RESULTS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(io(&path)(e)),
    };
    let mut map = BTreeMap::new();
    for line in text.lines() {
        if let Ok(r) = serde_json::from_str::<MutantResult>(line) {
            if r.status == Status::Unknown {
                map.remove(&r.id);
            } else {
                map.insert(r.id.clone(), r);
            }
        }
    }
    Ok(map)
}

/// Runs one mutant on `server` as mutant number `n`.
async fn run_mutant(
    server: &ManagedServer,
    dir: &Path,
    n: usize,
    mutant: &Mutant,
    opts: &Options,
) -> Result<MutantResult, MutateError> {
    let started = Instant::now();
    let contract = script_contract(&mutant.script)
        .ok_or_else(|| MutateError::NoPrefix(format!("{} (no contract for it)", mutant.script)))?;
    let source = format!("{DECIMAL}{}", mutant.body);
    let factory = RedisStoreFactory::new(dir.join(format!("m{n}.sqlite")))
        .with_patched_script(&mutant.script, &source)?;
    let subject = Subject {
        spec: format!("mutant:{}", mutant.id),
        factory: Arc::new(factory),
        server: ServerRef::Managed(server),
        run_prefix: format!("sp:m{n}:"),
        opt_out: None,
        contracts: Contract::COORDINATION.to_vec(),
        seed: opts.seed,
        may_start_servers: true,
    };
    let mut result = MutantResult {
        id: mutant.id.clone(),
        script: mutant.script.clone(),
        line: mutant.line,
        kind: mutant.kind,
        before: mutant.before.clone(),
        after: mutant.after.clone(),
        status: Status::Survived,
        killed_by: None,
        reason: String::new(),
        checks_run: 0,
        seconds: 0.0,
    };
    let mut undecided = Vec::new();
    for (k, def) in checks_for(contract, opts.cases).iter().enumerate() {
        result.checks_run += 1;
        let verdict = tokio::time::timeout(opts.check_timeout, run_check(&subject, k, def)).await;
        let (verdict, reason) = match verdict {
            Ok(r) => (r.verdict, r.reason),
            // A check cut short decided nothing: the mutant may hang the
            // store, or the machine may be slow; it is run again next time.
            Err(_) => (
                Verdict::Unknown,
                format!(
                    "did not finish within {:?} (--check-timeout): not decided",
                    opts.check_timeout
                ),
            ),
        };
        match verdict {
            Verdict::Fail | Verdict::Warn => {
                result.status = Status::Killed;
                result.killed_by = Some(def.spec.id.to_string());
                result.reason = reason.lines().next().unwrap_or_default().to_string();
                break;
            }
            Verdict::Unknown => undecided.push(format!(
                "{}: {}",
                def.spec.id,
                reason.lines().next().unwrap_or_default()
            )),
            _ => {}
        }
    }
    if result.status == Status::Survived && !undecided.is_empty() {
        result.status = Status::Unknown;
        result.reason = undecided.join("; ");
    }
    // Milliseconds: the figure is for people, and a short decimal reads back
    // from mutants.jsonl as the same number.
    result.seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    Ok(result)
}

/// Whether `server` still answers `PING` promptly (a mutant whose script
/// loops leaves it `BUSY`; it must not be blamed on the next mutant).
async fn healthy(server: &ManagedServer) -> bool {
    let probe = async {
        let mut conn = server.admin().await.ok()?;
        let pong: String = redis::cmd("PING").query_async(&mut conn).await.ok()?;
        Some(pong == "PONG")
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(3), probe).await,
        Ok(Some(true))
    )
}

async fn start_server() -> Result<ManagedServer, MutateError> {
    ManagedServer::start(ServerOptions::default())
        .await
        .map_err(|e| MutateError::Server(e.to_string()))
}

/// What a run did: every mutant's result (decided earlier or now), in the
/// order given, and this run's wall time.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// One result per mutant given, decided earlier or in this run.
    pub results: Vec<MutantResult>,
    /// How many of them an earlier run had decided.
    pub resumed: usize,
    /// This run's wall time.
    pub wall: Duration,
}

/// Runs every mutant not decided in `opts.out` already, `opts.jobs` at a
/// time, each job on a managed server of its own; calls `on_result` as each
/// is decided, after appending it to [`RESULTS_FILE`]. Guarantees each
/// result is on disk before the next one is reported, so a killed run loses
/// at most the mutants in flight.
pub async fn run(
    mutants: Vec<Mutant>,
    opts: &Options,
    mut on_result: impl FnMut(&MutantResult, usize, usize),
) -> Result<RunOutcome, MutateError> {
    let started = Instant::now();
    std::fs::create_dir_all(&opts.out).map_err(io(&opts.out))?;
    let earlier = decided(&opts.out)?;
    let todo: VecDeque<(usize, Mutant)> = mutants
        .iter()
        .enumerate()
        .filter(|(_, m)| !earlier.contains_key(&m.id))
        .map(|(n, m)| (n, m.clone()))
        .collect();
    let resumed = mutants.len() - todo.len();
    let total_todo = todo.len();
    let queue = Arc::new(Mutex::new(todo));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let jobs = opts.jobs.clamp(1, total_todo.max(1));
    let mut handles = Vec::new();
    for _ in 0..jobs {
        let queue = queue.clone();
        let tx = tx.clone();
        let opts = opts.clone();
        handles.push(tokio::spawn(async move {
            let dir = match tempfile::tempdir() {
                Ok(d) => d,
                Err(e) => {
                    let _ = tx.send(Err(MutateError::Io {
                        path: std::env::temp_dir(),
                        source: e,
                    }));
                    return;
                }
            };
            let mut server = match start_server().await {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            loop {
                let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                let Some((n, mutant)) = next else { break };
                let result = run_mutant(&server, dir.path(), n, &mutant, &opts).await;
                if !healthy(&server).await {
                    server = match start_server().await {
                        Ok(s) => s,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    };
                }
                if tx.send(result).is_err() {
                    return;
                }
            }
        }));
    }
    drop(tx);
    let path = opts.out.join(RESULTS_FILE);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io(&path))?;
    let mut fresh: BTreeMap<String, MutantResult> = BTreeMap::new();
    let mut failure = None;
    while let Some(result) = rx.recv().await {
        match result {
            Ok(r) => {
                let line = serde_json::to_string(&r).unwrap_or_default();
                writeln!(file, "{line}")
                    .and_then(|_| file.flush())
                    .map_err(io(&path))?;
                on_result(&r, fresh.len() + 1, total_todo);
                fresh.insert(r.id.clone(), r);
            }
            Err(e) => {
                // Stop handing out work; the jobs in flight finish theirs.
                if let Ok(mut q) = queue.lock() {
                    q.clear();
                }
                failure.get_or_insert(e);
            }
        }
    }
    for h in handles {
        let _ = h.await;
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let results = mutants
        .iter()
        .filter_map(|m| fresh.get(&m.id).or_else(|| earlier.get(&m.id)).cloned())
        .collect();
    Ok(RunOutcome {
        results,
        resumed,
        wall: started.elapsed(),
    })
}
