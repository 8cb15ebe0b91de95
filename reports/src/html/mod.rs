//! `index.html`: one self-contained page (inline CSS and SVG, no script, no
//! network) a person can read in a minute. The verdict comes first, then
//! what needs attention (failures, then unknowns and skips inside claimed
//! contracts, then warnings), each with a one-paragraph explanation, its
//! timeline (`trace.rs`, one renderer for every counterexample; for the
//! fault suite's long histories `timeline.rs` picks the window it draws)
//! and its `storeproof replay` command; then the certificate and its badge,
//! the checks by suite and contract (filterable with two radio buttons and
//! CSS), the figures, and the server's settings.

use model::counterexample::{Counterexample, ExplorerStep};
use model::history::Role;
use model::{CheckResult, Event, EventKind, Happened, History, NemesisNote, NemesisPhase, Report};
use model::{RunVerdict, Verdict};
use serde_json::Value;

use crate::escape;

mod crash;
mod explorer;
mod faults;
mod matrix;
mod timeline;
mod trace;

/// The page's one style sheet: readable on a phone (tables and drawings
/// scroll inside their box), printed (every check shown, no filter), and
/// with text at WCAG AA contrast on every badge colour.
const STYLE: &str = "*{box-sizing:border-box}body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:.6em 1em 2em;max-width:80em;color:#1a1a1a;background:#fff;overflow-wrap:break-word}\
header h1{font-size:1.5em;margin:.1em 0 .1em}header .sub{margin:0 0 .3em;color:#333}h2{font-size:1.25em;margin:.8em 0 .3em}h3{font-size:1.05em;margin:.5em 0 .2em}\
h4{margin:.6em 0 .2em}.verdict{font-weight:700;padding:.05em .45em;border-radius:5px}\
.pass{background:#d9f2dd;color:#0f4a1c}.fail{background:#f8d7d7;color:#7a0b0b}.warn{background:#fff1c9;color:#5a4500}\
.skipped{background:#e9e9e9;color:#3d3d3d}.unknown,.incomplete{background:#e4e0f5;color:#33246b}\
table{border-collapse:collapse;width:100%;margin:.4em 0}td,th{border-bottom:1px solid #d6d6d6;padding:.25em .5em;text-align:left;vertical-align:top}\
th{background:#f3f3f3}code,pre{font:12.5px/1.4 ui-monospace,monospace}.groups td:nth-child(-n+3){white-space:nowrap}pre{background:#f5f5f5;padding:.6em;overflow:auto;max-height:30em}\
.badge{padding:.05em .45em;border-radius:4px;font-weight:600;font-size:.85em}.lane{white-space:nowrap}.violation{outline:2px solid #c00}\
.scroll{overflow-x:auto;max-width:100%}.attention .item{border-left:4px solid #c00;padding:.1em 0 .3em .8em;margin:.4em 0 1em}\
.attention .why{margin:.2em 0 .3em;max-width:60em}.lvl{font-size:.8em;color:#444}.replay code{background:#f3f3f3;padding:.1em .3em}\
figure.timeline{margin:.2em 0}figcaption{font-size:.9em;color:#333;margin-bottom:.2em}\
label.filter{margin-right:1em}input[id$=show-attention]:checked~.groups tr.ok,input[id$=show-attention]:checked~.groups .calm{display:none}\
h3 small,h4 small{font-weight:400;color:#444}a{color:#0b4f9c}\
@media (max-width:40em){body{font-size:14px;padding:.4em .5em}header h1{font-size:1.25em}}\
@media print{.filter{display:none}.groups tr.ok,.groups .calm{display:revert!important}.scroll{overflow:visible}a{color:inherit}details{display:block}}";

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
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>storeproof: {word} — {} on {} servers</title><style>{STYLE}{}</style></head><body>",
        escape(&report.store.spec),
        report.per_server.len(),
        trace::STYLE
    );
    h.push_str(&format!(
        "<header><h1>storeproof: <span class=\"verdict {class}\">{word}</span> <code>{}</code></h1><p class=\"sub\">on {} servers: {} · storeproof {}</p></header>",
        escape(&report.store.spec),
        report.per_server.len(),
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(" · "),
        escape(&report.storeproof)
    ));
    h.push_str("<h2>Servers</h2><div class=\"scroll\"><table><tr><th scope=\"col\">server</th><th scope=\"col\">what it is</th><th scope=\"col\">verdict</th><th scope=\"col\">checks</th><th scope=\"col\">first needing attention</th></tr>");
    for run in &report.per_server {
        let name = run.server.name.clone().unwrap_or_else(|| "default".into());
        let (class, word) = verdict_word(run.verdict);
        let first = needing_attention(run)
            .first()
            .map(|c| {
                format!(
                    "{} <a href=\"#{n}-{id}\"><code>{id}</code></a>",
                    badge(c.verdict),
                    n = escape(&name),
                    id = escape(&c.id)
                )
            })
            .unwrap_or_else(|| "none".into());
        h.push_str(&format!(
            "<tr><td><a href=\"#server-{n}\"><code>{n}</code></a></td><td>{}</td><td><span class=\"badge {class}\">{word}</span></td><td>{}</td><td>{first}</td></tr>",
            escape(&run.server.describe()),
            run.counts()
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(" · "),
            n = escape(&name)
        ));
    }
    h.push_str("</table></div>");
    h.push_str(&certificate(report));
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
            .replace("for=\"", &format!("for=\"{name}-"))
            .replace(
                "name=\"show-filter\"",
                &format!("name=\"{name}-show-filter\""),
            )
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

