//! Conformance scenarios: a check written as plain data — steps of time and
//! calls — that the runner plays against a store while the sequential model
//! judges every reply. Scenarios are schedules: serialisable, replayable.

use serde_json::{json, Value};

use harness::contract::{Call, Contract, Request};

/// A year in milliseconds, for clocks "decades off".
pub const YEAR_MS: i64 = 365 * 24 * 3_600_000;

pub use model::scenario::{EpochRef, Patch, Step};

/// Whether a scenario needs the server clock under control: it touches lease
/// or queue (decided on server time) and moves time to exact instants.
pub fn needs_server_clock(steps: &[Step]) -> bool {
    // Without moves of time, a server's own clock is good enough: the judge
    // reads it before and after each call (see the runner).
    let moves_time = steps.iter().any(|s| matches!(s, Step::At(ms) if *ms != 0));
    moves_time
        && steps
            .iter()
            .any(|s| matches!(s.contract(), Some(Contract::Lease) | Some(Contract::Queue)))
}

fn call(instance: &str, request: Request, patch: Option<Patch>) -> Step {
    Step::Call {
        instance: instance.into(),
        request,
        skew_ms: 0,
        patch,
    }
}

/// Move time to `ms` after the start.
pub fn at(ms: i64) -> Step {
    Step::At(ms)
}

/// `lease.take` by `holder` (also the instance name).
pub fn take(holder: &str, tree: &str, ttl_ms: i64) -> Step {
    take_as(holder, tree, holder, ttl_ms)
}

/// `lease.take` from `instance` naming another holder id.
pub fn take_as(instance: &str, tree: &str, holder: &str, ttl_ms: i64) -> Step {
    call(
        instance,
        Request::LeaseTake {
            tree: tree.into(),
            holder: holder.into(),
            ttl_ms,
        },
        None,
    )
}

/// `lease.renew` naming the epoch of the tree's `grant`-th grant (+ `plus`).
pub fn renew(holder: &str, tree: &str, grant: usize, plus: i64, ttl_ms: i64) -> Step {
    call(
        holder,
        Request::LeaseRenew {
            tree: tree.into(),
            holder: holder.into(),
            epoch: 0,
            ttl_ms,
        },
        Some(Patch::Epoch(EpochRef { grant, plus })),
    )
}

/// `lease.release` naming the epoch of the tree's `grant`-th grant (+ `plus`).
pub fn release(holder: &str, tree: &str, grant: usize, plus: i64) -> Step {
    call(
        holder,
        Request::LeaseRelease {
            tree: tree.into(),
            holder: holder.into(),
            epoch: 0,
        },
        Some(Patch::Epoch(EpochRef { grant, plus })),
    )
}

/// `lease.renew` naming a literal epoch (for trees the store never granted).
pub fn renew_literal(holder: &str, tree: &str, epoch: i64, ttl_ms: i64) -> Step {
    call(
        holder,
        Request::LeaseRenew {
            tree: tree.into(),
            holder: holder.into(),
            epoch,
            ttl_ms,
        },
        None,
    )
}

/// `lease.release` naming a literal epoch (for trees the store never granted).
pub fn release_literal(holder: &str, tree: &str, epoch: i64) -> Step {
    call(
        holder,
        Request::LeaseRelease {
            tree: tree.into(),
            holder: holder.into(),
            epoch,
        },
        None,
    )
}

/// `effect.apply` by `holder` naming the epoch of the tree's `grant`-th
/// grant (+ `plus`).
pub fn apply(holder: &str, tree: &str, grant: usize, plus: i64, effect: &str) -> Step {
    call(
        holder,
        Request::EffectApply {
            tree: tree.into(),
            holder: holder.into(),
            epoch: 0,
            effect: effect.into(),
            payload: format!("{holder}:{effect}"),
        },
        Some(Patch::Epoch(EpochRef { grant, plus })),
    )
}

/// `effect.apply` naming a literal epoch (for trees the store never granted).
pub fn apply_literal(holder: &str, tree: &str, epoch: i64, effect: &str) -> Step {
    call(
        holder,
        Request::EffectApply {
            tree: tree.into(),
            holder: holder.into(),
            epoch,
            effect: effect.into(),
            payload: format!("{holder}:{effect}"),
        },
        None,
    )
}

/// `call.begin` by `holder` naming the epoch of the tree's `grant`-th grant
/// (+ `plus`).
pub fn begin(holder: &str, tree: &str, grant: usize, plus: i64, call_id: &str) -> Step {
    call(
        holder,
        Request::CallBegin {
            tree: tree.into(),
            holder: holder.into(),
            epoch: 0,
            call: call_id.into(),
        },
        Some(Patch::Epoch(EpochRef { grant, plus })),
    )
}

/// `call.finish` from `instance`.
pub fn finish(instance: &str, call_id: &str, response: &str) -> Step {
    call(
        instance,
        Request::CallFinish {
            call: call_id.into(),
            response: response.into(),
        },
        None,
    )
}

/// `lease.read`.
pub fn read(instance: &str, tree: &str) -> Step {
    call(instance, Request::LeaseRead { tree: tree.into() }, None)
}

/// `lease.keep_execution`.
pub fn keep(instance: &str, tree: &str, execution: &str) -> Step {
    call(
        instance,
        Request::LeaseKeepExecution {
            tree: tree.into(),
            execution: execution.into(),
        },
        None,
    )
}

