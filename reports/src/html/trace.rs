//! One timeline for every counterexample that is a handful of operations: a
//! conformance check's history, a take race's command interleaving, an
//! explorer schedule. Each source is read into one [`Trace`] and drawn by
//! one renderer ([`render`]), so every failure reads the same way:
//!
//! - the calls: a lane per instance (its clock's skew written under its
//!   name), each operation a bar from invocation to answer, the Redis
//!   commands it sent as ticks, faults as bands, an unknown outcome as an
//!   open dashed bar, and a lane for the server clock naming the server ms
//!   wherever it moves. The x axis is the order of steps, not time: the
//!   managed server's clock is virtual, and many steps share one ms.
//! - the grants: each acknowledged grant as an interval in server time,
//!   the span where two instances held the tree at once hatched red, the
//!   promise the holder was given (invocation + ttl) marked when it differs
//!   from the store's expiry, and the breaking instant as a red line.
//!
//! Every number drawn is printed in the caption and the table under the
//! drawing from the same values, in full, so text and drawing never differ.
//! The long histories of the fault suite are drawn here too: `timeline.rs`
//! picks a bounded window around the first violation and hands it to
//! [`Trace::of_window`]; its x axis then also names each step's event index,
//! the blamed operations are outlined in red and every breaking instant is
//! marked, so the sentence above the drawing and the drawing say the same
//! event numbers.

use std::collections::BTreeMap;

use serde_json::Value;

use model::contract::{Reply, Request, StoreError};
use model::counterexample::{Counterexample, ExplorerStep, RaceCounterexample};
use model::history::Role;
use model::{Event, Happened, History, NemesisPhase};

use crate::escape;

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The store answered a reply.
    Ok,
    /// The store refused (an error of a known kind).
    Refused,
    /// The outcome is unknown, or no answer came: an open interval.
    Unknown,
}

/// One step of the x axis.
#[derive(Debug, Clone, Default)]
struct Slot {
    /// Server time at this step, when recorded.
    server_ms: Option<i64>,
    /// The history's event index at this step, when it is one.
    event: Option<usize>,
}

/// An acknowledged grant, in server ms.
#[derive(Debug, Clone, PartialEq)]
struct Grant {
    epoch: i64,
    /// When the holder may count on it from: the answer's server time (or,
    /// with no times recorded, the store's expiry minus the ttl asked for).
    from: i64,
    /// The expiry the store answered.
    until: i64,
    /// Invocation + ttl: the most the holder was promised (the explorer's
    /// judge uses it); shown when it differs from `until`.
    promised_until: Option<i64>,
    /// The tree it is of, when the call named one: only grants of one tree
    /// exclude each other.
    tree: Option<String>,
    /// A renewal of a lease held (its epoch from the call), not a new grant.
    renewal: bool,
    /// Released by its holder at this server ms (before `until`): the
    /// interval ends there.
    released_at: Option<i64>,
    /// Its holder asked to release it at this server ms and the outcome is
    /// unknown: it may have ended there, so no overlap is claimed past it.
    maybe_released_at: Option<i64>,
}

#[derive(Debug, Clone)]
struct Operation {
    lane: String,
    name: String,
    /// The arguments as shown.
    args: Value,
    /// The request, when the call parses (the lease's tree, ttl and epoch
    /// are read from it).
    request: Option<Request>,
    from: usize,
    /// The slot of its answer; `None`: no answer came.
    to: Option<usize>,
    end: End,
    /// The answer as shown.
    answer: Value,
    /// The answer read: a reply or the store's error (`None`: none came,
    /// or it does not read).
    outcome: Option<Result<Reply, StoreError>>,
    grant: Option<Grant>,
    /// The Redis commands it sent, at their slots (take races only).
    commands: Vec<(usize, String)>,
    /// A checker blames it: outlined in red.
    blamed: bool,
}

#[derive(Debug, Clone)]
struct Fault {
    name: String,
    /// The instance it targets; `None` for the whole server.
    lane: Option<String>,
    from: usize,
    to: Option<usize>,
    /// More for its tooltip (its events, how it ended), when known.
    detail: String,
}

/// A fault of a window of a long history, in event indices (see
/// [`Trace::of_window`]).
#[derive(Debug, Clone)]
pub(crate) struct WindowFault {
    /// The fault's name (`partition`, `restart_server`).
    pub name: String,
    /// The instance it targets; `None` for the whole server.
    pub lane: Option<String>,
    /// The event that started it (possibly before the window).
    pub start: usize,
    /// The event that ended it, if one did (possibly after the window).
    pub end: Option<usize>,
    /// How it ended, as the nemesis wrote it.
    pub ending: String,
}

/// A counterexample read into lanes, steps, operations and grants.
#[derive(Debug, Clone, Default)]
pub(crate) struct Trace {
    lanes: Vec<String>,
    /// Instance clock minus server clock, per lane, when both were recorded.
    skews: BTreeMap<String, i64>,
    slots: Vec<Slot>,
    ops: Vec<Operation>,
    faults: Vec<Fault>,
    /// Where it broke: the slot, and the server ms of the breaking instant.
    broke: Option<(usize, Option<i64>)>,
    /// Further breaking instants (slots), marked like the first.
    more_broke: Vec<usize>,
    /// What the breaking instant means, when a checker said (e.g. "no
    /// order explains the reply"); "broken" otherwise.
    broke_label: Option<String>,
    /// The caption's opening phrase in place of the counts (a window says
    /// which events of how many it shows).
    summary: Option<String>,
    /// Draw each step's event index under the lanes (a window of a long
    /// history, whose text names events by index).
    event_axis: bool,
    /// What the source was, for the caption.
    source: &'static str,
    /// A note on how times were found, for the caption.
    note: Option<&'static str>,
}

/// A history event on a trace's axis: `true` when it only marks a step
/// (an event of an operation not drawn, a fault drawn from elsewhere).
pub(crate) type AxisEvent<'a> = (&'a Event, bool);

/// What an axis event is to the checkers' pairing
/// ([`model::history::pair_operations`]): a mark is no operation's.
fn role_of<'b>(step: &'b AxisEvent<'_>) -> (Role, &'b str) {
    let (e, mark) = step;
    if *mark {
        (Role::Other, "")
    } else {
        (Role::of(e.kind()), e.instance.as_str())
    }
}

/// Every event of `history` on the axis, none a mere mark.
fn on_axis(history: &History) -> Vec<AxisEvent<'_>> {
    history.events.iter().map(|e| (e, false)).collect()
}

fn lane_of(lanes: &mut Vec<String>, name: &str) {
    if !lanes.iter().any(|l| l == name) {
        lanes.push(name.to_string());
    }
}

