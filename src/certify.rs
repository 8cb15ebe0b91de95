//! `storeproof certify`: pick the store and the server, run the suites, write
//! the report, print a short summary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};

use harness::contract::{Contract, ErrorKind};
use harness::figures::{Figures, Stats};
use harness::server::{self, ManagedServer, ServerKind, ServerOptions};
use harness::store::{Hello, StoreFactory, OPT_OUT_WRITES_MAY_BE_LOST};
use harness::{CheckResult, Report, RunSection, ServerSection, StoreSection, Verdict};
use harness::{CheckSpec, ServerRef, Subject, Suite};

use crate::store_spec::StoreSpec;

/// The suites of this version (docs/CONTRACTS.md §2), as `--suite` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SuiteName {
    Conformance,
    Explorer,
    Faults,
    Crash,
    Layout,
    /// Not part of a default run: certifies storeproof itself, not the
    /// store (every named sabotage run through the suites at small sizes
    /// must be caught by its named check; --store does not change it).
    Sabotage,
}

impl SuiteName {
    /// Every suite, in the order a run without `--suite` runs them.
    const ALL: [SuiteName; 5] = [
        SuiteName::Conformance,
        SuiteName::Explorer,
        SuiteName::Faults,
        SuiteName::Crash,
        SuiteName::Layout,
    ];

    /// Whether `suite` is this one.
    fn is(self, suite: &dyn Suite) -> bool {
        self.to_possible_value()
            .is_some_and(|v| v.get_name() == suite.name())
    }

    /// Every suite `--check` may name: the default run's and the sabotage
    /// suite, which only `--suite sabotage` runs.
    const KNOWN: [SuiteName; 6] = [
        SuiteName::Conformance,
        SuiteName::Explorer,
        SuiteName::Faults,
        SuiteName::Crash,
        SuiteName::Layout,
        SuiteName::Sabotage,
    ];
}

/// Where the crash suite's server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CrashBackendArg {
    /// Docker when the engine answers, else the process backend (the report says so).
    Auto,
    /// A container built here from the local redis-server, `docker kill -s KILL`.
    Docker,
    /// A managed redis-server, `kill -9`.
    Process,
}

/// The opt-outs a store may be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OptOut {
    /// Accept a server that may lose acknowledged writes (short durability settings).
    #[value(name = "acknowledged-writes-may-be-lost")]
    AcknowledgedWritesMayBeLost,
}

