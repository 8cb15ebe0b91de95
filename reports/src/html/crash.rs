//! The crash log in the report: one row per kill, each kind of write in
//! its own column.

use harness::check::Report;
use serde_json::Value;

use crate::escape;

/// Appends the crash suite's section to `h` when it ran.
pub(super) fn section(h: &mut String, report: &Report) {
    if let Some(c) = report.stats.crash.as_ref() {
        // One row per kill, each kind of write in its own column.
        let count = |k: &Value, kind: &str| -> String {
            format!(
                "{} / {}",
                k[format!("{kind}_acknowledged")],
                k[format!("{kind}_lost")]
            )
        };
        h.push_str(&format!(
            "<h2>Crash log</h2><p>Backend: <b>{}</b>{}. Each kill runs on keys of its own; each cell is acknowledged / lost.</p>",
            escape(c["backend"].as_str().unwrap_or("")),
            c["docker_unavailable"]
                .as_str()
                .map(|e| format!(" (Docker unavailable: {})", escape(e)))
                .unwrap_or_default(),
        ));
        h.push_str(
            "<table><tr><th>setting</th><th>kill</th><th>epochs</th><th>renews</th>\
             <th>children</th><th>claims</th><th>completions</th><th>pauses</th>\
             <th>in flight (not judged)</th></tr>",
        );
        let settings = [
            ("required settings, SIGKILL", c),
            ("appendonly no, opted out, SIGKILL", &c["opt_out"]),
            ("appendfsync always, power cut", &c["power_loss"]["always"]),
            (
                "appendfsync everysec, opted out, power cut",
                &c["power_loss"]["everysec_opted_out"],
            ),
        ];
        for (setting, figures) in settings {
            for k in figures["per_kill"].as_array().into_iter().flatten() {
                h.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                     <td>{}</td><td>{}</td><td>{}</td></tr>",
                    setting,
                    k["kill"],
                    count(k, "epochs"),
                    count(k, "renews"),
                    count(k, "children"),
                    count(k, "claims"),
                    count(k, "completions"),
                    count(k, "pauses"),
                    k["in_flight"]
                ));
            }
            if let Some(trouble) = figures["trouble"].as_str() {
                h.push_str(&format!(
                    "<tr><td>{setting}</td><td colspan=\"8\">not decided: {}</td></tr>",
                    escape(trouble)
                ));
            }
        }
        h.push_str("</table>");
    }
}
