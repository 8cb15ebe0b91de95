//! A failing history drawn where it matters: an inline SVG timeline (no
//! script, no network) of a window around the first violation, one lane per
//! instance and one for the nemesis, and under it the window's events as a
//! table.
//!
//! The renderer ([`render`]) knows nothing of the fault suite: it takes any
//! [`History`] and a [`Blame`] (which events a checker names, which
//! instants broke, which tree, child or provider the window is about), so
//! conformance and explorer histories can be drawn with it later. Only
//! [`faults_detail`] reads the fault suite's evidence.
//!
//! The x axis is the order of the drawn events, not server time: the managed
//! server's clock is virtual and moves only when a workload advances it, so
//! dozens of operations share one millisecond and would be drawn as
//! zero-width bars on top of each other. Each tick names its event index,
//! and the server ms (when recorded) is written under the ticks where it
//! changes, so both readings stay on the axis.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use harness::{EventKind, History, NemesisPhase};
use serde_json::Value;

use crate::escape;

/// How far (in events) from the blamed events the window reaches for
/// related operations.
const RADIUS: usize = 60;
/// At most this many operations are drawn: beyond it a timeline stops
/// being readable.
const MAX_OPS: usize = 40;
/// At most this many breaking instants are marked.
const MAX_INSTANTS: usize = 8;

/// What a checker blames in a history: the renderer's only input besides the
/// history. Every index is an event index of that history.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Blame {
    /// Events of the blamed operations (an invoke or a completion names its
    /// operation): outlined in red, always in the window.
    pub blamed: Vec<usize>,
    /// Events of operations the violation names as context (the concurrent
    /// operations, the newer grant): drawn first when the window is full.
    pub related: Vec<usize>,
    /// The breaking instants: a red line at each.
    pub instants: Vec<usize>,
    /// The window keeps only operations whose arguments or answer name
    /// this key and value (e.g. `tree` = `t1`), besides the blamed ones.
    pub about: Option<(String, String)>,
    /// What the instants mean, one short phrase (e.g. "no order explains
    /// the reply").
    pub instant_label: String,
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The store answered a reply.
    Ok,
    /// The store refused for certain.
    Refused,
    /// The outcome is unknown (`info`), or no answer came: an open interval.
    Unknown,
}

/// One operation: an invoke paired with its instance's next completion.
#[derive(Debug, Clone)]
struct Op {
    lane: String,
    name: String,
    invoke: usize,
    /// The completion event, if any came.
    done: Option<usize>,
    end: End,
    args: Value,
    answer: Value,
}

impl Op {
    fn last_event(&self) -> usize {
        self.done.unwrap_or(self.invoke)
    }

    fn names(&self, key: &str, value: &str) -> bool {
        let is = |v: &Value| v.get(key).and_then(Value::as_str) == Some(value);
        is(&self.args)
            || is(&self.answer)
            || self.answer.as_object().is_some_and(|m| m.values().any(is))
    }
}

/// One fault: a nemesis start paired with its end.
#[derive(Debug, Clone)]
struct Fault {
    name: String,
    /// The instance it targets; `None` for a server fault (all lanes).
    lane: Option<String>,
    start: usize,
    end: Option<usize>,
    ending: String,
}

/// Pairs each invoke with its instance's next completion, as the checkers
/// do: a later invoke of the same instance leaves an earlier one open.
fn operations(events: &[(harness::Event, Value)]) -> Vec<Op> {
    let mut ops: Vec<Op> = Vec::new();
    let mut in_flight: HashMap<&str, usize> = HashMap::new();
    for (e, flat) in events {
        match e.kind() {
            EventKind::Nemesis => {}
            EventKind::Invoke => {
                in_flight.insert(e.instance.as_str(), ops.len());
                ops.push(Op {
                    lane: e.instance.clone(),
                    name: e.op().to_string(),
                    invoke: e.index,
                    done: None,
                    end: End::Unknown,
                    args: flat["value"].clone(),
                    answer: Value::Null,
                });
            }
            kind => {
                let Some(i) = in_flight.remove(e.instance.as_str()) else {
                    continue;
                };
                ops[i].done = Some(e.index);
                ops[i].answer = flat["value"].clone();
                ops[i].end = match kind {
                    EventKind::Ok => End::Ok,
                    EventKind::Fail => End::Refused,
                    _ => End::Unknown,
                };
            }
        }
    }
    ops
}