#[derive(Debug, Args)]
pub struct CertifyArgs {
    #[arg(long, default_value = "builtin:redis", value_name = "STORE", value_parser = StoreSpec::from_str, help = StoreSpec::help())]
    pub(crate) store: StoreSpec,
    /// Suites to run (comma-separated). Default: every suite this version
    /// has but sabotage, which certifies storeproof itself, not the store.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "SUITE")]
    pub(crate) suite: Vec<SuiteName>,
    /// The managed server to certify on, repeatable: redis-7.0 (Debian's
    /// redis-server), redis-6.2 or valkey-9 (installed by scripts/setup), or
    /// path:/to/server. Several give one report with a section per server
    /// and a verdict over them all. Default: redis-server on PATH (or
    /// $STOREPROOF_REDIS_SERVER).
    #[arg(long = "server", value_name = "NAME", value_parser = ServerKind::from_str)]
    pub(crate) server: Vec<ServerKind>,
    /// Use this existing Redis server instead of starting one. Only keys under
    /// the run's prefix are touched; checks that need a controlled clock or
    /// whole-keyspace reads are reported skipped.
    #[arg(long, value_name = "URL")]
    pub(crate) redis_url: Option<String>,
    /// Passed to the store: accept a server whose settings may lose writes.
    #[arg(long, value_enum, value_name = "OPT_OUT")]
    pub(crate) opt_out: Option<OptOut>,
    /// Where to write index.html, report.json and junit.xml.
    #[arg(long, value_name = "DIR", default_value_os_t = crate::default_out())]
    pub(crate) out: PathBuf,
    /// Seed of every random choice (printed; the same seed replays the same run).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Run only the checks whose id starts with this (repeatable), e.g.
    /// --check conformance.lease.
    #[arg(long, value_name = "ID")]
    pub(crate) check: Vec<String>,
    /// Seconds an adapter (cmd:) may take to answer one request (0.1 to 3600).
    #[arg(long, default_value_t = 10.0, value_name = "SECS", value_parser = adapter_timeout)]
    pub(crate) adapter_timeout: f64,
    /// Explorer: every schedule of two instances this many steps deep (4 to
    /// 40: a takeover race needs a take, a move past expiry, a take and the
    /// zombie's call).
    #[arg(long, default_value_t = 8, value_name = "STEPS", value_parser = sized(DEPTH))]
    pub(crate) depth: usize,
    /// Explorer: the queue's searches, this many steps deep (4 to 40; its
    /// states grow faster than the lease's).
    #[arg(long, default_value_t = 6, value_name = "STEPS", value_parser = sized(DEPTH))]
    pub(crate) queue_depth: usize,
    /// Explorer: the rate limits' searches, this many steps deep (4 to 40;
    /// slots, hits and pauses on skewed clocks).
    #[arg(long, default_value_t = 5, value_name = "STEPS", value_parser = sized(DEPTH))]
    pub(crate) rate_depth: usize,
    /// Conformance: sequences each generated check (conformance.generated.*)
    /// plays, before shrinking a failure (1 to 100000).
    #[arg(long, default_value_t = conformance::DEFAULT_CASES as usize, value_name = "N", value_parser = sized(CASES))]
    pub(crate) cases: usize,
    /// Explorer: seeded random walks of three instances (0 to 100000).
    #[arg(long, default_value_t = 200, value_name = "N", value_parser = sized(WALKS))]
    pub(crate) walks: usize,
    /// Explorer: steps per walk (4 to 10000).
    #[arg(long, default_value_t = 20, value_name = "STEPS", value_parser = sized(Bounds::new(MIN_DEPTH, 10_000, DEPTH_WHY)))]
    pub(crate) walk_steps: usize,
    /// Explorer: also every schedule of three instances (clocks 0, 0 and
    /// each skew) this many steps deep, on every contract explored (0, the
    /// default: none; at most 40).
    #[arg(long, default_value_t = 0, value_name = "STEPS", value_parser = sized(Bounds::new(0, 40, "")))]
    pub(crate) three_depth: usize,
    /// Explorer: the second clock's skews in ms, comma-separated (default
    /// 0,500,-500,1000,-1000,10000,-10000: none, half a lease, a lease and
    /// ten leases either way). Each is a search of its own: fewer is faster
    /// and decides less, and every PASS line names the skews searched.
    #[arg(long, value_name = "MS,...", value_parser = skews, allow_hyphen_values = true)]
    pub(crate) skews: Option<Skews>,
    /// Explorer: take states that differ only by a renaming of instances of
    /// one clock as one (fewer states; sound only for a store that treats
    /// holder names alike, which is checked on a sample of the merges, not
    /// proven). Off by default.
    #[arg(long)]
    pub(crate) symmetry: bool,
    /// The default since folding renamed instances became opt-in; accepted
    /// so that existing command lines keep working.
    #[arg(long, hide = true, conflicts_with = "symmetry")]
    pub(crate) no_symmetry: bool,
    /// Explorer: also lose one write's reply a schedule, anywhere (the
    /// connection closed after the server applied it); the operation's
    /// answer, a client library's retry included, is judged, and
    /// `unavailable` ends it without an answer. Off by default: it
    /// multiplies the states by four to five.
    #[arg(long)]
    pub(crate) lost_replies: bool,
    /// Crash: SIGKILLs of the server with the required settings (1 to 1000).
    #[arg(long, default_value_t = 20, value_name = "N", value_parser = sized(KILLS))]
    pub(crate) kills: usize,
    /// Crash: SIGKILLs with the append-only file off and the opt-out given
    /// (the loss must show; 1 to 1000). A demonstration that the kills are
    /// real, never the store's duty: two show it.
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = sized(KILLS))]
    pub(crate) opt_out_kills: usize,
    /// Crash: simulated power cuts (SIGKILL, then the append-only file cut
    /// back to its last fsync) with appendfsync always, and as many with
    /// everysec opted out; on the process backend (1 to 1000).
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = sized(KILLS))]
    pub(crate) power_losses: usize,
    /// Faults: rounds each instance runs per layout, while the nemesis plays
    /// (1 to 10000).
    #[arg(long, default_value_t = 30, value_name = "N", value_parser = sized(FAULT_ROUNDS))]
    pub(crate) fault_rounds: usize,
    /// Faults: faults the nemesis injects per layout (1 to 10000).
    #[arg(long, default_value_t = 16, value_name = "N", value_parser = sized(FAULTS))]
    pub(crate) faults: usize,
    /// Crash: where the killed server runs.
    #[arg(long, value_enum, default_value = "auto", value_name = "BACKEND")]
    pub(crate) crash_backend: CrashBackendArg,
    /// Explorer: checker threads, each with a server of its own; conformance:
    /// checks run at once, each lane on a server of its own (1 to 64).
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = sized(Bounds::new(1, MAX_THREADS, THREADS_WHY)))]
    pub(crate) threads: usize,
    /// Layout: also check that this layout file (TOML, `[stores]` with a
    /// backend per store) assembles under the one-backend rule.
    #[arg(long, value_name = "FILE")]
    pub(crate) layout: Option<PathBuf>,
    /// With --redis-url: keep the run's keys (under its prefix, sp:<run>:)
    /// on the server for inspection; by default they are removed at the end.
    #[arg(long)]
    pub(crate) keep_keys: bool,
    /// Print nothing but the summary.
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Run the K-th of N parts of this run (needs --seed): conformance
    /// checks, explorer searches (one per clock skew) and crash kill rounds
    /// dealt round-robin, explorer walks split in N ranges, the other suites
    /// whole on one shard; `storeproof merge` joins the N reports.
    #[arg(long, value_name = "K/N", value_parser = crate::shard::Shard::from_str)]
    pub(crate) shard: Option<crate::shard::Shard>,
    /// Explorer: stop at the first violation of a check the run asks for
    /// and report it at once; the clock skews and walks not explored are
    /// named, and no check they would have decided passes (they are
    /// skipped). On by default when
    /// the CI environment variable is set (not empty, 0 or false);
    /// --fail-fast=false turns it off there.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub(crate) fail_fast: Option<bool>,
    /// A store given in-process by the library (`Certification::of`):
    /// used instead of `store`; never on the command line.
    #[arg(skip)]
    pub(crate) library_store: Option<LibraryStore>,
}

/// A Rust store handed to the library, in place of a `--store` spelling:
/// made once the run's working directory exists, given its path (where a
/// store keeps its durable side files, as an adapter's
/// `STOREPROOF_WORKDIR`).
pub(crate) type StoreInWorkdir = dyn Fn(&Path) -> Arc<dyn StoreFactory> + Send + Sync;

/// [`StoreInWorkdir`], cloneable and printable with the options.
#[derive(Clone)]
pub(crate) struct LibraryStore(pub(crate) Arc<StoreInWorkdir>);

impl std::fmt::Debug for LibraryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LibraryStore")
    }
}

impl CertifyArgs {
    /// Every option at its command-line default (clap's declarations are
    /// the one place defaults are written), certifying `store`.
    pub(crate) fn defaults_for(store: Arc<StoreInWorkdir>) -> CertifyArgs {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            args: CertifyArgs,
        }
        let mut args = <Defaults as clap::Parser>::parse_from(["storeproof"]).args;
        args.library_store = Some(LibraryStore(store));
        args
    }

    /// The store as the report's `run.store` names it, secrets redacted:
    /// a library store by its own [`StoreFactory::spec`].
    fn store_text(&self, factory: &dyn StoreFactory) -> String {
        match &self.library_store {
            Some(_) => factory.spec(),
            None => server::redact_secrets(&self.store.to_string()),
        }
    }

    /// Whether the explorer stops at its first violation: `--fail-fast`,
    /// else whether `CI` is set.
    fn fail_fast(&self) -> bool {
        self.fail_fast.unwrap_or_else(|| {
            std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false" | "FALSE"))
        })
    }
}

