//! The crash log in the report: one row per kill, each kind of write in
//! its own column.

use model::Report;

use crate::escape;

/// Appends the crash suite's section to `h` when it ran.
pub(super) fn section(h: &mut String, report: &Report) {
    let Some(c) = report.stats.crash.as_ref() else {
        return;
    };
    h.push_str(&format!(
        "<h2>Crash log</h2><p>Backend: <b>{}</b>{}. Each kill runs on keys of its own; each cell is acknowledged / lost.</p>",
        escape(&c.backend),
        c.docker_unavailable
            .as_deref()
            .map(|e| format!(" (Docker unavailable: {})", escape(e)))
            .unwrap_or_default(),
    ));
    h.push_str(
        "<table><tr><th>setting</th><th>kill</th><th>epochs</th><th>renews</th>\
         <th>children</th><th>claims</th><th>completions</th><th>pauses</th>\
         <th>in flight (not judged)</th></tr>",
    );
    // The required settings' kills are at the top level of the figures.
    let settings = [
        ("required settings, SIGKILL", &c.per_kill, &c.trouble),
        (
            "appendonly no, opted out, SIGKILL",
            &c.opt_out.per_kill,
            &c.opt_out.trouble,
        ),
        (
            "appendonly no, SIGKILL: storeproof's reference store beside it (decides crash.opt-out-loses)",
            &c.opt_out_reference.per_kill,
            &None,
        ),
        (
            "appendfsync always, power cut",
            &c.power_loss.always.per_kill,
            &c.power_loss.always.trouble,
        ),
        (
            "appendfsync everysec, opted out, power cut",
            &c.power_loss.everysec_opted_out.per_kill,
            &c.power_loss.everysec_opted_out.trouble,
        ),
        (
            "appendfsync everysec, power cut: storeproof's reference store beside it",
            &c.power_loss.everysec_reference.per_kill,
            &None,
        ),
    ];
    for (setting, per_kill, trouble) in settings {
        for k in per_kill {
            h.push_str(&format!(
                "<tr><td>{setting}</td><td>{}</td><td>{} / {}</td><td>{} / {}</td><td>{} / {}</td>\
                 <td>{} / {}</td><td>{} / {}</td><td>{} / {}</td><td>{}</td></tr>",
                k.kill,
                k.epochs_acknowledged,
                k.epochs_lost,
                k.renews_acknowledged,
                k.renews_lost,
                k.children_acknowledged,
                k.children_lost,
                k.claims_acknowledged,
                k.claims_lost,
                k.completions_acknowledged,
                k.completions_lost,
                k.pauses_acknowledged,
                k.pauses_lost,
                k.in_flight
            ));
        }
        if let Some(trouble) = trouble {
            h.push_str(&format!(
                "<tr><td>{setting}</td><td colspan=\"8\">not decided: {}</td></tr>",
                escape(trouble)
            ));
        }
    }
    h.push_str("</table>");
}
