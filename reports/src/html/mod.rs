//! `index.html`: one self-contained page (inline CSS, no scripts, no network)
//! a person can read in a minute: the verdict at the top, the store and
//! server, a row per check, and each failure's counterexample as a timeline of
//! the calls that led to it, one lane per instance.

use harness::{CheckResult, Report, RunVerdict, Verdict};
use serde_json::Value;

use crate::escape;

mod crash;
mod explorer;
mod faults;
mod matrix;
mod timeline;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222}\
h1{margin:.2em 0}.verdict{font-size:1.6em;font-weight:700;padding:.4em .8em;border-radius:6px;display:inline-block}\
.pass{background:#d9f2dd;color:#145a22}.fail{background:#f8d7d7;color:#8a1111}.warn{background:#fff1c9;color:#6b5200}\
.skipped{background:#eee;color:#555}.unknown{background:#e4e0f5;color:#3b2a7a}.incomplete{background:#e4e0f5;color:#3b2a7a}table{border-collapse:collapse;width:100%;margin:1em 0}\
td,th{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}\
th{background:#f6f6f6}code,pre{font:12px/1.4 ui-monospace,monospace}pre{background:#f7f7f7;padding:.6em;overflow:auto}\
.badge{padding:.1em .5em;border-radius:4px;font-weight:600;font-size:.85em}.lane{white-space:nowrap}\
.violation{outline:2px solid #c00}";

fn badge(v: Verdict) -> String {
    let (class, text) = match v {
        Verdict::Pass => ("pass", "pass"),
        Verdict::Fail => ("fail", "FAIL"),
        Verdict::Warn => ("warn", "warn"),
        Verdict::Skipped => ("skipped", "skipped"),
        Verdict::Unknown => ("unknown", "unknown"),
    };
    format!("<span class=\"badge {class}\">{text}</span>")
}

/// Renders the report as one self-contained HTML page.
pub fn render_html(report: &Report) -> String {
    if report.per_server.is_empty() {
        return render_one(report);
    }
    let (class, word) = verdict_word(report.verdict);
    let counts = report.counts();
    let mut h = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>storeproof: {word} — {} on {} servers</title><style>{STYLE}</style></head><body>",
        escape(&report.store.spec),
        report.per_server.len()
    );
    h.push_str(&format!(
        "<h1>storeproof {}</h1><div class=\"verdict {class}\">{word}</div><p>{} on {} servers: {}</p>",
        escape(&report.storeproof),
        escape(&report.store.spec),
        report.per_server.len(),
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(" · ")
    ));
    h.push_str("<h2>Servers</h2><table><tr><th>server</th><th>what it is</th><th>verdict</th><th>checks</th></tr>");
    for run in &report.per_server {
        let name = run.server.name.clone().unwrap_or_else(|| "default".into());
        let (class, word) = verdict_word(run.verdict);
        h.push_str(&format!(
            "<tr><td><a href=\"#server-{n}\"><code>{n}</code></a></td><td>{}</td><td><span class=\"badge {class}\">{word}</span></td><td>{}</td></tr>",
            escape(&run.server.describe()),
            run.counts()
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(" · "),
            n = escape(&name)
        ));
    }
    h.push_str("</table>");
    // Each server's own report, its anchors named for the server so that
    // the same check on two servers links to its own section.
    for run in &report.per_server {
        let name = escape(&run.server.name.clone().unwrap_or_else(|| "default".into()));
        let one = render_one(run);
        let body = one
            .split_once("<body>")
            .and_then(|(_, rest)| rest.rsplit_once("</body>"))
            .map_or("", |(body, _)| body);
        let mut body = body
            .replace("id=\"", &format!("id=\"{name}-"))
            .replace("href=\"#", &format!("href=\"#{name}-"))
            .replace("<h1>", "<h2>")
            .replace("</h1>", "</h2>");
        // Replay files of several servers are named for their server too.
        for c in run.checks.iter().filter(|c| c.counterexample.is_some()) {
            body = body.replace(
                &escape(&crate::replay_file_name(&c.id)),
                &escape(&crate::replay_file_name_on(
                    run.server.name.as_deref(),
                    &c.id,
                )),
            );
        }
        h.push_str(&format!(
            "<section id=\"server-{name}\"><h2>On {name}: {}</h2>{body}</section>",
            escape(&run.server.describe())
        ));
    }
    h.push_str("</body></html>\n");
    h
}

/// The CSS class and word of a run verdict.
fn verdict_word(verdict: RunVerdict) -> (&'static str, &'static str) {
    match verdict {
        RunVerdict::Pass => ("pass", "PASS"),
        RunVerdict::Fail => ("fail", "FAIL"),
        RunVerdict::Incomplete => ("incomplete", "INCOMPLETE"),
    }
}

/// The page of a report of one server.
fn render_one(report: &Report) -> String {
    let mut h = String::new();
    let (class, word) = verdict_word(report.verdict);
    let counts = report.counts();
    h.push_str(&format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>storeproof: {word} — {}</title><style>{STYLE}</style></head><body>",
        escape(&report.store.spec)
    ));
    h.push_str(&format!(
        "<h1>storeproof {}</h1><div class=\"verdict {class}\">{word}</div><p>{}</p>",
        escape(&report.storeproof),
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(" · ")
    ));
    h.push_str("<h2>Store and server</h2><table>");
    h.push_str(&format!(
        "<tr><th>store</th><td><code>{}</code> — {} {} (contracts: {})</td></tr>",
        escape(&report.store.spec),
        escape(&report.store.name),
        escape(&report.store.version),
        escape(&report.store.contracts.join(", "))
    ));
    h.push_str(&format!(
        "<tr><th>server</th><td>{} ({})</td></tr>",
        escape(&report.server.describe()),
        if report.server.managed {
            "managed by storeproof: virtual clock"
        } else {
            "external: only keys under the run's prefix were touched"
        }
    ));
    for (k, v) in &report.server.settings {
        h.push_str(&format!(
            "<tr><th>{}</th><td><code>{}</code></td></tr>",
            escape(k),
            escape(v)
        ));
    }
    h.push_str("</table>");
    explorer::section(&mut h, report);
    crash::section(&mut h, report);
    faults::section(&mut h, report);
    matrix::section(&mut h, report);
    if !report.stats.is_empty() {
        h.push_str("<h2>Figures</h2><table>");
        let stats = serde_json::to_value(&report.stats).unwrap_or_default();
        for (suite, figures) in stats.as_object().into_iter().flatten() {
            // Scalars only: the tables above show the per-skew and per-kill rows.
            let flat: Vec<String> = figures
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| !v.is_array() && !v.is_object() && !v.is_null())
                .map(|(k, v)| format!("{} {}", escape(k), escape(&v.to_string())))
                .collect();
            h.push_str(&format!(
                "<tr><th>{}</th><td>{}</td></tr>",
                escape(suite),
                flat.join(" · ")
            ));
        }
        h.push_str("</table>");
    }
    h.push_str("<h2>Checks</h2><table><tr><th>check</th><th>level</th><th>verdict</th><th>what it found</th></tr>");
    for c in &report.checks {
        h.push_str(&format!(
            "<tr><td><a href=\"#{id}\"><code>{id}</code></a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            match c.level {
                harness::Level::Must => "MUST",
                harness::Level::Should => "SHOULD",
            },
            badge(c.verdict),
            escape(&c.reason),
            id = escape(&c.id)
        ));
    }
    h.push_str("</table>");
    let failures: Vec<&CheckResult> = report
        .checks
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail | Verdict::Warn | Verdict::Unknown))
        .collect();
    if !failures.is_empty() {
        h.push_str("<h2>Failures and warnings</h2>");
        for c in failures {
            h.push_str(&format!(
                "<h3 id=\"{}\">{} <code>{}</code></h3><p>{}</p>",
                escape(&c.id),
                badge(c.verdict),
                escape(&c.id),
                escape(&c.reason)
            ));
            h.push_str(&grants_svg(&c.evidence, c.counterexample.as_ref()));
            // A fault check's history is thousands of events: drawn as a
            // window around its first violation instead of a full table.
            let window = if c.id.starts_with("faults.") {
                timeline::faults_detail(&c.id, &c.evidence, c.counterexample.as_ref())
            } else {
                String::new()
            };
            if window.is_empty() {
                h.push_str(&timeline(&c.evidence));
            } else {
                h.push_str(&window);
            }
            if let Some(steps) = c
                .counterexample
                .as_ref()
                .and_then(|cx| cx["steps"].as_array())
            {
                h.push_str(&schedule_table(steps));
            }
            if let Some(cx) = &c.counterexample {
                h.push_str(&format!(
                    "<p>Re-run it: <code>storeproof replay &lt;this report's folder&gt;/{}</code></p>",
                    escape(&crate::replay_file_name(&c.id))
                ));
                let text = serde_json::to_string_pretty(cx).unwrap_or_default();
                h.push_str(&format!(
                    "<details><summary>counterexample</summary><pre>{}</pre>{}</details>",
                    escape(cut_at_char(&text, COUNTEREXAMPLE_SHOWN)),
                    if text.len() > COUNTEREXAMPLE_SHOWN {
                        format!(
                            "<p>Cut at {} KiB of {} KiB: the whole counterexample is in <code>{}</code>.</p>",
                            COUNTEREXAMPLE_SHOWN / 1024,
                            text.len().div_ceil(1024),
                            escape(&crate::replay_file_name(&c.id))
                        )
                    } else {
                        String::new()
                    }
                ));
            }
        }
    }
    h.push_str("</body></html>\n");
    h
}