/// Pairs each fault's start with the next end of the same fault.
fn faults(events: &[(harness::Event, Value)]) -> Vec<Fault> {
    let mut out: Vec<Fault> = Vec::new();
    for (e, flat) in events {
        if e.kind() != EventKind::Nemesis {
            continue;
        }
        let note = &flat["value"];
        let name = e
            .op()
            .strip_prefix("nemesis.")
            .unwrap_or(e.op())
            .to_string();
        let lane = note["fault"]["instance_name"].as_str().map(str::to_string);
        let phase: Option<NemesisPhase> = serde_json::from_value(note["phase"].clone()).ok();
        if phase == Some(NemesisPhase::End) {
            if let Some(f) = out
                .iter_mut()
                .find(|f| f.end.is_none() && f.name == name && f.lane == lane)
            {
                f.end = Some(e.index);
                f.ending = note["ending"].as_str().unwrap_or("").to_string();
                continue;
            }
        }
        out.push(Fault {
            name,
            lane,
            start: e.index,
            end: None,
            ending: String::new(),
        });
    }
    out
}

/// A JSON value in one line, cut to `max` characters.
fn short(v: &Value, max: usize) -> String {
    let s = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    if s.chars().count() > max {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        s
    }
}

/// An answer's gist: the reply's variant (`granted`, `busy`), or the
/// error's kind.
fn gist(op: &Op) -> String {
    match op.end {
        End::Ok => op
            .answer
            .as_object()
            .and_then(|m| m.keys().next().cloned())
            .unwrap_or_else(|| short(&op.answer, 10)),
        End::Refused => op.answer["kind"].as_str().unwrap_or("refused").to_string(),
        End::Unknown if op.done.is_some() => "unknown".into(),
        End::Unknown => "no answer".into(),
    }
}

