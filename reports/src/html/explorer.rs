//! The explorer's figures in the report: one row per contract and second-clock skew.

use model::figures::ExplorerFigures;
use model::Report;

/// A measured number as report.json writes it (`40.0`, not `40`).
fn num(x: f64) -> String {
    serde_json::Value::from(x).to_string()
}

/// Appends the explorer's section to `h` when the explorer ran.
pub(super) fn section(h: &mut String, report: &Report) {
    if let Some(e) = report.stats.explorer.as_ref() {
        figures(h, e);
    }
}

/// The section for figures `e`.
fn figures(h: &mut String, e: &ExplorerFigures) {
    h.push_str(&format!(
        "<h2>Explorer</h2><p>Every schedule of two instances {} steps deep per second-clock skew; {} seeded walks of three ({} steps, seed <code>{}</code>); {} s in all.</p>",
        e.depth,
        e.walks,
        e.walk_steps,
        e.seed,
        num(e.wall_seconds.unwrap_or(e.seconds))
    ));
    h.push_str("<table><tr><th>contract</th><th>second clock</th><th>states</th><th>unique</th><th>depth</th><th>seconds</th><th>transitions/s</th><th>round trips / transition</th><th>first race reached</th><th>second race reached</th></tr>");
    let yes = |v: bool| if v { "yes" } else { "<b>no</b>" };
    for r in &e.per_skew {
        // The lease's races are the zombie renew and release after a
        // takeover; the queue's, two claims of the last child and a claim
        // against a completion at the claim's expiry; the rate limits',
        // two acquires of the last slot and two hits of a window's last place.
        let (first, second) = match r.contract.as_str() {
            "queue" => (r.queue_claim_race_reached, r.queue_complete_race_reached),
            "rate" => (r.rate_slot_race_reached, r.rate_hit_race_reached),
            _ => (r.zombie_renew_reached, r.zombie_release_reached),
        };
        h.push_str(&format!(
            "<tr><td>{}</td><td>{:+} ms</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            crate::escape(&r.contract),
            r.skew_ms,
            r.states,
            r.unique_states,
            r.max_depth,
            num(r.seconds),
            num(r.transitions_per_second),
            num(r.round_trips_per_transition),
            yes(first),
            yes(second)
        ));
    }
    h.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_report_json_writes_them() {
        let e: ExplorerFigures = serde_json::from_value(serde_json::json!({
            "depth": 8, "walks": 200, "walk_steps": 4000, "seed": 1, "wall_seconds": 40.0,
            "walk_seconds": 1.5, "walk_digest": "00", "seconds": 39.9,
            "transitions": 1, "round_trips": 2,
            "per_skew": [{"skew_ms": 0, "depth": 8, "transitions": 1, "states": 27016,
                          "unique_states": 6677, "max_depth": 8, "seconds": 4.0,
                          "transitions_per_second": 6754.0, "round_trips_per_transition": 2.43,
                          "zombie_renew_reached": true, "zombie_release_reached": false}],
        }))
        .unwrap();
        let mut h = String::new();
        figures(&mut h, &e);
        assert!(h.contains("seed <code>1</code>); 40.0 s in all."), "{h}");
        assert!(
            h.contains("<tr><td>lease</td><td>+0 ms</td><td>27016</td><td>6677</td><td>8</td><td>4.0</td><td>6754.0</td><td>2.43</td><td>yes</td><td><b>no</b></td></tr>"),
            "{h}"
        );
    }
}