/// The grant in `reply`, if it is one (a take's `granted`, or a renew's
/// `renewed` with the epoch the request named), answered at `at` for
/// `request` (when the call parsed), invoked at `invoked`.
fn grant_of(
    reply: &Reply,
    request: Option<&Request>,
    invoked: Option<i64>,
    at: Option<i64>,
) -> Option<Grant> {
    let (tree, ttl, renewed_epoch) = match request {
        Some(Request::LeaseTake { tree, ttl_ms, .. }) => (Some(tree), Some(*ttl_ms), None),
        Some(Request::LeaseRenew {
            tree,
            ttl_ms,
            epoch,
            ..
        }) => (Some(tree), Some(*ttl_ms), Some(*epoch)),
        _ => (None, None, None),
    };
    let (epoch, until, renewal) = match reply {
        Reply::Granted {
            epoch,
            expires_at_ms,
        } => (*epoch, *expires_at_ms, false),
        Reply::Renewed { expires_at_ms } => (renewed_epoch?, *expires_at_ms, true),
        _ => return None,
    };
    let from = at.or_else(|| ttl.map(|t| until - t))?;
    let promised_until = match (invoked, ttl) {
        (Some(i), Some(t)) if i + t != until => Some(i + t),
        _ => None,
    };
    Some(Grant {
        epoch,
        from,
        until,
        promised_until,
        tree: tree.cloned(),
        renewal,
        released_at: None,
        maybe_released_at: None,
    })
}

/// A recorded answer's outcome, owned.
fn owned(outcome: Option<Result<&Reply, &StoreError>>) -> Option<Result<Reply, StoreError>> {
    outcome.map(|o| o.cloned().map_err(Clone::clone))
}

/// The lease tree an operation is about, when its request names one.
fn tree_of(request: Option<&Request>) -> Option<&str> {
    request?
        .subjects()
        .into_iter()
        .find_map(|(what, name)| (what == "tree").then_some(name))
}

impl Grant {
    /// When it stopped being held: released, else its expiry.
    fn end(&self) -> i64 {
        self.released_at.unwrap_or(self.until)
    }

    /// Until when it was held for certain: its end, or the invocation of a
    /// release whose outcome is unknown.
    fn surely_until(&self) -> i64 {
        self.maybe_released_at
            .map_or(self.end(), |m| m.min(self.end()))
    }
}

impl Trace {
    /// The trace of a check's counterexample or evidence, if it holds one
    /// this renderer draws: a race, a history (the explorer's
    /// counterexample, a conformance check's evidence).
    pub(crate) fn of(
        recorded: Option<&History>,
        counterexample: Option<&Counterexample>,
    ) -> Option<Trace> {
        match counterexample {
            Some(Counterexample::Race(race)) => return Trace::of_race(race),
            Some(cx) => {
                if let Some(history) = cx.history().filter(|h| !h.events.is_empty()) {
                    return Trace::of_history(&on_axis(history), "schedule");
                }
                // An explorer counterexample written before it carried its
                // history: its steps.
                if let Some(x) = cx.explorer() {
                    return Trace::of_steps(&x.steps);
                }
            }
            None => {}
        }
        Trace::of_history(&on_axis(recorded?), "history")
    }

    /// A take race: the commands of two calls in the order the server ran
    /// them. The server ms of each command is not recorded; a grant starts
    /// at the store's expiry minus the ttl asked for (when the store
    /// decided), unless a clock move names the time.
    fn of_race(cx: &RaceCounterexample) -> Option<Trace> {
        let commands = &cx.commands;
        let mut t = Trace {
            source: "race",
            note: Some("the server ms of each command is not recorded: each grant starts at its expiry minus the ttl asked for"),
            ..Trace::default()
        };
        let mut by_lane: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
        let mut now: Option<i64> = None;
        for c in commands {
            let (who, text) = (c.instance.as_str(), c.command.as_str());
            if let Some(to) = c.clock_ms {
                // The clock's move: a step of its own.
                now = Some(to);
                t.slots.push(Slot {
                    server_ms: now,
                    event: None,
                });
                continue;
            }
            lane_of(&mut t.lanes, who);
            by_lane
                .entry(who.to_string())
                .or_default()
                .push((t.slots.len(), text.to_string()));
            t.slots.push(Slot {
                server_ms: now,
                event: None,
            });
        }
        for (name, side) in [("a", &cx.a), ("b", &cx.b)] {
            let call = &side.call;
            let cmds = by_lane.remove(name).unwrap_or_default();
            lane_of(&mut t.lanes, name);
            let from = cmds.first().map(|(s, _)| *s).unwrap_or(0);
            let to = cmds.last().map(|(s, _)| *s);
            let answer = serde_json::to_value(&side.answer).unwrap_or(Value::Null);
            let request = Request::parse(call).ok();
            let outcome = owned(side.answer.outcome());
            let reply = outcome.clone().and_then(Result::ok);
            let grant = reply
                .as_ref()
                .and_then(|r| grant_of(r, request.as_ref(), None, None));
            t.ops.push(Operation {
                lane: name.to_string(),
                name: call.op.clone(),
                args: call.args.clone(),
                request,
                from,
                to,
                end: if matches!(outcome, Some(Err(_))) {
                    End::Refused
                } else {
                    End::Ok
                },
                answer,
                outcome,
                grant,
                commands: cmds,
                blamed: false,
            });
        }
        t.lanes.sort();
        // It broke when the last of the calls was answered.
        let last = t.ops.iter().filter_map(|o| o.to).max()?;
        let at = t
            .ops
            .iter()
            .filter_map(|o| o.grant.as_ref().map(|g| g.from))
            .max();
        t.broke = Some((last, at));
        Some(t)
    }

    /// An explorer schedule's steps (`what` is `<instance>: <action>`):
    /// an operation runs from the step that started it to the step that
    /// recorded its answer; a step's commands are ticks on its lane.
    fn of_steps(steps: &[ExplorerStep]) -> Option<Trace> {
        let mut t = Trace {
            source: "schedule",
            ..Trace::default()
        };
        let mut open: BTreeMap<String, usize> = BTreeMap::new();
        for s in steps {
            let slot = t.slots.len();
            let server_ms = Some(s.server_ms);
            t.slots.push(Slot {
                server_ms,
                event: None,
            });
            let what = s.what.as_str();
            let Some((who, action)) = what.split_once(": ") else {
                continue;
            };
            if who.contains(' ') {
                continue;
            }
            lane_of(&mut t.lanes, who);
            let i = match open.get(who) {
                Some(i) if !matches!(action, "take" | "renew" | "release" | "read") => *i,
                _ if action.starts_with("crashes") => {
                    open.remove(who);
                    continue;
                }
                _ => {
                    open.insert(who.to_string(), t.ops.len());
                    t.ops.push(Operation {
                        lane: who.to_string(),
                        name: action.to_string(),
                        args: Value::Null,
                        request: None,
                        from: slot,
                        to: None,
                        end: End::Unknown,
                        answer: Value::Null,
                        outcome: None,
                        grant: None,
                        commands: Vec::new(),
                        blamed: false,
                    });
                    t.ops.len() - 1
                }
            };
            for c in s.commands.iter().flatten() {
                t.ops[i].commands.push((slot, c.clone()));
            }
            if let Some(answer) = s.answer.as_ref().filter(|a| a.given()) {
                open.remove(who);
                let o = &mut t.ops[i];
                o.to = Some(slot);
                o.answer = serde_json::to_value(answer).unwrap_or(Value::Null);
                o.outcome = owned(answer.outcome());
                let reply = o.outcome.clone().and_then(Result::ok);
                o.end = if matches!(o.outcome, Some(Err(_))) {
                    End::Refused
                } else {
                    End::Ok
                };
                o.grant = reply.and_then(|r| grant_of(&r, None, None, server_ms));
            }
        }
        if t.ops.is_empty() {
            return None;
        }
        let last = t.slots.len() - 1;
        t.broke = Some((last, t.slots[last].server_ms));
        Some(t)
    }

