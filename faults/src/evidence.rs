//! Which faults met which operations: the evidence a fault check needs
//! before it may be decided (a check whose faults met none of its
//! operations judged a history of the store without faults).
//!
//! **Played.** Each fault the nemeses applied is a start and an end event
//! ([`crate::nemesis`]); the start's note says at which boundary it played
//! (`at`: `gate`, between the instances and the Redis server, or `call`,
//! at the call boundary of an in-process store) and the end how it ended.
//! A one-shot fault that found no command is *disarmed*: it met nothing.
//!
//! **Met.** A fault met an operation when the operation was in flight at
//! the fault's instance (any instance, for a server fault) between the
//! fault's start and end events, and the operation's commands pass the
//! fault's boundary (a lease store without a Redis wire is not behind the
//! gate; only its calls are behind the call boundary). For a fired lost
//! reply, drop or reset, the operations it made unknown are the ones it
//! met (the instance's other operations of that window went by); when none
//! ended unknown, every operation in flight then is counted.
//! The drain's operations never count: it runs after the faults, on a
//! direct connection.

use std::collections::BTreeMap;

use model::contract::Request;
use model::{Happened, History, NemesisPhase};
use serde::{Deserialize, Serialize};

use crate::nemesis::{Ending, FaultKind};
use crate::ops::{operations, End};
use crate::workload::DRAIN;

/// The boundary a fault played at, as its start note's `at` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// Between an instance (its gate) and the Redis server.
    Gate,
    /// At the call boundary of an in-process store.
    Call,
}

impl Boundary {
    /// `gate` or `call`.
    pub fn name(self) -> &'static str {
        match self {
            Boundary::Gate => "gate",
            Boundary::Call => "call",
        }
    }
}

/// One fault a nemesis applied, read back from the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Played {
    /// Its kind.
    pub kind: FaultKind,
    /// Where it played.
    pub at: Boundary,
    /// The instance it targeted (by name), if it targeted one.
    pub instance: Option<String>,
    /// Its start event.
    pub start: usize,
    /// Its end event (`usize::MAX` when it never ended).
    pub end: usize,
    /// How it ended; `None` when it could not be applied (or never ended).
    pub ended: Option<Ending>,
}

/// How the faults of one kind met one check's operations (the figures'
/// type: met, missed, disarmed).
pub use model::figures::FaultMeeting as Meeting;

/// The faults of `history`, in the order they started.
pub fn played(history: &History) -> Vec<Played> {
    let mut out: Vec<Played> = Vec::new();
    // One nemesis per boundary applies one fault at a time.
    let mut open: BTreeMap<&'static str, usize> = BTreeMap::new();
    for e in &history.events {
        let Happened::Nemesis { op, note } = &e.what else {
            continue;
        };
        let name = op.strip_prefix("nemesis.").unwrap_or(op);
        let Some(kind) = FaultKind::ALL.into_iter().find(|k| k.name() == name) else {
            continue;
        };
        let at = match note.fault.get("at").and_then(|v| v.as_str()) {
            Some("call") => Boundary::Call,
            _ => Boundary::Gate,
        };
        match note.phase {
            NemesisPhase::Start => {
                open.insert(at.name(), out.len());
                out.push(Played {
                    kind,
                    at,
                    instance: note
                        .fault
                        .get("instance_name")
                        .and_then(|v| v.as_str())
                        .map(str::to_string),
                    start: e.index,
                    end: usize::MAX,
                    ended: None,
                });
            }
            NemesisPhase::End => {
                let Some(i) = open.remove(at.name()) else {
                    continue;
                };
                out[i].end = e.index;
                out[i].ended = note.ending.as_deref().and_then(Ending::read);
            }
        }
    }
    out
}

