//! `storeproof bench explorer`: the explorer's speed beside the limit one
//! Redis connection sets, measured in the same run on the same machine;
//! `storeproof bench linearizability`: the fault suite's checker's time on
//! seeded histories; `storeproof bench certify`: the default run's wall time,
//! whole and per suite; `storeproof bench adapters` (`bench_adapters`): the
//! example adapters' suites beside the built-in store's.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use harness::contract::Contract;
use harness::server::{ManagedServer, ServerOptions};
use harness::store::StoreFactory;
use stores::redis::RedisStoreFactory;

use crate::certify::{sized, Bounds, MAX_THREADS};

#[derive(Debug, Subcommand)]
pub enum Bench {
    /// Transitions per second of the explorer vs. the round-trip limit.
    Explorer(ExplorerBench),
    /// Seconds the linearizability checker takes on seeded lease histories
    /// of one tree with lost replies.
    Linearizability(LinearizabilityBench),
    /// Wall seconds of the default `certify` run (every suite, the built-in
    /// Redis stores, a managed server), whole and per suite.
    Certify(CertifyBench),
    /// Each suite of the built-in store beside the Python and Node example
    /// adapters' (median wall seconds, as ratios).
    Adapters(crate::bench_adapters::AdaptersBench),
}

#[derive(Debug, Args)]
pub struct CertifyBench {
    /// The run's seed (fixes every schedule, so runs are compared alike).
    #[arg(long, default_value_t = 11)]
    seed: u64,
    /// Runs, one after another (1 to 20); each is printed, then the slowest.
    #[arg(long, default_value_t = 1, value_parser = sized(Bounds::new(1, 20, "")))]
    runs: usize,
}

/// Runs `storeproof certify --seed <seed>` (this binary, default sizes) into
/// a temporary folder `args.runs` times; prints each run's wall time, its
/// verdict and every suite's seconds from its report, then the slowest. A
/// run that ends without a report is an error.
fn certify(args: CertifyBench) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the storeproof binary")?;
    println!(
        "storeproof bench certify (default sizes, seed {})",
        args.seed
    );
    let mut slowest: f64 = 0.0;
    for run in 1..=args.runs {
        let (wall, report) = certify_timed(&exe, &["--seed".into(), args.seed.to_string()])?;
        let suites: Vec<String> = ["conformance", "explorer", "faults", "crash", "layout"]
            .iter()
            .filter_map(|name| {
                let secs = report["stats"][name]["seconds"].as_f64()?;
                Some(format!("{name} {secs:.1}s"))
            })
            .collect();
        println!(
            "  run {run}: {wall:.1}s wall, verdict {}; per suite (the crash suite runs beside conformance and the explorer): {}",
            report["verdict"].as_str().unwrap_or("?"),
            suites.join(", ")
        );
        slowest = slowest.max(wall);
    }
    println!("  slowest of {}: {slowest:.1}s", args.runs);
    Ok(ExitCode::SUCCESS)
}

/// One `storeproof certify <args>` run of this binary (`exe`) into a
/// temporary folder, its output discarded: its wall seconds and its
/// report. A run that ends without a report is an error naming the
/// command.
pub(crate) fn certify_timed(
    exe: &std::path::Path,
    args: &[String],
) -> anyhow::Result<(f64, serde_json::Value)> {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("report");
    let started = Instant::now();
    let status = std::process::Command::new(exe)
        .arg("certify")
        .args(args)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("cannot run storeproof certify")?;
    let wall = started.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(out.join("report.json")).with_context(|| {
        format!(
            "storeproof certify {} exited with {status} and wrote no report; run it by hand to see why",
            args.join(" ")
        )
    })?;
    let report = serde_json::from_str(&text).context("the run's report.json is not JSON")?;
    Ok((wall, report))
}