/// How much of a counterexample the page shows: a fault history runs to
/// megabytes, and its replay file holds it whole.
const COUNTEREXAMPLE_SHOWN: usize = 64 * 1024;

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut_at_char(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// The history in a check's evidence as a table: a row per completed call, a
/// column (lane) per instance, the server clock on the left; the last row is
/// the one that broke the contract.
fn timeline(evidence: &Value) -> String {
    let Some(events) = evidence["history"]["events"].as_array() else {
        return String::new();
    };
    let mut lanes: Vec<String> = Vec::new();
    for e in events {
        if let Some(i) = e["instance"].as_str() {
            if !lanes.iter().any(|l| l == i) {
                lanes.push(i.to_string());
            }
        }
    }
    let mut h = String::from("<table><tr><th>server ms</th>");
    for l in &lanes {
        h.push_str(&format!("<th class=\"lane\">instance {}</th>", escape(l)));
    }
    h.push_str("</tr>");
    let mut pending: Option<&Value> = None;
    let completions: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] != "invoke" && e["kind"] != "nemesis")
        .collect();
    let last = completions.len().saturating_sub(1);
    let mut n = 0;
    for e in events {
        if e["kind"] == "invoke" {
            pending = Some(e);
            continue;
        }
        if e["kind"] == "nemesis" {
            // A fault's start or end: a row of its own in the nemesis's
            // lane, never taken for a completion.
            h.push_str(&nemesis_row(e, &lanes));
            continue;
        }
        let args = pending.map(|p| p["value"].to_string()).unwrap_or_default();
        let class = if n == last {
            " class=\"violation\""
        } else {
            ""
        };
        n += 1;
        h.push_str(&format!(
            "<tr{class}><td>{}</td>",
            e["server_ms"]
                .as_i64()
                .map(|v| v.to_string())
                .unwrap_or("—".into())
        ));
        for l in &lanes {
            if e["instance"].as_str() == Some(l) {
                h.push_str(&format!(
                    "<td><code>{} {}</code><br>→ <code>{}</code></td>",
                    escape(e["op"].as_str().unwrap_or("")),
                    escape(&args),
                    escape(&e["value"].to_string())
                ));
            } else {
                h.push_str("<td></td>");
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    h
}

/// One nemesis event as a timeline row: the fault and its parameters at
/// its start, how it ended at its end.
fn nemesis_row(e: &Value, lanes: &[String]) -> String {
    let v = &e["value"];
    let phase = v["phase"].as_str().unwrap_or("");
    let detail = match phase {
        "end" => v["ending"].as_str().unwrap_or("").to_string(),
        _ => v["fault"].to_string(),
    };
    let mut h = format!(
        "<tr class=\"nemesis\"><td>{}</td>",
        e["server_ms"]
            .as_i64()
            .map(|v| v.to_string())
            .unwrap_or("—".into())
    );
    for l in lanes {
        if e["instance"].as_str() == Some(l) {
            h.push_str(&format!(
                "<td>fault {} <code>{}</code> <code>{}</code></td>",
                escape(phase),
                escape(e["op"].as_str().unwrap_or("")),
                escape(&detail)
            ));
        } else {
            h.push_str("<td></td>");
        }
    }
    h.push_str("</tr>");
    h
}

/// An explorer counterexample: one row per step, the last one breaking the
/// property.
fn schedule_table(steps: &[Value]) -> String {
    let mut h = String::from(
        "<table><tr><th>step</th><th>what</th><th>server ms</th><th>Redis commands</th><th>answer</th></tr>",
    );
    for (i, s) in steps.iter().enumerate() {
        let class = if i + 1 == steps.len() {
            " class=\"violation\""
        } else {
            ""
        };
        let commands: Vec<String> = s["commands"]
            .as_array()
            .map(|c| c.iter().map(|x| escape(x.as_str().unwrap_or(""))).collect())
            .unwrap_or_default();
        h.push_str(&format!(
            "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            s["step"],
            escape(s["what"].as_str().unwrap_or("")),
            s["server_ms"],
            commands.join("<br>"),
            if s["answer"].is_null() { String::new() } else { escape(&s["answer"].to_string()) }
        ));
    }
    h.push_str("</table>");
    h
}

/// One acknowledged grant: who, which epoch, from when to when (server ms).
struct GrantBar {
    lane: String,
    epoch: i64,
    from: i64,
    until: i64,
}

/// The grants a failure's history or schedule shows, and the instant it broke.
fn grants_of(evidence: &Value, counterexample: Option<&Value>) -> (Vec<GrantBar>, Option<i64>) {
    let mut bars = Vec::new();
    let mut last = None;
    let mut push = |lane: &str, at: Option<i64>, answer: &Value| {
        if let (Some(from), Some(g)) = (at, answer.get("granted")) {
            if let (Some(epoch), Some(until)) = (g["epoch"].as_i64(), g["expires_at_ms"].as_i64()) {
                bars.push(GrantBar {
                    lane: lane.to_string(),
                    epoch,
                    from,
                    until,
                });
            }
        }
    };
    if let Some(steps) = counterexample.and_then(|cx| cx["steps"].as_array()) {
        for s in steps {
            let lane = s["what"]
                .as_str()
                .unwrap_or("")
                .split(':')
                .next()
                .unwrap_or("");
            push(lane, s["server_ms"].as_i64(), &s["answer"]);
            last = s["server_ms"].as_i64().or(last);
        }
    } else if let Some(events) = evidence["history"]["events"].as_array() {
        for e in events.iter().filter(|e| e["kind"] == "ok") {
            push(
                e["instance"].as_str().unwrap_or(""),
                e["server_ms"].as_i64(),
                &e["value"],
            );
            last = e["server_ms"].as_i64().or(last);
        }
    }
    (bars, last)
}

/// The grants as intervals on the server clock, a lane per instance, the
/// breaking instant as a red line. Nothing when there is no grant to draw.
fn grants_svg(evidence: &Value, counterexample: Option<&Value>) -> String {
    let (bars, broke) = grants_of(evidence, counterexample);
    if bars.is_empty() {
        return String::new();
    }
    let mut lanes: Vec<&str> = Vec::new();
    for b in &bars {
        if !lanes.contains(&b.lane.as_str()) {
            lanes.push(&b.lane);
        }
    }
    let t0 = bars.iter().map(|b| b.from).min().unwrap_or(0);
    let t1 = bars
        .iter()
        .map(|b| b.until)
        .chain(broke)
        .max()
        .unwrap_or(t0 + 1)
        .max(t0 + 1);
    let (w, left, row) = (760.0, 90.0, 26.0);
    let x = |t: i64| left + (t - t0) as f64 / (t1 - t0) as f64 * (w - left - 10.0);
    let height = row * lanes.len() as f64 + 30.0;
    let mut h = format!(
        "<p>Grants on the server clock (ms after {t0}), one lane per instance:</p><svg width=\"{w}\" height=\"{height}\" role=\"img\" style=\"font:12px sans-serif\">"
    );
    for (i, lane) in lanes.iter().enumerate() {
        let y = 10.0 + row * i as f64;
        h.push_str(&format!(
            "<text x=\"0\" y=\"{}\">instance {}</text>",
            y + 15.0,
            escape(lane)
        ));
    }
    for b in &bars {
        let i = lanes.iter().position(|l| *l == b.lane).unwrap_or(0);
        let y = 10.0 + row * i as f64;
        let (x0, x1) = (x(b.from), x(b.until));
        h.push_str(&format!(
            "<rect x=\"{x0:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"20\" fill=\"#9cc3e6\" stroke=\"#2b5d8a\"/><text x=\"{:.1}\" y=\"{}\">epoch {} ({}–{})</text>",
            (x1 - x0).max(2.0),
            x0 + 3.0,
            y + 15.0,
            b.epoch,
            b.from - t0,
            b.until - t0
        ));
    }
    if let Some(t) = broke {
        let xb = x(t);
        h.push_str(&format!(
            "<line x1=\"{xb:.1}\" x2=\"{xb:.1}\" y1=\"0\" y2=\"{height}\" stroke=\"#c00\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{}\" fill=\"#c00\">broken at {}</text>",
            (xb + 4.0).min(w - 90.0),
            height - 4.0,
            t - t0
        ));
    }
    h.push_str("</svg>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_counterexample_is_cut_at_a_character_boundary() {
        let text = "é".repeat(COUNTEREXAMPLE_SHOWN);
        let cut = cut_at_char(&text, COUNTEREXAMPLE_SHOWN + 1);
        assert!(cut.len() <= COUNTEREXAMPLE_SHOWN + 1);
        assert!(cut.chars().all(|c| c == 'é'));
        assert_eq!(cut_at_char("short", COUNTEREXAMPLE_SHOWN), "short");
    }

    #[test]
    fn nemesis_events_are_rows_of_their_own_never_completions() {
        let evidence = json!({"history": {"events": [
            {"index": 0, "instance": "a", "kind": "invoke", "op": "lease.take",
             "value": {"tree": "t"}, "server_ms": 0, "clock_ms": 0},
            {"index": 1, "instance": "nemesis", "kind": "nemesis", "op": "nemesis.partition",
             "value": {"phase": "start", "fault": {"instance": 0, "for_ms": 9}}, "server_ms": 1, "clock_ms": 1},
            {"index": 2, "instance": "nemesis", "kind": "nemesis", "op": "nemesis.partition",
             "value": {"phase": "end", "fault": {}, "ending": "healed after its time"}, "server_ms": 10, "clock_ms": 10},
            {"index": 3, "instance": "a", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 1}}, "server_ms": 11, "clock_ms": 11}
        ]}});
        let h = timeline(&evidence);
        assert!(
            h.contains("fault start <code>nemesis.partition</code>"),
            "{h}"
        );
        assert!(h.contains("healed after its time"), "{h}");
        assert_eq!(h.matches("class=\"nemesis\"").count(), 2, "{h}");
        // The store's completion is the last completion: the violation row,
        // with its own invoke's arguments.
        let violation = h.split("<tr class=\"violation\">").nth(1).unwrap_or("");
        assert!(violation.contains("lease.take"), "{h}");
        assert!(
            violation.contains("&quot;tree&quot;") || violation.contains("\"tree\""),
            "{h}"
        );
        assert_eq!(h.matches("class=\"violation\"").count(), 1, "{h}");
    }
}