/// The shallowest search (and shortest walk) that can reach a takeover
/// race: a take, a move of time past its expiry, another instance's take,
/// and the zombie's renew or release, with one command each.
pub(crate) const MIN_DEPTH: usize = 4;
const DEPTH_WHY: &str = "below 4 steps no schedule holds a take, a move past its expiry, a second take and the zombie's call, so the takeover races could not be reached";
const ROUNDS_WHY: &str = "with no rounds, no history would be judged";
const FAULTS_WHY: &str = "with no faults, the fault suite would prove nothing about faults";
const KILLS_WHY: &str = "with none, the crash checks would hold across nothing and say nothing";
/// Each checker thread starts a redis-server of its own.
pub(crate) const MAX_THREADS: usize = 64;
const THREADS_WHY: &str = "each checker thread starts a redis-server of its own";

/// The sizes a count may take, `min..=max`; `why` says what a smaller
/// value would mean (a vacuous suite), so the refusal teaches. One place
/// for both the command line's parser and the library's setters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    min: usize,
    max: usize,
    why: &'static str,
}

impl Bounds {
    pub(crate) const fn new(min: usize, max: usize, why: &'static str) -> Bounds {
        Bounds { min, max, why }
    }

    /// `n` if it is in bounds, else what is wrong with it.
    pub(crate) fn check(self, n: usize) -> Result<usize, String> {
        if n < self.min {
            return Err(if self.why.is_empty() {
                format!("at least {}", self.min)
            } else {
                format!("at least {}: {}", self.min, self.why)
            });
        }
        if n > self.max {
            return Err(format!("at most {}", self.max));
        }
        Ok(n)
    }
}

pub(crate) const DEPTH: Bounds = Bounds::new(MIN_DEPTH, 40, DEPTH_WHY);
pub(crate) const CASES: Bounds = Bounds::new(1, 100_000, "");
pub(crate) const WALKS: Bounds = Bounds::new(0, 100_000, "");
pub(crate) const KILLS: Bounds = Bounds::new(1, 1000, KILLS_WHY);
pub(crate) const FAULT_ROUNDS: Bounds = Bounds::new(1, 10_000, ROUNDS_WHY);
pub(crate) const FAULTS: Bounds = Bounds::new(1, 10_000, FAULTS_WHY);

/// The skews of `--skews` (one value to clap, not a list of values).
#[derive(Debug, Clone)]
pub(crate) struct Skews(pub(crate) Vec<i64>);

/// The clap parser of `--skews` ([`explorer::parse_skews`]).
fn skews(text: &str) -> Result<Skews, String> {
    explorer::parse_skews(text).map(Skews)
}

/// A clap parser for a count within `bounds`.
pub(crate) fn sized(
    bounds: Bounds,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |text: &str| {
        let n: usize = text
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a whole number"))?;
        bounds.check(n)
    }
}

/// The clap parser of `--adapter-timeout`: seconds, 0.1 to 3600.
pub(crate) fn adapter_timeout(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.1..=3600.0).contains(&secs) {
        return Err("between 0.1 and 3600 seconds".into());
    }
    Ok(secs)
}

/// Runs `certify`; `Err` is a setup error (exit 2), one line with every
/// secret redacted. A `--redis-url` run removes its own keys from the
/// server at the end (unless `--keep-keys`), also when it stops on an error.
pub async fn run(args: CertifyArgs) -> anyhow::Result<ExitCode> {
    let out = args.out.clone();
    let report = report(args).await?;
    print_summary(&report, &out);
    Ok(ExitCode::from(report.verdict.exit_code()))
}

/// The run as [`run`] makes it, its report written to `--out` and
/// returned, nothing printed but progress; `Err` is a setup error.
pub(crate) async fn report(args: CertifyArgs) -> anyhow::Result<Report> {
    let mut pending_keys = None;
    let result = certify(args, &mut pending_keys).await;
    if let Some((url, prefix)) = pending_keys {
        // The run stopped before its own cleanup; its error is the one
        // line to print, so this one stays silent.
        let _ = server::remove_keys_under(&url, &prefix).await;
    }
    result.map_err(|e| anyhow::anyhow!(crate::progress::printable(&format!("{e:#}"))))
}

/// The `--redis-url` server and run prefix whose keys a signal handler must
/// remove (unset with `--keep-keys` or a managed server).
static RUN_KEYS: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();

/// For the signal handler's cleanup: removes the keys of an interrupted
/// `--redis-url` run from the user's server (at most a few seconds; silent,
/// since the handler prints the one line). Removing them twice is harmless.
/// It blocks, on a thread and runtime of its own (it may be called from a
/// runtime's thread).
fn remove_run_keys_after_signal() {
    let Some((url, prefix)) = RUN_KEYS.get() else {
        return;
    };
    let removal = std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async {
            let _ = tokio::time::timeout(
                Duration::from_secs(5),
                server::remove_keys_under(url, prefix),
            )
            .await;
        });
    });
    let _ = removal.join();
}