/// `n` and the noun, plural unless one.
fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// `lease.take` → `take`: the lane already says who, the table says the rest.
fn short_op(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The window: which operations and faults are drawn, and which events.
struct Window {
    ops: Vec<Op>,
    faults: Vec<Fault>,
    /// Every drawn event, ascending: the x axis.
    events: Vec<usize>,
    first: usize,
    last: usize,
    /// Operations in `first..=last` left out (not about the focus, or past
    /// the cap).
    left_out: usize,
    blamed: BTreeSet<usize>,
    instants: Vec<usize>,
}

fn window(all_ops: &[Op], all_faults: &[Fault], blame: &Blame) -> Option<Window> {
    let named = |op: &Op, evs: &[usize]| evs.iter().any(|e| *e == op.invoke || Some(*e) == op.done);
    // Blamed operations first (nearest the first instant when too many),
    // then the related ones, then the focus's others by distance.
    let anchor = blame.instants.iter().chain(&blame.blamed).min().copied()?;
    let distance = |op: &Op, lo: usize, hi: usize| {
        if op.last_event() < lo {
            lo - op.last_event()
        } else {
            op.invoke.saturating_sub(hi)
        }
    };
    let mut blamed: Vec<usize> = (0..all_ops.len())
        .filter(|i| named(&all_ops[*i], &blame.blamed))
        .collect();
    blamed.sort_by_key(|i| (distance(&all_ops[*i], anchor, anchor), *i));
    blamed.truncate(MAX_OPS);
    let lo = blamed
        .iter()
        .map(|i| all_ops[*i].invoke)
        .chain(blame.instants.iter().copied())
        .min()
        .unwrap_or(anchor);
    let hi = blamed
        .iter()
        .map(|i| all_ops[*i].last_event())
        .chain(blame.instants.iter().copied())
        .max()
        .unwrap_or(anchor);
    let mut chosen: Vec<usize> = blamed.clone();
    let mut related: Vec<usize> = (0..all_ops.len())
        .filter(|i| !chosen.contains(i) && named(&all_ops[*i], &blame.related))
        .collect();
    related.sort_by_key(|i| (distance(&all_ops[*i], lo, hi), *i));
    for i in related {
        if chosen.len() < MAX_OPS {
            chosen.push(i);
        }
    }
    let mut nearby: Vec<usize> = (0..all_ops.len())
        .filter(|i| {
            let op = &all_ops[*i];
            !chosen.contains(i)
                && distance(op, lo, hi) <= RADIUS
                && blame.about.as_ref().is_none_or(|(k, v)| op.names(k, v))
        })
        .collect();
    nearby.sort_by_key(|i| (distance(&all_ops[*i], lo, hi), *i));
    for i in nearby {
        if chosen.len() < MAX_OPS {
            chosen.push(i);
        }
    }
    chosen.sort_unstable();
    let ops: Vec<Op> = chosen.iter().map(|i| all_ops[*i].clone()).collect();
    let instants: Vec<usize> = blame
        .instants
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .take(MAX_INSTANTS)
        .collect();
    let first = ops
        .iter()
        .map(|o| o.invoke)
        .chain(instants.iter().copied())
        .min()?;
    let last = ops
        .iter()
        .map(Op::last_event)
        .chain(instants.iter().copied())
        .max()?;
    let faults: Vec<Fault> = all_faults
        .iter()
        .filter(|f| f.start <= last && f.end.is_none_or(|e| e >= first))
        .cloned()
        .collect();
    let mut events: BTreeSet<usize> = instants.iter().copied().collect();
    for o in &ops {
        events.insert(o.invoke);
        events.extend(o.done);
    }
    for f in &faults {
        // A fault from before the window or past it is clipped to its edge.
        events.insert(f.start.max(first));
        events.insert(f.end.unwrap_or(last).min(last));
    }
    let left_out = all_ops
        .iter()
        .enumerate()
        .filter(|(i, o)| o.invoke >= first && o.invoke <= last && !chosen.contains(i))
        .count();
    let blamed = blamed.iter().map(|i| all_ops[*i].invoke).collect();
    Some(Window {
        ops,
        faults,
        events: events.into_iter().collect(),
        first,
        last,
        left_out,
        blamed,
        instants,
    })
}

/// Draws the part of `history` that `blame` points at: a sentence saying
/// what the window shows, the SVG timeline, and the table of its events.
/// The numbers in the sentence, the drawing and the table are the same
/// event indices. Empty when the blame names no event of the history.
pub(crate) fn render(history: &History, blame: &Blame) -> String {
    let events: Vec<(harness::Event, Value)> = history
        .events
        .iter()
        .map(|e| (e.clone(), serde_json::to_value(e).unwrap_or(Value::Null)))
        .collect();
    let all_ops = operations(&events);
    let all_faults = faults(&events);
    let Some(w) = window(&all_ops, &all_faults, blame) else {
        return String::new();
    };
    let about = blame
        .about
        .as_ref()
        .map(|(k, v)| format!(", {} {}", escape(k), escape(v)))
        .unwrap_or_default();
    let summary = format!(
        "events {}–{} of {}{about}: {} ({} blamed, outlined in red), {}{}",
        w.first,
        w.last,
        history.events.len(),
        count(w.ops.len(), "operation"),
        w.blamed.len(),
        count(w.faults.len(), "fault"),
        if w.left_out > 0 {
            format!(
                "; {} in that range not drawn",
                count(w.left_out, "other operation")
            )
        } else {
            String::new()
        }
    );
    let mut h = format!("<p>The failing history, {summary}.</p>");
    h.push_str(&svg(&w, blame, &events, &summary));
    h.push_str(&table(&w, &events));
    h
}

fn svg(w: &Window, blame: &Blame, events: &[(harness::Event, Value)], summary: &str) -> String {
    let mut lanes: Vec<String> = w
        .ops
        .iter()
        .map(|o| o.lane.clone())
        .chain(w.faults.iter().filter_map(|f| f.lane.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    lanes.push("nemesis".into());
    let slot = 18.0;
    let left = 80.0;
    let lane_h = 46.0;
    let top = 22.0;
    let n = w.events.len() as f64;
    let right_edge = left + slot * (n + 1.0);
    let width = right_edge + 20.0;
    let lanes_bottom = top + lane_h * lanes.len() as f64;
    let height = lanes_bottom + 40.0;
    let pos: BTreeMap<usize, f64> = w
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| (*e, left + slot * (i as f64 + 0.5)))
        .collect();
    let x = |e: usize| {
        pos.get(&e)
            .copied()
            .or_else(|| pos.range(e..).next().map(|(_, x)| *x))
            .unwrap_or(right_edge)
    };
    let lane_y = |l: &str| {
        top + lane_h * lanes.iter().position(|x| x == l).unwrap_or(lanes.len() - 1) as f64
    };
    let instants: Vec<String> = w.instants.iter().map(|i| i.to_string()).collect();
    let label = format!(
        "Timeline of {summary}; lanes {}; x axis: event index; {} at event {}",
        lanes.join(", "),
        blame.instant_label,
        instants.join(", ")
    );
    let mut s = format!(
        "<div style=\"overflow-x:auto\"><svg width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"{}\" style=\"font:10px sans-serif;max-width:100%;height:auto\"><title>{}</title>",
        escape(&label),
        escape(&label)
    );
    for (i, l) in lanes.iter().enumerate() {
        let y = top + lane_h * i as f64;
        s.push_str(&format!(
            "<line x1=\"0\" x2=\"{right_edge:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"2\" y=\"{:.1}\" font-size=\"12\">{}</text>",
            y + 27.0,
            escape(l)
        ));
    }
    // Fault bands under everything: across the target's lane, or the whole
    // height for a server fault; the fault's name on the nemesis lane.
    for (n, f) in w.faults.iter().enumerate() {
        let x0 = x(f.start.max(w.first)) - slot / 2.0;
        let x1 = f
            .end
            .map(|e| x(e.min(w.last)) + slot / 2.0)
            .unwrap_or(right_edge);
        let (y0, y1) = match &f.lane {
            Some(l) => (lane_y(l), lane_y(l) + lane_h),
            None => (top, lanes_bottom),
        };
        let ny = lane_y("nemesis");
        let what = format!(
            "{}{} (events {}–{}){}",
            f.name,
            f.lane
                .as_ref()
                .map(|l| format!(" on {l}"))
                .unwrap_or_default(),
            f.start,
            f.end.map(|e| e.to_string()).unwrap_or("…".into()),
            if f.ending.is_empty() {
                String::new()
            } else {
                format!(": {}", f.ending)
            }
        );
        s.push_str(&format!(
            "<g><title>{}</title><rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#f0a030\" fill-opacity=\"0.18\" stroke=\"#c07000\" stroke-dasharray=\"2 2\"/>",
            escape(&what),
            (x1 - x0).max(2.0),
            y1 - y0
        ));
        if f.lane.is_some() {
            // The nemesis lane carries the band too, so every fault is named
            // in one place.
            s.push_str(&format!(
                "<rect x=\"{x0:.1}\" y=\"{ny:.1}\" width=\"{:.1}\" height=\"{lane_h}\" fill=\"#f0a030\" fill-opacity=\"0.18\"/>",
                (x1 - x0).max(2.0)
            ));
        }
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#7a4500\">{}</text></g>",
            x0 + 2.0,
            ny + if n.is_multiple_of(2) { 20.0 } else { 36.0 },
            escape(&format!(
                "{}{}",
                f.name,
                f.lane.as_ref().map(|l| format!(" {l}")).unwrap_or_default()
            ))
        ));
    }
    // Operations: a bar from invoke to completion; an unknown outcome runs
    // open to the right edge, dashed, with an arrow.
    let mut nth_in_lane: HashMap<&str, usize> = HashMap::new();
    for o in &w.ops {
        let k = nth_in_lane.entry(o.lane.as_str()).or_insert(0);
        let y = lane_y(&o.lane);
        let x0 = x(o.invoke) - slot * 0.35;
        let x1 = o.done.map(&x).unwrap_or(x0 + slot * 0.7) + slot * 0.35;
        let blamed = w.blamed.contains(&o.invoke);
        let (fill, stroke) = match o.end {
            End::Ok => ("#9cc3e6", "#2b5d8a"),
            End::Refused => ("#e2e2e2", "#666"),
            End::Unknown => ("#fff", "#555"),
        };
        let (stroke, sw) = if blamed { ("#c00", 2.5) } else { (stroke, 1.0) };
        let dash = if o.end == End::Unknown {
            " stroke-dasharray=\"4 2\""
        } else {
            ""
        };
        let text = format!("{} → {}", short_op(&o.name), gist(o));
        let title = format!(
            "event {}{}: {} {} {} → {}{}",
            o.invoke,
            o.done.map(|d| format!("–{d}")).unwrap_or_default(),
            o.lane,
            o.name,
            short(&o.args, 80),
            gist(o),
            if blamed { " (blamed)" } else { "" }
        );
        s.push_str(&format!(
            "<g><title>{}</title><rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"12\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{sw}\"{dash}/>",
            escape(&title),
            y + 16.0,
            (x1 - x0).max(3.0)
        ));
        if o.end == End::Unknown {
            let ly = y + 31.0 + 2.0 * (*k % 4) as f64;
            s.push_str(&format!(
                "<line x1=\"{x1:.1}\" x2=\"{:.1}\" y1=\"{ly:.1}\" y2=\"{ly:.1}\" stroke=\"{stroke}\" stroke-dasharray=\"4 3\"/><polygon points=\"{:.1},{:.1} {:.1},{ly:.1} {:.1},{:.1}\" fill=\"{stroke}\"/>",
                right_edge - 6.0,
                right_edge - 6.0,
                ly - 3.0,
                right_edge,
                right_edge - 6.0,
                ly + 3.0
            ));
        }
        // Labels alternate above and below the bars so neighbours' labels
        // do not run into each other.
        let ty = if k.is_multiple_of(2) {
            y + 12.0
        } else {
            y + 42.0
        };
        s.push_str(&format!(
            "<text x=\"{x0:.1}\" y=\"{ty:.1}\"{}>{}</text></g>",
            if blamed {
                " fill=\"#c00\" font-weight=\"bold\""
            } else {
                ""
            },
            escape(&text)
        ));
        *k += 1;
    }
    for (n, i) in w.instants.iter().enumerate() {
        let xi = x(*i);
        // Only the first instant carries the phrase: the others' labels
        // would run into it.
        let text = if n == 0 {
            format!("{} at {i}", blame.instant_label)
        } else {
            i.to_string()
        };
        // The label reads away from the nearer edge so it is never cut.
        let anchor = if xi > width / 2.0 { "end" } else { "start" };
        s.push_str(&format!(
            "<line x1=\"{xi:.1}\" x2=\"{xi:.1}\" y1=\"{:.1}\" y2=\"{lanes_bottom:.1}\" stroke=\"#c00\" stroke-width=\"2\"/><text x=\"{xi:.1}\" y=\"{:.1}\" fill=\"#c00\" text-anchor=\"{anchor}\">{}</text>",
            top - 8.0,
            top - 10.0,
            escape(&text)
        ));
    }
    // The axis: each tick names its event index (every other one when
    // crowded); the server ms under it where it changes.
    let every = if w.events.len() > 40 { 2 } else { 1 };
    let mut last_ms: Option<i64> = None;
    let base_ms = w
        .events
        .iter()
        .find_map(|e| events.get(*e).and_then(|(ev, _)| ev.server_ms));
    for (i, e) in w.events.iter().enumerate() {
        let xe = x(*e);
        s.push_str(&format!(
            "<line x1=\"{xe:.1}\" x2=\"{xe:.1}\" y1=\"{lanes_bottom:.1}\" y2=\"{:.1}\" stroke=\"#999\"/>",
            lanes_bottom + 4.0
        ));
        if i.is_multiple_of(every) || w.instants.contains(e) {
            s.push_str(&format!(
                "<text x=\"{xe:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{e}</text>",
                lanes_bottom + 14.0
            ));
        }
        let ms = events.get(*e).and_then(|(ev, _)| ev.server_ms);
        if let (Some(ms), Some(base)) = (ms, base_ms) {
            if last_ms != Some(ms) {
                s.push_str(&format!(
                    "<text x=\"{xe:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#666\">+{}</text>",
                    lanes_bottom + 26.0,
                    ms - base
                ));
                last_ms = Some(ms);
            }
        }
    }
    s.push_str(&format!(
        "<text x=\"2\" y=\"{:.1}\">event</text><text x=\"2\" y=\"{:.1}\" fill=\"#666\">{}</text>",
        lanes_bottom + 14.0,
        lanes_bottom + 26.0,
        if let Some(base) = base_ms {
            format!("server ms after {base}")
        } else {
            "no server time".into()
        }
    ));
    s.push_str("</svg></div>");
    s
}