    /// A history of invocations and completions on the axis, one slot per
    /// event; the last completion is where it broke. A mark is a step of
    /// its own, no operation's and no fault's.
    fn of_history(events: &[AxisEvent<'_>], source: &'static str) -> Option<Trace> {
        let mut t = Trace {
            source,
            ..Trace::default()
        };
        // Completion position → the operation it ends, by the checkers'
        // pairing; an operation is pushed at its invoke, so its number is
        // its pairing's rank.
        let ends: BTreeMap<usize, usize> = model::history::pair_operations(events, role_of)
            .into_iter()
            .enumerate()
            .filter_map(|(op, p)| Some((p.completion?, op)))
            .collect();
        let mut open_faults: Vec<usize> = Vec::new();
        let mut last_completion = None;
        for (e, mark) in events {
            let slot = t.slots.len();
            let server_ms = e.server_ms;
            t.slots.push(Slot {
                server_ms,
                event: Some(e.index),
            });
            if *mark {
                continue;
            }
            let who = e.instance.clone();
            match &e.what {
                Happened::Nemesis { op, note } => {
                    let name = op.strip_prefix("nemesis.").unwrap_or(op).to_string();
                    let lane = note.instance_name().map(str::to_string);
                    if note.phase == NemesisPhase::End {
                        if let Some(k) = open_faults
                            .iter()
                            .position(|f| t.faults[*f].name == name && t.faults[*f].lane == lane)
                        {
                            let f = open_faults.remove(k);
                            t.faults[f].to = Some(slot);
                            continue;
                        }
                    }
                    open_faults.push(t.faults.len());
                    t.faults.push(Fault {
                        name,
                        lane,
                        from: slot,
                        to: None,
                        detail: String::new(),
                    });
                }
                Happened::Invoke(call) => {
                    lane_of(&mut t.lanes, &who);
                    if let Some(s) = server_ms {
                        t.skews.entry(who.clone()).or_insert(e.clock_ms - s);
                    }
                    t.ops.push(Operation {
                        lane: who,
                        name: call.op.clone(),
                        args: call.args.clone(),
                        request: Request::parse(call).ok(),
                        from: slot,
                        to: None,
                        end: End::Unknown,
                        answer: Value::Null,
                        outcome: None,
                        grant: None,
                        commands: Vec::new(),
                        blamed: false,
                    });
                }
                done => {
                    last_completion = Some(slot);
                    let Some(&i) = ends.get(&slot) else {
                        continue;
                    };
                    let invoked = t.slots[t.ops[i].from].server_ms;
                    let o = &mut t.ops[i];
                    o.to = Some(slot);
                    o.answer = done.value();
                    o.outcome = done.outcome();
                    let reply = match done {
                        Happened::Ok { reply, .. } => Some(reply),
                        _ => None,
                    };
                    o.end = match done {
                        Happened::Ok { .. } => End::Ok,
                        Happened::Fail { .. } => End::Refused,
                        _ => End::Unknown,
                    };
                    o.grant =
                        reply.and_then(|r| grant_of(r, o.request.as_ref(), invoked, server_ms));
                    // A release answered ends the holder's interval of that
                    // tree: after it, another's grant is no overlap.
                    // A release of unknown outcome may have ended it from
                    // its invocation on: no overlap is claimed past that.
                    let certain = matches!(reply, Some(Reply::Released {}));
                    let maybe = o.end == End::Unknown && o.name.ends_with("release");
                    if certain || maybe {
                        let lane = o.lane.clone();
                        let tree = tree_of(o.request.as_ref()).map(str::to_string);
                        let at = if certain { server_ms } else { invoked };
                        if let (Some(at), Some(g)) = (
                            at,
                            t.ops
                                .iter_mut()
                                .rev()
                                .filter(|p| {
                                    p.lane == lane && tree_of(p.request.as_ref()) == tree.as_deref()
                                })
                                .find_map(|p| p.grant.as_mut()),
                        ) {
                            if at < g.until && certain {
                                g.released_at = Some(at);
                            } else if at < g.until {
                                g.maybe_released_at = Some(at);
                            }
                        }
                    }
                }
            }
        }
        if t.ops.is_empty() {
            return None;
        }
        let at = last_completion.or(t.ops.iter().map(|o| o.from).max())?;
        t.broke = Some((at, t.slots[at].server_ms));
        Some(t)
    }

    /// A window of a long history (the fault suite's): `events` are the
    /// window's events in order (the model's `History` events as JSON: the
    /// drawn operations' invokes and completions, the breaking instants,
    /// the faults' starts and ends inside the window; nemesis events among
    /// them only mark a step). Each step's event index is drawn on the
    /// axis. `faults` are drawn as bands, clipped to the window's edges
    /// (one still on past the window runs to the right edge); the
    /// operations whose invoke is in `blamed` are outlined in red; the
    /// events in `instants` are the breaking instants, the first labelled
    /// `instant_label`. `summary` opens the caption.
    pub(crate) fn of_window(
        events: &[AxisEvent<'_>],
        faults: &[WindowFault],
        blamed: &[usize],
        instants: &[usize],
        instant_label: &str,
        summary: String,
    ) -> Option<Trace> {
        // A nemesis event only marks its step: its fault comes from
        // `faults`, paired over the whole history.
        let marks: Vec<AxisEvent<'_>> = events
            .iter()
            .map(|(e, mark)| (*e, *mark || matches!(e.what, Happened::Nemesis { .. })))
            .collect();
        let mut t = Trace::of_history(&marks, "failing history")?;
        for o in &mut t.ops {
            o.blamed = blamed.contains(&t.slots[o.from].event.unwrap_or(usize::MAX));
        }
        // Lanes in name order, one for each instance a fault targets too.
        for l in faults.iter().filter_map(|f| f.lane.as_deref()) {
            lane_of(&mut t.lanes, l);
        }
        t.lanes.sort();
        let first = t.slots.first().and_then(|s| s.event)?;
        let last = t.slots.last().and_then(|s| s.event)?;
        for f in faults {
            if f.start > last || f.end.is_some_and(|e| e < first) {
                continue;
            }
            let from = if f.start < first {
                0
            } else {
                t.slots.iter().position(|s| s.event >= Some(f.start))?
            };
            let to = f
                .end
                .filter(|e| *e <= last)
                .and_then(|e| t.slots.iter().rposition(|s| s.event <= Some(e)));
            let detail = format!(
                " (events {}–{}){}",
                f.start,
                f.end.map(|e| e.to_string()).unwrap_or("…".into()),
                if f.ending.is_empty() {
                    String::new()
                } else {
                    format!(": {}", f.ending)
                }
            );
            t.faults.push(Fault {
                name: f.name.clone(),
                lane: f.lane.clone(),
                from,
                to,
                detail,
            });
        }
        let slot_of = |event: usize| t.slots.iter().position(|s| s.event == Some(event));
        let mut at: Vec<usize> = instants.iter().filter_map(|i| slot_of(*i)).collect();
        at.sort_unstable();
        at.dedup();
        if let Some((b, rest)) = at.split_first() {
            t.broke = Some((*b, t.slots[*b].server_ms));
            t.more_broke = rest.to_vec();
        }
        t.broke_label = Some(instant_label.to_string());
        t.summary = Some(summary);
        t.event_axis = true;
        Some(t)
    }

    fn grants(&self) -> Vec<(&str, &Grant)> {
        self.ops
            .iter()
            .filter_map(|o| o.grant.as_ref().map(|g| (o.lane.as_str(), g)))
            .collect()
    }

    /// Spans of server time when grants of one tree to two different
    /// instances were both live: `(from, until, lane a, lane b)`.
    /// Spans of one pair of instances that touch are merged into one, so a
    /// window of many grants draws and names a handful of spans, not one
    /// per pair of grants.
    fn overlaps(&self) -> Vec<(i64, i64, String, String)> {
        let g = self.grants();
        let mut spans: Vec<(&str, &str, Option<&str>, i64, i64)> = Vec::new();
        for (i, (la, a)) in g.iter().enumerate() {
            for (lb, b) in &g[i + 1..] {
                let (from, until) = (a.from.max(b.from), a.surely_until().min(b.surely_until()));
                if la != lb && a.tree == b.tree && from < until {
                    let (x, y) = if la < lb { (*la, *lb) } else { (*lb, *la) };
                    spans.push((x, y, a.tree.as_deref(), from, until));
                }
            }
        }
        spans.sort();
        let mut out: Vec<(i64, i64, String, String)> = Vec::new();
        let mut last: Option<(&str, &str, Option<&str>)> = None;
        for (x, y, tree, from, until) in spans {
            match out.last_mut() {
                Some(o) if last == Some((x, y, tree)) && from <= o.1 => o.1 = o.1.max(until),
                _ => out.push((from, until, x.to_string(), y.to_string())),
            }
            last = Some((x, y, tree));
        }
        out
    }
}

/// A JSON value in one line, cut to `max` characters.
pub(super) fn short(v: &Value, max: usize) -> String {
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

/// An answer's gist: the reply's variant (`granted`, `busy`) or error kind.
fn gist(o: &Operation) -> String {
    match (o.end, o.to) {
        (End::Ok, _) => match &o.outcome {
            Some(Ok(reply)) => reply.outcome().to_string(),
            _ => short(&o.answer, 10),
        },
        (End::Refused, _) => match &o.outcome {
            Some(Err(e)) => e.kind.name().to_string(),
            _ => "refused".into(),
        },
        (End::Unknown, Some(_)) => "unknown".into(),
        (End::Unknown, None) => "no answer".into(),
    }
}

/// The command's verb (`EVALSHA`, `HSET`): the tick's label.
fn verb(command: &str) -> &str {
    command.split(' ').next().unwrap_or(command)
}

fn skew_text(ms: i64) -> String {
    if ms == 0 {
        "clock = server".into()
    } else {
        format!("clock {ms:+} ms")
    }
}

/// At most this many spans held by two at once are named in the caption
/// (all are hatched, each with its own tooltip).
const OVERLAPS_NAMED: usize = 4;

/// Draws the trace: a caption, the SVG (calls, then grants in server time)
/// and a table of the grants. `id` names the figure (for links and tests).
pub(crate) fn render(t: &Trace, id: &str) -> String {
    let grants = t.grants();
    let overlaps = t.overlaps();
    let mut caption = t.summary.clone().unwrap_or_else(|| {
        format!(
            "{} operation{} in {} step{} of {} lane{}",
            t.ops.len(),
            if t.ops.len() == 1 { "" } else { "s" },
            t.slots.len(),
            if t.slots.len() == 1 { "" } else { "s" },
            t.lanes.len(),
            if t.lanes.len() == 1 { "" } else { "s" }
        )
    });
    if !t.skews.values().all(|s| *s == 0) {
        let skews: Vec<String> = t
            .skews
            .iter()
            .map(|(l, s)| format!("{l} {}", skew_text(*s)))
            .collect();
        caption.push_str(&format!("; instance clocks: {}", skews.join(", ")));
    }
    for (from, until, a, b) in overlaps.iter().take(OVERLAPS_NAMED) {
        caption.push_str(&format!(
            "; <b>{} and {} both held the lease from server ms {from} to {until}</b>",
            escape(a),
            escape(b)
        ));
    }
    if overlaps.len() > OVERLAPS_NAMED {
        caption.push_str(&format!(
            "; <b>{} more spans held by two at once</b> (hatched)",
            overlaps.len() - OVERLAPS_NAMED
        ));
    }
    if let Some((slot, ms)) = t.broke {
        // A window names events by index: the instant is named by its
        // event too, as its axis does.
        let event = t.slots[slot]
            .event
            .filter(|_| t.event_axis)
            .map(|e| format!(" event {e}"))
            .unwrap_or_default();
        let ms = ms.map(|m| format!(" server ms {m}")).unwrap_or_default();
        if !event.is_empty() || !ms.is_empty() {
            let sep = if !event.is_empty() && !ms.is_empty() {
                ","
            } else {
                ""
            };
            caption.push_str(&format!(
                "; {} at{event}{sep}{ms}",
                escape(t.broke_label.as_deref().unwrap_or("broken"))
            ));
        }
        if !t.more_broke.is_empty() {
            let more: Vec<String> = t
                .more_broke
                .iter()
                .map(|s| match t.slots[*s].event {
                    Some(e) if t.event_axis => format!("event {e}"),
                    _ => format!("step {s}"),
                })
                .collect();
            caption.push_str(&format!(" (and at {})", more.join(", ")));
        }
    }
    if let Some(note) = t.note {
        caption.push_str(&format!(" ({note})"));
    }
    let mut h = format!(
        "<figure class=\"timeline\" id=\"timeline-{}\"><figcaption>Timeline of the {}: {caption}.</figcaption>",
        escape(id),
        t.source
    );
    let label = caption.replace("<b>", "").replace("</b>", "");
    h.push_str(&svg(t, &grants, &overlaps, &label));
    if !grants.is_empty() {
        h.push_str("<div class=\"scroll\"><table class=\"grants\"><tr><th scope=\"col\">instance</th><th scope=\"col\">tree</th><th scope=\"col\">epoch</th><th scope=\"col\">held from (server ms)</th><th scope=\"col\">store's expiry</th><th scope=\"col\">released at</th><th scope=\"col\">promised until (invocation + ttl)</th></tr>");
        for (lane, g) in &grants {
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(lane),
                escape(g.tree.as_deref().unwrap_or("")),
                g.epoch,
                if g.renewal { " (renewed)" } else { "" },
                g.from,
                g.until,
                match (g.released_at, g.maybe_released_at) {
                    (Some(r), _) => r.to_string(),
                    (None, Some(m)) => format!("unknown (asked at {m})"),
                    _ => "—".into(),
                },
                g.promised_until
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "= expiry".into())
            ));
        }
        h.push_str("</table></div>");
    }
    h.push_str("</figure>");
    h
}