/// The run. `pending_keys` is set to (URL, run prefix) while keys of the
/// run may be on a `--redis-url` server that it must remove.
async fn certify(
    args: CertifyArgs,
    pending_keys: &mut Option<(String, String)>,
) -> anyhow::Result<Report> {
    let names = if args.suite.is_empty() {
        SuiteName::ALL.to_vec()
    } else {
        args.suite.clone()
    };
    // A typo in --out must not cost the whole run, and a directory of the
    // user's files must never be replaced: refused now, before anything.
    reports::check_out_dir(&args.out)?;
    if args.keep_keys && args.redis_url.is_none() {
        bail!("--keep-keys keeps the run's keys on a --redis-url server; a managed server goes with its keys, so give --redis-url or drop --keep-keys");
    }
    if args.layout.is_some() && !names.contains(&SuiteName::Layout) {
        bail!(
            "--layout is checked by the layout suite, which --suite leaves out; add --suite layout"
        );
    }
    if args.shard.is_some() && args.seed.is_none() {
        bail!("--shard needs --seed: every shard of a run must draw the same random choices");
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let suites = names
        .iter()
        .map(|n| suite(*n, &args, seed))
        .collect::<anyhow::Result<Vec<_>>>()?;
    check_ids_exist(&names, &args, &args.check)?;
    // Asked-for Docker that is not there is a setup error, found before
    // anything runs.
    if names.contains(&SuiteName::Crash) && args.crash_backend == CrashBackendArg::Docker {
        crash::docker_available()
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    if args.redis_url.is_some() && !args.server.is_empty() {
        bail!("--server starts managed servers and --redis-url uses one of yours: give one or the other");
    }
    // Every named server must be installed before anything runs.
    for kind in &args.server {
        kind.binary()
            .map_err(|e| anyhow::anyhow!("--server {kind}: {e}"))?;
    }
    let kinds: Vec<Option<ServerKind>> = if args.server.is_empty() {
        vec![None]
    } else {
        args.server.iter().cloned().map(Some).collect()
    };
    // A shard (`--shard K/N`) runs its part of each suite on each server:
    // the units are dealt on from one server to the next.
    let mut plan = args.shard.map(crate::shard::Plan::new);
    let mut runs = Vec::new();
    for kind in &kinds {
        let part = match plan.as_mut() {
            Some(plan) => Some(
                names
                    .iter()
                    .map(|n| suite_part(*n, &args, seed, plan))
                    .collect::<anyhow::Result<Vec<_>>>()?
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>(),
            ),
            None => None,
        };
        let suites = part.as_deref().unwrap_or(&suites);
        // Every managed server of this run (the suites' own too) is of
        // this kind: the run's managed server carries it to them
        // (`Subject::server_options`).
        let run = certify_on(&args, &names, suites, seed, kind.as_ref(), pending_keys).await;
        runs.push(run?);
    }
    let report = Report::of_servers(runs).context("no server was certified")?;
    reports::write_all(&report, &args.out)?;
    Ok(report)
}

/// The run of every suite on one server: the managed server of `kind` (the
/// default one when `None`) or `--redis-url`'s.
async fn certify_on(
    args: &CertifyArgs,
    names: &[SuiteName],
    suites: &[Box<dyn Suite>],
    seed: u64,
    kind: Option<&ServerKind>,
    pending_keys: &mut Option<(String, String)>,
) -> anyhow::Result<Report> {
    let run_id = format!("{:08x}", (seed as u32) ^ std::process::id());
    let run_prefix = format!("sp:{run_id}:");
    if let (Some(url), false) = (&args.redis_url, args.keep_keys) {
        *pending_keys = Some((url.clone(), run_prefix.clone()));
        let _ = RUN_KEYS.set((url.clone(), run_prefix.clone()));
        harness::cleanup::register(
            "the run's keys on the --redis-url server",
            harness::cleanup::Stage::Keys,
            remove_run_keys_after_signal,
        );
    }
    let opt_out = args.opt_out.map(|_| OPT_OUT_WRITES_MAY_BE_LOST.to_string());

    // The server: managed (the default) or the user's.
    let managed = match &args.redis_url {
        Some(_) => None,
        None => Some(
            ManagedServer::start(ServerOptions::default().on_server(kind))
                .await
                .with_context(|| match kind {
                    Some(k) => format!("cannot start the managed server {k}"),
                    None => "cannot start the managed Redis server".to_string(),
                })?,
        ),
    };
    let (server_ref, server_section) = match (&managed, &args.redis_url) {
        (Some(m), _) => {
            let mut admin = m.admin().await.context("cannot reach the managed server")?;
            let settings = server::server_settings(&mut admin).await;
            (
                ServerRef::Managed(m),
                ServerSection {
                    version: m.version().to_string(),
                    managed: true,
                    settings,
                    name: kind.map(ToString::to_string),
                    // Valkey reports a redis_version too: say what it is.
                    product: (m.product() != format!("Redis {}", m.version()))
                        .then(|| m.product().to_string()),
                },
            )
        }
        (None, Some(url)) => {
            let facts = server::probe_url(url).await?;
            let settings = match redis::Client::open(url.as_str()) {
                Ok(c) => match c.get_multiplexed_async_connection().await {
                    Ok(mut conn) => server::server_settings(&mut conn).await,
                    Err(_) => BTreeMap::new(),
                },
                Err(_) => BTreeMap::new(),
            };
            (
                ServerRef::External { url: url.clone() },
                ServerSection {
                    version: facts.version,
                    managed: false,
                    settings,
                    name: None,
                    product: None,
                },
            )
        }
        (None, None) => bail!("no server: give --redis-url or let storeproof start one"),
    };

    // The store, and its hello on the target server: a refusal here is the
    // server's fault or the store's, and nothing can be checked.
    let (_workdir, factory) = match &args.library_store {
        Some(store) => {
            let workdir = workdir("storeproof-run-")?;
            let factory = (store.0)(workdir.path());
            (workdir, factory)
        }
        None => store_in_workdir(
            "storeproof-run-",
            &args.store.to_string(),
            args.adapter_timeout,
            managed.as_ref().and_then(|m| m.clock().cloned()),
        )?,
    };
    let info = probe(
        factory.as_ref(),
        &server_ref.url(),
        &format!("{run_prefix}probe:"),
        opt_out.clone(),
    )
    .await?;
    // The adapter answered: the names every suite connects are started
    // ahead (an adapter that cannot start wastes nothing on them).
    factory.warm(&["a", "b", "c"]);
    // From here on the run is set up: progress starts (a bar that started
    // earlier would be left on the terminal above a setup error's line).
    let progress = crate::progress::Progress::new(args.quiet);
    let _clear_bar = progress.clears_on_drop();
    let say = |line: String| progress.line(&line);
    say(format!(
        "storeproof {}: seed {seed}, prefix {run_prefix}",
        env!("CARGO_PKG_VERSION")
    ));
    let only_sabotage = names == [SuiteName::Sabotage];
    say(format!(
        "store {} ({} {}), server {} ({})",
        if only_sabotage {
            format!("sabotage:* ({} named)", sabotage::named().count())
        } else {
            factory.spec()
        },
        if only_sabotage {
            "storeproof's sabotage set"
        } else {
            info.name.as_str()
        },
        if only_sabotage {
            env!("CARGO_PKG_VERSION")
        } else {
            info.version.as_str()
        },
        server_section.describe(),
        if server_section.managed {
            "managed"
        } else {
            "external"
        }
    ));

    let subject = Subject {
        spec: factory.spec(),
        factory: factory.clone(),
        opt_out,
        run_prefix: run_prefix.clone(),
        contracts: info.contracts.clone(),
        server: server_ref,
        seed,
        may_start_servers: managed.is_some() || server::find_binary().is_ok(),
    };
    // The crash suite waits on servers it kills and restarts, on servers of
    // its own: it runs beside the suites before the fault suite (whose
    // rounds follow real time, so it runs alone after them), when nothing
    // but keys under each suite's own prefix is shared. A store whose
    // records live elsewhere (a durable adapter's database, the SQLite
    // store) might share them between suites: its suites run one by one.
    let index_of = |name: SuiteName| suites.iter().position(|s| name.is(s.as_ref()));
    let lane_end = index_of(SuiteName::Faults).unwrap_or(suites.len());
    let crash = index_of(SuiteName::Crash)
        .filter(|&c| c > lane_end && lane_end > 0 && factory.keeps_state_in_redis());
    let mut ran: Vec<Option<(Vec<CheckResult>, Option<Figures>)>> = Vec::new();
    ran.resize_with(suites.len(), || None);
    if let Some(c) = crash {
        // One task, both futures polled in turn: the suites wait on I/O and
        // blocking threads (the explorer's search), so neither holds the
        // other up, and a signal still drops the whole run at once.
        let lines = LinesOnly(&progress);
        let crash_run = run_suite(suites[c].as_ref(), &subject, &args.check, &lines);
        let lane = async {
            let mut done = Vec::new();
            for suite in &suites[..lane_end] {
                done.push(run_suite(suite.as_ref(), &subject, &args.check, &progress).await?);
            }
            anyhow::Ok(done)
        };
        let (crash_run, lane) = tokio::join!(crash_run, lane);
        for (i, r) in lane?.into_iter().enumerate() {
            ran[i] = Some(r);
        }
        ran[c] = Some(crash_run?);
    }
    for (i, suite) in suites.iter().enumerate() {
        if ran[i].is_none() {
            ran[i] = Some(run_suite(suite.as_ref(), &subject, &args.check, &progress).await?);
        }
    }
    let mut checks: Vec<CheckResult> = Vec::new();
    let mut stats = Stats::default();
    for (results, figures) in ran.into_iter().flatten() {
        if let Some(figures) = figures {
            stats.add(figures);
        }
        checks.extend(results);
    }
    stop_on_adapter_failure(factory.as_ref())?;
    // A store that selected another database only after hello (the probe
    // sees a SELECT while connecting) wrote keys no check could see.
    if let (Some(server), true) = (&managed, factory.keeps_state_in_redis()) {
        if let Some((db, keys)) = keys_outside_database_0(server).await {
            anyhow::bail!(
                "the store wrote {keys} key{} in database {db}; storeproof reads, snapshots and \
                 restores database 0 only, so its checks could not see them: keep the store's \
                 keys in database 0, under the run's prefix (docs/PROTOCOL.md, section 5); no \
                 report written",
                if keys == 1 { "" } else { "s" }
            );
        }
    }
    drop(subject);

    // Leave the user's server as it was found: the run's keys go (only
    // keys under its prefix), unless asked to keep them.
    let keys = match (&args.redis_url, args.keep_keys) {
        (Some(url), false) => match server::remove_keys_under(url, &run_prefix).await {
            Ok(n) => {
                *pending_keys = None;
                say(format!("removed the run's {n} keys under {run_prefix} from the server (--keep-keys keeps them)"));
                format!("removed ({n})")
            }
            Err(e) => {
                *pending_keys = None;
                // Not a setup error: the verdict stands; say how to finish.
                eprintln!(
                    "{}",
                    crate::progress::printable(&format!(
                        "storeproof: warning: could not remove the run's keys under {run_prefix}: {e}; remove them with redis-cli --scan --pattern '{run_prefix}*' | xargs redis-cli unlink"
                    ))
                );
                "not removed".to_string()
            }
        },
        (Some(_), true) => {
            say(format!(
                "kept the run's keys under {run_prefix} on the server (--keep-keys)"
            ));
            "kept".to_string()
        }
        (None, _) => "managed server, removed with it".to_string(),
    };

    let report = Report {
        storeproof: env!("CARGO_PKG_VERSION").to_string(),
        verdict: Report::verdict_of(&checks),
        // `--suite sabotage` alone certifies storeproof on its own broken
        // stores, not the store given: the section says what ran.
        store: if only_sabotage {
            StoreSection {
                spec: format!("sabotage:* ({} named)", sabotage::named().count()),
                name: "storeproof's sabotage set".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                contracts: Contract::COORDINATION
                    .iter()
                    .map(|c| c.name().to_string())
                    .collect(),
            }
        } else {
            StoreSection {
                spec: factory.spec(),
                name: info.name.clone(),
                version: info.version.clone(),
                contracts: info
                    .contracts
                    .iter()
                    .map(|c| c.name().to_string())
                    .collect(),
            }
        },
        server: server_section,
        checks,
        stats,
        per_server: Vec::new(),
        run: RunSection {
            seed,
            prefix: run_prefix.clone(),
            store: args.store_text(factory.as_ref()),
            keys,
            opt_out: args.opt_out.map(|_| OPT_OUT_WRITES_MAY_BE_LOST.to_string()),
            command: std::env::args()
                .map(|a| server::redact_secrets(&a))
                .collect(),
            only: args.check.clone(),
            suites_left_out: SuiteName::ALL
                .iter()
                .filter(|n| !names.contains(n))
                .filter_map(|n| suite(*n, args, seed).ok())
                .map(|s| s.name().to_string())
                .collect(),
        },
    };
    if let Some(m) = managed {
        let _ = m.stop().await;
    }
    progress.done();
    Ok(report)
}

/// Whether `--check` keeps check `id`: every check when none was given.
fn selected(prefixes: &[String], id: &str) -> bool {
    prefixes.is_empty() || prefixes.iter().any(|p| id.starts_with(p.as_str()))
}

/// Every suite of this version at the command line's default sizes: what
/// `replay` looks a check up in (a replay takes its sizes from the
/// counterexample).
pub(crate) fn every_suite() -> Vec<Box<dyn Suite>> {
    use clap::{Args, FromArgMatches};
    let defaults = CertifyArgs::augment_args(clap::Command::new("certify"))
        .try_get_matches_from(["certify"])
        .ok()
        .and_then(|m| CertifyArgs::from_arg_matches(&m).ok());
    match defaults {
        Some(args) => SuiteName::ALL
            .iter()
            .filter_map(|n| suite(*n, &args, 0).ok())
            .collect(),
        None => Vec::new(),
    }
}

/// The part of suite `name` that `plan`'s shard runs (`--shard`), `None`
/// when it has no unit of it.
fn suite_part(
    name: SuiteName,
    args: &CertifyArgs,
    seed: u64,
    plan: &mut crate::shard::Plan,
) -> anyhow::Result<Option<Box<dyn Suite>>> {
    Ok(match name {
        SuiteName::Conformance => plan.per_check(suite(name, args, seed)?),
        SuiteName::Explorer => plan.explorer(explorer_config(args, seed)),
        SuiteName::Crash => plan.crash(crash::CrashSuite::new(crash_config(args, seed))),
        _ => plan.whole(suite(name, args, seed)?),
    })
}

/// The explorer's config at the command line's sizes.
fn explorer_config(args: &CertifyArgs, seed: u64) -> explorer::ExplorerConfig {
    explorer::ExplorerConfig {
        depth: args.depth,
        queue_depth: args.queue_depth,
        rate_depth: args.rate_depth,
        walks: args.walks,
        walk_steps: args.walk_steps,
        three_depth: args.three_depth,
        symmetry: args.symmetry && !args.no_symmetry,
        lost_replies: args.lost_replies,
        seed,
        threads: args.threads,
        skews: args
            .skews
            .as_ref()
            .map_or_else(explorer::skews, |s| s.0.clone()),
        absolute_times: false,
        fail_fast: args.fail_fast(),
        ..Default::default()
    }
}

/// The crash suite's config at the command line's sizes.
fn crash_config(args: &CertifyArgs, seed: u64) -> crash::CrashConfig {
    crash::CrashConfig {
        kills: args.kills,
        opt_out_kills: args.opt_out_kills,
        power_losses: args.power_losses,
        instances: 4,
        seed,
        sabotage_settings: None,
        // The run's own: the suite takes both from its subject.
        contracts: Vec::new(),
        server: None,
        backend: match args.crash_backend {
            CrashBackendArg::Auto => crash::BackendChoice::Auto,
            CrashBackendArg::Docker => crash::BackendChoice::Docker,
            CrashBackendArg::Process => crash::BackendChoice::Process,
        },
    }
}

/// Suite `name`, sized by the command line; random choices from `seed`.
/// `Err`: a `--layout` file that cannot be read as a layout (one line).
fn suite(name: SuiteName, args: &CertifyArgs, seed: u64) -> anyhow::Result<Box<dyn Suite>> {
    Ok(match name {
        SuiteName::Conformance => Box::new(
            conformance::ConformanceSuite::with_cases(
                u32::try_from(args.cases).unwrap_or(u32::MAX),
            )
            .with_lanes(args.threads),
        ),
        SuiteName::Explorer => Box::new(explorer::ExplorerSuite::new(explorer_config(args, seed))),
        SuiteName::Faults => Box::new(faults::FaultsSuite::new(faults::FaultsConfig {
            rounds: args.fault_rounds,
            instances: 3,
            faults: args.faults,
        })),
        SuiteName::Crash => Box::new(crash::CrashSuite::new(crash_config(args, seed))),
        SuiteName::Layout => match &args.layout {
            Some(file) => Box::new(
                layout::LayoutSuite::with_file(file)
                    .map_err(|e| anyhow::anyhow!("--layout: {e}"))?,
            ),
            None => Box::new(layout::LayoutSuite::new()),
        },
        SuiteName::Sabotage => {
            use clap::FromArgMatches;
            let line = ["certify"]
                .into_iter()
                .chain(SABOTAGE_SIZES.iter().flat_map(|(flag, n)| [*flag, *n]));
            let small = CertifyArgs::augment_args(clap::Command::new("certify"))
                .try_get_matches_from(line)
                .and_then(|m| CertifyArgs::from_arg_matches(&m))
                .context("the sabotage suite's sizes")?;
            let suites = [
                SuiteName::Conformance,
                SuiteName::Explorer,
                SuiteName::Faults,
                SuiteName::Crash,
            ]
            .iter()
            .map(|n| suite(*n, &small, seed))
            .collect::<anyhow::Result<Vec<_>>>()?;
            Box::new(crate::sabotage_suite::SabotageSuite::new(
                crate::sabotage_suite::Entry::named(),
                suites,
                SABOTAGE_SIZES
                    .iter()
                    .map(|(flag, n)| (flag.trim_start_matches('-').to_string(), n.to_string()))
                    .collect(),
                Duration::from_secs_f64(args.adapter_timeout),
            ))
        }
    })
}

/// The sizes the sabotage suite runs the other suites at: each named
/// sabotage must be caught at these, and the whole matrix stays within
/// minutes.
const SABOTAGE_SIZES: [(&str, &str); 12] = [
    ("--cases", "16"),
    ("--depth", "6"),
    // Deep enough for both of the queue's races (save, claim, a move to
    // the claim's expiry, a claim, a completion).
    ("--queue-depth", "5"),
    // Both of the rate limits' races take two steps and a third to judge.
    ("--rate-depth", "4"),
    ("--walks", "10"),
    ("--fault-rounds", "4"),
    ("--faults", "4"),
    ("--kills", "1"),
    ("--opt-out-kills", "1"),
    ("--power-losses", "1"),
    ("--crash-backend", "process"),
    ("--threads", "2"),
];

/// A broken adapter (exited, hung, wrote garbage) is bad input, not a
/// verdict on the store: the run ends with that one line and no report.
/// One suite's run on `subject`: its checks `--check` selects, those
/// `plan` settles without a run, the rest run; the results in declared
/// order and its figures tallied over them (`None`: nothing ran). An
/// adapter that failed before it stops the run.
async fn run_suite(
    suite: &dyn Suite,
    subject: &Subject<'_>,
    check: &[String],
    progress: &dyn harness::Progress,
) -> anyhow::Result<(Vec<CheckResult>, Option<Figures>)> {
    stop_on_adapter_failure(subject.factory.as_ref())?;
    let declared: Vec<CheckSpec> = suite
        .checks()
        .into_iter()
        .filter(|c| selected(check, c.id))
        .collect();
    if declared.is_empty() {
        return Ok((Vec::new(), None));
    }
    let (settled, to_run) = harness::plan(suite.name(), declared.clone(), subject);
    let mut found = settled;
    let mut figures = None;
    let started = Instant::now();
    if !to_run.is_empty() {
        let run = suite
            .run(subject, &to_run, progress)
            .await
            .map_err(|e| anyhow::anyhow!("{e}; no report written"))?;
        found.extend(run.checks);
        figures = Some(run.figures);
    }
    let results = harness::in_declared_order(suite.name(), &declared, found);
    let figures = figures.map(|f| f.tallied(&results, started.elapsed()));
    Ok((results, figures))
}

/// The progress of a suite run beside others: its lines, never the bar
/// (one bar shows one suite's part).
struct LinesOnly<'a>(&'a dyn harness::Progress);

impl harness::Progress for LinesOnly<'_> {
    fn part(&self, _: &str, _: u64) {}
    fn step(&self, _: &str) {}
    fn line(&self, text: &str) {
        self.0.line(text);
    }
}