#[derive(Debug, Args)]
pub struct LinearizabilityBench {
    /// Operations per history (10 to 100000).
    #[arg(long, default_value_t = 1000, value_parser = sized(Bounds::new(10, 100_000, "")))]
    ops: usize,
    /// Histories, each from its own seed (1 to 1000).
    #[arg(long, default_value_t = 5, value_parser = sized(Bounds::new(1, 1000, "")))]
    histories: usize,
    /// The first seed; history n uses seed + n.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Times the linearizability checker on `args.histories` random valid
/// histories (three instances, about one reply in ten lost), and on each
/// again with its last busy reply forged into a grant (not linearizable:
/// the search must exhaust and find the first failing prefix); prints a
/// line per history and the slowest.
fn linearizability(args: LinearizabilityBench) -> ExitCode {
    let mut slowest = Duration::ZERO;
    for n in 0..args.histories as u64 {
        let seed = args.seed.wrapping_add(n);
        for forged in [false, true] {
            let (took, summary) = faults::bench_linearizability(args.ops, seed, forged);
            slowest = slowest.max(took);
            println!(
                "seed {seed}{}: {} operations on one tree, {} with a lost reply: {} in {:.1} ms",
                if forged {
                    ", last busy forged into a grant"
                } else {
                    ""
                },
                summary.ops,
                summary.lost,
                summary.verdict,
                took.as_secs_f64() * 1000.0
            );
        }
    }
    println!(
        "linearizability: slowest of {} histories of {} operations: {:.1} ms",
        2 * args.histories,
        args.ops,
        slowest.as_secs_f64() * 1000.0
    );
    ExitCode::SUCCESS
}

#[derive(Debug, Args)]
pub struct ExplorerBench {
    /// Search depth for the exhaustive part (1 to 40).
    #[arg(long, default_value_t = 8, value_parser = sized(Bounds::new(1, 40, "")))]
    depth: usize,
    /// Seeded walks of three instances (0 to 100000).
    #[arg(long, default_value_t = 200, value_parser = sized(Bounds::new(0, 100_000, "")))]
    walks: usize,
    /// Checker threads (1 to 64), each with a redis-server of its own.
    #[arg(long, default_value_t = 2, value_parser = sized(Bounds::new(1, MAX_THREADS, "")))]
    threads: usize,
    /// Seconds each round-trip measurement runs (0.05 to 600).
    #[arg(long, default_value_t = 2.0, value_parser = seconds)]
    seconds: f64,
    /// The queue's search depth for the per-contract rows (1 to 40;
    /// `certify`'s default).
    #[arg(long, default_value_t = 6, value_parser = sized(Bounds::new(1, 40, "")))]
    queue_depth: usize,
    /// The rate limits' search depth for the per-contract rows (1 to 40;
    /// `certify`'s default).
    #[arg(long, default_value_t = 5, value_parser = sized(Bounds::new(1, 40, "")))]
    rate_depth: usize,
    /// Also the whole exploration at this depth with the new method
    /// (default: --depth + 2; 0: not run), beside the old method's time at
    /// --depth.
    #[arg(long, value_parser = sized(Bounds::new(0, 40, "")))]
    deep: Option<usize>,
    /// Three instances (clocks 0, 0 and the skew) searched exhaustively at
    /// this depth on every contract, with and without folding renamed
    /// instances of one clock, on the built-in store and on the explorer's
    /// sabotages (0 to 40; 0: not run; at 6 the rate limits' sabotages
    /// take minutes each unfolded).
    #[arg(long, default_value_t = 5, value_parser = sized(Bounds::new(0, 40, "")))]
    three_depth: usize,
    /// Instead of the figures above: the lease search of this store (as
    /// `certify --store` takes it; repeatable) beside the built-in store's,
    /// at --depth under every clock skew, no walks: wall seconds, states,
    /// verdict and the ratio of the walls.
    #[arg(long = "store", value_name = "STORE")]
    stores: Vec<crate::store_spec::StoreSpec>,
}

/// The clap parser of `--seconds`: 0.05 to 600.
fn seconds(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.05..=600.0).contains(&secs) {
        return Err("between 0.05 and 600 seconds".into());
    }
    Ok(secs)
}