fn svg(
    t: &Trace,
    grants: &[(&str, &Grant)],
    overlaps: &[(i64, i64, String, String)],
    label: &str,
) -> String {
    let left = 118.0;
    let width: f64 = 900.0;
    let slot_w = ((width - left - 20.0) / t.slots.len().max(1) as f64).clamp(14.0, 120.0);
    let lane_h = 34.0;
    let x = |s: usize| left + slot_w * (s as f64 + 0.5);
    let width = width.max(x(t.slots.len()) + 10.0);
    // Part 1: the server clock lane, then a lane per instance.
    let clock_y = 14.0;
    let calls_top = clock_y + 22.0;
    let lane_y =
        |l: &str| calls_top + lane_h * t.lanes.iter().position(|x| x == l).unwrap_or(0) as f64;
    let calls_bottom = calls_top + lane_h * t.lanes.len() as f64;
    // Part 2: grants in server time.
    // A window's event axis: each step's event index, and the breaking
    // instant's label under it.
    let axis_h = if t.event_axis { 34.0 } else { 0.0 };
    let g_top = calls_bottom + axis_h + 34.0;
    let g_lanes: Vec<&str> = t
        .lanes
        .iter()
        .map(String::as_str)
        .filter(|l| grants.iter().any(|(gl, _)| gl == l))
        .collect();
    let g_bottom = g_top + lane_h * g_lanes.len() as f64;
    let height = if grants.is_empty() {
        calls_bottom + axis_h + 12.0
    } else {
        g_bottom + 30.0
    };
    let mut s = format!(
        "<div class=\"scroll\"><svg class=\"trace\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"{label}\" style=\"max-width:100%;height:auto\">"
    );
    s.push_str(&format!(
        "<text x=\"2\" y=\"{:.1}\" class=\"lbl\">server ms</text>",
        clock_y + 4.0
    ));
    let mut last_ms = None;
    let mut row = 0;
    for (i, slot) in t.slots.iter().enumerate() {
        if slot.server_ms.is_some() && slot.server_ms != last_ms {
            let ms = slot.server_ms.unwrap_or_default();
            // Alternate two heights so that neighbouring times never overlap.
            s.push_str(&format!(
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" class=\"tick\"/><text x=\"{0:.1}\" y=\"{3:.1}\" class=\"ms\">{ms}</text>",
                x(i),
                clock_y + 8.0,
                calls_bottom,
                clock_y + if row % 2 == 0 { 0.0 } else { 10.0 }
            ));
            row += 1;
            last_ms = slot.server_ms;
        }
    }
    if last_ms.is_none() {
        s.push_str(&format!(
            "<text x=\"{left}\" y=\"{:.1}\" class=\"ms\">not recorded per step</text>",
            clock_y + 4.0
        ));
    }
    for l in &t.lanes {
        let y = lane_y(l);
        let skew = t
            .skews
            .get(l)
            .map(|k| {
                format!(
                    "<text x=\"2\" y=\"{:.1}\" class=\"skew\">{}</text>",
                    y + 28.0,
                    skew_text(*k)
                )
            })
            .unwrap_or_default();
        s.push_str(&format!(
            "<line x1=\"0\" x2=\"{width:.0}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"lane\"/><text x=\"2\" y=\"{:.1}\" class=\"name\">instance {}</text>{skew}",
            y + 16.0,
            escape(l)
        ));
    }
    for f in &t.faults {
        let x0 = x(f.from) - slot_w / 2.0;
        let x1 = f.to.map(|e| x(e) + slot_w / 2.0).unwrap_or(width - 4.0);
        let (y0, y1) = match &f.lane {
            Some(l) => (lane_y(l), lane_y(l) + lane_h),
            None => (calls_top, calls_bottom),
        };
        s.push_str(&format!(
            "<g><title>fault {}{}{}</title><rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" class=\"fault\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"faultname\">{}</text></g>",
            escape(&f.name),
            f.lane.as_ref().map(|l| format!(" on {}", escape(l))).unwrap_or_default(),
            escape(&f.detail),
            (x1 - x0).max(2.0),
            y1 - y0,
            x0 + 2.0,
            y1 - 3.0,
            escape(&f.name)
        ));
    }
    for o in &t.ops {
        let y = lane_y(&o.lane) + 5.0;
        let x0 = x(o.from) - slot_w * 0.4;
        let x1 = o.to.map(|e| x(e) + slot_w * 0.4).unwrap_or(width - 4.0);
        let class = match o.end {
            End::Ok => "op ok",
            End::Refused => "op refused",
            End::Unknown => "op unknown",
        };
        let blamed = if o.blamed { " blamed" } else { "" };
        // A window names each operation by its events, as its table does.
        let events = match (t.event_axis, t.slots[o.from].event) {
            (true, Some(e)) => format!(
                "event {e}{}: {} ",
                o.to.and_then(|d| t.slots[d].event)
                    .map(|d| format!("–{d}"))
                    .unwrap_or_default(),
                o.lane
            ),
            _ => String::new(),
        };
        let title = format!(
            "{events}{} {} → {}{}",
            o.name,
            short(&o.args, 80),
            if o.to.is_some() {
                short(&o.answer, 80)
            } else {
                "no answer".into()
            },
            if o.blamed { " (blamed)" } else { "" }
        );
        s.push_str(&format!(
            "<g><title>{}</title><rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"16\" rx=\"3\" class=\"{class}{blamed}\"/>",
            escape(&title),
            (x1 - x0).max(4.0)
        ));
        if o.end == End::Unknown {
            // An unknown outcome may take effect at any later time: the
            // interval stays open to the right edge, an arrow at its end.
            let ly = y + 19.0;
            let (tail, tip) = (x1.min(width - 10.0), width - 4.0);
            s.push_str(&format!(
                "<line x1=\"{tail:.1}\" x2=\"{:.1}\" y1=\"{ly:.1}\" y2=\"{ly:.1}\" class=\"open\"/><polygon points=\"{:.1},{:.1} {tip:.1},{ly:.1} {:.1},{:.1}\" class=\"arrow\"/>",
                tip - 6.0,
                tip - 6.0,
                ly - 3.0,
                tip - 6.0,
                ly + 3.0
            ));
        }
        for (slot, cmd) in &o.commands {
            s.push_str(&format!(
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" class=\"cmd\"/><text x=\"{0:.1}\" y=\"{3:.1}\" class=\"cmdname\">{4}</text>",
                x(*slot),
                y + 11.0,
                y + 16.0,
                y + 26.0,
                escape(verb(cmd))
            ));
        }
        let op = o.name.rsplit('.').next().unwrap_or(&o.name);
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"oplabel{}\">{} → {}</text></g>",
            x0 + 3.0,
            y + 12.0,
            if o.blamed { " blamedlbl" } else { "" },
            escape(op),
            escape(&gist(o))
        ));
    }
    if t.event_axis {
        // Each step's event index; every k-th when crowded (and always the
        // breaking instants), so labels never run into each other.
        let every = (30.0 / slot_w).ceil().max(1.0) as usize;
        let ay = calls_bottom + 12.0;
        s.push_str(&format!(
            "<text x=\"2\" y=\"{ay:.1}\" class=\"ms\">event</text>"
        ));
        for (i, slot) in t.slots.iter().enumerate() {
            let breaking = t.broke.is_some_and(|(b, _)| b == i) || t.more_broke.contains(&i);
            if let Some(e) = slot.event.filter(|_| i % every == 0 || breaking) {
                s.push_str(&format!(
                    "<text x=\"{:.1}\" y=\"{ay:.1}\" class=\"ms\" text-anchor=\"middle\">{e}</text>",
                    x(i)
                ));
            }
        }
    }
    let broke_slots = t
        .broke
        .map(|(b, _)| b)
        .into_iter()
        .chain(t.more_broke.iter().copied());
    for (n, slot) in broke_slots.enumerate() {
        let xb = x(slot) + slot_w * 0.45;
        s.push_str(&format!(
            "<line x1=\"{xb:.1}\" x2=\"{xb:.1}\" y1=\"{calls_top:.1}\" y2=\"{calls_bottom:.1}\" class=\"broke\"/>"
        ));
        // A window labels its first instant under the axis, reading away
        // from the nearer edge so it is never cut.
        if let (true, 0, Some(e)) = (t.event_axis, n, t.slots[slot].event) {
            let anchor = if xb > width / 2.0 { "end" } else { "start" };
            s.push_str(&format!(
                "<text x=\"{xb:.1}\" y=\"{:.1}\" class=\"brokelbl\" text-anchor=\"{anchor}\">{} at event {e}</text>",
                calls_bottom + 27.0,
                escape(t.broke_label.as_deref().unwrap_or("broken"))
            ));
        }
    }
    if !grants.is_empty() {
        let t0 = grants.iter().map(|(_, g)| g.from).min().unwrap_or(0);
        let t1 = grants
            .iter()
            .flat_map(|(_, g)| [Some(g.until), g.promised_until])
            .flatten()
            .chain(t.broke.and_then(|(_, ms)| ms))
            .max()
            .unwrap_or(t0 + 1)
            .max(t0 + 1);
        let span = (t1 - t0) as f64;
        let gx = |ms: i64| left + (ms - t0) as f64 / span * (width - left - 150.0);
        s.push_str(&format!(
            "<text x=\"2\" y=\"{:.1}\" class=\"name\">grants in server time, ms {t0} to {t1}</text>",
            g_top - 10.0
        ));
        for l in &g_lanes {
            let y = g_top + lane_h * g_lanes.iter().position(|x| x == l).unwrap_or(0) as f64;
            s.push_str(&format!(
                "<line x1=\"0\" x2=\"{width:.0}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"lane\"/><text x=\"2\" y=\"{:.1}\" class=\"name\">instance {}</text>",
                y + 16.0,
                escape(l)
            ));
        }
        for (from, until, a, b) in overlaps {
            s.push_str(&format!(
                "<g><title>{} and {} both held the lease from {from} to {until}</title><rect x=\"{:.1}\" y=\"{g_top:.1}\" width=\"{:.1}\" height=\"{:.1}\" class=\"overlap\"/></g>",
                escape(a),
                escape(b),
                gx(*from),
                (gx(*until) - gx(*from)).max(2.0),
                g_bottom - g_top
            ));
        }
        for (lane, g) in grants {
            let y =
                g_top + lane_h * g_lanes.iter().position(|x| x == lane).unwrap_or(0) as f64 + 6.0;
            let (x0, x1) = (gx(g.from), gx(g.end()));
            s.push_str(&format!(
                "<g><title>{} epoch {}: held from {} to {}</title><rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"16\" rx=\"3\" class=\"grant\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"oplabel\">{}epoch {} · {}–{}{}</text></g>",
                escape(lane),
                g.epoch,
                g.from,
                g.until,
                (x1 - x0).max(3.0),
                x0 + 3.0,
                y + 12.0,
                if g.renewal { "renewed " } else { "" },
                g.epoch,
                g.from,
                g.end(),
                match (g.released_at, g.maybe_released_at) {
                    (Some(_), _) => " (released)".to_string(),
                    (None, Some(m)) => format!(" (release at {m} unknown)"),
                    _ => String::new(),
                }
            ));
            if let Some(p) = g.promised_until {
                let xp = gx(p);
                s.push_str(&format!(
                    "<line x1=\"{xp:.1}\" x2=\"{xp:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"promise\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"skew\">promised until {p}</text>",
                    y - 4.0,
                    y + 20.0,
                    xp + 3.0,
                    y + 27.0
                ));
            }
        }
        if let Some((_, Some(ms))) = t.broke {
            let xb = gx(ms);
            s.push_str(&format!(
                "<line x1=\"{xb:.1}\" x2=\"{xb:.1}\" y1=\"{:.1}\" y2=\"{g_bottom:.1}\" class=\"broke\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"brokelbl\">broken at {ms}</text>",
                g_top - 4.0,
                (xb + 4.0).min(width - 150.0),
                g_bottom + 16.0
            ));
        }
    }
    s.push_str("</svg></div>");
    s
}