fn stop_on_adapter_failure(store: &dyn StoreFactory) -> anyhow::Result<()> {
    match store.adapter_failure() {
        Some(line) => bail!("{line}; no report written"),
        None => Ok(()),
    }
}

/// `--store` as `replay` reads it from a file: parsed, or one line naming
/// the choices.
pub fn check_store_spec(store: &str) -> anyhow::Result<StoreSpec> {
    store
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--store: {e}"))
}

/// A fresh working directory for the run (removed when the returned guard
/// drops, or by the Ctrl-C handler) and the store `store` (a `--store`
/// spelling) keeping its durable files in it; a store with a clock of its
/// own (`builtin:sqlite`) follows `server_clock`, the managed server's.
pub fn store_in_workdir(
    prefix: &str,
    store: &str,
    adapter_timeout_s: f64,
    server_clock: Option<Arc<harness::server::VirtualClock>>,
) -> anyhow::Result<(tempfile::TempDir, Arc<dyn StoreFactory>)> {
    let store = check_store_spec(store)?;
    let workdir = workdir(prefix)?;
    let factory = store.factory(
        workdir.path(),
        Duration::from_secs_f64(adapter_timeout_s),
        server_clock,
    );
    Ok((workdir, factory))
}

/// A fresh working directory for the run, removed when the returned guard
/// drops (or by the Ctrl-C handler), marked as this process's.
fn workdir(prefix: &str) -> anyhow::Result<tempfile::TempDir> {
    let workdir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("cannot create a working directory")?;
    crate::set_run_workdir(workdir.path().to_path_buf());
    server::mark_owned(workdir.path()).context("cannot mark the working directory")?;
    Ok(workdir)
}

