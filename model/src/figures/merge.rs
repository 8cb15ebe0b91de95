//! Figures of the shards of one run (`certify --shard K/N`) joined into
//! the figures of the whole run (`storeproof merge`): rows put back in the
//! run's order, counts summed, totals recomputed from the rows.

use super::{
    ConformanceFigures, CrashFigures, ExplorerFigures, FaultsFigures, KillFigures, LayoutFigures,
    SabotageFigures, SeriesFigures, Stats,
};

/// Seconds to the millisecond, as the figures show them.
fn millis(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

impl Stats {
    /// The figures of the shards `parts` (in shard order) as one run's.
    /// The explorer's rows follow `skew_order` (the run's skews); a suite
    /// run whole on one shard keeps that shard's figures; conformance's
    /// seconds are summed here and its tallies are the caller's to
    /// recompute over the joined checks.
    pub fn merged(parts: &[Stats], skew_order: &[i64]) -> Stats {
        let of = |f: fn(&Stats) -> Option<&ConformanceFigures>| {
            parts.iter().filter_map(f).cloned().collect::<Vec<_>>()
        };
        let conformance = of(|s| s.conformance.as_ref());
        let explorer: Vec<ExplorerFigures> =
            parts.iter().filter_map(|s| s.explorer.clone()).collect();
        let crash: Vec<CrashFigures> = parts.iter().filter_map(|s| s.crash.clone()).collect();
        Stats {
            conformance: (!conformance.is_empty()).then(|| ConformanceFigures {
                seconds: millis(conformance.iter().map(|c| c.seconds).sum()),
                bytes_per_tree: conformance.iter().find_map(|c| c.bytes_per_tree.clone()),
                ..conformance[0].clone()
            }),
            explorer: (!explorer.is_empty())
                .then(|| ExplorerFigures::merged(&explorer, skew_order)),
            crash: (!crash.is_empty()).then(|| CrashFigures::merged(&crash)),
            layout: first::<LayoutFigures>(parts.iter().filter_map(|s| s.layout.clone())),
            faults: first::<FaultsFigures>(parts.iter().filter_map(|s| s.faults.clone())),
            sabotage: first::<SabotageFigures>(parts.iter().filter_map(|s| s.sabotage.clone())),
        }
    }
}

/// The first of `figures`: a suite run whole is on one shard only.
fn first<T>(mut figures: impl Iterator<Item = T>) -> Option<T> {
    figures.next()
}

impl ExplorerFigures {
    /// The explorations of several shards as one: the search rows in
    /// `skew_order` (rows of other skews after them, in shard order),
    /// walks, steps, transitions, round trips and seconds summed; the walk
    /// digest is the shards' digests joined with `+` (a digest of all the
    /// walks in one needs them all).
    pub fn merged(parts: &[ExplorerFigures], skew_order: &[i64]) -> ExplorerFigures {
        let mut rows: Vec<_> = parts.iter().flat_map(|p| p.per_skew.clone()).collect();
        let rank = |skew: i64| {
            skew_order
                .iter()
                .position(|s| *s == skew)
                .unwrap_or(usize::MAX)
        };
        // A stable sort: rows of a skew outside the order keep shard order.
        rows.sort_by_key(|r| rank(r.skew_ms));
        let sum = |f: fn(&ExplorerFigures) -> f64| millis(parts.iter().map(f).sum());
        let walls: Vec<f64> = parts.iter().filter_map(|p| p.wall_seconds).collect();
        ExplorerFigures {
            per_skew: rows,
            depth: parts.iter().map(|p| p.depth).max().unwrap_or(0),
            walks: parts.iter().map(|p| p.walks).sum(),
            walk_steps: parts.iter().map(|p| p.walk_steps).sum(),
            walk_seconds: sum(|p| p.walk_seconds),
            walk_digest: parts
                .iter()
                .filter(|p| p.walks > 0)
                .map(|p| p.walk_digest.as_str())
                .collect::<Vec<_>>()
                .join("+"),
            seed: parts.first().map_or(0, |p| p.seed),
            seconds: sum(|p| p.seconds),
            transitions: parts.iter().map(|p| p.transitions).sum(),
            round_trips: parts.iter().map(|p| p.round_trips).sum(),
            wall_seconds: (!walls.is_empty()).then(|| millis(walls.iter().sum())),
            walks_cut: parts.iter().map(|p| p.walks_cut).sum(),
            cache: super::explorer::CacheFigures {
                answered: parts.iter().map(|p| p.cache.answered).sum(),
                verified: parts.iter().map(|p| p.cache.verified).sum(),
                differed: parts.iter().map(|p| p.cache.differed).sum(),
                first_difference: parts.iter().find_map(|p| p.cache.first_difference.clone()),
            },
            fused_steps: parts.iter().map(|p| p.fused_steps).sum(),
        }
    }
}

impl SeriesFigures {
    /// Several shards' kills of one series as one series: the rows in kill
    /// order, the kills asked summed, the first trouble kept.
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a SeriesFigures>) -> SeriesFigures {
        let parts: Vec<&SeriesFigures> = parts.into_iter().collect();
        let mut rows: Vec<KillFigures> = parts.iter().flat_map(|p| p.per_kill.clone()).collect();
        rows.sort_by_key(|k| k.kill);
        SeriesFigures::of(
            rows,
            parts.iter().map(|p| p.asked).sum(),
            parts.iter().find_map(|p| p.trouble.clone()),
        )
    }
}