/// The styles of the drawing (inline in the page's one style sheet).
pub(crate) const STYLE: &str = "svg.trace{min-width:560px}.trace text{font:11px system-ui,sans-serif;fill:#222}.trace .name{font-size:12px;font-weight:600}\
.trace .ms,.trace .skew{font-size:10px;fill:#444}.trace .lane{stroke:#ccc}.trace .tick{stroke:#bbb;stroke-dasharray:2 3}\
.trace .op{stroke-width:1.5}.trace .ok{fill:#cfe3f5;stroke:#2b5d8a}.trace .refused{fill:#e8e8e8;stroke:#555}\
.trace .unknown{fill:#fff;stroke:#6b4fbb;stroke-dasharray:4 3}.trace .cmd{stroke:#1c3d5a;stroke-width:2}\
.trace .cmdname{font-size:9px;fill:#1c3d5a}.trace .grant{fill:#9cc3e6;stroke:#1c3d5a;fill-opacity:.85}\
.trace .overlap{fill:#c00;fill-opacity:.16;stroke:#c00;stroke-dasharray:3 2}.trace .broke{stroke:#c00;stroke-width:2}\
.trace .brokelbl{fill:#a00;font-weight:700}.trace .promise{stroke:#6b4fbb;stroke-width:2;stroke-dasharray:3 2}\
.trace .fault{fill:#f0a030;fill-opacity:.2;stroke:#a05a00;stroke-dasharray:2 2}.trace .faultname{fill:#6b3b00;font-size:10px}\
.trace .blamed{stroke:#c00;stroke-width:2.5}.trace .blamedlbl{fill:#a00;font-weight:700}\
.trace .open{stroke:#6b4fbb;stroke-dasharray:4 3}.trace .arrow{fill:#6b4fbb}";