/// The page of a report of one server: the verdict, then what needs
/// attention (each item with its explanation, timeline and replay command),
/// then the certificate, the checks by suite and contract, the figures and
/// the server's settings.
fn render_one(report: &Report) -> String {
    let (_, word) = verdict_word(report.verdict);
    let mut h = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>storeproof: {word} — {}</title><style>{STYLE}{}</style></head><body>",
        escape(&report.store.spec),
        trace::STYLE
    );
    h.push_str(&header(report));
    h.push_str(&attention(report));
    h.push_str(&certificate(report));
    h.push_str(&checks(report));
    let mut figures = String::new();
    explorer::section(&mut figures, report);
    crash::section(&mut figures, report);
    faults::section(&mut figures, report);
    matrix::section(&mut figures, report);
    if !report.stats.is_empty() {
        figures.push_str("<h2>Figures</h2><div class=\"scroll\"><table>");
        let stats = serde_json::to_value(&report.stats).unwrap_or_default();
        for (suite, figs) in stats.as_object().into_iter().flatten() {
            // Scalars only: the tables above show the per-skew and per-kill rows.
            let flat: Vec<String> = figs
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| !v.is_array() && !v.is_object() && !v.is_null())
                .map(|(k, v)| format!("{} {}", escape(k), escape(&v.to_string())))
                .collect();
            figures.push_str(&format!(
                "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
                escape(suite),
                flat.join(" · ")
            ));
        }
        figures.push_str("</table></div>");
    }
    h.push_str(&figures);
    h.push_str("<h2 id=\"server\">Store and server</h2><div class=\"scroll\"><table>");
    h.push_str(&format!(
        "<tr><th scope=\"row\">store</th><td><code>{}</code> — {} {} (contracts: {})</td></tr>",
        escape(&report.store.spec),
        escape(&report.store.name),
        escape(&report.store.version),
        escape(&report.store.contracts.join(", "))
    ));
    h.push_str(&format!(
        "<tr><th scope=\"row\">server</th><td>{} ({})</td></tr>",
        escape(&report.server.describe()),
        if report.server.managed {
            "managed by storeproof: virtual clock"
        } else {
            "external: only keys under the run's prefix were touched"
        }
    ));
    for (k, v) in &report.server.settings {
        h.push_str(&format!(
            "<tr><th scope=\"row\">{}</th><td><code>{}</code></td></tr>",
            escape(k),
            escape(v)
        ));
    }
    h.push_str("</table></div></body></html>\n");
    h
}

