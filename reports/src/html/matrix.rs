//! The sabotage matrix in the report: a row per named sabotage, a column per
//! check that caught any of them, each cell that check's verdict on that
//! sabotage, the cell of the check that must catch it marked.

use model::figures::SabotageFigures;
use model::{Report, Verdict};

use super::badge;
use crate::escape;

/// Appends the sabotage suite's matrix to `h` when it ran.
pub(super) fn section(h: &mut String, report: &Report) {
    let Some(f) = report.stats.sabotage.as_ref() else {
        return;
    };
    h.push_str(&table(f));
}

/// The columns: every check that caught something, then any named check
/// that caught nothing (an escape must show as a column, not vanish).
fn columns(f: &SabotageFigures) -> Vec<&str> {
    let mut columns: Vec<&str> = f.catching.iter().map(String::as_str).collect();
    for row in &f.rows {
        if !columns.contains(&row.caught_by.as_str()) {
            columns.push(&row.caught_by);
        }
    }
    columns
}

/// The matrix as an HTML section.
fn table(f: &SabotageFigures) -> String {
    let columns = columns(f);
    let sizes: Vec<String> = f
        .sizes
        .iter()
        .map(|(k, v)| format!("{} {}", escape(k), escape(v)))
        .collect();
    let mut h = format!(
        "<h2>Sabotage matrix</h2><p>Each named sabotage was run through the suites that apply \
         ({}); a column per check that failed on any of them. The outlined cell is the check \
         that must catch the sabotage; its row passes only when that cell failed.</p>\
         <div style=\"overflow:auto\"><table><tr><th>sabotage</th><th>verdict</th>",
        sizes.join(", ")
    );
    for c in &columns {
        h.push_str(&format!("<th><code>{}</code></th>", escape(c)));
    }
    h.push_str("</tr>");
    for row in &f.rows {
        h.push_str(&format!(
            "<tr><td><code>{}</code><br><small>{}</small></td><td>{}</td>",
            escape(&row.sabotage),
            escape(&row.breaks),
            badge(row.verdict)
        ));
        for c in &columns {
            let cell = match row.verdicts.get(*c) {
                Some(v) => badge(*v),
                None => "—".to_string(),
            };
            if *c == row.caught_by {
                h.push_str(&format!(
                    "<td class=\"named\" style=\"outline:2px solid #333\" title=\"named check\">{cell} ◆</td>"
                ));
            } else {
                h.push_str(&format!("<td>{cell}</td>"));
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</table></div>");
    let escaped = f.rows.iter().filter(|r| r.verdict != Verdict::Pass).count();
    h.push_str(&format!(
        "<p>{} sabotages, {} caught by their named check, {} not; {} s.</p>",
        f.rows.len(),
        f.rows.len() - escaped,
        escaped,
        f.seconds
    ));
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::figures::SabotageRow;

    fn row(
        name: &str,
        caught_by: &str,
        verdicts: &[(&str, Verdict)],
        verdict: Verdict,
    ) -> SabotageRow {
        SabotageRow {
            sabotage: name.into(),
            store: format!("sabotage:{name}"),
            breaks: "<a promise>".into(),
            caught_by: caught_by.into(),
            suites: vec!["conformance".into()],
            verdicts: verdicts
                .iter()
                .map(|(id, v)| (id.to_string(), *v))
                .collect(),
            verdict,
            seconds: 1.0,
        }
    }

    #[test]
    fn an_escape_shows_its_named_check_as_a_column_and_the_named_cells_are_marked() {
        let f = SabotageFigures {
            rows: vec![
                row(
                    "caught",
                    "x.a",
                    &[("x.a", Verdict::Fail), ("x.b", Verdict::Pass)],
                    Verdict::Pass,
                ),
                row(
                    "escaped",
                    "x.b",
                    &[("x.a", Verdict::Fail), ("x.b", Verdict::Pass)],
                    Verdict::Fail,
                ),
            ],
            catching: vec!["x.a".into()],
            sizes: [("conformance".to_string(), "every scenario".to_string())]
                .into_iter()
                .collect(),
            seconds: 2.0,
        };
        assert_eq!(columns(&f), vec!["x.a", "x.b"]);
        let h = table(&f);
        assert_eq!(h.matches("class=\"named\"").count(), 2, "{h}");
        assert!(h.contains("&lt;a promise&gt;"), "escaped: {h}");
        assert!(
            h.contains("2 sabotages, 1 caught by their named check, 1 not"),
            "{h}"
        );
        // The caught row's named cell is its failure.
        let caught =
            &h[h.find("<code>caught</code>").unwrap()..h.find("<code>escaped</code>").unwrap()];
        assert!(
            caught.contains("named check\"><span class=\"badge fail\">"),
            "{caught}"
        );
    }
}