/// The window's events, one row each, like the explorer's step table; the
/// blamed operations' rows and the breaking instants' rows marked.
fn table(w: &Window, events: &[(harness::Event, Value)]) -> String {
    let mut rows: BTreeMap<usize, (bool, String)> = BTreeMap::new();
    for o in &w.ops {
        let blamed = w.blamed.contains(&o.invoke);
        rows.insert(o.invoke, (blamed, short(&o.args, 70)));
        if let Some(d) = o.done {
            rows.insert(d, (blamed, String::new()));
        }
    }
    for f in &w.faults {
        for e in [Some(f.start), f.end].into_iter().flatten() {
            if e >= w.first && e <= w.last {
                rows.insert(e, (false, String::new()));
            }
        }
    }
    let mut h = String::from(
        "<table class=\"window\"><tr><th>event</th><th>server ms</th><th>instance</th><th>kind</th><th>op</th><th>arguments</th><th>answer</th></tr>",
    );
    for (i, (blamed, args)) in &rows {
        let Some((e, flat)) = events.get(*i) else {
            continue;
        };
        let class = if *blamed || w.instants.contains(i) {
            " class=\"violation\""
        } else {
            ""
        };
        let kind = flat["kind"].as_str().unwrap_or("");
        let answer = match e.kind() {
            EventKind::Invoke => String::new(),
            EventKind::Nemesis => {
                let v = &flat["value"];
                match v["ending"].as_str() {
                    Some(ending) => ending.to_string(),
                    None => format!("start {}", short(&v["fault"], 60)),
                }
            }
            _ => short(&flat["value"], 70),
        };
        h.push_str(&format!(
            "<tr{class}><td>{i}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            e.server_ms.map(|m| m.to_string()).unwrap_or("—".into()),
            escape(&e.instance),
            escape(kind),
            escape(e.op()),
            escape(args),
            escape(&answer)
        ));
    }
    h.push_str("</table>");
    h
}

