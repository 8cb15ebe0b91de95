//! The `storeproof` command line: parse, run, print any error once, exit
//! 0 (all checks passed), 1 (a check failed), 2 (usage or setup error) or
//! 3 (incomplete); 130, 143 or 129 when stopped by SIGINT, SIGTERM or
//! SIGHUP, after removing everything the run started.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::{bench, certify, judge, layout_cmd, merge, mutate, replay};

/// Certifies coordination stores — execution leases, a child queue, provider
/// rate limits — against a real Redis server, and writes a report.
#[derive(Debug, Parser)]
#[command(name = "storeproof", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Certify a store: run the suites and write storeproof-report/.
    ///
    /// With no arguments: the built-in Redis stores on a Redis server
    /// storeproof starts itself (durable settings, data on tmpfs, a clock it
    /// controls), every suite this version has.
    Certify(Box<certify::CertifyArgs>),
    /// Re-run a saved counterexample (a report's replays/<check>.json) on a
    /// fresh managed server; exit 1 if it still fails, 0 if it passes now.
    Replay(replay::ReplayArgs),
    /// Judge the saved conformance histories of a report.json again, with
    /// no server; exit 1 if one fails or disagrees with the report.
    Check(judge::CheckArgs),
    /// The one-backend rule: `storeproof layout check FILE` says whether a
    /// layout file assembles.
    #[command(subcommand)]
    Layout(layout_cmd::LayoutCommand),
    /// Measure: `storeproof bench explorer` prints the explorer's
    /// transitions per second beside the round-trip limit of one connection.
    #[command(subcommand)]
    Bench(bench::Bench),
    /// The mutation score of the built-in Lua: one-change mutants of every
    /// script, each run through its contract's conformance checks.
    Mutate(mutate::MutateArgs),
    /// Join the reports of `certify --shard K/N` (one directory per shard,
    /// every K of one N) into the report of the whole run, written to
    /// --out; exit as its verdict (0, 1 or 3), 2 for shards that do not
    /// belong together or a shard missing.
    Merge(merge::MergeArgs),
}

/// The command line's whole run: what the `storeproof` binary's `main`
/// does (parse, run, clean up, exit code).
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("storeproof: error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // Ctrl-C, SIGTERM (CI cancellation, `timeout`, `docker stop`) and
    // SIGHUP (a closed terminal): kill every managed server, adapter and
    // container and remove the run's directories before leaving, so an
    // interrupted run leaves nothing behind. The handlers are installed
    // before anything starts, so no signal finds the default action (which
    // would leave everything running).
    let signals = {
        let _entered = runtime.enter();
        Signals::install()
    };
    match signals {
        Ok(signals) => {
            runtime.spawn(signals.clean_up_and_exit_on_first());
        }
        Err(e) => {
            eprintln!("storeproof: error: cannot install signal handlers: {e}");
            return ExitCode::from(2);
        }
    }
    // Directories of earlier runs that died without cleaning up (SIGKILL,
    // a power cut): only ours, only those whose owner is gone.
    harness::server::reap_dead_runs();
    let result = runtime.block_on(async {
        let run = async {
            match cli.command {
                Command::Certify(args) => certify::run(*args).await,
                Command::Replay(args) => replay::run(args).await,
                Command::Check(args) => judge::run(args),
                Command::Layout(command) => layout_cmd::run(command),
                Command::Bench(b) => bench::run(b).await,
                Command::Mutate(args) => mutate::run(args).await,
                Command::Merge(args) => merge::run(args),
            }
        };
        tokio::select! {
            result = run => Some(result),
            _ = STOP.asked.notified() => None,
        }
    });
    let Some(result) = result else {
        // The signal handler asked: the run is dropped (an in-process store
        // writes no more, so the keys it removes stay removed); it now
        // cleans up and exits the process.
        STOP.dropped.notify_one();
        runtime.block_on(std::future::pending::<()>());
        return ExitCode::from(2);
    };
    // Adapters still alive (one left hanging by a run that stopped on its
    // error) go now, with their process groups: nothing outlives the run.
    harness::store::external::kill_all();
    match result {
        Ok(code) => code,
        Err(e) => {
            // `{:#}` keeps the whole chain of causes on one line.
            eprintln!("storeproof: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The signals that end a run early, each with its exit code (128 + the
/// signal's number, as a shell reports it).
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers; needs a runtime context.
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the first signal, cleans up and exits with its code.
    async fn clean_up_and_exit_on_first(mut self) {
        let (what, code) = tokio::select! {
            _ = self.interrupt.recv() => ("interrupted", 130),
            _ = self.terminate.recv() => ("terminated (SIGTERM)", 143),
            _ = self.hangup.recv() => ("hung up (SIGHUP)", 129),
        };
        // First stop the run itself, so that nothing of ours writes while
        // the rest is removed; a run stuck in blocking code is not waited
        // for long.
        STOP.asked.notify_one();
        let _ = tokio::time::timeout(Duration::from_secs(2), STOP.dropped.notified()).await;
        // Everything the run made, each kind registered by its maker
        // (managed servers, adapters, containers, a --redis-url run's keys,
        // the working directory), processes first and files last. It
        // blocks: on a thread of its own, so the runtime stays free.
        let _ = tokio::task::spawn_blocking(harness::cleanup::run_all).await;
        // Not eprintln!: after SIGHUP the terminal may be gone, and a failed
        // write must not stop the exit.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "storeproof: {what}; managed servers, adapters and containers stopped, no report written"
        );
        std::process::exit(code);
    }
}

/// How the signal handler stops the run before cleaning up: it notifies
/// `asked`; `main` drops the run and notifies `dropped`.
struct Stop {
    asked: tokio::sync::Notify,
    dropped: tokio::sync::Notify,
}

static STOP: std::sync::LazyLock<Stop> = std::sync::LazyLock::new(|| Stop {
    asked: tokio::sync::Notify::new(),
    dropped: tokio::sync::Notify::new(),
});

/// Help and version go to stdout with exit 0; a usage mistake is one line on
/// stderr naming the mistake and where to read more, exit 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let text = e.to_string();
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let mut first = lines
                .next()
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_string();
            // "the following required arguments were not provided:" names
            // them on the lines below: keep them on the one line.
            if first.ends_with(':') {
                let named: Vec<&str> = lines
                    .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("tip:"))
                    .collect();
                first = format!("{} {}", first, named.join(", "));
            }
            let tip = text
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("tip:") || l.starts_with("[possible values"))
                .map(|t| format!(" ({t})"))
                .unwrap_or_default();
            eprintln!("storeproof: error: {first}{tip}; see storeproof --help");
            ExitCode::from(2)
        }
    }
}