/// The first lines: the verdict, what was certified on what, the counts.
fn header(report: &Report) -> String {
    let (class, word) = verdict_word(report.verdict);
    let counts = report.counts();
    let outside = report
        .runs()
        .iter()
        .flat_map(|r| r.checks.iter())
        .filter(|c| c.verdict == Verdict::Skipped && c.outside_claim)
        .count();
    let total: usize = counts.values().sum();
    format!(
        "<header><h1>storeproof: <span class=\"verdict {class}\">{word}</span> <code>{}</code></h1><p class=\"sub\">{} {} on {} · {total} checks: {}{} · storeproof {}</p></header>",
        escape(&report.store.spec),
        escape(&report.store.name),
        escape(&report.store.version),
        escape(&report.server.describe()),
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(" · "),
        if outside > 0 {
            format!(" ({outside} of them outside the store's claim)")
        } else {
            String::new()
        },
        escape(&report.storeproof)
    )
}

/// The checks that need a person's eyes, in the order they matter:
/// failures, then unknowns and skips inside claimed contracts, then warnings.
fn needing_attention(report: &Report) -> Vec<&CheckResult> {
    let rank = |c: &CheckResult| match c.verdict {
        Verdict::Fail => Some(0),
        Verdict::Unknown => Some(1),
        Verdict::Skipped if !c.outside_claim => Some(1),
        Verdict::Warn => Some(2),
        _ => None,
    };
    let mut items: Vec<(usize, &CheckResult)> = report
        .checks
        .iter()
        .filter_map(|c| rank(c).map(|r| (r, c)))
        .collect();
    items.sort_by_key(|(r, _)| *r);
    items.into_iter().map(|(_, c)| c).collect()
}

/// The `--out` the run was given, for a replay command a person can copy.
fn out_dir(report: &Report) -> Option<&str> {
    let cmd = &report.run.command;
    cmd.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--out=").or_else(|| {
            (a == "--out")
                .then(|| cmd.get(i + 1).map(String::as_str))
                .flatten()
        })
    })
}

/// What a verdict means, in one sentence, before the check's own words.
fn lead(c: &CheckResult) -> &'static str {
    match c.verdict {
        Verdict::Fail => "A MUST check failed: the store did what its contract forbids.",
        Verdict::Unknown => "Not decided: the harness had trouble of its own (never the store's doing), so the run is INCOMPLETE until it is decided.",
        Verdict::Skipped => "Not run although the store claims the contract it is about, so the run is INCOMPLETE.",
        Verdict::Warn => "A SHOULD check broke: a safe deviation from the contract; the run still passes.",
        Verdict::Pass => "",
    }
}

/// At most this many characters of a reason in the explanation paragraph;
/// the whole reason follows in a disclosure.
const REASON_SHOWN: usize = 360;

/// The first clause of a reason (up to the first `; ` past a few words),
/// cut to [`REASON_SHOWN`] characters.
fn first_clause(reason: &str) -> (String, bool) {
    let clause = reason
        .match_indices("; ")
        .map(|(i, _)| i)
        .find(|i| *i >= 40)
        .map_or(reason, |i| &reason[..i]);
    let mut out: String = clause.chars().take(REASON_SHOWN).collect();
    if out.len() < clause.len() {
        out.push('…');
    }
    let cut = out.len() != reason.len();
    (out, cut)
}

