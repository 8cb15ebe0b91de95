//! `storeproof replay FILE`: re-runs a saved counterexample (a failed check)
//! against a fresh managed server and says whether it still fails.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use serde::Deserialize;

use harness::check::Verdict;
use harness::server::{ManagedServer, ServerOptions};
use harness::suite::{ServerRef, Subject};

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

/// The fields of a replay file this command reads.
#[derive(Debug, Deserialize)]
struct ReplayFile {
    check: String,
    store: String,
    opt_out: Option<String>,
    reason: String,
    counterexample: Option<serde_json::Value>,
}

/// Runs `replay`; `Err` is a setup error (exit 2), one line with every
/// secret redacted.
pub async fn run(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    replay(args)
        .await
        .map_err(|e| anyhow::anyhow!(printable(&format!("{e:#}"))))
}

async fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read the replay file {}", args.file.display()))?;
    let file: ReplayFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a storeproof replay file (it needs check, store, opt_out, reason)",
            args.file.display()
        )
    })?;
    let store = args.store.clone().unwrap_or(file.store.clone());
    check_store_spec(&store)?;
    if file.check.starts_with("explorer.") {
        return replay_explorer(&args, &file, &store).await;
    }
    if file.check.starts_with("crash.") {
        return replay_crash(&args, &file, &store).await;
    }
    let Some(def) = conformance::all_checks()
        .into_iter()
        .find(|d| d.spec.id == file.check)
    else {
        bail!(
            "the replay file names the check {:?}, which this version does not have",
            file.check
        );
    };
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .context("cannot start the managed Redis server")?;
    let (_workdir, factory) = store_in_workdir("storeproof-replay-", &store, args.adapter_timeout)?;
    let run_prefix = format!("sp:replay{:08x}:", rand::random::<u32>());
    let info = probe(
        factory.as_ref(),
        &server.url(),
        &format!("{run_prefix}probe:"),
        file.opt_out.clone(),
    )
    .await?;
    let target = Subject {
        spec: harness::server::redact_secrets(&store),
        factory,
        server: ServerRef::Managed(&server),
        run_prefix,
        opt_out: file.opt_out.clone(),
        contracts: info.contracts.clone(),
        seed: rand::random(),
        may_start_servers: true,
    };
    println!("replaying {} on {store}", def.spec.id);
    println!("  recorded: {}", printable(&file.reason));
    let result = conformance::run_check(&target, 0, &def).await;
    drop(target);
    let _ = server.stop().await;
    Ok(match result.verdict {
        Verdict::Fail => {
            println!("  now: FAIL — {}", printable(&result.reason));
            println!("still fails");
            ExitCode::from(1)
        }
        Verdict::Warn => {
            println!("  now: warn (SHOULD) — {}", printable(&result.reason));
            println!("still deviates (a warning, not a failure)");
            ExitCode::SUCCESS
        }
        Verdict::Skipped => {
            println!("  now: skipped — {}", printable(&result.reason));
            println!("could not be replayed here");
            ExitCode::from(2)
        }
        Verdict::Unknown => {
            println!("  now: unknown — {}", printable(&result.reason));
            println!("could not be decided (the harness's trouble, not the store's)");
            ExitCode::from(3)
        }
        Verdict::Pass => {
            println!("  now: pass");
            println!("no longer fails");
            ExitCode::SUCCESS
        }
    })
}

