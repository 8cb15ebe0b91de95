//! `storeproof bench explorer`: the explorer's speed beside the limit one
//! Redis connection sets, measured in the same run on the same machine;
//! `storeproof bench linearizability`: the fault suite's checker's time on
//! seeded histories.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use harness::server::{ManagedServer, ServerOptions};
use harness::store::redis::RedisStoreFactory;
use harness::store::StoreFactory;

use crate::certify::{sized, MAX_THREADS};

#[derive(Debug, Subcommand)]
pub enum Bench {
    /// Transitions per second of the explorer vs. the round-trip limit.
    Explorer(ExplorerBench),
    /// Seconds the linearizability checker takes on seeded lease histories
    /// of one tree with lost replies.
    Linearizability(LinearizabilityBench),
}

#[derive(Debug, Args)]
pub struct LinearizabilityBench {
    /// Operations per history (10 to 100000).
    #[arg(long, default_value_t = 1000, value_parser = sized(10, 100_000, ""))]
    ops: usize,
    /// Histories, each from its own seed (1 to 1000).
    #[arg(long, default_value_t = 5, value_parser = sized(1, 1000, ""))]
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
    #[arg(long, default_value_t = 8, value_parser = sized(1, 40, ""))]
    depth: usize,
    /// Seeded walks of three instances (0 to 100000).
    #[arg(long, default_value_t = 200, value_parser = sized(0, 100_000, ""))]
    walks: usize,
    /// Checker threads (1 to 64), each with a redis-server of its own.
    #[arg(long, default_value_t = 2, value_parser = sized(1, MAX_THREADS, ""))]
    threads: usize,
    /// Seconds each round-trip measurement runs (0.05 to 600).
    #[arg(long, default_value_t = 2.0, value_parser = seconds)]
    seconds: f64,
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
    };
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
    let run = |absolute: bool, skews: Vec<i64>, walks: usize| {
        let factory = factory.clone();
        let config = explorer::ExplorerConfig {
            depth: args.depth,
            walks,
            walk_steps: 20,
            seed: 1,
            threads: args.threads,
            skews,
            absolute_times: absolute,
            ..Default::default()
        };
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let out = explorer::explore(factory, None, "sp:bench:".into(), &config, &mut |l| {
                eprintln!("{}", crate::progress::printable(l))
            });
            (out, started.elapsed().as_secs_f64())
        })
    };
    let (full, wall) = run(false, explorer::skews(), args.walks).await?;
    let (absolute, _) = run(true, vec![0], 0).await?;
    let transitions = full.figures.transitions as f64;
    let trips = full.figures.round_trips as f64;
    let tps = transitions / wall.max(1e-9);
    let unique =
        |o: &explorer::ExplorerOutcome| o.figures.per_skew.first().map_or(0, |s| s.unique_states);
    println!(
        "storeproof bench explorer (depth {}, {} walks, {} threads)",
        args.depth, args.walks, args.threads
    );
    println!("  one connection, sequential: PING {ping:.0}/s, EVALSHA {evalsha_rate:.0}/s");
    println!(
        "  explorer: {transitions:.0} transitions in {wall:.1}s = {tps:.0} transitions/s, {:.2} round trips per transition",
        trips / transitions.max(1.0)
    );
    println!(
        "  ratio: transitions/s ÷ EVALSHA/s = {:.2}; round trips/s ÷ PING/s = {:.2}",
        tps / evalsha_rate.max(1.0),
        trips / wall.max(1e-9) / ping.max(1.0)
    );
    println!(
        "  unique states at skew 0: {} with times relative to now, {} with absolute times",
        unique(&full),
        unique(&absolute)
    );
    println!("  whole explorer suite (7 skews + walks): {wall:.1}s");
    Ok(ExitCode::SUCCESS)
}
