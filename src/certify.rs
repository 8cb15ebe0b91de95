//! `storeproof certify`: pick the store and the server, run the suites, write
//! the report, print a short summary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use serde_json::json;

use harness::check::{CheckResult, Report, ServerSection, StoreSection, Verdict};
use harness::conformance::{self, ServerRef, Target};
use harness::contract::{Contract, ErrorKind};
use harness::server::{self, ManagedServer, ServerOptions};
use harness::store::external::ExternalStoreFactory;
use harness::store::redis::RedisStoreFactory;
use harness::store::{Hello, StoreFactory, OPT_OUT_WRITES_MAY_BE_LOST};

/// The suites of SPEC §3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    Conformance,
    Explorer,
    Faults,
    Crash,
    Sabotage,
    Layout,
}

impl Suite {
    /// Whether this version has the suite.
    fn built(self) -> bool {
        matches!(self, Suite::Conformance | Suite::Explorer | Suite::Crash)
    }
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
    /// The store: builtin:redis (default), builtin:sqlite, cmd:'<command line>',
    /// or a deliberately broken one: sabotage:read-then-write-take,
    /// sabotage:lease-on-caller-clock.
    #[arg(long, default_value = "builtin:redis", value_name = "STORE")]
    store: String,
    /// Suites to run (comma-separated). Default: every suite this version has.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "SUITE")]
    suite: Vec<Suite>,
    /// Use this existing Redis server instead of starting one. Only keys under
    /// the run's prefix are touched; checks that need a controlled clock or
    /// whole-keyspace reads are reported skipped.
    #[arg(long, value_name = "URL")]
    redis_url: Option<String>,
    /// Passed to the store: accept a server whose settings may lose writes.
    #[arg(long, value_enum, value_name = "OPT_OUT")]
    opt_out: Option<OptOut>,
    /// Where to write index.html, report.json and junit.xml.
    #[arg(long, value_name = "DIR", default_value_os_t = crate::default_out())]
    out: PathBuf,
    /// Seed of every random choice (printed; the same seed replays the same run).
    #[arg(long)]
    seed: Option<u64>,
    /// Run only the checks whose id starts with this (repeatable), e.g.
    /// --check conformance.lease.
    #[arg(long, value_name = "ID")]
    check: Vec<String>,
    /// Seconds an adapter (cmd:) may take to answer one request.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    adapter_timeout: f64,
    /// Explorer: every schedule of two instances this many steps deep.
    #[arg(long, default_value_t = 8, value_name = "STEPS")]
    depth: usize,
    /// Explorer: seeded random walks of three instances.
    #[arg(long, default_value_t = 200, value_name = "N")]
    walks: usize,
    /// Explorer: steps per walk.
    #[arg(long, default_value_t = 20, value_name = "STEPS")]
    walk_steps: usize,
    /// Crash: SIGKILLs of the server with the required settings.
    #[arg(long, default_value_t = 20, value_name = "N")]
    kills: usize,
    /// Crash: SIGKILLs with the append-only file off and the opt-out given
    /// (the loss must show).
    #[arg(long, default_value_t = 5, value_name = "N")]
    opt_out_kills: usize,
    /// Crash: simulated power cuts (SIGKILL, then the append-only file cut
    /// back to its last fsync) with appendfsync always, and as many with
    /// everysec opted out; on the process backend.
    #[arg(long, default_value_t = 5, value_name = "N")]
    power_losses: usize,
    /// Crash: where the killed server runs.
    #[arg(long, value_enum, default_value = "auto", value_name = "BACKEND")]
    crash_backend: CrashBackendArg,
    /// Explorer: checker threads, each with a server of its own.
    #[arg(long, default_value_t = 2, value_name = "N")]
    threads: usize,
    /// Print nothing but the summary.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `certify`; `Err` is a setup error (exit 2).
pub async fn run(args: CertifyArgs) -> anyhow::Result<ExitCode> {
    let suites = if args.suite.is_empty() {
        vec![Suite::Conformance, Suite::Explorer, Suite::Crash]
    } else {
        args.suite.clone()
    };
    for s in &suites {
        if !s.built() {
            bail!(
                "the {} suite is not in this version of storeproof yet; run --suite conformance",
                s.to_possible_value()
                    .map(|v| v.get_name().to_string())
                    .unwrap_or_default()
            );
        }
    }
    check_store_spec(&args.store)?;
    if !(args.adapter_timeout > 0.0 && args.adapter_timeout <= 3600.0) {
        bail!("--adapter-timeout must be between 0 and 3600 seconds");
    }
    // Asked-for Docker that is not there is a setup error, found before
    // anything runs.
    if suites.contains(&Suite::Crash) && args.crash_backend == CrashBackendArg::Docker {
        crash::docker::docker_available()
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let run_id = format!("{:08x}", (seed as u32) ^ std::process::id());
    let run_prefix = format!("sp:{run_id}:");
    let opt_out = args.opt_out.map(|_| OPT_OUT_WRITES_MAY_BE_LOST.to_string());
    let quiet = args.quiet;
    let progress = crate::progress::Progress::new(quiet);
    let say = |line: String| progress.line(&line);

    // The server: managed (the default) or the user's.
    let managed = match &args.redis_url {
        Some(_) => None,
        None => Some(
            ManagedServer::start(ServerOptions::default())
                .await
                .context("cannot start the managed Redis server")?,
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
                },
            )
        }
        (None, None) => bail!("no server: give --redis-url or let storeproof start one"),
    };

