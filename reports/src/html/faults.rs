//! The fault suite's workloads in the report: per layout, who played each
//! role, what was sent and how it ended, and which faults played.

use model::Report;

use crate::escape;

/// Appends the fault suite's section to `h` when it ran.
pub(super) fn section(h: &mut String, report: &Report) {
    let Some(f) = report.stats.faults.as_ref() else {
        return;
    };
    h.push_str(&format!(
        "<h2>Fault workloads</h2><p>Seed {}. Each workload ran its instances side by side while \
         the nemesis played; operations are counted by how they ended (unknown: the reply was \
         lost or never came, judged both ways).</p>",
        f.seed
    ));
    h.push_str(
        "<table><tr><th>layout</th><th>stores</th><th>instances</th><th>operations</th>\
         <th>ok / refused / unknown</th><th>faults played</th><th>children saved / done</th>\
         <th>trees judged</th><th>seconds</th></tr>",
    );
    for w in &f.workloads {
        let stores: Vec<String> = w
            .stores
            .iter()
            .map(|(role, who)| format!("{}: {}", escape(role), escape(who)))
            .collect();
        let mut faults: Vec<String> = w
            .faults
            .iter()
            .map(|(name, n)| format!("{} ×{n}", escape(name)))
            .collect();
        // One-shot faults that found no command played nothing: shown apart.
        faults.extend(
            w.disarmed
                .iter()
                .map(|(name, n)| format!("{} ×{n} disarmed unfired", escape(name))),
        );
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {} / {}</td><td>{}</td>\
             <td>{} / {}</td><td>{}</td><td>{}</td></tr>",
            escape(&w.layout),
            stores.join("<br>"),
            w.instances,
            w.operations,
            w.ok,
            w.refused,
            w.unknown,
            faults.join(", "),
            w.children_saved,
            w.children_done,
            w.trees_judged,
            w.seconds
        ));
    }
    h.push_str("</table>");
}