/// Sequential round trips per second of `cmd` on one connection.
async fn rate(
    conn: &mut redis::aio::MultiplexedConnection,
    seconds: f64,
    cmd: &redis::Cmd,
) -> anyhow::Result<f64> {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut n = 0u64;
    while Instant::now() < deadline {
        cmd.query_async::<redis::Value>(conn).await?;
        n += 1;
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
}

pub async fn run(bench: Bench) -> anyhow::Result<ExitCode> {
    let args = match bench {
        Bench::Explorer(args) => args,
        Bench::Linearizability(args) => return Ok(linearizability(args)),
        Bench::Certify(args) => return certify(args),
        Bench::Adapters(args) => return crate::bench_adapters::adapters(args),
    };
    if !args.stores.is_empty() {
        return beside_builtin(&args).await;
    }
    let server = ManagedServer::start(ServerOptions::default())
        .await
        .context("cannot start the managed Redis server")?;
    let mut conn = server.admin().await?;
    let ping = rate(&mut conn, args.seconds, &redis::cmd("PING")).await?;
    // A small script of the lease's size, through EVALSHA like every store step.
    let script = redis::Script::new(
        "local t = redis.call('TIME') return redis.call('HMGET', KEYS[1], 'holder', 'epoch')",
    );
    script.prepare_invoke().load_async(&mut conn).await?;
    let mut evalsha = redis::cmd("EVALSHA");
    evalsha.arg(script.get_hash()).arg(1).arg("bench:lease:t");
    let evalsha_rate = rate(&mut conn, args.seconds, &evalsha).await?;
    drop(conn);
    let _ = server.stop().await;

    let workdir = tempfile::tempdir()?;
    let factory: Arc<dyn StoreFactory> =
        Arc::new(RedisStoreFactory::new(workdir.path().join("kept.sqlite")));
    let sized = |depth: usize, skews: Vec<i64>, walks: usize| explorer::ExplorerConfig {
        depth,
        walks,
        walk_steps: 20,
        seed: 1,
        threads: args.threads,
        skews,
        ..Default::default()
    };
    let whole = sized(args.depth, explorer::skews(), args.walks);
    let old = explorer::ExplorerConfig {
        cache: false,
        skip_restore: false,
        ..whole.clone()
    };
    let skipping = explorer::ExplorerConfig {
        cache: false,
        ..whole.clone()
    };
    let absolute = explorer::ExplorerConfig {
        absolute_times: true,
        ..sized(args.depth, vec![0], 0)
    };
    let old_run = timed(factory.clone(), old).await?;
    let skip_run = timed(factory.clone(), skipping).await?;
    let new_run = timed(factory.clone(), whole.clone()).await?;
    let absolute_run = timed(factory.clone(), absolute).await?;
    let deep = args.deep.unwrap_or(args.depth + 2);
    let deep_run = if deep > 0 {
        Some(timed(factory.clone(), sized(deep, explorer::skews(), args.walks)).await?)
    } else {
        None
    };
    // Every contract at its own depth, the way `certify` explores them: one
    // search per contract and skew, no walks.
    let contracts = explorer::ExplorerConfig {
        queue_depth: args.queue_depth,
        rate_depth: args.rate_depth,
        contracts: harness::contract::Contract::COORDINATION.to_vec(),
        ..sized(args.depth, explorer::skews(), 0)
    };
    let contracts_run = timed(factory.clone(), contracts).await?;
    // The caller's-clock sabotage with fail-fast: when the search that found
    // its counterexample ended, and when the outcome was in hand.
    let broken: Arc<dyn StoreFactory> = Arc::new(sabotage::ClientClockLease::new(
        RedisStoreFactory::new(workdir.path().join("kept-broken.sqlite")),
    ));
    let fail_fast = explorer::ExplorerConfig {
        fail_fast: true,
        ..whole.clone()
    };
    let cut = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut searched_at = 0.0;
        let out = explorer::explore(broken, None, "sp:bench:".into(), &fail_fast, &mut |l| {
            if l.contains("second clock") {
                searched_at = started.elapsed().as_secs_f64();
            }
            eprintln!("{}", crate::progress::printable(l))
        });
        (out, searched_at, started.elapsed().as_secs_f64())
    })
    .await?;

    println!(
        "storeproof bench explorer (depth {}, {} walks, {} threads, 7 skews)",
        args.depth, args.walks, args.threads
    );
    println!("  one connection, sequential: PING {ping:.0}/s, EVALSHA {evalsha_rate:.0}/s");
    let line = |what: &str, run: &Timed| {
        let transitions = run.outcome.figures.transitions as f64;
        let trips = run.outcome.figures.round_trips as f64;
        let tps = transitions / run.wall.max(1e-9);
        let s = &run.outcome.savings;
        println!(
            "  {what:<34} {:>6.1}s  {transitions:>7.0} transitions, {tps:>6.0} transitions/s, {:.2} round trips per transition, ratio round trips/s ÷ PING/s = {:.2}; steps from the store's recorded behaviour {}, answered from the cache {}, cache hits {}, restores skipped {}",
            run.wall,
            trips / transitions.max(1.0),
            trips / run.wall.max(1e-9) / ping.max(1.0),
            s.behaviour_answers,
            s.cache_answers,
            s.cache_hits,
            s.restores_skipped,
        );
    };
    line("old (restore + snapshot every step)", &old_run);
    line("new: restore skipping only", &skip_run);
    line("new: restore skipping + cache", &new_run);
    let states = |run: &Timed| -> Vec<(i64, usize, usize)> {
        run.outcome
            .figures
            .per_skew
            .iter()
            .map(|r| (r.skew_ms, r.states, r.unique_states))
            .collect()
    };
    let same = states(&old_run) == states(&new_run)
        && states(&old_run) == states(&skip_run)
        && verdicts(&old_run) == verdicts(&new_run)
        && verdicts(&old_run) == verdicts(&skip_run)
        && old_run.outcome.figures.walk_digest == new_run.outcome.figures.walk_digest;
    println!(
        "  same states per skew, walks and verdicts in all three: {}; speed-up {:.1}x",
        if same { "yes" } else { "NO" },
        old_run.wall / new_run.wall.max(1e-9)
    );
    if let Some(deep_run) = &deep_run {
        line(&format!("new at depth {deep}"), deep_run);
        println!(
            "  depth {} (new) took {:.1}s where depth {} (old) took {:.1}s; unique states at skew 0: {} vs {}",
            deep,
            deep_run.wall,
            args.depth,
            old_run.wall,
            unique(&deep_run.outcome),
            unique(&old_run.outcome)
        );
    }
    println!(
        "  unique states at skew 0: {} with times relative to now, {} with absolute times",
        unique(&new_run.outcome),
        unique(&absolute_run.outcome)
    );
    for contract in harness::contract::Contract::COORDINATION {
        let rows: Vec<_> = contracts_run
            .outcome
            .figures
            .per_skew
            .iter()
            .filter(|r| r.contract == contract.name())
            .collect();
        let sum = |f: &dyn Fn(&harness::figures::SkewFigures) -> f64| {
            rows.iter().map(|r| f(r)).sum::<f64>()
        };
        let states = sum(&|r| r.states as f64);
        let seconds = sum(&|r| r.seconds);
        println!(
            "  {:<5} at depth {:>2}, {} skews: {:>8.0} states ({:>7.0} unique), {:>8.0} transitions, {:>5.1}s searching, {:>6.0} states/s",
            contract.name(),
            rows.first().map_or(0, |r| r.depth),
            rows.len(),
            states,
            sum(&|r| r.unique_states as f64),
            sum(&|r| r.transitions as f64),
            seconds,
            states / seconds.max(1e-9),
        );
    }
    let (cut, searched_at, cut_wall) = cut;
    let failed = cut
        .checks
        .iter()
        .find(|c| c.verdict == harness::Verdict::Fail)
        .map_or("nothing".to_string(), |c| c.id.clone());
    println!(
        "  --fail-fast on sabotage:lease-on-caller-clock: {failed} failed; the search that found it ended at {searched_at:.1}s, the outcome was in hand at {cut_wall:.1}s ({:.1}s later); not explored: {}",
        cut_wall - searched_at,
        cut.not_explored.as_deref().unwrap_or("nothing")
    );
    if args.three_depth > 0 {
        reduction(&args, factory, workdir.path()).await?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `bench explorer --store`: each store's lease search beside the built-in
/// store's, at the same sizes (--depth, every skew, no walks, --threads).
async fn beside_builtin(args: &ExplorerBench) -> anyhow::Result<ExitCode> {
    let workdir = tempfile::tempdir()?;
    let config = explorer::ExplorerConfig {
        depth: args.depth,
        walks: 0,
        seed: 1,
        threads: args.threads,
        skews: explorer::skews(),
        ..Default::default()
    };
    println!(
        "storeproof bench explorer: the lease search at depth {}, {} skews, {} threads, no walks",
        args.depth,
        config.skews.len(),
        args.threads
    );
    let builtin: Arc<dyn StoreFactory> =
        Arc::new(RedisStoreFactory::new(workdir.path().join("kept.sqlite")));
    let base = timed(builtin, config.clone()).await?;
    let row = |name: &str, run: &Timed| {
        let rows = &run.outcome.figures.per_skew;
        // The ids of the checks with `verdict`, or "nothing".
        let ids = |verdict: harness::Verdict| {
            let ids: Vec<&str> = run
                .outcome
                .checks
                .iter()
                .filter(|c| c.verdict == verdict)
                .map(|c| c.id.as_str())
                .collect();
            if ids.is_empty() {
                "nothing".to_string()
            } else {
                ids.join(", ")
            }
        };
        println!(
            "  {name:<40} {:>6.1}s  {:>8} states ({:>7} unique), drawn values {}, failed: {}, undecided: {}",
            run.wall,
            rows.iter().map(|r| r.states).sum::<usize>(),
            rows.iter().map(|r| r.unique_states).sum::<usize>(),
            rows.iter().map(|r| r.drawn_values).max().unwrap_or(0),
            ids(harness::Verdict::Fail),
            ids(harness::Verdict::Unknown),
        );
        let s = &run.outcome.savings;
        println!(
            "  {:<40} {} transitions, {} round trips; from recorded behaviour {}, answered from the cache {}, cache hits {}, restores skipped {}, processes abandoned {}, probed {}, refreshed {}; store runs {}, live steps {}",
            "",
            run.outcome.figures.transitions,
            run.outcome.figures.round_trips,
            s.behaviour_answers,
            s.cache_answers,
            s.cache_hits,
            s.restores_skipped,
            s.abandoned_processes,
            s.probe_processes,
            s.refreshes,
            s.store_runs,
            s.live_steps,
        );
    };
    row("builtin:redis", &base);
    for (k, spec) in args.stores.iter().enumerate() {
        let dir = workdir.path().join(format!("store-{k}"));
        std::fs::create_dir_all(&dir)?;
        let factory = spec.factory(&dir, Duration::from_secs(10), None);
        let run = timed(factory.clone(), config.clone()).await?;
        // A store whose adapter failed (did not start, exited, hung) has no
        // speed to show: its figures would time the harness giving up.
        if let Some(why) = factory.adapter_failure() {
            anyhow::bail!("{why}; no figures for {spec}");
        }
        row(&spec.to_string(), &run);
        println!(
            "  {:<40} {:.1}x the built-in store's wall time",
            "",
            run.wall / base.wall.max(1e-9)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The sabotages the explorer's reduction is shown on, each with the
/// contract it breaks and the skew its search runs at (the caller's-clock
/// lease needs clocks that disagree).
const REDUCED_SABOTAGES: [(&str, Contract, i64); 6] = [
    ("read-then-write-take", Contract::Lease, 0),
    (
        "lease-on-caller-clock",
        Contract::Lease,
        explorer::LEASE_MS / 2,
    ),
    ("two-round-trip-claim", Contract::Queue, 0),
    ("save-split-in-two", Contract::Queue, 0),
    ("read-then-write-acquire", Contract::Rate, 0),
    ("hit-counted-before-check", Contract::Rate, 0),
];

/// A store the reduction is shown on: its name, the store, the contract
/// searched and the skews.
type Subject = (String, Arc<dyn StoreFactory>, Contract, Vec<i64>);

/// Three instances searched exhaustively with and without folding renamed
/// instances of one clock (issue 21, item 5): the states each search kept
/// and its time, and whether every verdict is the same, per contract on
/// the built-in store (skews 0 and + lease/2), then per sabotage.
async fn reduction(
    args: &ExplorerBench,
    builtin: Arc<dyn StoreFactory>,
    workdir: &std::path::Path,
) -> anyhow::Result<()> {
    println!(
        "  three instances (clocks 0, 0, skew) at depth {}, folding renamed instances of one clock or not:",
        args.three_depth
    );
    let mut subjects: Vec<Subject> = harness::contract::Contract::COORDINATION
        .iter()
        .map(|c| {
            (
                "built-in".to_string(),
                builtin.clone(),
                *c,
                vec![0, explorer::LEASE_MS / 2],
            )
        })
        .collect();
    for (name, contract, skew) in REDUCED_SABOTAGES {
        let store = sabotage::by_name(name, workdir)
            .with_context(|| format!("no sabotage named {name}"))?;
        subjects.push((format!("sabotage:{name}"), store, contract, vec![skew]));
    }
    for (name, store, contract, skews) in subjects {
        let config = |symmetry: bool| explorer::ExplorerConfig {
            depth: args.depth,
            queue_depth: args.queue_depth,
            rate_depth: args.rate_depth,
            three_depth: args.three_depth,
            symmetry,
            walks: 0,
            seed: 1,
            threads: args.threads,
            skews: skews.clone(),
            contracts: vec![contract],
            ..Default::default()
        };
        let folded = timed(store.clone(), config(true)).await?;
        let plain = timed(store.clone(), config(false)).await?;
        let three = |run: &Timed| -> (usize, usize, f64, usize, usize) {
            run.outcome
                .figures
                .per_skew
                .iter()
                .filter(|r| r.instances == 3)
                .fold((0, 0, 0.0, 0, 0), |(s, u, t, m, f), r| {
                    (
                        s + r.states,
                        u + r.unique_states,
                        t + r.seconds,
                        m + r.symmetric_merges,
                        f + usize::from(r.symmetry_failure.is_some()),
                    )
                })
        };
        let (states, unique, secs, merges, failures) = three(&folded);
        let (plain_states, plain_unique, plain_secs, _, _) = three(&plain);
        let failed: Vec<String> = folded
            .outcome
            .checks
            .iter()
            .filter(|c| c.verdict == harness::Verdict::Fail)
            .map(|c| c.id.clone())
            .collect();
        let differ: Vec<String> = verdicts(&folded)
            .iter()
            .zip(verdicts(&plain))
            .filter(|(a, b)| **a != *b)
            .map(|((id, a), (_, b))| format!("{id} {} folded, {} not", a.word(), b.word()))
            .collect();
        let skews: Vec<String> = skews.iter().map(|s| format!("{s:+}")).collect();
        println!(
            "    {name} ({}, skews {} ms): folded {states} states ({unique} unique, {merges} renamings merged) in {secs:.1}s; not folded {plain_states} ({plain_unique} unique) in {plain_secs:.1}s; {:.1}x fewer unique states; searches that gave folding up: {failures}; same verdicts: {}; failed: {}",
            contract.name(),
            skews.join(", "),
            plain_unique as f64 / unique.max(1) as f64,
            if verdicts(&folded) == verdicts(&plain) { "yes".to_string() } else { format!("NO ({})", differ.join("; ")) },
            if failed.is_empty() { "nothing".to_string() } else { failed.join(", ") },
        );
    }
    Ok(())
}

/// An exploration's outcome and its wall time.
struct Timed {
    outcome: explorer::ExplorerOutcome,
    wall: f64,
}

/// Explores the built-in store with `config` on a blocking thread, timed.
async fn timed(
    factory: Arc<dyn StoreFactory>,
    config: explorer::ExplorerConfig,
) -> anyhow::Result<Timed> {
    Ok(tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let outcome = explorer::explore(factory, None, "sp:bench:".into(), &config, &mut |l| {
            eprintln!("{}", crate::progress::printable(l))
        });
        Timed {
            outcome,
            wall: started.elapsed().as_secs_f64(),
        }
    })
    .await?)
}

/// Every check's id and verdict, in the order the run gave them.
fn verdicts(run: &Timed) -> Vec<(String, harness::Verdict)> {
    run.outcome
        .checks
        .iter()
        .map(|c| (c.id.clone(), c.verdict))
        .collect()
}

/// Unique states of the first skew searched.
fn unique(o: &explorer::ExplorerOutcome) -> usize {
    o.figures.per_skew.first().map_or(0, |s| s.unique_states)
}
