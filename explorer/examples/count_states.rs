//! Prints the unique-state count of one exhaustive search per thread count:
//! `cargo run -p explorer --example count_states -- DEPTH SKEW THREADS...`.

use std::sync::Arc;

use explorer::{explore, ExplorerConfig};
use stores::redis::RedisStoreFactory;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let depth: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(9);
    let skew: i64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let threads: Vec<usize> = args[2.min(args.len())..]
        .iter()
        .filter_map(|a| a.parse().ok())
        .collect();
    let dir = std::env::temp_dir().join(format!("count-states-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    for t in threads {
        let factory = Arc::new(RedisStoreFactory::new(dir.join("kept.sqlite")));
        let config = ExplorerConfig {
            depth,
            walks: 0,
            walk_steps: 0,
            seed: 0,
            threads: t,
            skews: vec![skew],
            absolute_times: false,
            ..Default::default()
        };
        let started = std::time::Instant::now();
        let out = explore(factory, None, "sp:count:".into(), &config, &mut |_| {});
        println!(
            "depth {depth} skew {skew:+} threads {t}: {} unique of {} states, {:.1}s",
            out.figures.per_skew[0].unique_states,
            out.figures.per_skew[0].states,
            started.elapsed().as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
