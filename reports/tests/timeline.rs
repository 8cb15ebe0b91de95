//! The fault suite's failing history as a timeline in index.html: a window
//! around the first violation, drawn as lanes with fault bands, open
//! intervals for unknown outcomes and the blamed operation in red, pinned
//! on a small hand-written history; a long history stays a bounded window.

use std::collections::BTreeMap;

use model::evidence::Evidence;
use model::figures::Stats;
use model::violation::{Named, Violation};
use model::{
    CheckResult, Level, Report, RunSection, RunVerdict, ServerSection, StoreSection, Verdict,
};
use serde_json::{json, Value};

/// A failed fault check over `history`: the report draws its timeline from
/// the counterexample's history and the typed `violations` alone.
fn report_with(check: &str, history: Value, violations: Vec<Violation>) -> Report {
    Report {
        storeproof: "0.1.0".into(),
        verdict: RunVerdict::Fail,
        store: StoreSection {
            spec: "sabotage:blind-retry".into(),
            name: "storeproof-redis".into(),
            version: "0.1.0".into(),
            contracts: vec!["lease".into()],
        },
        server: ServerSection {
            version: "7.0.15".into(),
            managed: true,
            settings: BTreeMap::new(),
            name: None,
            product: None,
        },
        checks: vec![CheckResult {
            outside_claim: false,
            id: check.into(),
            suite: "faults".into(),
            level: Level::Must,
            verdict: Verdict::Fail,
            reason: "coordination layout: 1 trees, 1 not linearizable".into(),
            evidence: Evidence::None,
            counterexample: serde_json::from_value(json!({
                "layout": "coordination", "seed": 1,
                "config": {"rounds": 1, "instances": 2, "faults": 1},
                "plans": [], "history": history,
            }))
            .unwrap(),
            violations,
            seconds: 0.1,
            about: String::new(),
        }],
        stats: Stats::default(),
        per_server: Vec::new(),
        run: RunSection::default(),
    }
}

fn ev(index: usize, instance: &str, kind: &str, op: &str, value: Value, ms: i64) -> Value {
    json!({"index": index, "instance": instance, "kind": kind, "op": op, "value": value,
           "server_ms": ms, "clock_ms": ms})
}

/// The timeline's part of the page: from its heading to the end of its
/// event table.
fn timeline_part(html: &str) -> &str {
    let start = html.find("<h4>Timeline").unwrap_or(html.len());
    let rest = &html[start..];
    let end = rest
        .find("<table class=\"window\">")
        .and_then(|t| rest[t..].find("</table>").map(|e| t + e + "</table>".len()))
        .unwrap_or(0);
    &rest[..end]
}

/// Tree t1: a's take loses its reply after it ran (the nemesis's
/// `lose_reply_after_apply` on a), b's take is answered busy by a's epoch
/// 1, then a's retry is answered busy by its own epoch: no order explains
/// that reply. Tree t2's operations are in the range but not drawn.
fn small_history() -> Value {
    let take = |h: &str, t: &str| json!({"tree": t, "holder": h, "ttl_ms": 150});
    json!({"events": [
        ev(0, "nemesis", "nemesis", "nemesis.lose_reply_after_apply",
           json!({"phase": "start", "fault": {"instance": 0, "instance_name": "a"}}), 1000),
        ev(1, "a", "invoke", "lease.take", take("a", "t1"), 1000),
        ev(2, "b", "invoke", "lease.take", take("b", "t2"), 1000),
        ev(3, "b", "ok", "lease.take", json!({"granted": {"epoch": 1, "expires_at_ms": 1150}}), 1000),
        ev(4, "nemesis", "nemesis", "nemesis.lose_reply_after_apply",
           json!({"phase": "end", "fault": {"instance": 0, "instance_name": "a"},
                  "ending": "nemesis.lose_reply_after_apply fired"}), 1001),
        ev(5, "a", "info", "lease.take", json!({"kind": "unavailable", "message": "connection closed"}), 1001),
        ev(6, "b", "invoke", "lease.take", take("b", "t1"), 1002),
        ev(7, "b", "ok", "lease.take",
           json!({"busy": {"holder": "a", "epoch": 1, "expires_at_ms": 1150}}), 1002),
        ev(8, "a", "invoke", "lease.take", take("a", "t1"), 1003),
        ev(9, "nemesis", "nemesis", "nemesis.restart_server", json!({"phase": "start", "fault": {}}), 1003),
        ev(10, "a", "ok", "lease.take",
           json!({"busy": {"holder": "a", "epoch": 1, "expires_at_ms": 1150}}), 1004),
        ev(11, "nemesis", "nemesis", "nemesis.restart_server",
           json!({"phase": "end", "fault": {}, "ending": "nemesis.restart_server restarted"}), 1010),
        ev(12, "b", "invoke", "lease.release", json!({"tree": "t2", "holder": "b", "epoch": 1}), 1011),
    ]})
}