/// Event indices under the keys the fault checkers name events with.
const BLAMED_KEYS: [&str; 13] = [
    "op_event",
    "at_event",
    "invokes",
    "saves",
    "completions",
    "completed_at",
    "claim_invoke",
    "claimed_at",
    "acquire",
    "hit",
    "grants",
    "grant",
    "invoke",
];
/// Event indices of the operations a violation names as context.
const RELATED_KEYS: [&str; 6] = [
    "concurrent",
    "live",
    "counted",
    "pause_event",
    "invoke_event",
    "complete_event",
];

/// Every event index under `key` in `v` (a number, a list of numbers, or a
/// list of `[event, attempt]` pairs), looking into nested objects.
fn indices(v: &Value, keys: &[&str], out: &mut Vec<usize>) {
    let Some(m) = v.as_object() else {
        return;
    };
    for (k, x) in m {
        if keys.contains(&k.as_str()) {
            match x {
                Value::Array(items) => out.extend(items.iter().filter_map(|i| {
                    i.as_u64()
                        .or_else(|| i.get(0).and_then(Value::as_u64))
                        .map(|i| i as usize)
                })),
                x => out.extend(x.as_u64().map(|i| i as usize)),
            }
        } else if x.is_object() {
            indices(x, keys, out);
        }
    }
}