impl CrashFigures {
    /// Several shards' kill rounds as one crash run: each series merged
    /// ([`SeriesFigures::merged`]), the top-level required-settings figures
    /// recomputed from its rows, seconds summed; the backend and Docker's
    /// absence are those of the first shard that ran required kills.
    pub fn merged(parts: &[CrashFigures]) -> CrashFigures {
        let required = SeriesFigures::merged(
            parts
                .iter()
                .map(|p| SeriesFigures::of(p.per_kill.clone(), p.kills, p.trouble.clone()))
                .collect::<Vec<_>>()
                .iter(),
        );
        let ran = parts
            .iter()
            .find(|p| p.kills > 0 || p.trouble.is_some())
            .or(parts.first());
        let mut merged = CrashFigures {
            acknowledged: required.acknowledged,
            backend: ran.map(|p| p.backend.clone()).unwrap_or_default(),
            contracts: parts
                .first()
                .map(|p| p.contracts.clone())
                .unwrap_or_default(),
            docker_unavailable: ran.and_then(|p| p.docker_unavailable.clone()),
            kills: required.kills,
            lost: required.lost,
            per_kill: required.per_kill,
            seconds: millis(parts.iter().map(|p| p.seconds).sum()),
            seed: parts.first().map_or(0, |p| p.seed),
            total: Box::new(required.total),
            trouble: required.trouble,
            ..CrashFigures::default()
        };
        *merged.opt_out = SeriesFigures::merged(parts.iter().map(|p| p.opt_out.as_ref()));
        *merged.opt_out_reference =
            SeriesFigures::merged(parts.iter().map(|p| p.opt_out_reference.as_ref()));
        let down = &mut merged.down_server;
        down.acknowledged = parts.iter().map(|p| p.down_server.acknowledged).sum();
        down.probes = parts.iter().map(|p| p.down_server.probes).sum();
        down.refused = parts.iter().map(|p| p.down_server.refused).sum();
        down.silent = parts.iter().map(|p| p.down_server.silent).sum();
        down.server_up = parts.iter().map(|p| p.down_server.server_up).sum();
        merged.power_loss.backend = "process".into();
        merged.power_loss.always =
            SeriesFigures::merged(parts.iter().map(|p| &p.power_loss.always));
        merged.power_loss.everysec_opted_out =
            SeriesFigures::merged(parts.iter().map(|p| &p.power_loss.everysec_opted_out));
        merged.power_loss.everysec_reference =
            SeriesFigures::merged(parts.iter().map(|p| &p.power_loss.everysec_reference));
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::SkewFigures;

    #[test]
    fn explorer_rows_go_back_in_skew_order_and_counts_add_up() {
        let row = |skew_ms, states| SkewFigures {
            skew_ms,
            states,
            unique_states: states / 2,
            ..SkewFigures::default()
        };
        let a = ExplorerFigures {
            per_skew: vec![row(0, 10), row(1000, 40)],
            walks: 2,
            walk_steps: 30,
            transitions: 100,
            walk_digest: "aa".into(),
            ..ExplorerFigures::default()
        };
        let b = ExplorerFigures {
            per_skew: vec![row(500, 20)],
            walks: 3,
            walk_steps: 50,
            transitions: 7,
            walk_digest: "bb".into(),
            ..ExplorerFigures::default()
        };
        let m = ExplorerFigures::merged(&[a, b], &[0, 500, -500, 1000]);
        assert_eq!(
            m.per_skew.iter().map(|r| r.skew_ms).collect::<Vec<_>>(),
            vec![0, 500, 1000]
        );
        assert_eq!((m.walks, m.walk_steps, m.transitions), (5, 80, 107));
        assert_eq!(m.walk_digest, "aa+bb");
    }

    #[test]
    fn crash_rounds_go_back_in_kill_order_and_totals_are_recomputed() {
        let kill = |kill, lost| KillFigures {
            kill,
            epochs_acknowledged: 10,
            epochs_lost: lost,
            ..KillFigures::default()
        };
        let part = |kills: Vec<KillFigures>| CrashFigures {
            kills: kills.len(),
            per_kill: kills,
            backend: "process".into(),
            ..CrashFigures::default()
        };
        let mut a = part(vec![kill(1, 0), kill(3, 2)]);
        a.opt_out = Box::new(SeriesFigures::of(vec![kill(2, 5)], 1, None));
        let b = part(vec![kill(2, 0)]);
        let m = CrashFigures::merged(&[a, b]);
        assert_eq!(
            m.per_kill.iter().map(|k| k.kill).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!((m.kills, m.acknowledged, m.lost), (3, 30, 2));
        assert_eq!(
            (m.opt_out.kills, m.opt_out.asked, m.opt_out.lost),
            (1, 1, 5)
        );
        assert_eq!(m.backend, "process");
    }
}
