//! The explorer's figures in the report: one row per second-clock skew.

use harness::check::Report;

/// A measured number as report.json writes it (`40.0`, not `40`).
fn num(x: f64) -> String {
    serde_json::Value::from(x).to_string()
}

/// Appends the explorer's section to `h` when the explorer ran.
pub(super) fn section(h: &mut String, report: &Report) {
    let Some(e) = report.stats.explorer.as_ref() else {
        return;
    };
    h.push_str(&format!(
        "<h2>Explorer</h2><p>Every schedule of two instances {} steps deep per second-clock skew; {} seeded walks of three ({} steps, seed <code>{}</code>); {} s in all.</p>",
        e.depth,
        e.walks,
        e.walk_steps,
        e.seed,
        num(e.wall_seconds.unwrap_or(e.seconds))
    ));
    h.push_str("<table><tr><th>second clock</th><th>states</th><th>unique</th><th>depth</th><th>seconds</th><th>transitions/s</th><th>round trips / transition</th><th>zombie renew reached</th><th>zombie release reached</th></tr>");
    let yes = |v: bool| if v { "yes" } else { "<b>no</b>" };
    for r in &e.per_skew {
        h.push_str(&format!(
            "<tr><td>{:+} ms</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.skew_ms,
            r.states,
            r.unique_states,
            r.max_depth,
            num(r.seconds),
            num(r.transitions_per_second),
            num(r.round_trips_per_transition),
            yes(r.zombie_renew_reached),
            yes(r.zombie_release_reached)
        ));
    }
    h.push_str("</table>");
}