    // The store, and its hello on the target server: a refusal here is the
    // server's fault or the store's, and nothing can be checked.
    let (_workdir, factory) =
        store_in_workdir("storeproof-run-", &args.store, args.adapter_timeout)?;
    let shared_factory = factory.clone();
    let opt_out_for_explorer = opt_out.clone();
    let info = probe(
        factory.as_ref(),
        &server_ref.url(),
        &format!("{run_prefix}probe:"),
        opt_out.clone(),
    )
    .await?;
    say(format!(
        "storeproof {}: seed {seed}, prefix {run_prefix}",
        env!("CARGO_PKG_VERSION")
    ));
    say(format!(
        "store {} ({} {}), server Redis {} ({})",
        factory.spec(),
        info.name,
        info.version,
        server_section.version,
        if server_section.managed {
            "managed"
        } else {
            "external"
        }
    ));

    let may_start_servers = managed.is_some() || server::find_binary().is_ok();
    let target = Target {
        factory: factory.as_ref(),
        server: server_ref,
        run_prefix: run_prefix.clone(),
        opt_out,
        contracts: info.contracts.clone(),
        may_start_servers,
    };

    let selected =
        |id: &str| args.check.is_empty() || args.check.iter().any(|c| id.starts_with(c.as_str()));
    let conformance_defs: Vec<_> = conformance::all_checks()
        .into_iter()
        .filter(|d| selected(d.id))
        .collect();
    if conformance_defs.is_empty()
        && !explorer::check_ids().iter().any(|id| selected(id))
        && !crash::suite::check_ids().iter().any(|id| selected(id))
    {
        bail!(
            "no check id starts with {}; the ids are listed in report.json (e.g. conformance.lease.take-busy)",
            args.check.join(" or ")
        );
    }
    let mut checks: Vec<CheckResult> = Vec::new();
    let mut stats = BTreeMap::new();
    for suite in &suites {
        if *suite == Suite::Conformance && !conformance_defs.is_empty() {
            let started = Instant::now();
            let defs = &conformance_defs;
            progress.part("conformance", defs.len() as u64);
            let mut on_result = |r: &CheckResult| {
                progress.step(&r.id);
                let mark = match r.verdict {
                    Verdict::Pass => return,
                    Verdict::Fail => "FAIL",
                    Verdict::Warn => "warn",
                    Verdict::Skipped => "skip",
                    Verdict::Unknown => "unknown",
                };
                progress.line(&format!("{mark} {}: {}", r.id, r.reason));
            };
            let results = conformance::run_suite(&target, defs, &mut on_result).await;
            let secs = started.elapsed().as_secs_f64();
            let count = |v: Verdict| results.iter().filter(|r| r.verdict == v).count();
            stats.insert(
                "conformance".to_string(),
                json!({
                    "checks": results.len(),
                    "pass": count(Verdict::Pass),
                    "fail": count(Verdict::Fail),
                    "warn": count(Verdict::Warn),
                    "skipped": count(Verdict::Skipped),
                    "seconds": (secs * 1000.0).round() / 1000.0,
                    "bytes_per_tree": results
                        .iter()
                        .find(|r| r.id == "conformance.lease.bytes-per-tree")
                        .and_then(|r| r.evidence.get("bytes_per_tree").cloned()),
                }),
            );
            checks.extend(results);
        }
        if *suite == Suite::Crash && crash::suite::check_ids().iter().any(|id| selected(id)) {
            let missing: Vec<&str> = Contract::ALL
                .iter()
                .filter(|c| !info.contracts.contains(c))
                .map(|c| c.name())
                .collect();
            if !missing.is_empty() {
                let reason = format!(
                    "the crash workload writes leases, children and pauses; the store does not offer {}",
                    missing.join(", ")
                );
                checks.extend(skipped_all("crash", &crash::suite::check_ids(), &reason));
                continue;
            }
            let config = crash::suite::CrashConfig {
                kills: args.kills,
                opt_out_kills: args.opt_out_kills,
                power_losses: args.power_losses,
                instances: 4,
                seed,
                sabotage_settings: None,
                backend: match args.crash_backend {
                    CrashBackendArg::Auto => crash::suite::BackendChoice::Auto,
                    CrashBackendArg::Docker => crash::suite::BackendChoice::Docker,
                    CrashBackendArg::Process => crash::suite::BackendChoice::Process,
                },
            };
            progress.part(
                "crash",
                (config.kills + config.opt_out_kills + 2 * config.power_losses) as u64,
            );
            let p = progress.clone();
            let outcome = crash::suite::run(
                shared_factory.clone(),
                format!("{run_prefix}k:"),
                &config,
                &mut |line| {
                    p.step("");
                    p.line(line);
                },
            )
            .await
            .map_err(|e| anyhow::anyhow!("the crash suite could not run: {e}"))?;
            for r in &outcome.checks {
                if !quiet && matches!(r.verdict, Verdict::Fail | Verdict::Warn) {
                    eprintln!(
                        "{} {}",
                        if r.verdict == Verdict::Fail {
                            "FAIL"
                        } else {
                            "warn"
                        },
                        r.id
                    );
                }
            }
            stats.insert("crash".to_string(), outcome.stats);
            checks.extend(outcome.checks);
        }
        if *suite == Suite::Explorer && explorer::check_ids().iter().any(|id| selected(id)) {
            if managed.is_none() {
                checks.extend(skipped_all("explorer", &explorer::check_ids(), "needs managed servers: the explorer restores, flushes and moves the clock of servers it starts itself (this run uses --redis-url)"));
                continue;
            }
            if !info.contracts.contains(&Contract::Lease) {
                checks.extend(outside_claim_all(
                    "explorer",
                    &explorer::check_ids(),
                    "the explorer model-checks the lease contract, which the store does not offer",
                ));
                continue;
            }
            let config = explorer::ExplorerConfig {
                depth: args.depth,
                walks: args.walks,
                walk_steps: args.walk_steps,
                seed,
                threads: args.threads,
                skews: explorer::skews(),
                absolute_times: false,
            };
            let started = Instant::now();
            let factory = shared_factory.clone();
            let opt = opt_out_for_explorer.clone();
            let prefix = format!("{run_prefix}x:");
            progress.part("explorer", config.skews.len() as u64 + 1);
            let p = progress.clone();
            let outcome = tokio::task::spawn_blocking(move || {
                explorer::explore(factory, opt, prefix, &config, &mut |line| {
                    p.step("");
                    p.line(line);
                })
            })
            .await
            .context("the explorer stopped unexpectedly")?;
            let secs = started.elapsed().as_secs_f64();
            for r in &outcome.checks {
                if !quiet && r.verdict != Verdict::Pass {
                    eprintln!(
                        "{} {}",
                        if r.verdict == Verdict::Fail {
                            "FAIL"
                        } else {
                            "    "
                        },
                        r.id
                    );
                }
            }
            let mut figures = outcome.stats;
            figures["wall_seconds"] = json!((secs * 1000.0).round() / 1000.0);
            stats.insert("explorer".to_string(), figures);
            checks.extend(outcome.checks);
        }
    }
    drop(target);