/// The first database other than 0 holding keys on a managed server (only
/// storeproof and the store use it), with its key count, from `INFO
/// keyspace`; `None` when there is none or the server cannot say.
async fn keys_outside_database_0(server: &server::ManagedServer) -> Option<(u32, u64)> {
    let mut conn = server.admin().await.ok()?;
    let info: String = redis::cmd("INFO")
        .arg("keyspace")
        .query_async(&mut conn)
        .await
        .ok()?;
    other_database_keys(&info)
}

/// From an `INFO keyspace` answer (`db3:keys=2,expires=0,avg_ttl=0`): the
/// first database other than 0 with keys, and how many.
fn other_database_keys(info: &str) -> Option<(u32, u64)> {
    info.lines().find_map(|line| {
        let (db, rest) = line.trim().strip_prefix("db")?.split_once(':')?;
        let db: u32 = db.parse().ok()?;
        let keys: u64 = rest
            .split(',')
            .find_map(|kv| kv.strip_prefix("keys="))?
            .parse()
            .ok()?;
        (db != 0 && keys > 0).then_some((db, keys))
    })
}

/// Connects one probe instance: the store's hello on the target server. A
/// refusal here means nothing can be checked (a setup error).
pub async fn probe(
    factory: &dyn StoreFactory,
    url: &str,
    prefix: &str,
    opt_out: Option<String>,
) -> anyhow::Result<harness::store::StoreInfo> {
    // Through a gate that only watches, to see which database the store
    // selects (set-up commands pass through untouched).
    // The gate speaks plain RESP: a TLS URL goes to the server as it is.
    let gate = if url.starts_with("redis://") {
        Some(
            harness::gate::Gate::start(url)
                .await
                .map_err(|e| anyhow::anyhow!("cannot reach the server: {e}"))?,
        )
    } else {
        None
    };
    let hello = Hello {
        instance: "probe".into(),
        redis_url: gate.as_ref().map_or_else(|| url.to_string(), |g| g.url()),
        prefix: prefix.to_string(),
        opt_out,
    };
    let (info, client) = factory
        .connect(&hello, server::VIRTUAL_EPOCH_MS)
        .await
        .map_err(|e| match e.kind {
            ErrorKind::AdapterFailed => {
                anyhow::anyhow!("{}; fix the adapter or its command line", e.message)
            }
            _ => anyhow::anyhow!(
                "the store refused the server at {}: {}",
                server::redact_secrets(url),
                e.message
            ),
        })?;
    drop(client);
    let mut other = Vec::new();
    if let Some(gate) = gate {
        other = gate.other_databases();
        gate.shutdown().await;
    }
    if let (Some(db), true) = (other.first(), factory.keeps_state_in_redis()) {
        anyhow::bail!(
            "the store selected database {db} (SELECT {db}) while connecting; storeproof reads, \
             snapshots and restores database 0 only, so a store keeping its keys in another \
             database cannot be judged on them: keep its keys in database 0, under the run's \
             prefix (docs/PROTOCOL.md, section 5)"
        );
    }
    Ok(info)
}

