//! Requests: the wire form ([`Call`]) every store receives, and the typed,
//! validated form ([`Request`]) that models and built-in stores work on.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Contract, ErrorKind, StoreError};

/// The longest duration (`ttl_ms`, `claim_ttl_ms`, `window_ms`) a store must
/// accept: one year. Anything longer is `bad_request` — a lease for a century
/// is a bug in the caller, not a lease.
pub const MAX_DURATION_MS: i64 = 365 * 24 * 3_600_000;

/// The largest `limit` a rate-limit call may ask for.
pub const MAX_LIMIT: i64 = 1_000_000;

/// One request as it crosses the wire (docs/PROTOCOL.md §2): an operation name
/// and its arguments, untyped. Stores receive this form so that bad input
/// (wrong types, missing fields) can be sent to them and must be answered with
/// `bad_request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// The wire name, e.g. `lease.take`.
    pub op: String,
    /// The arguments object.
    pub args: Value,
}

/// A typed, validated request. Its serde form is exactly the wire form
/// `{"op": "lease.take", "args": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", deny_unknown_fields)]
pub enum Request {
    /// `lease.take`: take the lease of `tree` for `holder` for `ttl_ms` ms, if
    /// the tree is free, released or expired on server time.
    #[serde(rename = "lease.take")]
    LeaseTake {
        /// The tree whose lease is asked for.
        tree: String,
        /// Who would hold the lease.
        holder: String,
        /// How long the lease lasts, in ms of server time from the grant.
        ttl_ms: i64,
    },
    /// `lease.renew`: extend `holder`'s lease at `epoch` to `ttl_ms` ms from
    /// server now, only while it is still live.
    #[serde(rename = "lease.renew")]
    LeaseRenew {
        /// The tree whose lease is renewed.
        tree: String,
        /// The holder the lease must still name.
        holder: String,
        /// The epoch the holder was granted; it must still be the record's.
        epoch: i64,
        /// The new lifetime, in ms of server time from now.
        ttl_ms: i64,
    },
    /// `lease.release`: give up `holder`'s lease at `epoch`; the tree becomes
    /// free and keeps its epoch.
    #[serde(rename = "lease.release")]
    LeaseRelease {
        /// The tree whose lease is released.
        tree: String,
        /// The holder the record must name.
        holder: String,
        /// The epoch being released; a newer epoch is never touched.
        epoch: i64,
    },
    /// `lease.read`: show the lease record of `tree`, live or not on server time.
    #[serde(rename = "lease.read")]
    LeaseRead {
        /// The tree to read.
        tree: String,
    },
    /// `lease.keep_execution`: keep `execution` for `tree`, in the durable
    /// store (never in Redis).
    #[serde(rename = "lease.keep_execution")]
    LeaseKeepExecution {
        /// The tree the execution belongs to.
        tree: String,
        /// The execution id to keep.
        execution: String,
    },
    /// `lease.kept_executions`: list the execution ids kept for `tree`.
    #[serde(rename = "lease.kept_executions")]
    LeaseKeptExecutions {
        /// The tree whose kept executions are listed.
        tree: String,
    },
    /// `queue.save`: queue `child` at `depth` with its `payload`, unless the
    /// id is already known.
    #[serde(rename = "queue.save")]
    QueueSave {
        /// The child execution's id.
        child: String,
        /// Its depth in the tree; deeper children are claimed first.
        depth: i64,
        /// Opaque data handed back to whoever claims it.
        payload: String,
    },
    /// `queue.claim`: claim the first claimable child in order for `instance`,
    /// for `claim_ttl_ms` ms of server time.
    #[serde(rename = "queue.claim")]
    QueueClaim {
        /// The instance that claims.
        instance: String,
        /// How long the claim lasts, in ms of server time; after that the
        /// child can be claimed again.
        claim_ttl_ms: i64,
    },
    /// `queue.complete`: mark `child` done, if `instance`'s claim at `attempt`
    /// is its current, unexpired claim.
    #[serde(rename = "queue.complete")]
    QueueComplete {
        /// The child being completed.
        child: String,
        /// The instance that claimed it.
        instance: String,
        /// The attempt number `claimed` answered for that claim.
        attempt: i64,
    },
    /// `queue.read`: show the record of `child`.
    #[serde(rename = "queue.read")]
    QueueRead {
        /// The child to read.
        child: String,
    },
    /// `rate.acquire_slot`: take one of `provider`'s `limit` concurrent slots
    /// for `holder`, for `ttl_ms` ms of the instance clock.
    #[serde(rename = "rate.acquire_slot")]
    RateAcquireSlot {
        /// The rate-limited provider.
        provider: String,
        /// Who holds the slot.
        holder: String,
        /// The most slots that may be live at once.
        limit: i64,
        /// How long the slot lasts, in ms of the instance clock, so that a
        /// crashed holder's slot comes back.
        ttl_ms: i64,
    },
    /// `rate.release_slot`: hand back `slot` of `provider`.
    #[serde(rename = "rate.release_slot")]
    RateReleaseSlot {
        /// The provider the slot belongs to.
        provider: String,
        /// The slot id `acquired` answered.
        slot: String,
    },
    /// `rate.hit`: count one call to `provider` if fewer than `limit` were
    /// allowed in the last `window_ms` ms of the instance clock.
    #[serde(rename = "rate.hit")]
    RateHit {
        /// The rate-limited provider.
        provider: String,
        /// The most hits allowed in any window.
        limit: i64,
        /// The sliding window's length, in ms of the instance clock.
        window_ms: i64,
    },
    /// `rate.pause`: pause `provider` until `until_ms`; a pause only
    /// lengthens, never shortens.
    #[serde(rename = "rate.pause")]
    RatePause {
        /// The provider to pause.
        provider: String,
        /// When the pause ends, on the instance clock (ms).
        until_ms: i64,
    },
    /// `rate.read`: show `provider`'s live slots and the pause in force.
    #[serde(rename = "rate.read")]
    RateRead {
        /// The provider to read.
        provider: String,
    },
    /// `effect.apply` (durable stores, docs/PROTOCOL.md §4.5): record `effect`
    /// of `tree` only while `holder` holds the live lease at `epoch`, the lease
    /// read in the write's own transaction; an effect id is recorded at most
    /// once.
    #[serde(rename = "effect.apply")]
    EffectApply {
        /// The tree whose lease fences the effect.
        tree: String,
        /// Who applies it; must hold the live lease.
        holder: String,
        /// The epoch the holder was granted; must still be the live one.
        epoch: i64,
        /// The effect's id, unique per tree.
        effect: String,
        /// What the effect writes.
        payload: String,
    },
    /// `call.begin` (durable stores): record outbound call `call` as begun,
    /// fenced like `effect.apply`; a call id is begun at most once.
    #[serde(rename = "call.begin")]
    CallBegin {
        /// The tree whose lease fences the call.
        tree: String,
        /// Who begins it; must hold the live lease.
        holder: String,
        /// The holder's epoch; must still be the live one.
        epoch: i64,
        /// The call's id.
        call: String,
    },
    /// `call.finish` (durable stores): record the response of a begun call,
    /// while the holder and epoch that began it still hold the live lease.
    #[serde(rename = "call.finish")]
    CallFinish {
        /// The call's id.
        call: String,
        /// The response to record; the first one stands.
        response: String,
    },
}