    let report = Report {
        storeproof: env!("CARGO_PKG_VERSION").to_string(),
        verdict: Report::verdict_of(&checks),
        store: StoreSection {
            spec: factory.spec(),
            name: info.name.clone(),
            version: info.version.clone(),
            contracts: info
                .contracts
                .iter()
                .map(|c| c.name().to_string())
                .collect(),
        },
        server: server_section,
        checks,
        stats,
        run: BTreeMap::from([
            ("seed".to_string(), json!(seed)),
            ("prefix".to_string(), json!(run_prefix)),
            ("store".to_string(), json!(args.store)),
            (
                "opt_out".to_string(),
                json!(args.opt_out.map(|_| OPT_OUT_WRITES_MAY_BE_LOST)),
            ),
            (
                "command".to_string(),
                json!(std::env::args().collect::<Vec<_>>()),
            ),
        ]),
    };
    if let Some(m) = managed {
        let _ = m.stop().await;
    }
    progress.done();
    reports::write_all(&report, &args.out)?;
    print_summary(&report, &args.out);
    Ok(ExitCode::from(report.verdict.exit_code()))
}

/// Every check of `ids` reported skipped with `reason` (never a silent skip).
/// These count toward INCOMPLETE: the store claims what they check.
fn skipped_all(suite: &str, ids: &[&str], reason: &str) -> Vec<CheckResult> {
    ids.iter()
        .map(|id| CheckResult::undecided(id, suite, Verdict::Skipped, reason))
        .collect()
}

