//! `storeproof mutate`: the mutation score of the built-in Lua scripts.
//! Generates every mutant, runs each through its contract's conformance
//! checks on managed servers, prints the score, the count, the wall time and
//! every survivor with its diff, and writes `mutate-report.{json,md}`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use mutate::{Options, Status};

/// Flags of `storeproof mutate`.
#[derive(Debug, clap::Args)]
pub(crate) struct MutateArgs {
    /// Where mutants.jsonl and the reports go; mutants decided there by an
    /// earlier run are not run again.
    #[arg(long, default_value = "mutate-report")]
    out: PathBuf,
    /// Mutants run side by side, each on a server of its own (default: the
    /// cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Orders the mutants and seeds the generated checks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sequences per generated conformance check.
    #[arg(long, default_value_t = conformance::DEFAULT_CASES)]
    cases: u32,
    /// Only the mutants of these scripts (file names under stores/lua).
    #[arg(long = "script")]
    scripts: Vec<String>,
    /// Seconds one check may take on a mutant; a check cut short decides
    /// nothing (the mutant stays undecided unless another check kills it).
    #[arg(long, default_value_t = 120)]
    check_timeout: u64,
    /// Exit 1 when the score (killed / total) is below this.
    #[arg(long, default_value_t = 0.95)]
    min_score: f64,
}

/// Runs the mutants; exit 0 when the score reaches `--min-score`, 1 below.
pub(crate) async fn run(args: MutateArgs) -> anyhow::Result<ExitCode> {
    let mut mutants = mutate::all_mutants()?;
    let known: Vec<String> = mutants.iter().map(|m| m.script.clone()).collect();
    for s in &args.scripts {
        anyhow::ensure!(
            known.contains(s),
            "--script {s}: no mutant of such a script (the scripts are the files under stores/lua, decimal.lua excepted)"
        );
    }
    if !args.scripts.is_empty() {
        mutants.retain(|m| args.scripts.contains(&m.script));
    }
    mutate::shuffle(&mut mutants, args.seed);
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let opts = Options {
        out: args.out.clone(),
        jobs,
        seed: args.seed,
        cases: args.cases,
        check_timeout: Duration::from_secs(args.check_timeout.max(1)),
    };
    eprintln!(
        "storeproof mutate: {} mutants, {jobs} jobs, results in {}",
        mutants.len(),
        args.out.join(mutate::RESULTS_FILE).display()
    );
    let outcome = mutate::run(mutants, &opts, |r, done, todo| {
        let what = match (&r.status, &r.killed_by) {
            (Status::Killed, Some(c)) => format!("killed by {c}"),
            (Status::Unknown, _) => "undecided".to_string(),
            _ => "SURVIVED".to_string(),
        };
        eprintln!(
            "[{done}/{todo}] {}:{} {} {what} ({:.1} s)",
            r.script,
            r.line,
            r.kind.name(),
            r.seconds
        );
    })
    .await
    .context("mutation run")?;
    let report = mutate::write_reports(&outcome, &opts)?;
    for r in report.mutants.iter().filter(|r| r.status != Status::Killed) {
        let status = if r.status == Status::Unknown {
            format!("undecided: {}", r.reason)
        } else {
            "survived".to_string()
        };
        println!(
            "{}:{} {} {} ({status})\n{}",
            r.script,
            r.line,
            r.kind.name(),
            r.id,
            r.diff()
        );
    }
    println!(
        "mutation score {:.1} %: {} killed of {} mutants ({} survived, {} undecided); wall time {:.1} s ({} decided earlier); report {}",
        report.score * 100.0,
        report.killed,
        report.total,
        report.survived,
        report.unknown,
        report.wall_seconds,
        report.resumed,
        args.out.join("mutate-report.json").display()
    );
    Ok(if report.score >= args.min_score {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