/// The `<g>` whose tooltip starts with `title`.
fn group<'a>(part: &'a str, title: &str) -> &'a str {
    let start = part
        .find(&format!("<g><title>{title}"))
        .unwrap_or_else(|| panic!("no {title}: {part}"));
    let end = part[start..].find("</g>").map_or(part.len(), |e| start + e);
    &part[start..end]
}

/// The violation the linearizability checker reports when tree t1's reply
/// at `at_event` has no order: what the report draws.
fn not_linearizable(at_event: usize, op_event: usize, concurrent: &[usize]) -> Vec<Violation> {
    vec![Violation {
        at_event: Some(at_event),
        ..Violation::new(
            None,
            Some(Named::new("tree", "t1")),
            vec![at_event, op_event],
        )
        .relating(concurrent.to_vec())
    }]
}

#[test]
fn a_lost_reply_a_fault_band_and_the_blamed_take_are_drawn() {
    let report = report_with(
        "faults.lease-linearizable",
        small_history(),
        not_linearizable(10, 8, &[]),
    );
    let html = reports::render_html(&report);
    let part = timeline_part(&html);
    // The sentence and the drawing say the same events.
    let summary = "events 1–10 of 13, tree t1: 3 operations (1 blamed, outlined in red), 2 faults";
    assert!(
        part.contains(&format!(
            "<figcaption>Timeline of the failing history: {summary}"
        )),
        "{part}"
    );
    assert!(part.contains(&format!("aria-label=\"{summary}")), "{part}");
    assert!(part.contains("role=\"img\""), "{part}");
    // Drawn by the one trace renderer, its axis naming each step's event.
    assert!(part.contains("<svg class=\"trace\""), "{part}");
    for e in [1, 4, 5, 6, 7, 8, 9, 10] {
        assert!(
            part.contains(&format!("text-anchor=\"middle\">{e}</text>")),
            "event {e} on the axis: {part}"
        );
    }
    // The lost reply is an open interval: dashed, open to the right edge
    // with an arrow.
    let lost = group(part, "event 1–5: a lease.take");
    assert!(lost.contains("class=\"op unknown\""), "{lost}");
    assert!(lost.contains("class=\"open\""), "{lost}");
    assert!(lost.contains("class=\"arrow\""), "{lost}");
    assert!(lost.contains(">take → unknown</text>"), "{lost}");
    // The fault bands: one on a's lane (begun before the window, so from
    // its left edge), the restart across every lane (on past the window).
    assert_eq!(part.matches("class=\"fault\"").count(), 2, "{part}");
    let lose = group(part, "fault lose_reply_after_apply on a (events 0–4)");
    assert!(lose.contains(">lose_reply_after_apply</text>"), "{lose}");
    let restart = group(part, "fault restart_server (events 9–11)");
    assert!(restart.contains(">restart_server</text>"), "{restart}");
    // The blamed take in red, the breaking instant marked at event 10.
    assert_eq!(part.matches("blamed\"/>").count(), 1, "{part}");
    let blamed = group(part, "event 8–10: a lease.take");
    assert!(blamed.contains("class=\"op ok blamed\""), "{blamed}");
    assert!(blamed.contains("(blamed)</title>"), "{blamed}");
    assert!(
        part.contains(">no order explains the reply at event 10</text>"),
        "{part}"
    );
    assert!(
        part.contains("no order explains the reply at event 10, server ms 1004."),
        "{part}"
    );
    assert_eq!(part.matches("class=\"broke\"").count(), 1, "{part}");
    // Tree t2's take (events 2 and 3) is not drawn, and said to be left out.
    assert!(
        part.contains("1 other operation in that range not drawn"),
        "{part}"
    );
    assert!(!part.contains("<tr><td>2</td>"), "{part}");
    assert!(!part.contains("<tr><td>3</td>"), "{part}");
    assert!(!html.contains("<script") && !html.contains("http://"));
    // One element a line, so a change reads as a diff.
    insta::assert_snapshot!("timeline_small", part.replace("><", ">\n<"));
}