/// Every check of `ids` skipped because the store does not claim the
/// contract they are about (`reason` says which): not INCOMPLETE.
fn outside_claim_all(suite: &str, ids: &[&str], reason: &str) -> Vec<CheckResult> {
    ids.iter()
        .map(|id| CheckResult::outside_claim(id, suite, reason))
        .collect()
}

/// Refuses a `--store` this version cannot run, with what to use instead.
pub fn check_store_spec(store: &str) -> anyhow::Result<()> {
    if store == "builtin:sqlite" {
        bail!("--store builtin:sqlite is not in this version of storeproof yet; use --store builtin:redis or cmd:'<command line>'");
    }
    if let Some(name) = store.strip_prefix("sabotage:") {
        if !sabotage::NAMED.iter().any(|(n, _)| *n == name) {
            bail!(
                "unknown sabotaged store {name:?}; the sabotages are {}",
                sabotage::NAMED.map(|(n, _)| n).join(", ")
            );
        }
        return Ok(());
    }
    if store != "builtin:redis" && !store.starts_with("cmd:") {
        bail!(
            "unknown --store {store:?}; use builtin:redis, builtin:sqlite or cmd:'<command line>'"
        );
    }
    if store.trim() == "cmd:" {
        bail!("--store cmd: needs a command line, e.g. --store \"cmd:python3 my_adapter.py\"");
    }
    Ok(())
}

/// A fresh working directory for the run (removed when the returned guard
/// drops, or by the Ctrl-C handler) and the store `store` keeping its
/// durable files in it.
pub fn store_in_workdir(
    prefix: &str,
    store: &str,
    adapter_timeout_s: f64,
) -> anyhow::Result<(tempfile::TempDir, Arc<dyn StoreFactory>)> {
    let workdir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("cannot create a working directory")?;
    let _ = crate::RUN_WORKDIR.set(workdir.path().to_path_buf());
    let factory = make_factory(store, workdir.path(), adapter_timeout_s);
    Ok((workdir, factory))
}

/// The factory of a checked `--store`; durable files go into `workdir`.
fn make_factory(store: &str, workdir: &Path, adapter_timeout_s: f64) -> Arc<dyn StoreFactory> {
    if let Some(f) = store
        .strip_prefix("sabotage:")
        .and_then(|name| sabotage::by_name(name, workdir))
    {
        return f;
    }
    match store.strip_prefix("cmd:") {
        Some(command) => Arc::new(
            ExternalStoreFactory::new(command.trim(), workdir.to_path_buf())
                .with_timeout(Duration::from_secs_f64(adapter_timeout_s)),
        ),
        None => Arc::new(RedisStoreFactory::new(
            workdir.join("kept-executions.sqlite"),
        )),
    }
}

/// Connects one probe instance: the store's hello on the target server. A
/// refusal here means nothing can be checked (a setup error).
pub async fn probe(
    factory: &dyn StoreFactory,
    url: &str,
    prefix: &str,
    opt_out: Option<String>,
) -> anyhow::Result<harness::store::StoreInfo> {
    let hello = Hello {
        instance: "probe".into(),
        redis_url: url.to_string(),
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
                redact(url),
                e.message
            ),
        })?;
    drop(client);
    Ok(info)
}

fn print_summary(report: &Report, out: &std::path::Path) {
    let counts = report.counts();
    println!(
        "storeproof {} — {} on Redis {} ({})",
        report.storeproof,
        report.store.spec,
        report.server.version,
        if report.server.managed {
            "managed"
        } else {
            "external"
        }
    );
    println!(
        "checks: {}",
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for c in &report.checks {
        if matches!(c.verdict, Verdict::Fail | Verdict::Warn | Verdict::Unknown) {
            let word = match c.verdict {
                Verdict::Fail => "FAIL",
                Verdict::Unknown => "unknown",
                _ => "warn",
            };
            println!("  {word} {}: {}", c.id, c.reason);
            if c.counterexample.is_some() {
                println!(
                    "       replay: storeproof replay {}",
                    out.join(reports::replay_file_name(&c.id)).display()
                );
            }
        }
    }
    let undecided = report.undecided();
    if report.verdict == harness::check::RunVerdict::Incomplete {
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
            println!("  {n} {word}: {reason}");
        }
    } else {
        println!("verdict: {}", report.verdict.word());
    }
    println!("report: {}", out.join("index.html").display());
}

/// A URL with any password replaced, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}***{}", &url[..s + 3], &url[at..]),
        _ => url.to_string(),
    }
}