/// The blame one violation of a fault check puts on `history`. A violation
/// about the end state names no event, only an effect: the operations that
/// asked for that effect are blamed (and the grant of the newer epoch it
/// names is context).
fn blame_of_violation(check: &str, v: &Value, ops: &[Op]) -> Blame {
    let mut b = Blame::default();
    indices(v, &BLAMED_KEYS, &mut b.blamed);
    indices(v, &RELATED_KEYS, &mut b.related);
    let effect = v["effect"]["effect"]
        .as_str()
        .or(v["effect"].as_str())
        .map(str::to_string);
    let effects: Vec<String> = v["effects"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let tree = v["tree"].as_str().or(v["effect"]["tree"].as_str());
    for op in ops {
        let eff = op.args["effect"].as_str();
        if eff.is_some_and(|e| Some(e) == effect.as_deref() || effects.iter().any(|x| x == e)) {
            b.blamed.push(op.invoke);
        }
        if let (Some(t), Some(newer)) = (tree, v["newer_epoch"].as_i64()) {
            if op.args["tree"].as_str() == Some(t)
                && op.answer["granted"]["epoch"].as_i64() == Some(newer)
            {
                b.related.push(op.invoke);
            }
        }
    }
    b.about = ["tree", "child", "provider", "call"]
        .into_iter()
        .find_map(|k| v[k].as_str().map(|s| (k.to_string(), s.to_string())))
        .or_else(|| tree.map(|t| ("tree".to_string(), t.to_string())));
    if let Some(at) = v["at_event"].as_u64() {
        b.instants = vec![at as usize];
        b.instant_label = "no order explains the reply".into();
    } else {
        // The events the violation names: the completions of the blamed
        // operations (their invokes when they never completed).
        let mut at: Vec<usize> = ops
            .iter()
            .filter(|o| {
                b.blamed
                    .iter()
                    .any(|e| *e == o.invoke || Some(*e) == o.done)
            })
            .map(Op::last_event)
            .collect();
        at.sort_unstable();
        at.dedup();
        b.instants = at;
        b.instant_label = format!("{check} broken");
    }
    b
}

/// The failure detail of a failed `faults.*` check: the timeline of its
/// failing history around the first violation that names something in it,
/// or empty when the check carries no history or no such violation. Reads
/// the history from the counterexample (`history`) or the evidence
/// (`history`), and the violations from the first failing layout's
/// `detail` (or `found`).
pub(crate) fn faults_detail(
    check: &str,
    evidence: &Value,
    counterexample: Option<&Value>,
) -> String {
    let Some(history) = counterexample
        .map(|cx| &cx["history"])
        .filter(|h| !h.is_null())
        .or(Some(&evidence["history"]).filter(|h| !h.is_null()))
        .and_then(|h| serde_json::from_value::<History>(h.clone()).ok())
    else {
        return String::new();
    };
    let detail = match evidence {
        Value::Array(layouts) => layouts
            .iter()
            .find(|l| l["holds"] == Value::Bool(false))
            .map(|l| l["detail"].clone())
            .unwrap_or(Value::Null),
        v => v["found"].clone(),
    };
    let mut violations: Vec<Value> = detail["violations"].as_array().cloned().unwrap_or_default();
    // Linearizability: tree → {"not_linearizable": {...}}.
    if let Some(trees) = detail["not_linearizable"].as_object() {
        for (tree, verdict) in trees {
            let mut v = verdict["not_linearizable"].clone();
            if let Some(m) = v.as_object_mut() {
                m.insert("tree".into(), Value::String(tree.clone()));
                violations.push(v);
            }
        }
    }
    let flat: Vec<(harness::Event, Value)> = history
        .events
        .iter()
        .map(|e| (e.clone(), serde_json::to_value(e).unwrap_or(Value::Null)))
        .collect();
    let ops = operations(&flat);
    let short_id = check.strip_prefix("faults.").unwrap_or(check);
    for v in &violations {
        let blame = blame_of_violation(short_id, v, &ops);
        if blame.blamed.is_empty() && blame.instants.is_empty() {
            continue;
        }
        let kind = v["kind"]
            .as_str()
            .map(|k| format!(" ({})", k.replace('_', " ")))
            .unwrap_or_default();
        let drawn = render(&history, &blame);
        if !drawn.is_empty() {
            return format!(
                "<h4>Timeline of the first violation{}{}</h4>{drawn}",
                escape(&kind),
                if violations.len() > 1 {
                    format!(" of {}", violations.len())
                } else {
                    String::new()
                }
            );
        }
    }
    String::new()
}
