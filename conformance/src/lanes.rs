//! Checks that share nothing, run at once (issue 45): each lane a managed
//! server and virtual clock of its own, its checks one after another as
//! the suite ran them all before.
//!
//! A check moves its server's clock (an expiry to the millisecond) and
//! some fill its server or read its whole keyspace, so two checks never
//! share a server at once; with a server each, nothing one does reaches
//! the other. Which lane a check runs on depends only on the list of
//! checks (never on timing), and every check keeps its number and so its
//! prefix: the same seed gives the same report, however many lanes.

use std::collections::BTreeMap;

use harness::server::ManagedServer;
use harness::{Progress, Subject};

use crate::{CheckDef, CheckKind};

/// The servers of the lanes past the run's own: started only where the
/// run's server is one storeproof manages and the store keeps its state
/// there (a store on a clock of its own, such as the SQLite store that
/// follows the run's server, must stay beside that server). A server that
/// cannot start leaves its lane out: the checks run on fewer lanes, as
/// they would with `--threads 1`.
pub(crate) async fn start(
    subject: &Subject<'_>,
    lanes: usize,
    progress: &dyn Progress,
) -> Vec<ManagedServer> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let lanes = match subject.server.managed() {
        Some(_) if subject.factory.keeps_state_in_redis() => {
            lanes_for(lanes, subject.factory.instances_are_processes(), cores)
        }
        _ => 1,
    };
    // Every lane may ask for the same instance at once: an adapter's
    // processes for them start beside the lanes' servers (warming counts
    // the processes already waiting, so one lane starts none). Warming the
    // odd-ids checks' instance `*` too made no difference (Python example,
    // five runs each: medians 3.58 s and 3.52 s): its start only moved the
    // wait to the first check's.
    let names: Vec<&str> = (0..lanes).flat_map(|_| ["a", "b", "c"]).collect();
    subject.factory.warm(&names);
    let Some(main) = subject.server.managed().filter(|_| lanes > 1) else {
        return Vec::new();
    };
    let mut servers = Vec::with_capacity(lanes - 1);
    for _ in 1..lanes {
        match ManagedServer::start(main.options().clone()).await {
            Ok(server) => servers.push(server),
            Err(e) => {
                progress.line(&format!(
                    "conformance: a lane's server did not start ({e}); its checks run on the other lanes"
                ));
                break;
            }
        }
    }
    servers
}

/// How many of `asked` lanes run on a machine of `cores` cores. A lane
/// needs instances of its own: where each is a process (an adapter's
/// interpreter), a lane starts its own, and their starts and calls load
/// the machine as much as the lanes save in waiting (measured on two
/// cores: the Python example's conformance 2.7-3.0 s on one lane,
/// 3.6-3.9 s on two). Such a store gets a lane per two cores.
fn lanes_for(asked: usize, processes: bool, cores: usize) -> usize {
    if processes {
        asked.min(cores / 2).max(1)
    } else {
        asked.max(1)
    }
}

/// About how long a check takes, in units of a scenario's: a generated
/// check plays its sequences (about one scenario's time for eight), the
/// server-assumption checks start servers or adapters of their own.
fn weight(def: Option<&CheckDef>) -> u64 {
    match def.map(|d| &d.kind) {
        Some(CheckKind::Generated(g)) => u64::from(g.cases).div_ceil(8).max(1),
        Some(CheckKind::Server(_)) => 3,
        _ => 1,
    }
}

/// The lane of each of `checks` (each as the suite found it, `None` for
/// an id it does not know) among `lanes`: the heaviest checks first, each
/// to the lane with the least work so far (the first such lane on a tie),
/// so the lanes end near one another. A function of the checks alone.
pub(crate) fn assign(checks: &[Option<&CheckDef>], lanes: usize) -> Vec<usize> {
    let lanes = lanes.max(1);
    let weights: Vec<u64> = checks.iter().map(|def| weight(*def)).collect();
    let mut order: Vec<usize> = (0..checks.len()).collect();
    // Stable: checks of one weight keep the suite's order.
    order.sort_by_key(|&n| std::cmp::Reverse(weights[n]));
    let mut load = vec![0u64; lanes];
    let mut lane_of = vec![0usize; checks.len()];
    for n in order {
        let lane = (0..lanes).min_by_key(|&l| (load[l], l)).unwrap_or(0);
        load[lane] += weights[n];
        lane_of[n] = lane;
    }
    lane_of
}

/// The numbers of the checks of each lane, in the suite's order.
pub(crate) fn by_lane(lane_of: &[usize]) -> BTreeMap<usize, Vec<usize>> {
    let mut lanes: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (n, lane) in lane_of.iter().enumerate() {
        lanes.entry(*lane).or_default().push(n);
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::all_checks;

    #[test]
    fn a_store_of_processes_gets_a_lane_per_two_cores_and_others_what_they_ask() {
        assert_eq!(lanes_for(2, false, 2), 2);
        assert_eq!(lanes_for(4, false, 1), 4);
        assert_eq!(lanes_for(2, true, 2), 1);
        assert_eq!(lanes_for(2, true, 4), 2);
        assert_eq!(lanes_for(8, true, 8), 4);
        assert_eq!(lanes_for(0, false, 2), 1);
        assert_eq!(lanes_for(3, true, 1), 1);
    }

    #[test]
    fn every_check_has_one_lane_and_the_generated_ones_spread() {
        let defs = all_checks();
        let checks: Vec<Option<&CheckDef>> = defs.iter().map(|d| Some(&**d)).collect();
        let lane_of = assign(&checks, 2);
        assert_eq!(lane_of.len(), checks.len());
        assert!(lane_of.iter().all(|l| *l < 2));
        assert_eq!(lane_of, assign(&checks, 2), "a function of the checks");
        let generated: Vec<usize> = defs
            .iter()
            .enumerate()
            .filter(|(_, d)| matches!(d.kind, CheckKind::Generated(_)))
            .map(|(n, _)| lane_of[n])
            .collect();
        assert!(generated.len() >= 2);
        assert!(
            generated.contains(&0) && generated.contains(&1),
            "{generated:?}"
        );
        // Near one another: no lane holds more than its share and the
        // heaviest check.
        let load = |lane: usize| -> u64 {
            (0..checks.len())
                .filter(|n| lane_of[*n] == lane)
                .map(|n| weight(Some(&defs[n])))
                .sum()
        };
        let heaviest = defs.iter().map(|d| weight(Some(d))).max().unwrap_or(1);
        assert!(
            load(0).abs_diff(load(1)) <= heaviest,
            "{} vs {}",
            load(0),
            load(1)
        );
        let one = assign(&checks, 1);
        assert!(one.iter().all(|l| *l == 0));
        let grouped = by_lane(&lane_of);
        assert_eq!(grouped.values().map(Vec::len).sum::<usize>(), checks.len());
        assert!(grouped
            .values()
            .all(|ns| ns.windows(2).all(|w| w[0] < w[1])));
    }
}
