//! The explorer's figures in the report: one row per second-clock skew.

use harness::check::Report;
use serde_json::Value;

/// Appends the explorer's section to `h` when the explorer ran.
pub(super) fn section(h: &mut String, report: &Report) {
    if let Some((e, per_skew)) = report
        .stats
        .explorer
        .as_ref()
        .and_then(|e| Some((e, e["per_skew"].as_array()?)))
    {
        h.push_str(&format!(
            "<h2>Explorer</h2><p>Every schedule of two instances {} steps deep per second-clock skew; {} seeded walks of three ({} steps, seed <code>{}</code>); {} s in all.</p>",
            e["depth"], e["walks"], e["walk_steps"], e["seed"], e["wall_seconds"]
        ));
        h.push_str("<table><tr><th>second clock</th><th>states</th><th>unique</th><th>depth</th><th>seconds</th><th>transitions/s</th><th>round trips / transition</th><th>zombie renew reached</th><th>zombie release reached</th></tr>");
        for r in per_skew {
            let yes = |v: &Value| if v == true { "yes" } else { "<b>no</b>" };
            h.push_str(&format!(
                "<tr><td>{:+} ms</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                r["skew_ms"].as_i64().unwrap_or(0),
                r["states"],
                r["unique_states"],
                r["max_depth"],
                r["seconds"],
                r["transitions_per_second"],
                r["round_trips_per_transition"],
                yes(&r["zombie_renew_reached"]),
                yes(&r["zombie_release_reached"])
            ));
        }
        h.push_str("</table>");
    }
}