#[cfg(test)]
mod tests {
    use super::*;

    /// A history read from its report.json shape, as the report reads it.
    fn history(events: Value) -> History {
        serde_json::from_value(json!({ "events": events })).unwrap()
    }
    use serde_json::json;

    fn race() -> Counterexample {
        serde_json::from_value(json!({"kind": "take-race", "race": "two takes of a free tree",
            "a": {"call": {"op": "lease.take", "args": {"holder": "a", "tree": "t", "ttl_ms": 1000}},
                  "answer": {"granted": {"epoch": 1, "expires_at_ms": 5000}}},
            "b": {"call": {"op": "lease.take", "args": {"holder": "b", "tree": "t", "ttl_ms": 1000}},
                  "answer": {"granted": {"epoch": 1, "expires_at_ms": 5000}}},
            "commands": [
                {"instance": "a", "command": "EVALSHA x 1 k 0"},
                {"instance": "b", "command": "EVALSHA x 1 k 0"},
                {"instance": "a", "command": "HSET k holder a"},
                {"instance": "b", "command": "HSET k holder b"}]}))
        .unwrap()
    }

    #[test]
    fn a_take_race_draws_both_grants_and_their_overlap() {
        let t = Trace::of(None, Some(&race())).unwrap();
        assert_eq!(t.lanes, ["a", "b"]);
        assert_eq!(t.slots.len(), 4);
        assert_eq!(
            t.ops[0].commands.iter().map(|c| c.0).collect::<Vec<_>>(),
            [0, 2]
        );
        assert_eq!(t.overlaps(), [(4000, 5000, "a".into(), "b".into())]);
        assert_eq!(t.broke, Some((3, Some(4000))));
        let h = render(&t, "x");
        assert!(
            h.contains("a and b both held the lease from server ms 4000 to 5000"),
            "{h}"
        );
        assert_eq!(h.matches("class=\"grant\"").count(), 2, "{h}");
        assert_eq!(h.matches(">HSET</text>").count(), 2, "{h}");
    }