/// The "what needs attention" section.
fn attention(report: &Report) -> String {
    let items = needing_attention(report);
    let mut h = format!(
        "<section class=\"attention\" id=\"attention\"><h2>What needs attention ({})</h2>",
        items.len()
    );
    if items.is_empty() {
        h.push_str("<p>Nothing: every check run on the store's claimed contracts was decided, and none failed or warned.</p>");
    }
    let folder = out_dir(report)
        .map(|d| format!("{}/", d.trim_end_matches('/')))
        .unwrap_or_else(|| "&lt;this report's folder&gt;/".into());
    for c in items {
        let (clause, cut) = first_clause(&c.reason);
        h.push_str(&format!(
            "<article class=\"item\" id=\"{id}\"><h3>{} <code>{id}</code> <span class=\"lvl\">{}</span></h3><p class=\"why\">{} {}: {}</p>",
            badge(c.verdict),
            match c.level {
                model::Level::Must => "MUST",
                model::Level::Should => "SHOULD",
            },
            lead(c),
            if matches!(c.verdict, Verdict::Fail | Verdict::Warn) {
                "What it found"
            } else {
                "Why"
            },
            escape(&clause),
            id = escape(&c.id)
        ));
        // A fault check's history is thousands of events: a window around
        // its first violation is drawn (timeline.rs picks it); every
        // counterexample goes through the one trace renderer.
        // The history the evidence recorded, read once: the trace, the
        // per-call table and (without a counterexample's) the fault
        // timeline all draw it.
        let recorded = c.recorded_history();
        let violated = c
            .counterexample
            .as_ref()
            .and_then(Counterexample::history)
            .or(recorded);
        let window = match violated {
            Some(history) if c.id.starts_with("faults.") => {
                timeline::faults_detail(&c.id, &c.violations, history)
            }
            _ => String::new(),
        };
        if !window.is_empty() {
            h.push_str(&window);
        } else if let Some(t) = trace::Trace::of(recorded, c.counterexample.as_ref()) {
            h.push_str(&trace::render(&t, &c.id));
        }
        if c.counterexample.is_some() {
            h.push_str(&format!(
                "<p class=\"replay\">Re-run it: <code>storeproof replay {folder}{}</code></p>",
                escape(&crate::replay_file_name(&c.id))
            ));
        } else if matches!(c.verdict, Verdict::Fail | Verdict::Warn) {
            h.push_str("<p class=\"replay\">No counterexample was recorded: re-run the command of the certificate below.</p>");
        }
        if cut {
            h.push_str(&format!(
                "<details><summary>the whole finding</summary><p>{}</p></details>",
                escape(&c.reason)
            ));
        }
        let calls = recorded.map_or(String::new(), timeline);
        if !calls.is_empty() && !c.id.starts_with("faults.") {
            h.push_str(&format!(
                "<details><summary>the calls, one row each</summary><div class=\"scroll\">{calls}</div></details>"
            ));
        }
        if let Some(steps) = c
            .counterexample
            .as_ref()
            .and_then(|cx| cx.explorer())
            .map(|x| &x.steps)
        {
            h.push_str(&format!(
                "<details><summary>the schedule, step by step</summary><div class=\"scroll\">{}</div></details>",
                schedule_table(steps)
            ));
        }
        if let Some(cx) = &c.counterexample {
            let text = serde_json::to_string_pretty(cx).unwrap_or_default();
            h.push_str(&format!(
                "<details><summary>counterexample (JSON)</summary><pre>{}</pre>{}</details>",
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
        h.push_str("</article>");
    }
    h.push_str("</section>");
    h
}

/// A command line as a person would type it in a POSIX shell.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the run certifies, one phrase: the claimed contracts when every
/// suite ran and passed; otherwise why it does not.
fn certified(report: &Report) -> (&'static str, String) {
    let contracts = report.store.contracts.join(", ");
    let partial = !report.run.suites_left_out.is_empty() || !report.run.only.is_empty();
    match report.verdict {
        RunVerdict::Fail => ("fail", "nothing: a MUST check failed".into()),
        RunVerdict::Incomplete => (
            "incomplete",
            "nothing yet: a MUST check of a claimed contract was not decided".into(),
        ),
        RunVerdict::Pass if partial => (
            "partial",
            format!(
                "nothing whole: the run passed but left out {}; a certificate needs every suite",
                {
                    let mut left: Vec<String> = report.run.suites_left_out.clone();
                    if !report.run.only.is_empty() {
                        left.push(format!("every check but {}", report.run.only.join(", ")));
                    }
                    left.join(", ")
                }
            ),
        ),
        RunVerdict::Pass => ("pass", contracts),
    }
}

/// The certificate block: what was certified, on what, and how to repeat it.
fn certificate(report: &Report) -> String {
    let (_, what) = certified(report);
    let servers: Vec<String> = report
        .runs()
        .iter()
        .map(|r| {
            format!(
                "{}{}",
                escape(&r.server.describe()),
                r.server
                    .name
                    .as_deref()
                    .map(|n| format!(" (<code>{}</code>)", escape(n)))
                    .unwrap_or_default()
            )
        })
        .collect();
    let mut h = String::from("<section class=\"certificate\" id=\"certificate\"><h2>Certificate</h2><div class=\"scroll\"><table>");
    let mut row = |k: &str, v: String| {
        h.push_str(&format!("<tr><th scope=\"row\">{k}</th><td>{v}</td></tr>"));
    };
    row(
        "store",
        format!(
            "<code>{}</code> — {} {}",
            escape(&report.store.spec),
            escape(&report.store.name),
            escape(&report.store.version)
        ),
    );
    row("server", servers.join(", "));
    row(
        "contracts claimed",
        escape(&report.store.contracts.join(", ")),
    );
    row("certified", format!("<b>{}</b>", escape(&what)));
    row(
        "opt-out",
        report
            .run
            .opt_out
            .as_deref()
            .map(|o| format!("<code>{}</code>", escape(o)))
            .unwrap_or_else(|| "none".into()),
    );
    row("seed", format!("<code>{}</code>", report.run.seed));
    row(
        "command",
        format!("<code>{}</code>", escape(&shell_words(&report.run.command))),
    );
    row("storeproof", escape(&report.storeproof));
    row(
        "badge",
        format!(
            "{} <code>![storeproof](badge.svg)</code> (the file <code>badge.svg</code> beside this page)",
            // Inline SVG needs no namespace; the page names no URL at all.
            render_badge(report).replace(" xmlns=\"http://www.w3.org/2000/svg\"", "")
        ),
    );
    h.push_str("</table></div></section>");
    h
}

/// An SVG badge of the run for a README: `storeproof | <what it certifies>`.
pub fn render_badge(report: &Report) -> String {
    let (class, what) = certified(report);
    let right = match class {
        "pass" => format!("pass: {}", report.store.contracts.join(" ")),
        "partial" => "pass, partial".to_string(),
        "fail" => "FAIL".to_string(),
        _ => "INCOMPLETE".to_string(),
    };
    let fill = match class {
        "pass" => "#1a7f37",
        "partial" => "#5a6b7b",
        "fail" => "#b60205",
        _ => "#5b3fa8",
    };
    // Widths from a 6.6 px average glyph at 11 px: shields' own rule of thumb.
    let lw = 10.0 + 6.6 * "storeproof".len() as f64;
    let rw = 10.0 + 6.6 * right.chars().count() as f64;
    let w = lw + rw;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"badge-svg\" width=\"{w:.0}\" height=\"20\" role=\"img\" aria-label=\"storeproof: {r}\"><title>storeproof: {r} ({t})</title><rect width=\"{lw:.0}\" height=\"20\" fill=\"#444\"/><rect x=\"{lw:.0}\" width=\"{rw:.0}\" height=\"20\" fill=\"{fill}\"/><g fill=\"#fff\" font-family=\"Verdana,DejaVu Sans,sans-serif\" font-size=\"11\"><text x=\"5\" y=\"14\">storeproof</text><text x=\"{:.0}\" y=\"14\">{r}</text></g></svg>",
        lw + 5.0,
        r = escape(&right),
        t = escape(&what)
    )
}

/// The contract a check enforces and its section of docs/PROTOCOL.md.
fn contract_of(c: &CheckResult) -> (&'static str, &'static str) {
    let id = c.id.as_str();
    let has = |w: &str| id.split(['.', '-']).any(|p| p == w);
    let second = id.split('.').nth(1).unwrap_or("");
    let third = id.split('.').nth(2).unwrap_or("");
    let key = if c.suite == "conformance" && second == "generated" {
        // conformance.generated.<contract>: model-checked sequences.
        third
    } else if c.suite == "conformance" {
        second
    } else if has("rate") {
        "rate"
    } else if has("fencing") || has("fenced") {
        "fenced"
    } else if has("queue") || has("child") || has("children") || has("claim") || has("claims") {
        "queue"
    } else if c.suite == "explorer"
        || has("lease")
        || has("holder")
        || has("epoch")
        || has("epochs")
    {
        "lease"
    } else if c.suite == "layout" {
        "keys"
    } else {
        ""
    };
    match key {
        "lease" => ("lease", "§4.2 Lease"),
        "queue" => ("queue", "§4.3 Queue"),
        "rate" => ("rate", "§4.4 Rate limits"),
        "fenced" => ("fenced", "§4.5 Fenced effects"),
        "keys" => (
            "keys and connections",
            "§5 Keys, connections and side files",
        ),
        "hello" => ("hello", "§3 hello"),
        "server" => ("the Redis server", "§7 What to check in hello"),
        _ => ("the server and the run", ""),
    }
}

/// Every check, by suite and contract, filterable (all / needing attention)
/// with no script: two radio buttons and a CSS rule.
fn checks(report: &Report) -> String {
    let attention: Vec<&str> = needing_attention(report)
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    let mut h = format!(
        "<section class=\"checks\" id=\"checks\"><h2>Checks</h2><span class=\"filter\">Show:</span> <input type=\"radio\" name=\"show-filter\" id=\"show-all\" class=\"filter\" checked><label for=\"show-all\" class=\"filter\">all {}</label> <input type=\"radio\" name=\"show-filter\" id=\"show-attention\" class=\"filter\"><label for=\"show-attention\" class=\"filter\">needing attention ({})</label><div class=\"groups\">",
        report.checks.len(),
        attention.len()
    );
    let mut suites: Vec<&str> = Vec::new();
    for c in &report.checks {
        if !suites.contains(&c.suite.as_str()) {
            suites.push(&c.suite);
        }
    }
    for suite in suites {
        let in_suite: Vec<&CheckResult> =
            report.checks.iter().filter(|c| c.suite == suite).collect();
        let failing = in_suite
            .iter()
            .filter(|c| attention.contains(&c.id.as_str()))
            .count();
        h.push_str(&format!(
            "<div class=\"suite{}\"><h3>{} <small>{} check{}{}</small></h3>",
            if failing == 0 { " calm" } else { "" },
            escape(suite),
            in_suite.len(),
            if in_suite.len() == 1 { "" } else { "s" },
            if failing > 0 {
                format!(", {failing} needing attention")
            } else {
                String::new()
            }
        ));
        let mut contracts: Vec<(&str, &str)> = Vec::new();
        for c in &in_suite {
            let k = contract_of(c);
            if !contracts.contains(&k) {
                contracts.push(k);
            }
        }
        for (name, section) in contracts {
            let rows: Vec<&&CheckResult> = in_suite
                .iter()
                .filter(|c| contract_of(c).0 == name)
                .collect();
            let calm = rows.iter().all(|c| !attention.contains(&c.id.as_str()));
            h.push_str(&format!(
                "<div class=\"contract{}\"><h4>{}{}</h4><div class=\"scroll\"><table><tr><th scope=\"col\">check</th><th scope=\"col\">level</th><th scope=\"col\">verdict</th><th scope=\"col\">what it proves, or what it found</th></tr>",
                if calm { " calm" } else { "" },
                escape(name),
                if section.is_empty() {
                    String::new()
                } else {
                    format!(" <small>— the contract of <cite>docs/PROTOCOL.md {}</cite></small>", escape(section))
                }
            ));
            for c in rows {
                let needs = attention.contains(&c.id.as_str());
                let id = escape(&c.id);
                // What passing proves, and what this run found unless it
                // passed (a report of an older version has no `about`).
                let (clause, _) = first_clause(&c.reason);
                let text = match (c.about.is_empty(), c.verdict) {
                    (true, _) => clause,
                    (false, Verdict::Pass) => c.about.clone(),
                    (false, _) => format!("{} — {clause}", c.about),
                };
                h.push_str(&format!(
                    "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    if needs { "needs" } else { "ok" },
                    if needs {
                        format!("<a href=\"#{id}\"><code>{id}</code></a>")
                    } else {
                        format!("<code>{id}</code>")
                    },
                    match c.level {
                        model::Level::Must => "MUST",
                        model::Level::Should => "SHOULD",
                    },
                    badge(c.verdict),
                    escape(&text)
                ));
            }
            h.push_str("</table></div></div>");
        }
        h.push_str("</div>");
    }
    h.push_str("</div></section>");
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
fn timeline(history: &History) -> String {
    let events = &history.events;
    let mut lanes: Vec<String> = Vec::new();
    for e in events {
        if !lanes.contains(&e.instance) {
            lanes.push(e.instance.clone());
        }
    }
    let mut h = String::from("<table><tr><th>server ms</th>");
    for l in &lanes {
        h.push_str(&format!("<th class=\"lane\">instance {}</th>", escape(l)));
    }
    h.push_str("</tr>");
    // Each completion beside its own invoke's arguments (instances'
    // calls interleave), by the checkers' pairing.
    let args_of: std::collections::HashMap<usize, Value> =
        model::history::pair_operations(events, |e| (Role::of(e.kind()), e.instance.as_str()))
            .into_iter()
            .filter_map(|p| Some((p.completion?, events[p.invoke].what.value())))
            .collect();
    let answered = |e: &&Event| !matches!(e.kind(), EventKind::Invoke | EventKind::Nemesis);
    let last = events.iter().filter(answered).count().saturating_sub(1);
    let mut n = 0;
    for (at, e) in events.iter().enumerate() {
        if let Happened::Nemesis { note, .. } = &e.what {
            // A fault's start or end: a row of its own in the nemesis's
            // lane, never taken for a completion.
            h.push_str(&nemesis_row(e, note, &lanes));
            continue;
        }
        if !answered(&e) {
            continue;
        }
        let args = args_of.get(&at).map(|v| v.to_string()).unwrap_or_default();
        let class = if n == last {
            " class=\"violation\""
        } else {
            ""
        };
        n += 1;
        h.push_str(&format!("<tr{class}><td>{}</td>", server_ms(e)));
        for l in &lanes {
            if e.instance == *l {
                h.push_str(&format!(
                    "<td><code>{} {}</code><br>→ <code>{}</code></td>",
                    escape(e.op()),
                    escape(&args),
                    escape(&e.what.value().to_string())
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

/// An event's server time, or a dash when it is not known.
fn server_ms(e: &Event) -> String {
    e.server_ms.map_or("—".into(), |v| v.to_string())
}

/// One nemesis event as a timeline row: the fault and its parameters at
/// its start, how it ended at its end.
fn nemesis_row(e: &Event, note: &NemesisNote, lanes: &[String]) -> String {
    let (phase, detail) = match note.phase {
        NemesisPhase::End => ("end", note.ending.clone().unwrap_or_default()),
        NemesisPhase::Start => ("start", note.fault.to_string()),
    };
    let mut h = format!("<tr class=\"nemesis\"><td>{}</td>", server_ms(e));
    for l in lanes {
        if e.instance == *l {
            h.push_str(&format!(
                "<td>fault {} <code>{}</code> <code>{}</code></td>",
                escape(phase),
                escape(e.op()),
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
fn schedule_table(steps: &[ExplorerStep]) -> String {
    let mut h = String::from(
        "<table><tr><th>step</th><th>what</th><th>server ms</th><th>Redis commands</th><th>answer</th></tr>",
    );
    for (i, s) in steps.iter().enumerate() {
        let class = if i + 1 == steps.len() {
            " class=\"violation\""
        } else {
            ""
        };
        let commands: Vec<String> = s.commands.iter().flatten().map(|x| escape(x)).collect();
        let answer = s.answer.as_ref().filter(|a| a.given());
        h.push_str(&format!(
            "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            s.step,
            escape(&s.what),
            s.server_ms,
            commands.join("<br>"),
            answer.map_or(String::new(), |a| escape(&a.to_string()))
        ));
    }
    h.push_str("</table>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn interleaved_calls_show_each_instance_its_own_arguments() {
        let take = |who: &str| json!({"tree": "t", "holder": who, "ttl_ms": 100});
        let mut h = model::History::default();
        let call = |who: &str| model::contract::Call {
            op: "lease.take".into(),
            args: take(who),
        };
        h.invoke("a", &call("holder-a"), Some(1), 1);
        h.invoke("b", &call("holder-b"), Some(2), 2);
        let granted = Ok(model::contract::Reply::Granted {
            epoch: 1,
            expires_at_ms: 101,
        });
        h.complete("a", "lease.take", &granted, Some(3), 3);
        h.complete("b", "lease.take", &granted, Some(4), 4);
        let html = timeline(&h);
        let rows: Vec<&str> = html.split("<tr").skip(2).collect();
        assert_eq!(rows.len(), 2, "{html}");
        // a's row (its lane is the first column) names a's holder, not b's.
        assert!(
            rows[0].contains("holder-a") && !rows[0].contains("holder-b"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].contains("holder-b") && !rows[1].contains("holder-a"),
            "{}",
            rows[1]
        );
    }

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
             "value": {"granted": {"epoch": 1, "expires_at_ms": 100}}, "server_ms": 11, "clock_ms": 11}
        ]}});
        let history: History = serde_json::from_value(evidence["history"].clone()).unwrap();
        let h = timeline(&history);
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
