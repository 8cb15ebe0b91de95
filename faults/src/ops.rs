//! A history's operations, each invoke paired with its instance's next
//! completion: what every checker of the fault suite reads.
//!
//! **How a completion ends an operation** ([`answer_of`]). A reply: it
//! happened, as the reply says. `unavailable` (an `info` event), and the
//! harness's own findings `malformed_reply` and `adapter_failed` (recorded
//! as `fail`, but the store may have done the work before its answer went
//! wrong): unknown, it may or may not have taken effect. `unsupported`: the
//! store declined the operation (it does not offer it), so nothing happened
//! and the check about it is not the store's to fail. Any other error: a
//! certain refusal, it did not happen.

use model::contract::{ErrorKind, Reply, Request};
use model::{Happened, History};

/// What a completion event says of its operation (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer<'a> {
    /// The store answered this reply.
    Reply(&'a Reply),
    /// The store refused for certain: it did not happen.
    Refused,
    /// The store does not offer the operation: it did not happen.
    Declined,
    /// It may or may not have happened.
    Unknown,
}

/// How the completion `what` ends its operation; `None` for an invoke or a
/// nemesis event (no completion).
pub(crate) fn answer_of(what: &Happened) -> Option<Answer<'_>> {
    match what {
        Happened::Invoke(_) | Happened::Nemesis { .. } => None,
        Happened::Ok { reply, .. } => Some(Answer::Reply(reply)),
        Happened::Info { .. } => Some(Answer::Unknown),
        Happened::Fail { error, .. } => Some(match error.kind {
            // The harness's findings, not the store's refusal: the store
            // may have applied the operation before its answer went wrong.
            ErrorKind::MalformedReply | ErrorKind::AdapterFailed => Answer::Unknown,
            ErrorKind::Unsupported => Answer::Declined,
            _ => Answer::Refused,
        }),
    }
}

/// How an operation ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum End<'a> {
    /// The store answered this reply (at this completion event).
    Reply(usize, &'a Reply),
    /// The store refused it for certain: it did not happen.
    Refused,
    /// The store declined it (`unsupported`): it did not happen.
    Declined,
    /// Unknown: `info`, a malformed reply, or no completion at all (it may
    /// or may not have happened).
    Unknown,
}

/// One operation: its invoke event, the instance clock it was sent with,
/// the request, and how it ended.
pub(crate) struct Op<'a> {
    pub(crate) invoke: usize,
    pub(crate) clock_ms: i64,
    pub(crate) request: Request,
    pub(crate) end: End<'a>,
}

impl Op<'_> {
    /// The completion event, or `usize::MAX` when it never completed.
    pub(crate) fn completed_at(&self) -> usize {
        match self.end {
            End::Reply(at, _) => at,
            _ => usize::MAX,
        }
    }

    /// The store's reply, when it answered one.
    pub(crate) fn reply(&self) -> Option<&Reply> {
        match self.end {
            End::Reply(_, r) => Some(r),
            _ => None,
        }
    }
}

/// The operations of `history` that parse and whose request `keep` accepts,
/// each paired with its completion by the one pairing
/// ([`History::operations`]: a later invoke of the same instance ends the
/// pairing of an earlier one, whose completion, if any, is lost).
pub(crate) fn operations<'a>(history: &'a History, keep: impl Fn(&Request) -> bool) -> Vec<Op<'a>> {
    history
        .operations()
        .into_iter()
        .filter_map(|o| {
            let request = Request::parse(o.call).ok().filter(|r| keep(r))?;
            Some(Op {
                invoke: o.invoke.index,
                clock_ms: o.invoke.clock_ms,
                request,
                end: ended(&o),
            })
        })
        .collect()
}

/// How the paired operation `o` ended: its completion's end, or unknown
/// when it never completed.
pub(crate) fn ended<'a>(o: &model::history::Operation<'a>) -> End<'a> {
    o.completion
        .map_or(End::Unknown, |c| end_of(c.index, &c.what))
}

/// How the completion `what` at event `at` ends its operation.
pub(crate) fn end_of(at: usize, what: &Happened) -> End<'_> {
    match answer_of(what) {
        Some(Answer::Reply(reply)) => End::Reply(at, reply),
        Some(Answer::Refused) => End::Refused,
        Some(Answer::Declined) => End::Declined,
        Some(Answer::Unknown) | None => End::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::contract::{Call, Reply};
    use model::{NemesisNote, NemesisPhase};
    use serde_json::json;

    #[test]
    fn a_nemesis_event_never_completes_an_operation() {
        let mut h = History::default();
        let take = Call {
            op: "lease.take".into(),
            args: json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
        };
        h.invoke("a", &take, Some(0), 0);
        // Even under the store instance's own name, a nemesis event is no
        // completion: the take stays in flight until its reply.
        let note = NemesisNote {
            phase: NemesisPhase::End,
            fault: json!({}),
            ending: Some("healed".into()),
        };
        h.nemesis("a", "nemesis.partition", note, Some(1), 1);
        let granted = Reply::Granted {
            epoch: 1,
            expires_at_ms: 1000,
        };
        h.complete("a", "lease.take", &Ok(granted.clone()), Some(2), 2);
        let ops = operations(&h, |_| true);
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].completed_at(), 2);
        assert_eq!(ops[0].reply(), Some(&granted));
    }

    #[test]
    fn a_malformed_reply_is_unknown_and_unsupported_is_declined() {
        let take = Call {
            op: "lease.take".into(),
            args: json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
        };
        let ended = |kind: ErrorKind| {
            let mut h = History::default();
            h.invoke("a", &take, Some(0), 0);
            let e = model::contract::StoreError::new(kind, "x");
            h.complete("a", "lease.take", &Err(e), Some(1), 1);
            let ops = operations(&h, |_| true);
            format!("{:?}", ops[0].end)
        };
        assert_eq!(ended(ErrorKind::MalformedReply), "Unknown");
        assert_eq!(ended(ErrorKind::AdapterFailed), "Unknown");
        assert_eq!(ended(ErrorKind::Unsupported), "Declined");
        assert_eq!(ended(ErrorKind::BadRequest), "Refused");
    }
}