#[test]
fn a_check_that_names_no_event_of_the_history_draws_no_timeline() {
    // Nothing of the history asked for that effect: the violation blames
    // no event.
    let unexplained = Violation::new(Some("unexplained"), Some(Named::new("tree", "t9")), vec![]);
    let report = report_with("faults.fencing", small_history(), vec![unexplained]);
    let html = reports::render_html(&report);
    assert!(!html.contains("<h4>Timeline"), "{html}");
}

/// 3000 events: three instances taking, renewing and releasing two trees,
/// a partition now and then; the violation near the middle.
fn long_history() -> Value {
    fn push(events: &mut Vec<Value>, instance: &str, kind: &str, op: &str, value: Value) {
        let i = events.len();
        events.push(ev(i, instance, kind, op, value, 1000 + (i / 7) as i64));
    }
    let mut events = Vec::new();
    let e = &mut events;
    let fault = json!({"instance": 1, "instance_name": "b", "for_ms": 30});
    let mut round = 0;
    while e.len() < 3000 {
        let who = ["a", "b", "c"][round % 3];
        let tree = if round % 2 == 0 { "t1" } else { "t2" };
        if round % 25 == 0 {
            let start = json!({"phase": "start", "fault": fault});
            push(e, "nemesis", "nemesis", "nemesis.partition", start);
        }
        let take = json!({"tree": tree, "holder": who, "ttl_ms": 150});
        push(e, who, "invoke", "lease.take", take);
        if round % 17 == 0 {
            let lost = json!({"kind": "unavailable", "message": "reset"});
            push(e, who, "info", "lease.take", lost);
        } else {
            let granted = json!({"granted": {"epoch": round, "expires_at_ms": 5000}});
            push(e, who, "ok", "lease.take", granted);
        }
        if round % 25 == 3 {
            let end = json!({"phase": "end", "fault": fault, "ending": "nemesis.partition healed"});
            push(e, "nemesis", "nemesis", "nemesis.partition", end);
        }
        round += 1;
    }
    json!({"events": events})
}

#[test]
fn a_long_history_renders_a_bounded_window() {
    let history = long_history();
    let n = history["events"].as_array().map(Vec::len).unwrap_or(0);
    assert!(n >= 3000);
    // Blame the take whose invoke is near the middle.
    let op_event = (1500..n)
        .find(|i| history["events"][*i]["kind"] == "invoke")
        .unwrap();
    let report = report_with(
        "faults.lease-linearizable",
        history,
        not_linearizable(op_event + 1, op_event, &[op_event - 2, op_event + 2]),
    );
    let html = reports::render_html(&report);
    let part = timeline_part(&html);
    let svg_start = part.find("<svg").unwrap();
    let svg_end = part.find("</svg>").unwrap();
    let svg = &part[svg_start..svg_end];
    assert!(svg.len() < 60_000, "the SVG is {} bytes", svg.len());
    let bars = svg.matches("class=\"op ").count();
    assert!((10..=40).contains(&bars), "{bars} operations drawn");
    assert!(
        part.contains(&format!("of {n}, tree t1: {bars} operations")),
        "{part}"
    );
    let rows = part.matches("<tr").count();
    assert!(rows <= 2 * 40 + 20, "{rows} table rows");
    // The page as a whole stays small too: the history is in the
    // counterexample's <details>, never drawn whole.
    assert!(!part.contains(">2999<"), "{part}");
}

/// Renders a real report.json again (`REPORT_JSON=path cargo test -p
/// reports --test timeline -- --ignored`), writing `<path>.html`: to look at
/// real fault-suite failures without running the suite again.
#[test]
#[ignore = "a tool: renders the report.json named by REPORT_JSON"]
fn render_a_saved_report() {
    let Ok(path) = std::env::var("REPORT_JSON") else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let report: Report = serde_json::from_str(&text).unwrap();
    std::fs::write(format!("{path}.html"), reports::render_html(&report)).unwrap();
}
