//! `storeproof bench adapters`: each suite of the built-in store beside the
//! same suite of the Python example adapter and the Node example adapter
//! (docs/PROTOCOL.md §9, `adapters/node/example`), the median wall time of
//! a few runs each, as ratios to the built-in store's: what a backend
//! author waits for beyond the work of certifying (process start-ups,
//! interpreter overhead), measured on this machine.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

use crate::certify::{sized, Bounds};

/// The suites compared: the ones an adapter run spends its time in (the
/// crash suite kills a server, the layout suite reads one: neither runs
/// the adapter's operations much).
const SUITES: [&str; 3] = ["conformance", "explorer", "faults"];

#[derive(Debug, Args)]
pub struct AdaptersBench {
    /// The runs' seed (fixes every schedule, so the stores are compared alike).
    #[arg(long, default_value_t = 5)]
    seed: u64,
    /// Runs of each store and suite (1 to 9); the median is compared.
    #[arg(long, default_value_t = 3, value_parser = sized(Bounds::new(1, 9, "")))]
    runs: usize,
    /// The Python example adapter's command line (run from a checkout of
    /// storeproof by default).
    #[arg(
        long,
        default_value = "python3 fixtures/adapters/python/storeproof_adapter.py"
    )]
    python: String,
    /// The Node example adapter's command line (Debian's node-redis).
    #[arg(
        long,
        default_value = "NODE_PATH=/usr/share/nodejs node adapters/node/example/adapter.js"
    )]
    node: String,
}

/// One store's runs of one suite.
struct Timed {
    median: f64,
    verdicts: Vec<String>,
}

/// `storeproof certify --suite <suite> --seed <seed> [--store <store>]` of
/// this binary, `runs` times, each into a temporary folder.
fn time_suite(
    exe: &Path,
    suite: &str,
    seed: u64,
    store: Option<&str>,
    runs: usize,
) -> anyhow::Result<Timed> {
    let mut walls = Vec::with_capacity(runs);
    let mut verdicts = Vec::with_capacity(runs);
    for _ in 0..runs {
        let dir = tempfile::tempdir()?;
        let out = dir.path().join("report");
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["certify", "--suite", suite, "--seed", &seed.to_string()]);
        if let Some(store) = store {
            cmd.args(["--store", store]);
        }
        let started = Instant::now();
        let status = cmd
            .arg("--out")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .context("cannot run storeproof certify")?;
        walls.push(started.elapsed().as_secs_f64());
        let text = std::fs::read_to_string(out.join("report.json")).with_context(|| {
            format!(
                "storeproof certify --suite {suite}{} exited with {status} and wrote no report; run it by hand to see why",
                store.map(|s| format!(" --store '{s}'")).unwrap_or_default()
            )
        })?;
        let report: serde_json::Value =
            serde_json::from_str(&text).context("the run's report.json is not JSON")?;
        verdicts.push(report["verdict"].as_str().unwrap_or("?").to_string());
    }
    walls.sort_by(f64::total_cmp);
    Ok(Timed {
        median: walls[walls.len() / 2],
        verdicts,
    })
}

/// Prints, per suite, the built-in store's median wall time and each
/// example adapter's beside it with the ratio. An adapter file that is not
/// there (not run from a checkout) is an error naming the flag to use.
pub fn adapters(args: AdaptersBench) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the storeproof binary")?;
    for (flag, command) in [("--python", &args.python), ("--node", &args.node)] {
        let file = command
            .split_whitespace()
            .find(|w| w.ends_with(".py") || w.ends_with(".js"));
        if let Some(file) = file.filter(|f| !Path::new(f).exists()) {
            anyhow::bail!(
                "{file} not found: run storeproof bench adapters from a storeproof checkout, or give the adapter's command line with {flag}"
            );
        }
    }
    println!(
        "storeproof bench adapters (default sizes, seed {}, median of {} runs)",
        args.seed, args.runs
    );
    let stores = [
        ("python example", format!("cmd:{}", args.python)),
        ("node example", format!("cmd:{}", args.node)),
    ];
    for suite in SUITES {
        let builtin = time_suite(&exe, suite, args.seed, None, args.runs)?;
        let mut line = format!(
            "  {suite:<12} built-in {:>6.1}s ({})",
            builtin.median,
            builtin.verdicts.join(",")
        );
        for (name, store) in &stores {
            let t = time_suite(&exe, suite, args.seed, Some(store), args.runs)?;
            line.push_str(&format!(
                "; {name} {:.1}s, {:.1}× ({})",
                t.median,
                t.median / builtin.median.max(1e-9),
                t.verdicts.join(",")
            ));
        }
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
