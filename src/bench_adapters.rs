//! `storeproof bench adapters`: each suite of the built-in store beside the
//! same suite of the Python example adapter and the Node example adapter
//! (docs/PROTOCOL.md §9, `adapters/node/example`), the median wall time of
//! a few runs each, as ratios to the built-in store's: what a backend
//! author waits for beyond the work of certifying (process start-ups,
//! interpreter overhead), measured on this machine.

use std::path::Path;
use std::process::ExitCode;

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
    /// The suites compared, comma-separated (default: conformance, explorer
    /// and faults).
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(SUITES))]
    suite: Vec<String>,
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
    let mut args: Vec<String> = ["--suite", suite, "--seed", &seed.to_string()]
        .map(String::from)
        .to_vec();
    if let Some(store) = store {
        args.extend(["--store".to_string(), store.to_string()]);
    }
    for _ in 0..runs {
        let (wall, report) = crate::bench::certify_timed(exe, &args)?;
        walls.push(wall);
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
    let suites: Vec<&str> = if args.suite.is_empty() {
        SUITES.to_vec()
    } else {
        // In the bench's own order, each once.
        SUITES
            .into_iter()
            .filter(|s| args.suite.iter().any(|a| a == s))
            .collect()
    };
    for suite in suites {
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
