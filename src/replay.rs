//! `storeproof replay FILE`: re-runs a saved counterexample (a failed check)
//! against a fresh managed server and says whether it still fails.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use harness::server::{ManagedServer, ServerOptions};
use harness::{Progress, ServerRef, Subject};
use harness::{ReplayFile, Verdict};

use crate::certify::{check_store_spec, probe, store_in_workdir};
use crate::progress::printable;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A replay file from a report's replays/ directory.
    file: PathBuf,
    /// Replay against another store than the one the file names (e.g. after a fix).
    #[arg(long, value_name = "STORE")]
    store: Option<String>,
    /// Seconds an adapter (cmd:) may take to answer one request (0.1 to 3600).
    #[arg(long, default_value_t = 10.0, value_name = "SECS", value_parser = crate::certify::adapter_timeout)]
    adapter_timeout: f64,
}

/// Runs `replay`; `Err` is a setup error (exit 2), one line with every
/// secret redacted.
pub async fn run(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    replay(args)
        .await
        .map_err(|e| anyhow::anyhow!(printable(&format!("{e:#}"))))
}

/// Where a replay's lines go: the terminal, indented under its heading.
struct Lines;

impl Progress for Lines {
    fn part(&self, _: &str, _: u64) {}
    fn step(&self, _: &str) {}
    fn line(&self, text: &str) {
        println!("  {}", printable(text));
    }
}

async fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read the replay file {}", args.file.display()))?;
    let file: ReplayFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a storeproof replay file (it needs storeproof, kind, check, store, opt_out, seed, verdict, reason)",
            args.file.display()
        )
    })?;
    let store = args.store.clone().unwrap_or(file.store.clone());
    check_store_spec(&store)?;
    // The suite that declares the check replays it.
    let Some((suite, check)) = crate::certify::every_suite().into_iter().find_map(|suite| {
        let check = suite.checks().into_iter().find(|c| c.id == file.check)?;
        Some((suite, check))
    }) else {
        bail!(
            "the replay file names the check {:?}, which this version does not have",
            file.check
        );
    };
    // A failure on a named server is replayed on that server.
    let kind = match &file.server {
        Some(name) => {
            let kind: harness::server::ServerKind = name
                .parse()
                .map_err(|e| anyhow::anyhow!("the replay file names the server {name:?}: {e}"))?;
            kind.binary().map_err(|e| anyhow::anyhow!("{e}"))?;
            Some(kind)
        }
        None => None,
    };
    let server = ManagedServer::start(ServerOptions::default().on_server(kind.as_ref()))
        .await
        .context("cannot start the managed Redis server")?;
    let (_workdir, factory) = store_in_workdir(
        "storeproof-replay-",
        &store,
        args.adapter_timeout,
        server.clock().cloned(),
    )?;
    let run_prefix = format!("sp:replay{:08x}:", rand::random::<u32>());
    let info = probe(
        factory.as_ref(),
        &server.url(),
        &format!("{run_prefix}probe:"),
        file.opt_out.clone(),
    )
    .await?;
    let subject = Subject {
        spec: harness::server::redact_secrets(&store),
        factory,
        server: ServerRef::Managed(&server),
        run_prefix,
        opt_out: file.opt_out.clone(),
        contracts: info.contracts.clone(),
        seed: file.seed,
        may_start_servers: true,
    };
    println!("replaying {} on {store}", check.id);
    println!("  recorded: {}", printable(&file.reason));
    let result = suite
        .replay(&subject, &check, file.counterexample.as_ref(), &Lines)
        .await;
    drop(subject);
    let _ = server.stop().await;
    let result = result.map_err(|e| anyhow::anyhow!("{e}"))?;
    let reason = printable(&result.reason);
    Ok(match result.verdict {
        Verdict::Fail => {
            println!("  now: FAIL — {reason}");
            println!("still fails");
            ExitCode::from(1)
        }
        Verdict::Warn => {
            println!("  now: warn (SHOULD) — {reason}");
            println!("still deviates (a warning, not a failure)");
            ExitCode::SUCCESS
        }
        Verdict::Skipped => {
            println!("  now: skipped — {reason}");
            println!("could not be replayed here");
            ExitCode::from(2)
        }
        Verdict::Unknown => {
            println!("  now: unknown — {reason}");
            println!("could not be decided (the harness's trouble, not the store's)");
            ExitCode::from(3)
        }
        Verdict::Pass => {
            println!("  now: pass — {reason}");
            println!("no longer fails");
            ExitCode::SUCCESS
        }
    })
}