/// Per fault kind, how the faults of `history` met the operations `about`
/// accepts; `behind(request, boundary)`: whether that operation's commands
/// pass that boundary (see the [module docs](self)).
pub fn meetings(
    history: &History,
    about: impl Fn(&Request) -> bool,
    behind: impl Fn(&Request, Boundary) -> bool,
) -> BTreeMap<String, Meeting> {
    let ops = operations(history, |_| true);
    let mut out: BTreeMap<String, Meeting> = BTreeMap::new();
    for fault in played(history) {
        let m = out.entry(fault.kind.name().to_string()).or_default();
        match fault.ended {
            Some(Ending::Disarmed) => {
                m.disarmed += 1;
                continue;
            }
            // Not applied: it met nothing (the nemesis's trouble says so).
            None => continue,
            Some(_) => {}
        }
        let in_window: Vec<_> = ops
            .iter()
            .filter(|op| {
                let who = history.events[op.invoke].instance.as_str();
                who != DRAIN
                    && fault.instance.as_deref().is_none_or(|i| i == who)
                    && op.invoke < fault.end
                    && op.completed_at() > fault.start
                    && behind(&op.request, fault.at)
            })
            .collect();
        let one_shot_unknown = matches!(
            fault.kind,
            FaultKind::LoseReplyAfterApply
                | FaultKind::DropBeforeApply
                | FaultKind::ResetConnection
        );
        let made_unknown: Vec<_> = in_window
            .iter()
            .filter(|op| matches!(op.end, End::Unknown))
            .collect();
        let hit = if one_shot_unknown && !made_unknown.is_empty() {
            made_unknown.iter().any(|op| about(&op.request))
        } else {
            in_window.iter().any(|op| about(&op.request))
        };
        if hit {
            m.met += 1;
        } else {
            m.missed += 1;
        }
    }
    out
}

/// The instances that did not answer again once every fault had ended:
/// each with how many of its operations `about` accepts it sent after the
/// last fault's end event, every one ending unknown. An instance that sent
/// none is not listed (nothing shows it either way); the drain never is.
pub fn not_recovered(history: &History, about: impl Fn(&Request) -> bool) -> Vec<(String, usize)> {
    let faults = played(history);
    let Some(healed) = faults.iter().map(|f| f.end).max() else {
        return Vec::new();
    };
    if healed == usize::MAX {
        return Vec::new();
    }
    // instance → (sent after, answered).
    let mut after: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for op in operations(history, |r| about(r)) {
        let who = history.events[op.invoke].instance.as_str();
        if op.invoke < healed || who == DRAIN {
            continue;
        }
        let e = after.entry(who).or_default();
        e.0 += 1;
        if !matches!(op.end, End::Unknown) {
            e.1 += 1;
        }
    }
    after
        .into_iter()
        .filter(|(_, (sent, answered))| *sent > 0 && *answered == 0)
        .map(|(who, (sent, _))| (who.to_string(), sent))
        .collect()
}