/// `lease.kept_executions`.
pub fn kept(instance: &str, tree: &str) -> Step {
    call(
        instance,
        Request::LeaseKeptExecutions { tree: tree.into() },
        None,
    )
}

/// `queue.save`.
pub fn save(instance: &str, child: &str, depth: i64, payload: &str) -> Step {
    call(
        instance,
        Request::QueueSave {
            child: child.into(),
            depth,
            payload: payload.into(),
        },
        None,
    )
}

/// `queue.claim` by `instance`.
pub fn claim(instance: &str, claim_ttl_ms: i64) -> Step {
    call(
        instance,
        Request::QueueClaim {
            instance: instance.into(),
            claim_ttl_ms,
        },
        None,
    )
}

/// `queue.complete` by `instance`.
pub fn complete(instance: &str, child: &str, attempt: i64) -> Step {
    call(
        instance,
        Request::QueueComplete {
            child: child.into(),
            instance: instance.into(),
            attempt,
        },
        None,
    )
}

/// `queue.read`.
pub fn qread(instance: &str, child: &str) -> Step {
    call(
        instance,
        Request::QueueRead {
            child: child.into(),
        },
        None,
    )
}

/// `rate.acquire_slot` by `holder` (also the instance name).
pub fn acquire(holder: &str, provider: &str, limit: i64, ttl_ms: i64) -> Step {
    acquire_as(holder, provider, holder, limit, ttl_ms)
}

/// `rate.acquire_slot` from `instance` naming another holder id.
pub fn acquire_as(instance: &str, provider: &str, holder: &str, limit: i64, ttl_ms: i64) -> Step {
    call(
        instance,
        Request::RateAcquireSlot {
            provider: provider.into(),
            holder: holder.into(),
            limit,
            ttl_ms,
        },
        None,
    )
}

/// `rate.release_slot` of the provider's `k`-th acquired slot.
pub fn release_slot(instance: &str, provider: &str, k: usize) -> Step {
    call(
        instance,
        Request::RateReleaseSlot {
            provider: provider.into(),
            slot: String::new(),
        },
        Some(Patch::Slot(k)),
    )
}

/// `rate.release_slot` of a slot id the store never gave.
pub fn release_unknown_slot(instance: &str, provider: &str, slot: &str) -> Step {
    call(
        instance,
        Request::RateReleaseSlot {
            provider: provider.into(),
            slot: slot.into(),
        },
        None,
    )
}

/// `rate.hit`.
pub fn hit(instance: &str, provider: &str, limit: i64, window_ms: i64) -> Step {
    call(
        instance,
        Request::RateHit {
            provider: provider.into(),
            limit,
            window_ms,
        },
        None,
    )
}

/// `rate.pause` until `until_from_start` ms after the scenario's start.
pub fn pause(instance: &str, provider: &str, until_from_start: i64) -> Step {
    call(
        instance,
        Request::RatePause {
            provider: provider.into(),
            until_ms: 0,
        },
        Some(Patch::UntilFromStart(until_from_start)),
    )
}

/// `rate.read`.
pub fn rread(instance: &str, provider: &str) -> Step {
    call(
        instance,
        Request::RateRead {
            provider: provider.into(),
        },
        None,
    )
}

/// A raw call that must be refused with `bad_request`.
pub fn raw(instance: &str, op: &str, args: Value) -> Step {
    Step::Raw {
        instance: instance.into(),
        call: Call {
            op: op.into(),
            args,
        },
    }
}

/// The bad-input family of one operation: each field emptied, given the wrong
/// type, or removed, and each duration 0, negative and too large.
pub fn bad_inputs(instance: &str, op: &str, good: Value) -> Vec<Step> {
    let mut steps = Vec::new();
    let Some(fields) = good.as_object() else {
        return steps;
    };
    for (name, value) in fields {
        let mut with = |v: Value| {
            let mut args = good.clone();
            args[name] = v;
            steps.push(raw(instance, op, args));
        };
        if value.is_string() {
            // Every string argument is an id except the payload and a
            // call's response, which may be empty.
            if name != "payload" && name != "response" {
                with(json!(""));
            }
            with(json!(17));
        } else {
            with(json!(value.to_string()));
            with(json!(1.5));
            with(Value::Null);
        }
        if name.ends_with("_ms") && name != "until_ms" {
            with(json!(0));
            with(json!(-1));
            with(json!(harness::contract::MAX_DURATION_MS + 1));
        }
        let mut missing = good.clone();
        if let Some(o) = missing.as_object_mut() {
            o.remove(name);
        }
        steps.push(raw(instance, op, missing));
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_input_really_is_bad() {
        let steps = bad_inputs(
            "a",
            "lease.take",
            json!({"tree": "t", "holder": "a", "ttl_ms": 1000}),
        );
        assert!(steps.len() >= 12);
        for s in steps {
            let Step::Raw { call, .. } = &s else {
                panic!("not raw")
            };
            assert!(Request::parse(call).is_err(), "{call:?} parses");
        }
    }

    #[test]
    fn lease_scenarios_need_the_server_clock_and_rate_ones_do_not() {
        assert!(needs_server_clock(&[take("a", "t", 1), at(5)]));
        assert!(!needs_server_clock(&[take("a", "t", 1)]));
        assert!(!needs_server_clock(&[at(5), hit("a", "p", 1, 10)]));
    }
}