    #[test]
    fn the_promise_the_text_names_is_the_one_drawn() {
        // The explorer's judge: b asked at 500 with a 1000 ms lease, so it
        // was promised 1500; the store (deciding later) said 2000.
        let events = json!([
            {"index": 0, "instance": "a", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "a", "tree": "t", "ttl_ms": 1000}, "server_ms": 0, "clock_ms": 0},
            {"index": 1, "instance": "a", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 1, "expires_at_ms": 1000}}, "server_ms": 0, "clock_ms": 0},
            {"index": 2, "instance": "b", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "b", "tree": "t", "ttl_ms": 1000}, "server_ms": 500, "clock_ms": 1000},
            {"index": 3, "instance": "b", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 2, "expires_at_ms": 2000}}, "server_ms": 999, "clock_ms": 1000}
        ]);
        let h = history(events);
        let t = Trace::of_history(&on_axis(&h), "schedule").unwrap();
        assert_eq!(t.skews.get("b"), Some(&500));
        let b = t.grants()[1].1.clone();
        assert_eq!((b.from, b.until, b.promised_until), (999, 2000, Some(1500)));
        let h = render(&t, "x");
        assert!(h.contains("promised until 1500</text>"), "{h}");
        assert!(h.contains("epoch 2 · 999–2000</text>"), "{h}");
        assert!(
            h.contains(
                "<td>b</td><td>t</td><td>2</td><td>999</td><td>2000</td><td>—</td><td>1500</td>"
            ),
            "{h}"
        );
        assert!(
            h.contains("a and b both held the lease from server ms 999 to 1000"),
            "{h}"
        );
        assert!(h.contains("b clock +500 ms"), "{h}");
    }

    #[test]
    fn grants_of_two_trees_are_no_overlap_and_a_renewal_is_drawn() {
        let events = json!([
            {"index": 0, "instance": "a", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "a", "tree": "t1", "ttl_ms": 1000}, "server_ms": 0, "clock_ms": 0},
            {"index": 1, "instance": "a", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 1, "expires_at_ms": 1000}}, "server_ms": 0, "clock_ms": 0},
            {"index": 2, "instance": "b", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "b", "tree": "t2", "ttl_ms": 1000}, "server_ms": 10, "clock_ms": 10},
            {"index": 3, "instance": "b", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 1, "expires_at_ms": 1010}}, "server_ms": 10, "clock_ms": 10},
            {"index": 4, "instance": "a", "kind": "invoke", "op": "lease.renew",
             "value": {"holder": "a", "tree": "t1", "epoch": 1, "ttl_ms": 1000}, "server_ms": 500, "clock_ms": 500},
            {"index": 5, "instance": "a", "kind": "ok", "op": "lease.renew",
             "value": {"renewed": {"expires_at_ms": 1500}}, "server_ms": 500, "clock_ms": 500}
        ]);
        let h = history(events);
        let t = Trace::of_history(&on_axis(&h), "history").unwrap();
        assert!(t.overlaps().is_empty(), "{:?}", t.overlaps());
        assert_eq!(t.grants().len(), 3);
        let h = render(&t, "x");
        assert!(h.contains(">renewed epoch 1 · 500–1500</text>"), "{h}");
        assert!(!h.contains("both held"), "{h}");
    }

    #[test]
    fn a_release_ends_the_interval_so_the_next_holder_is_no_overlap() {
        let events = json!([
            {"index": 0, "instance": "a", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "a", "tree": "t", "ttl_ms": 1000}, "server_ms": 0, "clock_ms": 0},
            {"index": 1, "instance": "a", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 1, "expires_at_ms": 1000}}, "server_ms": 0, "clock_ms": 0},
            {"index": 2, "instance": "a", "kind": "invoke", "op": "lease.release",
             "value": {"holder": "a", "tree": "t", "epoch": 1}, "server_ms": 100, "clock_ms": 100},
            {"index": 3, "instance": "a", "kind": "ok", "op": "lease.release",
             "value": {"released": {}}, "server_ms": 100, "clock_ms": 100},
            {"index": 4, "instance": "b", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "b", "tree": "t", "ttl_ms": 1000}, "server_ms": 200, "clock_ms": 200},
            {"index": 5, "instance": "b", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 2, "expires_at_ms": 1200}}, "server_ms": 200, "clock_ms": 200}
        ]);
        let h = history(events);
        let t = Trace::of_history(&on_axis(&h), "history").unwrap();
        assert!(t.overlaps().is_empty(), "{:?}", t.overlaps());
        let h = render(&t, "x");
        assert!(h.contains(">epoch 1 · 0–100 (released)</text>"), "{h}");
    }

    #[test]
    fn an_operation_without_an_answer_is_open_and_a_fault_a_band() {
        let events = json!([
            {"index": 0, "instance": "a", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "a"}, "server_ms": 10, "clock_ms": 10},
            {"index": 1, "instance": "nemesis", "kind": "nemesis", "op": "nemesis.partition",
             "value": {"phase": "start", "fault": {"instance_name": "a"}}, "server_ms": 11, "clock_ms": 11},
            {"index": 2, "instance": "nemesis", "kind": "nemesis", "op": "nemesis.partition",
             "value": {"phase": "end", "fault": {"instance_name": "a"}}, "server_ms": 12, "clock_ms": 12},
            {"index": 3, "instance": "b", "kind": "invoke", "op": "lease.read",
             "value": {}, "server_ms": 12, "clock_ms": 12},
            {"index": 4, "instance": "b", "kind": "info", "op": "lease.read",
             "value": {"kind": "unavailable", "message": "reset"}, "server_ms": 13, "clock_ms": 12}
        ]);
        let h = history(events);
        let t = Trace::of_history(&on_axis(&h), "history").unwrap();
        assert_eq!(t.faults.len(), 1);
        assert_eq!((t.faults[0].from, t.faults[0].to), (1, Some(2)));
        let h = render(&t, "x");
        assert!(h.contains("take → no answer"), "{h}");
        assert!(h.contains("read → unknown"), "{h}");
        assert_eq!(h.matches("class=\"fault\"").count(), 1, "{h}");
        assert_eq!(t.broke, Some((4, Some(13))));
    }

    #[test]
    fn a_window_clips_its_faults_marks_the_blamed_and_every_instant() {
        let ev = |i: usize, who: &str, kind: &str, op: &str, value: Value| {
            json!({"index": i, "instance": who, "kind": kind, "op": op, "value": value,
                   "server_ms": 100 + i as i64, "clock_ms": 100 + i as i64})
        };
        let events = [
            ev(
                10,
                "a",
                "invoke",
                "lease.take",
                json!({"tree": "t", "holder": "a", "ttl_ms": 50}),
            ),
            ev(
                11,
                "a",
                "ok",
                "lease.take",
                json!({"busy": {"holder": "b", "epoch": 1, "expires_at_ms": 200}}),
            ),
            ev(
                12,
                "nemesis",
                "nemesis",
                "nemesis.kill",
                json!({"phase": "start", "fault": {}}),
            ),
            // An event of an operation not drawn: only a step.
            ev(13, "c", "ok", "lease.read", json!({"lease": null})),
            ev(
                15,
                "nemesis",
                "nemesis",
                "nemesis.partition",
                json!({"phase": "end", "fault": {"instance_name": "b"}}),
            ),
        ];
        let faults = [
            WindowFault {
                name: "partition".into(),
                lane: Some("b".into()),
                start: 2,
                end: Some(15),
                ending: "healed".into(),
            },
            WindowFault {
                name: "kill".into(),
                lane: None,
                start: 12,
                end: None,
                ending: String::new(),
            },
        ];
        let h = history(json!(events));
        let axis = on_axis(&h);
        let t = Trace::of_window(&axis, &faults, &[10], &[13, 11], "broken", "w".into()).unwrap();
        assert_eq!(t.lanes, ["a", "b"]);
        assert_eq!(t.ops.len(), 1);
        assert!(t.ops[0].blamed);
        let spans: Vec<_> = t.faults.iter().map(|f| (f.from, f.to)).collect();
        assert_eq!(spans, [(0, Some(4)), (2, None)]);
        assert_eq!(t.broke, Some((1, Some(111))));
        assert_eq!(t.more_broke, [3]);
        let h = render(&t, "x");
        assert!(
            h.contains("w; broken at event 11, server ms 111 (and at event 13)."),
            "{h}"
        );
        assert_eq!(h.matches("class=\"broke\"").count(), 2, "{h}");
        assert!(
            h.contains("fault partition on b (events 2–15): healed"),
            "{h}"
        );
        assert!(h.contains("fault kill (events 12–…)"), "{h}");
        assert!(h.contains("class=\"op ok blamed\""), "{h}");
    }

    #[test]
    fn a_release_of_unknown_outcome_claims_no_overlap_past_its_invocation() {
        let events = json!([
            {"index": 0, "instance": "a", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "a", "tree": "t", "ttl_ms": 1000}, "server_ms": 0, "clock_ms": 0},
            {"index": 1, "instance": "a", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 1, "expires_at_ms": 1000}}, "server_ms": 0, "clock_ms": 0},
            {"index": 2, "instance": "a", "kind": "invoke", "op": "lease.release",
             "value": {"holder": "a", "tree": "t", "epoch": 1}, "server_ms": 100, "clock_ms": 100},
            {"index": 3, "instance": "a", "kind": "info", "op": "lease.release",
             "value": {"kind": "unavailable", "message": "reset"}, "server_ms": 150, "clock_ms": 150},
            {"index": 4, "instance": "b", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "b", "tree": "t", "ttl_ms": 1000}, "server_ms": 200, "clock_ms": 200},
            {"index": 5, "instance": "b", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 2, "expires_at_ms": 1200}}, "server_ms": 200, "clock_ms": 200},
            {"index": 6, "instance": "c", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "c", "tree": "t", "ttl_ms": 1000}, "server_ms": 300, "clock_ms": 300},
            {"index": 7, "instance": "c", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 3, "expires_at_ms": 1300}}, "server_ms": 300, "clock_ms": 300},
            {"index": 8, "instance": "c", "kind": "invoke", "op": "lease.take",
             "value": {"holder": "c", "tree": "t", "ttl_ms": 1000}, "server_ms": 400, "clock_ms": 400},
            {"index": 9, "instance": "c", "kind": "ok", "op": "lease.take",
             "value": {"granted": {"epoch": 4, "expires_at_ms": 1400}}, "server_ms": 400, "clock_ms": 400}
        ]);
        let h = history(events);
        let t = Trace::of_history(&on_axis(&h), "history").unwrap();
        // a may have released at 100: only b and c are claimed, their two
        // touching spans one.
        assert_eq!(t.overlaps(), [(300, 1200, "b".into(), "c".into())]);
        let h = render(&t, "x");
        assert!(
            h.contains(">epoch 1 · 0–1000 (release at 100 unknown)</text>"),
            "{h}"
        );
        assert!(h.contains("<td>unknown (asked at 100)</td>"), "{h}");
        // Caption, its aria-label and the one hatch's tooltip.
        assert_eq!(h.matches("both held").count(), 3, "{h}");
    }
}
