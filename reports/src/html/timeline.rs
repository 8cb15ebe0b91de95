//! A failing history of the fault suite drawn where it matters: a window
//! around the first violation (a fault history has thousands of events),
//! drawn by the one trace renderer (`trace.rs`, [`Trace::of_window`]) and
//! under it the window's events as a table.
//!
//! This file picks what to draw: [`faults_detail`] reads the check's typed
//! violations into a [`Blame`] (which events a checker names, which instants
//! broke, which tree, child or provider the window is about), and
//! [`render`] picks the window: the blamed operations, then related ones,
//! then the focus's others nearest them, at most [`MAX_OPS`], and the
//! faults that overlap it. The renderer knows nothing of the fault suite.

use std::collections::{BTreeMap, BTreeSet};

use model::contract::{Call, Reply};
use model::violation::{Named, Violation};
use model::{Event, EventKind, Happened, History, NemesisPhase};

use super::trace::{self, short, Trace, WindowFault};
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
    /// The window keeps only operations about this thing (e.g. tree
    /// `t1`), besides the blamed ones.
    pub about: Option<Named>,
    /// What the instants mean, one short phrase (e.g. "no order explains
    /// the reply").
    pub instant_label: String,
}

/// One operation: an invoke paired with its instance's next completion.
#[derive(Debug, Clone)]
struct Op {
    invoke: usize,
    /// The completion event, if any came.
    done: Option<usize>,
    /// The request as sent, and its arguments as shown.
    call: Call,
    /// The reply, when the store answered one.
    reply: Option<Reply>,
}

impl Op {
    fn last_event(&self) -> usize {
        self.done.unwrap_or(self.invoke)
    }

    fn is_about(&self, named: &Named) -> bool {
        named.is_named_by(&self.call, self.reply.as_ref())
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

/// The operations of `history`, paired by the checkers' own pairing
/// ([`History::operations`]).
fn operations(history: &History) -> Vec<Op> {
    history
        .operations()
        .into_iter()
        .map(|o| Op {
            invoke: o.invoke.index,
            done: o.completion.map(|c| c.index),
            call: o.call.clone(),
            reply: o.reply().cloned(),
        })
        .collect()
}

/// Pairs each fault's start with the next end of the same fault.
fn faults(history: &History) -> Vec<Fault> {
    let mut out: Vec<Fault> = Vec::new();
    for e in &history.events {
        let Happened::Nemesis { op, note } = &e.what else {
            continue;
        };
        let name = op.strip_prefix("nemesis.").unwrap_or(op).to_string();
        let lane = note.instance_name().map(str::to_string);
        if note.phase == NemesisPhase::End {
            if let Some(f) = out
                .iter_mut()
                .find(|f| f.end.is_none() && f.name == name && f.lane == lane)
            {
                f.end = Some(e.index);
                f.ending = note.ending.clone().unwrap_or_default();
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

/// `n` and the noun, plural unless one.
fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
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
                && blame.about.as_ref().is_none_or(|n| op.is_about(n))
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

/// Draws the part of `history` that `blame` points at with the one trace
/// renderer (`trace.rs`): its caption says which events of how many the
/// window shows, the drawing names each step's event index, and the table
/// of the window's events (in a disclosure) lists the same events. Empty
/// when the blame names no event of the history.
pub(crate) fn render(history: &History, blame: &Blame, id: &str) -> String {
    let events = &history.events;
    let all_ops = operations(history);
    let all_faults = faults(history);
    let Some(w) = window(&all_ops, &all_faults, blame) else {
        return String::new();
    };
    let about = blame
        .about
        .as_ref()
        .map(|n| format!(", {} {}", n.what, n.name))
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
    // The window's steps: only the drawn operations' events are
    // operations; any other event on the axis (a breaking instant of an
    // operation not drawn, a fault's start or end) only marks a step.
    let op_events: BTreeSet<usize> = w
        .ops
        .iter()
        .flat_map(|o| [Some(o.invoke), o.done])
        .flatten()
        .collect();
    let steps: Vec<(&Event, bool)> = w
        .events
        .iter()
        .filter_map(|i| events.get(*i))
        .map(|e| {
            let mark = !op_events.contains(&e.index) && e.kind() != EventKind::Nemesis;
            (e, mark)
        })
        .collect();
    let faults: Vec<WindowFault> = w
        .faults
        .iter()
        .map(|f| WindowFault {
            name: f.name.clone(),
            lane: f.lane.clone(),
            start: f.start,
            end: f.end,
            ending: f.ending.clone(),
        })
        .collect();
    let blamed: Vec<usize> = w.blamed.iter().copied().collect();
    let Some(t) = Trace::of_window(
        &steps,
        &faults,
        &blamed,
        &w.instants,
        &blame.instant_label,
        escape(&summary),
    ) else {
        return String::new();
    };
    format!(
        "{}<details><summary>the window's events, one row each</summary><div class=\"scroll\">{}</div></details>",
        trace::render(&t, id),
        table(&w, events)
    )
}

/// The window's events, one row each, like the explorer's step table; the
/// blamed operations' rows and the breaking instants' rows marked.
fn table(w: &Window, events: &[Event]) -> String {
    let mut rows: BTreeMap<usize, (bool, String)> = BTreeMap::new();
    for o in &w.ops {
        let blamed = w.blamed.contains(&o.invoke);
        rows.insert(o.invoke, (blamed, short(&o.call.args, 70)));
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
        let Some(e) = events.get(*i) else {
            continue;
        };
        let class = if *blamed || w.instants.contains(i) {
            " class=\"violation\""
        } else {
            ""
        };
        let kind = e.kind().word();
        let answer = match &e.what {
            Happened::Invoke(_) => String::new(),
            Happened::Nemesis { note, .. } => match &note.ending {
                Some(ending) => ending.clone(),
                None => format!("start {}", short(&note.fault, 60)),
            },
            other => short(&other.value(), 70),
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

/// The blame one violation of a fault check puts on its history: the
/// events it names, and the instants it broke at (the reply no order
/// explains, else the last events of the blamed operations).
fn blame_of_violation(check: &str, v: &Violation, ops: &[Op]) -> Blame {
    let mut b = Blame {
        blamed: v.blamed.clone(),
        related: v.related.clone(),
        about: v.about.clone(),
        ..Blame::default()
    };
    if let Some(at) = v.at_event {
        b.instants = vec![at];
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
/// failing history around the first of its `violations` that names
/// something in it, or empty when there is none to draw.
pub(crate) fn faults_detail(check: &str, violations: &[Violation], history: &History) -> String {
    let ops = operations(history);
    let short_id = check.strip_prefix("faults.").unwrap_or(check);
    for v in violations {
        let blame = blame_of_violation(short_id, v, &ops);
        if blame.blamed.is_empty() && blame.instants.is_empty() {
            continue;
        }
        let kind = v
            .kind
            .as_deref()
            .map(|k| format!(" ({})", k.replace('_', " ")))
            .unwrap_or_default();
        let drawn = render(history, &blame, check);
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