impl Request {
    /// Parses and validates a wire call. Every failure is a `bad_request`
    /// naming what is wrong, so a store that uses this answers bad input the
    /// way the contract asks.
    pub fn parse(call: &Call) -> Result<Request, StoreError> {
        let wire = serde_json::json!({"op": call.op, "args": call.args});
        let req: Request = serde_json::from_value(wire)
            .map_err(|e| StoreError::new(ErrorKind::BadRequest, format!("{}: {e}", call.op)))?;
        req.validate()?;
        Ok(req)
    }

    /// The wire form of this request.
    pub fn to_call(&self) -> Call {
        // A derived Serialize of this enum cannot fail: every field is a
        // string or an integer.
        let v = serde_json::to_value(self).unwrap_or(Value::Null);
        Call {
            op: v["op"].as_str().unwrap_or_default().to_string(),
            args: v["args"].clone(),
        }
    }

    /// The wire name of the operation.
    pub fn op(&self) -> &'static str {
        match self {
            Request::LeaseTake { .. } => "lease.take",
            Request::LeaseRenew { .. } => "lease.renew",
            Request::LeaseRelease { .. } => "lease.release",
            Request::LeaseRead { .. } => "lease.read",
            Request::LeaseKeepExecution { .. } => "lease.keep_execution",
            Request::LeaseKeptExecutions { .. } => "lease.kept_executions",
            Request::QueueSave { .. } => "queue.save",
            Request::QueueClaim { .. } => "queue.claim",
            Request::QueueComplete { .. } => "queue.complete",
            Request::QueueRead { .. } => "queue.read",
            Request::RateAcquireSlot { .. } => "rate.acquire_slot",
            Request::RateReleaseSlot { .. } => "rate.release_slot",
            Request::RateHit { .. } => "rate.hit",
            Request::RatePause { .. } => "rate.pause",
            Request::RateRead { .. } => "rate.read",
            Request::EffectApply { .. } => "effect.apply",
            Request::CallBegin { .. } => "call.begin",
            Request::CallFinish { .. } => "call.finish",
        }
    }

    /// What the request is about, as a violation names it: `("tree", id)`,
    /// `("child", id)`, `("provider", id)`, and a fenced call's `("call",
    /// id)` beside its tree. A claim names no child (its reply does).
    pub fn subjects(&self) -> Vec<(&'static str, &str)> {
        match self {
            Request::LeaseTake { tree, .. }
            | Request::LeaseRenew { tree, .. }
            | Request::LeaseRelease { tree, .. }
            | Request::LeaseRead { tree }
            | Request::LeaseKeepExecution { tree, .. }
            | Request::LeaseKeptExecutions { tree }
            | Request::EffectApply { tree, .. } => vec![("tree", tree)],
            Request::CallBegin { tree, call, .. } => vec![("tree", tree), ("call", call)],
            Request::CallFinish { call, .. } => vec![("call", call)],
            Request::QueueSave { child, .. }
            | Request::QueueComplete { child, .. }
            | Request::QueueRead { child } => vec![("child", child)],
            Request::QueueClaim { .. } => Vec::new(),
            Request::RateAcquireSlot { provider, .. }
            | Request::RateReleaseSlot { provider, .. }
            | Request::RateHit { provider, .. }
            | Request::RatePause { provider, .. }
            | Request::RateRead { provider } => vec![("provider", provider)],
        }
    }

    /// The contract this operation belongs to.
    pub fn contract(&self) -> Contract {
        Contract::of_op(self.op()).unwrap_or(Contract::Lease)
    }

    /// Whether the request only reads.
    pub fn is_read(&self) -> bool {
        matches!(
            self,
            Request::LeaseRead { .. }
                | Request::LeaseKeptExecutions { .. }
                | Request::QueueRead { .. }
                | Request::RateRead { .. }
        )
    }

    /// Checks the value rules of docs/PROTOCOL.md §4.1: ids non-empty,
    /// durations in `1..=MAX_DURATION_MS`, whole numbers not negative, limits
    /// at least 1.
    pub fn validate(&self) -> Result<(), StoreError> {
        let mut problems = Vec::new();
        let mut id = |name: &str, v: &str| {
            if v.is_empty() {
                problems.push(format!("{name} must be a non-empty string"));
            }
        };
        match self {
            Request::LeaseTake { tree, holder, .. }
            | Request::LeaseRelease { tree, holder, .. } => {
                id("tree", tree);
                id("holder", holder);
            }
            Request::LeaseRenew { tree, holder, .. } => {
                id("tree", tree);
                id("holder", holder);
            }
            Request::LeaseRead { tree } | Request::LeaseKeptExecutions { tree } => id("tree", tree),
            Request::LeaseKeepExecution { tree, execution } => {
                id("tree", tree);
                id("execution", execution);
            }
            Request::QueueSave { child, .. } | Request::QueueRead { child } => id("child", child),
            Request::QueueClaim { instance, .. } => id("instance", instance),
            Request::QueueComplete {
                child, instance, ..
            } => {
                id("child", child);
                id("instance", instance);
            }
            Request::RateAcquireSlot {
                provider, holder, ..
            } => {
                id("provider", provider);
                id("holder", holder);
            }
            Request::RateReleaseSlot { provider, slot } => {
                id("provider", provider);
                id("slot", slot);
            }
            Request::RateHit { provider, .. }
            | Request::RatePause { provider, .. }
            | Request::RateRead { provider } => id("provider", provider),
            Request::EffectApply {
                tree,
                holder,
                effect,
                ..
            } => {
                id("tree", tree);
                id("holder", holder);
                id("effect", effect);
            }
            Request::CallBegin {
                tree, holder, call, ..
            } => {
                id("tree", tree);
                id("holder", holder);
                id("call", call);
            }
            Request::CallFinish { call, .. } => id("call", call),
        }
        let duration = |name: &str, v: i64, problems: &mut Vec<String>| {
            if v <= 0 || v > MAX_DURATION_MS {
                problems.push(format!(
                    "{name} must be a whole number of milliseconds in 1..={MAX_DURATION_MS}, got {v}"
                ));
            }
        };
        let whole = |name: &str, v: i64, problems: &mut Vec<String>| {
            if v < 0 {
                problems.push(format!("{name} must be a whole number, got {v}"));
            }
        };
        let limit = |v: i64, problems: &mut Vec<String>| {
            if !(1..=MAX_LIMIT).contains(&v) {
                problems.push(format!("limit must be in 1..={MAX_LIMIT}, got {v}"));
            }
        };
        match self {
            Request::LeaseTake { ttl_ms, .. } => duration("ttl_ms", *ttl_ms, &mut problems),
            Request::LeaseRenew { ttl_ms, epoch, .. } => {
                duration("ttl_ms", *ttl_ms, &mut problems);
                whole("epoch", *epoch, &mut problems);
            }
            Request::LeaseRelease { epoch, .. } => whole("epoch", *epoch, &mut problems),
            Request::QueueSave { depth, .. } => whole("depth", *depth, &mut problems),
            Request::QueueClaim { claim_ttl_ms, .. } => {
                duration("claim_ttl_ms", *claim_ttl_ms, &mut problems)
            }
            Request::QueueComplete { attempt, .. } => whole("attempt", *attempt, &mut problems),
            Request::RateAcquireSlot {
                limit: l, ttl_ms, ..
            } => {
                limit(*l, &mut problems);
                duration("ttl_ms", *ttl_ms, &mut problems);
            }
            Request::RateHit {
                limit: l,
                window_ms,
                ..
            } => {
                limit(*l, &mut problems);
                duration("window_ms", *window_ms, &mut problems);
            }
            Request::RatePause { until_ms, .. } => whole("until_ms", *until_ms, &mut problems),
            Request::EffectApply { epoch, .. } | Request::CallBegin { epoch, .. } => {
                whole("epoch", *epoch, &mut problems)
            }
            _ => {}
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(StoreError::new(
                ErrorKind::BadRequest,
                format!("{}: {}", self.op(), problems.join("; ")),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(op: &str, args: Value) -> Call {
        Call {
            op: op.into(),
            args,
        }
    }

    #[test]
    fn wire_form_round_trips() {
        let req = Request::LeaseTake {
            tree: "t1".into(),
            holder: "a".into(),
            ttl_ms: 1000,
        };
        let c = req.to_call();
        assert_eq!(c.op, "lease.take");
        assert_eq!(c.args, json!({"tree": "t1", "holder": "a", "ttl_ms": 1000}));
        assert_eq!(Request::parse(&c).unwrap(), req);
    }

    #[test]
    fn bad_input_is_bad_request() {
        let cases = [
            call(
                "lease.take",
                json!({"tree": "", "holder": "a", "ttl_ms": 1}),
            ),
            call(
                "lease.take",
                json!({"tree": "t", "holder": "a", "ttl_ms": 0}),
            ),
            call(
                "lease.take",
                json!({"tree": "t", "holder": "a", "ttl_ms": -5}),
            ),
            call(
                "lease.take",
                json!({"tree": "t", "holder": "a", "ttl_ms": MAX_DURATION_MS + 1}),
            ),
            call(
                "lease.take",
                json!({"tree": "t", "holder": "a", "ttl_ms": "1000"}),
            ),
            call(
                "lease.take",
                json!({"tree": 7, "holder": "a", "ttl_ms": 1000}),
            ),
            call(
                "lease.take",
                json!({"tree": "t", "holder": "a", "ttl_ms": 1.5}),
            ),
            call("lease.take", json!({"tree": "t", "holder": "a"})),
            call("lease.steal", json!({"tree": "t"})),
            call(
                "rate.hit",
                json!({"provider": "p", "limit": 0, "window_ms": 10}),
            ),
            call(
                "queue.save",
                json!({"child": "c", "depth": -1, "payload": ""}),
            ),
        ];
        for c in cases {
            let err = Request::parse(&c).expect_err(&format!("{c:?} must be refused"));
            assert_eq!(err.kind, ErrorKind::BadRequest, "{c:?}");
        }
    }

    #[test]
    fn odd_but_valid_ids_parse() {
        for tree in ["ü→漢", "a:{b}", "*", &"x".repeat(1024)] {
            let c = call("lease.read", json!({ "tree": tree }));
            assert!(Request::parse(&c).is_ok(), "{tree}");
        }
    }
}
