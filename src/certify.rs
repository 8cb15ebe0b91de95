//! `storeproof certify`: pick the store and the server, run the suites, write
//! the report, print a short summary.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use serde_json::json;

use harness::check::{CheckResult, Report, ServerSection, StoreSection, Verdict};
use harness::conformance::{self, ServerRef, Target};
use harness::server::{self, ManagedServer, ServerOptions};
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
        matches!(self, Suite::Conformance)
    }
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
    /// The store: builtin:redis (default), builtin:sqlite, or cmd:'<command line>'.
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
    /// Print nothing but the summary.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `certify`; `Err` is a setup error (exit 2).
pub async fn run(args: CertifyArgs) -> anyhow::Result<ExitCode> {
    let suites = if args.suite.is_empty() {
        vec![Suite::Conformance]
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
    if args.store != "builtin:redis" {
        if args.store == "builtin:sqlite" || args.store.starts_with("cmd:") {
            bail!(
                "--store {} is not in this version of storeproof yet; use --store builtin:redis",
                args.store
            );
        }
        bail!(
            "unknown --store {:?}; use builtin:redis, builtin:sqlite or cmd:'<command line>'",
            args.store
        );
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let run_id = format!("{:08x}", (seed as u32) ^ std::process::id());
    let run_prefix = format!("sp:{run_id}:");
    let opt_out = args.opt_out.map(|_| OPT_OUT_WRITES_MAY_BE_LOST.to_string());
    let quiet = args.quiet;
    let say = |line: String| {
        if !quiet {
            eprintln!("{line}");
        }
    };

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
    let workdir = tempfile::Builder::new()
        .prefix("storeproof-run-")
        .tempdir()
        .context("cannot create a working directory")?;
    let factory = RedisStoreFactory::new(workdir.path().join("kept-executions.sqlite"));
    let hello = Hello {
        instance: "probe".into(),
        redis_url: server_ref.url(),
        prefix: format!("{run_prefix}probe:"),
        opt_out: opt_out.clone(),
    };
    let (info, _probe) = factory
        .connect(&hello, server::VIRTUAL_EPOCH_MS)
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "the store refused the server at {}: {}",
                redact(&server_ref.url()),
                e.message
            )
        })?;
    drop(_probe);
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
        factory: &factory,
        server: server_ref,
        run_prefix: run_prefix.clone(),
        opt_out,
        contracts: info.contracts.clone(),
        may_start_servers,
    };

    let mut checks: Vec<CheckResult> = Vec::new();
    let mut stats = BTreeMap::new();
    for suite in &suites {
        if *suite == Suite::Conformance {
            let started = Instant::now();
            let defs = conformance::all_checks();
            let total = defs.len();
            let tty = std::io::stderr().is_terminal();
            let mut done = 0usize;
            let mut on_result = |r: &CheckResult| {
                done += 1;
                if !quiet {
                    let mark = match r.verdict {
                        Verdict::Pass => "pass",
                        Verdict::Fail => "FAIL",
                        Verdict::Warn => "warn",
                        Verdict::Skipped => "skip",
                    };
                    if tty || r.verdict != Verdict::Pass {
                        eprintln!("[{done:>3}/{total}] {mark} {}", r.id);
                    }
                }
            };
            let results = conformance::run_suite(&target, &defs, &mut on_result).await;
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
            (
                "command".to_string(),
                json!(std::env::args().collect::<Vec<_>>()),
            ),
        ]),
    };
    if let Some(m) = managed {
        let _ = m.stop().await;
    }
    reports::write_all(&report, &args.out)?;
    print_summary(&report, &args.out);
    Ok(match report.verdict {
        harness::check::RunVerdict::Pass => ExitCode::SUCCESS,
        harness::check::RunVerdict::Fail => ExitCode::from(1),
    })
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
        if matches!(c.verdict, Verdict::Fail | Verdict::Warn) {
            let word = if c.verdict == Verdict::Fail {
                "FAIL"
            } else {
                "warn"
            };
            println!("  {word} {}: {}", c.id, c.reason);
        }
    }
    println!(
        "verdict: {}",
        match report.verdict {
            harness::check::RunVerdict::Pass => "PASS",
            harness::check::RunVerdict::Fail => "FAIL",
        }
    );
    println!("report: {}", out.join("index.html").display());
}

/// A URL with any password replaced, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}***{}", &url[..s + 3], &url[at..]),
        _ => url.to_string(),
    }
}