/// How many faults met an operation, over every kind.
pub fn met(meetings: &BTreeMap<String, Meeting>) -> usize {
    meetings.values().map(|m| m.met).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::contract::{Call, ErrorKind, Reply, StoreError};
    use model::NemesisNote;
    use serde_json::json;

    fn fault(h: &mut History, op: &str, fault: serde_json::Value, ending: Option<&str>) {
        let (phase, ending) = match ending {
            None => (NemesisPhase::Start, None),
            Some(e) => (NemesisPhase::End, Some(format!("{op} {e}"))),
        };
        let note = NemesisNote {
            phase,
            fault,
            ending,
        };
        h.nemesis("nemesis", op, note, None, 0);
    }

    fn call(h: &mut History, who: &str, op: &str, args: serde_json::Value) {
        let call = Call {
            op: op.into(),
            args,
        };
        h.invoke(who, &call, None, 0);
    }

    fn lost(h: &mut History, who: &str, op: &str) {
        let e = StoreError::new(ErrorKind::Unavailable, "reply lost");
        h.complete(who, op, &Err(e), None, 0);
    }

    fn is_queue(r: &Request) -> bool {
        r.op().starts_with("queue.")
    }

    fn everywhere(_: &Request, _: Boundary) -> bool {
        true
    }

    #[test]
    fn a_disarmed_fault_meets_nothing_and_a_fired_one_meets_the_operation_it_made_unknown() {
        let mut h = History::default();
        let lose = json!({"instance": 0, "instance_name": "a", "at": "gate"});
        // Disarmed: no command came.
        fault(&mut h, "nemesis.lose_reply_after_apply", lose.clone(), None);
        fault(
            &mut h,
            "nemesis.lose_reply_after_apply",
            lose.clone(),
            Some(Ending::Disarmed.describe()),
        );
        let m = meetings(&h, is_queue, everywhere);
        assert_eq!(
            m["lose_reply_after_apply"],
            Meeting {
                met: 0,
                missed: 0,
                disarmed: 1
            }
        );

        // Fired on a's save while a's lease read went by.
        call(&mut h, "a", "lease.read", json!({"tree": "t"}));
        fault(&mut h, "nemesis.lose_reply_after_apply", lose.clone(), None);
        let read = Reply::Lease(None);
        h.complete("a", "lease.read", &Ok(read), None, 0);
        call(
            &mut h,
            "a",
            "queue.save",
            json!({"child": "c", "depth": 0, "payload": "p"}),
        );
        lost(&mut h, "a", "queue.save");
        fault(
            &mut h,
            "nemesis.lose_reply_after_apply",
            lose,
            Some(Ending::Fired.describe()),
        );
        let m = meetings(&h, is_queue, everywhere);
        assert_eq!(
            m["lose_reply_after_apply"],
            Meeting {
                met: 1,
                missed: 0,
                disarmed: 1
            }
        );
        // The lease read is not what it met.
        let m = meetings(&h, |r| r.op().starts_with("lease."), everywhere);
        assert_eq!(m["lose_reply_after_apply"].met, 0);
        assert_eq!(m["lose_reply_after_apply"].missed, 1);
    }

    #[test]
    fn an_instance_whose_every_operation_after_the_faults_ended_unknown_did_not_recover() {
        let mut h = History::default();
        let reset = json!({"instance": 0, "instance_name": "a", "at": "gate"});
        fault(&mut h, "nemesis.reset_connection", reset.clone(), None);
        call(&mut h, "a", "queue.read", json!({"child": "c"}));
        lost(&mut h, "a", "queue.read");
        fault(
            &mut h,
            "nemesis.reset_connection",
            reset,
            Some(Ending::Fired.describe()),
        );
        // Before the faults ended: not judged here.
        assert!(not_recovered(&h, is_queue).is_empty());
        for _ in 0..3 {
            call(&mut h, "a", "queue.read", json!({"child": "c"}));
            lost(&mut h, "a", "queue.read");
        }
        call(&mut h, "b", "queue.read", json!({"child": "c"}));
        h.complete("b", "queue.read", &Ok(Reply::Child(None)), None, 0);
        assert_eq!(not_recovered(&h, is_queue), vec![("a".to_string(), 3)]);
        // Once a answers, it recovered.
        call(&mut h, "a", "queue.read", json!({"child": "c"}));
        h.complete("a", "queue.read", &Ok(Reply::Child(None)), None, 0);
        assert!(not_recovered(&h, is_queue).is_empty());
    }

    #[test]
    fn a_fault_meets_only_operations_behind_its_boundary_and_never_the_drain() {
        let mut h = History::default();
        let part = json!({"instance": 0, "instance_name": "a", "for_ms": 50, "at": "gate"});
        fault(&mut h, "nemesis.partition", part.clone(), None);
        call(
            &mut h,
            "a",
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 100}),
        );
        lost(&mut h, "a", "lease.take");
        call(
            &mut h,
            DRAIN,
            "queue.claim",
            json!({"instance": DRAIN, "claim_ttl_ms": 100}),
        );
        h.complete(DRAIN, "queue.claim", &Ok(Reply::Empty {}), None, 0);
        fault(
            &mut h,
            "nemesis.partition",
            part,
            Some(Ending::Healed.describe()),
        );
        // The drain's claim is no meeting of the queue.
        let m = meetings(&h, is_queue, everywhere);
        assert_eq!(
            m["partition"],
            Meeting {
                met: 0,
                missed: 1,
                disarmed: 0
            }
        );
        // A lease store not behind the gate: the partition met nothing of it.
        let lease = |r: &Request| r.op().starts_with("lease.");
        let not_behind =
            |r: &Request, b: Boundary| !(r.op().starts_with("lease.") && b == Boundary::Gate);
        assert_eq!(meetings(&h, lease, not_behind)["partition"].met, 0);
        assert_eq!(meetings(&h, lease, everywhere)["partition"].met, 1);
    }
}