/// Re-runs an explorer schedule on a fresh world and checks the property.
async fn replay_explorer(
    args: &ReplayArgs,
    file: &ReplayFile,
    store: &str,
) -> anyhow::Result<ExitCode> {
    let cx = file.counterexample.clone().unwrap_or_default();
    let property = serde_json::from_value::<explorer::Property>(cx["property"].clone())
        .ok()
        .or_else(|| cx["property"].as_str().and_then(explorer::Property::from_name))
        .with_context(|| {
            format!(
                "{} names no explorer property (counterexample.property)",
                args.file.display()
            )
        })?;
    let schedule: explorer::Schedule = serde_json::from_value(cx["schedule"].clone())
        .with_context(|| {
            format!(
                "{} has no explorer schedule (counterexample.schedule)",
                args.file.display()
            )
        })?;
    let (_workdir, factory) = store_in_workdir("storeproof-replay-", store, args.adapter_timeout)?;
    println!(
        "replaying {} on {store}: {} steps, clocks {:?}",
        file.check,
        schedule.actions.len(),
        schedule.skews
    );
    println!("  recorded: {}", printable(&file.reason));
    let opt_out = file.opt_out.clone();
    let prefix = format!("sp:replay{:08x}:", rand::random::<u32>());
    let (last, steps) = tokio::task::spawn_blocking(move || {
        explorer::replay_schedule(factory, opt_out, prefix, &schedule)
    })
    .await
    .context("the replay stopped unexpectedly")?;
    for step in steps.as_array().into_iter().flatten() {
        println!(
            "  {:>2}. {:<40} {}",
            step["step"],
            printable(step["what"].as_str().unwrap_or("")),
            printable(&step["answer"].to_string())
        );
    }
    if let Some(e) = &last.harness_error {
        println!("  the replay could not run: {}", printable(e));
        return Ok(ExitCode::from(2));
    }
    Ok(if last.broke(property) {
        let why = last.violation(property).unwrap_or_default().to_string();
        println!("  now: FAIL — {}", printable(&why));
        println!("still fails");
        ExitCode::from(1)
    } else {
        println!("  now: {property} holds");
        println!("no longer fails");
        ExitCode::SUCCESS
    })
}

/// Re-runs a crash run with the recorded seed, sizes and backend, and looks
/// at the recorded check.
async fn replay_crash(
    args: &ReplayArgs,
    file: &ReplayFile,
    store: &str,
) -> anyhow::Result<ExitCode> {
    let cx = file.counterexample.clone().unwrap_or_default();
    let size = |k: &str| cx[k].as_u64().map(|v| v as usize);
    let (Some(kills), Some(opt_out_kills), Some(power_losses), Some(seed)) = (
        size("kills"),
        size("opt_out_kills"),
        size("power_losses"),
        cx["seed"].as_u64(),
    ) else {
        anyhow::bail!(
            "{} has no crash run to repeat (counterexample.seed, kills, opt_out_kills, power_losses)",
            args.file.display()
        );
    };
    let config = crash::CrashConfig {
        kills,
        opt_out_kills,
        power_losses,
        instances: size("instances").unwrap_or(4),
        seed,
        backend: match cx["backend"].as_str() {
            Some("process") => crash::BackendChoice::Process,
            Some("docker") => crash::BackendChoice::Docker,
            _ => crash::BackendChoice::Auto,
        },
        sabotage_settings: None,
        contracts: crash::contracts_of_rerun(&cx),
    };
    let (_workdir, factory) = store_in_workdir("storeproof-replay-", store, args.adapter_timeout)?;
    println!(
        "replaying {} on {store}: seed {seed}, {kills} kills, {opt_out_kills} opted-out kills, {power_losses} power cuts per setting",
        file.check
    );
    println!("  recorded: {}", printable(&file.reason));
    let prefix = format!("sp:replay{:08x}:", rand::random::<u32>());
    let outcome = crash::run(factory, prefix, &config, &mut |line| {
        println!("  {}", printable(line))
    })
    .await
    .map_err(|e| anyhow::anyhow!("the crash suite could not run: {e}"))?;
    let Some(result) = outcome.checks.iter().find(|c| c.id == file.check) else {
        anyhow::bail!("this version has no check {:?}", file.check);
    };
    Ok(match result.verdict {
        Verdict::Fail => {
            println!("  now: FAIL — {}", printable(&result.reason));
            println!("still fails");
            ExitCode::from(1)
        }
        Verdict::Unknown | Verdict::Skipped => {
            println!(
                "  now: {} — {}",
                result.verdict.word(),
                printable(&result.reason)
            );
            println!("could not be decided here");
            ExitCode::from(3)
        }
        _ => {
            println!(
                "  now: {} — {}",
                result.verdict.word(),
                printable(&result.reason)
            );
            println!("no longer fails");
            ExitCode::SUCCESS
        }
    })
}