fn print_summary(report: &Report, out: &std::path::Path) {
    let counts = report.counts();
    let several = !report.per_server.is_empty();
    if several {
        println!(
            "storeproof {} — {} on {} servers",
            report.storeproof,
            report.store.spec,
            report.per_server.len()
        );
        for run in &report.per_server {
            println!(
                "  {}: {} — {}",
                run.server.name.as_deref().unwrap_or("default"),
                run.server.describe(),
                run.verdict.word()
            );
        }
    } else {
        println!(
            "storeproof {} — {} on {} ({})",
            report.storeproof,
            report.store.spec,
            report.server.describe(),
            if report.server.managed {
                "managed"
            } else {
                "external"
            }
        );
    }
    println!(
        "checks: {}",
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for run in report.runs() {
        let on = run.server.name.as_deref().filter(|_| several);
        for c in &run.checks {
            if matches!(c.verdict, Verdict::Fail | Verdict::Warn | Verdict::Unknown) {
                let word = match c.verdict {
                    Verdict::Fail => "FAIL",
                    Verdict::Unknown => "unknown",
                    _ => "warn",
                };
                println!(
                    "  {word} {}{}: {}",
                    c.id,
                    on.map(|n| format!(" on {n}")).unwrap_or_default(),
                    crate::progress::printable(&c.reason)
                );
                if c.counterexample.is_some() {
                    println!(
                        "       replay: storeproof replay {}",
                        out.join(reports::replay_file_name_on(on, &c.id)).display()
                    );
                }
            }
        }
    }
    let undecided = report.undecided();
    if report.verdict == harness::RunVerdict::Incomplete {
        // Say how many and why, grouped by reason, so a reader sees at once
        // what would have to change for the run to decide them.
        let mut why: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for c in &undecided {
            *why.entry((c.verdict.word(), c.reason.as_str()))
                .or_default() += 1;
        }
        println!(
            "verdict: INCOMPLETE — nothing failed, but {} MUST check{} of the claimed contracts {} not decided:",
            undecided.len(),
            if undecided.len() == 1 { "" } else { "s" },
            if undecided.len() == 1 { "was" } else { "were" }
        );
        for ((word, reason), n) in why {
            println!("  {n} {word}: {}", crate::progress::printable(reason));
        }
    } else {
        println!("verdict: {}", report.verdict.word());
    }
    // A passing subset is not a certificate: say so beside the verdict.
    if !report.run.only.is_empty() {
        println!(
            "  only the checks starting with {} were run (--check); a certificate needs every check",
            crate::progress::printable(&report.run.only.join(", "))
        );
    }
    if !report.run.suites_left_out.is_empty() {
        println!(
            "  not run (--suite): {}; a certificate needs every suite",
            report.run.suites_left_out.join(", ")
        );
    }
    println!("report: {}", out.join("index.html").display());
}

/// Refuses, before anything starts, a `--check` prefix that names no check
/// of the suites to run (a typo would otherwise run nothing and pass).
fn check_ids_exist(
    names: &[SuiteName],
    args: &CertifyArgs,
    prefixes: &[String],
) -> anyhow::Result<()> {
    let suites: Vec<(SuiteName, Box<dyn Suite>)> = SuiteName::KNOWN
        .iter()
        .filter_map(|n| Some((*n, suite(*n, args, 0).ok()?)))
        .collect();
    let matches =
        |suite: &dyn Suite, prefix: &str| suite.checks().iter().any(|c| c.id.starts_with(prefix));
    for prefix in prefixes {
        if suites
            .iter()
            .any(|(n, s)| names.contains(n) && matches(s.as_ref(), prefix))
        {
            continue;
        }
        if let Some((_, other)) = suites.iter().find(|(_, s)| matches(s.as_ref(), prefix)) {
            bail!(
                "--check {prefix} names checks of the {} suite, which --suite leaves out; add --suite {}",
                other.name(),
                other.name()
            );
        }
        let mut starts: Vec<String> = suites
            .iter()
            .flat_map(|(_, s)| s.checks())
            .map(|c| match c.id.match_indices('.').nth(1) {
                Some((i, _)) if c.id.starts_with("conformance.") => c.id[..=i].to_string(),
                _ => c.id[..=c.id.find('.').unwrap_or(0)].to_string(),
            })
            .collect();
        starts.dedup();
        bail!(
            "no check id starts with {prefix:?}; ids start with {} (each is in report.json)",
            starts.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::other_database_keys;

    #[test]
    fn keys_outside_database_0_are_read_from_info_keyspace() {
        let info =
            "# Keyspace\r\ndb0:keys=12,expires=0,avg_ttl=0\r\ndb3:keys=2,expires=1,avg_ttl=5\r\n";
        assert_eq!(other_database_keys(info), Some((3, 2)));
        assert_eq!(
            other_database_keys("# Keyspace\r\ndb0:keys=12,expires=0,avg_ttl=0\r\n"),
            None
        );
        assert_eq!(other_database_keys(""), None);
    }
}
