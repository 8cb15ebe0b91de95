use std::sync::Mutex;
use std::time::Instant;

use harness::contract::{Call, ErrorKind, Reply, StoreError};
use harness::figures::WorkloadFigures;
use harness::{History, Verdict};
use serde_json::json;

use crate::evidence::Boundary;
use crate::fencing::DurableEnd;
use crate::nemesis::Ending;
use crate::workload::{self, EndState, LayoutKind, WorkloadOptions};

use super::verdicts::figures_of;
use super::*;

/// Issue 20, item 3: every check the suite declares has its typed
/// identity (its role, operations and checker follow from the
/// variant), and an id it does not declare has none: judged `unknown`,
/// never silently as the rate bounds.
#[test]
fn every_declared_check_is_a_variant_and_no_other_id_is() {
    let suite = FaultsSuite::new(FaultsConfig::default());
    for spec in harness::Suite::checks(&suite) {
        let check = FaultCheck::of(spec.id).unwrap_or_else(|| panic!("{}", spec.id));
        if let FaultCheck::Workload(w) = check {
            assert_eq!(w.spec().id, spec.id);
        }
    }
    assert_eq!(FaultCheck::of("faults.rate-bounds-2"), None);
    assert_eq!(FaultCheck::of(""), None);
    assert_eq!(
        FaultCheck::of(RATE_BOUNDS.id),
        Some(FaultCheck::Workload(WorkloadCheck::RateBounds))
    );
}

fn run_with(history: History) -> WorkloadRun {
    WorkloadRun {
        options: WorkloadOptions::new(LayoutKind::Coordination, 1, 1),
        roles: Roles {
            lease: Player::Subject,
            queue: Player::Subject,
            rate: Player::Subject,
        },
        plans: Vec::new(),
        nemesis_trouble: None,
        history,
        end: EndState {
            saved: Default::default(),
            effects: Default::default(),
            drained: Ok(()),
        },
        durable: DurableEnd::default(),
        lease_off_wire: false,
        route_trouble: None,
        figures: WorkloadFigures::default(),
    }
}

fn take(h: &mut History, outcome: Result<Reply, StoreError>) {
    take_as(h, "a", outcome);
}

fn take_as(h: &mut History, who: &str, outcome: Result<Reply, StoreError>) {
    let call = Call {
        op: "lease.take".into(),
        args: json!({"tree": "t", "holder": who, "ttl_ms": 100}),
    };
    h.invoke(who, &call, Some(0), 0);
    h.complete(who, "lease.take", &outcome, Some(1), 1);
}

/// A partition of instance `a` around what `inside` records.
fn partitioned(h: &mut History, inside: impl FnOnce(&mut History)) {
    let fault = crate::nemesis::Fault::Partition {
        instance: 0,
        for_ms: 10,
    };
    let history = Mutex::new(std::mem::take(h));
    crate::nemesis::record_start(&history, &fault, Boundary::Gate, None, 0);
    let mut inner = history.into_inner().unwrap_or_else(|p| p.into_inner());
    inside(&mut inner);
    let history = Mutex::new(inner);
    crate::nemesis::record_end::<String>(
        &history,
        &fault,
        Boundary::Gate,
        &Ok(Ending::Healed),
        None,
        0,
    );
    *h = history.into_inner().unwrap_or_else(|p| p.into_inner());
}

fn granted() -> Reply {
    Reply::Granted {
        epoch: 1,
        expires_at_ms: 100,
    }
}

#[test]
fn a_check_whose_faults_met_none_of_its_operations_is_unknown() {
    // The take was answered, but no fault met it.
    let mut h = History::default();
    take(&mut h, Ok(granted()));
    let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
    assert_eq!(judged.verdict, Verdict::Unknown, "{}", judged.reason);
    assert!(
        judged.reason.contains("none of the faults played met"),
        "{}",
        judged.reason
    );
    // A partition of `a` while its take was in flight: decided.
    let mut h = History::default();
    partitioned(&mut h, |h| take(h, Ok(granted())));
    let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
    assert_eq!(judged.verdict, Verdict::Pass, "{}", judged.reason);
    assert!(judged.reason.contains("partition ×1"), "{}", judged.reason);
    // A partition of `a` while only b worked: not decided.
    let mut h = History::default();
    partitioned(&mut h, |h| take_as(h, "b", Ok(granted())));
    assert_eq!(
        judge(WorkloadCheck::Linearizable, &[run_with(h)]).verdict,
        Verdict::Unknown
    );
}

#[test]
fn a_store_that_never_answers_again_after_the_faults_healed_fails_when_the_route_answers() {
    let unavailable = || Err(StoreError::new(ErrorKind::Unavailable, "connection reset"));
    let mut h = History::default();
    partitioned(&mut h, |h| take(h, Ok(granted())));
    // Everything after the fault healed ended unknown.
    for _ in 0..3 {
        take(&mut h, unavailable());
    }
    let judged = judge(WorkloadCheck::Linearizable, &[run_with(h.clone())]);
    assert_eq!(judged.verdict, Verdict::Fail, "{}", judged.reason);
    assert!(
        judged.reason.contains("did not answer again"),
        "{}",
        judged.reason
    );
    // storeproof's own route did not answer: not the store's doing.
    let mut run = run_with(h);
    run.route_trouble = Some("directly: PING failed".into());
    let judged = judge(WorkloadCheck::Linearizable, &[run]);
    assert_eq!(judged.verdict, Verdict::Unknown, "{}", judged.reason);
}

#[test]
fn a_disarmed_fault_is_counted_apart_never_as_played() {
    let fault = crate::nemesis::Fault::LoseReplyAfterApply { instance: 0 };
    let history = Mutex::new(History::default());
    crate::nemesis::record_start(&history, &fault, Boundary::Gate, None, 0);
    crate::nemesis::record_end::<String>(
        &history,
        &fault,
        Boundary::Gate,
        &Ok(Ending::Disarmed),
        None,
        0,
    );
    let mut h = history.into_inner().unwrap_or_else(|p| p.into_inner());
    partitioned(&mut h, |h| take(h, Ok(granted())));
    let roles = run_with(History::default()).roles;
    let end = run_with(History::default()).end;
    let f = figures_of(
        LayoutKind::Coordination,
        &roles,
        1,
        &h,
        &end,
        false,
        Instant::now(),
    );
    assert_eq!(
        f.faults,
        [("partition".to_string(), 1)].into_iter().collect()
    );
    assert_eq!(
        f.disarmed,
        [("lose_reply_after_apply".to_string(), 1)]
            .into_iter()
            .collect()
    );
    let met = &f.met[LINEARIZABLE.id];
    assert_eq!(met["partition"].met, 1);
    assert_eq!(met["lose_reply_after_apply"].disarmed, 1);
    assert_eq!(f.met[CHILDREN_ONCE.id]["partition"].missed, 1);
}

#[test]
fn a_violation_fails_even_when_no_fault_met_it() {
    // Two overlapping grants of one tree: no fault needed to blame it.
    let mut h = History::default();
    take_as(&mut h, "a", Ok(granted()));
    take_as(&mut h, "b", Ok(granted()));
    let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
    assert_eq!(judged.verdict, Verdict::Fail, "{}", judged.reason);
}

#[test]
fn an_unsupported_answer_skips_the_check_with_the_store_s_message_never_fails_it() {
    let no = || Err(StoreError::new(ErrorKind::Unsupported, "no renewals here"));
    let mut h = History::default();
    partitioned(&mut h, |h| take(h, Ok(granted())));
    let renew = Call {
        op: "lease.renew".into(),
        args: json!({"tree": "t", "holder": "a", "epoch": 1, "ttl_ms": 100}),
    };
    h.invoke("a", &renew, Some(2), 2);
    h.complete("a", "lease.renew", &no(), Some(3), 3);
    // Overlapping grants too: still no failure, the store declined.
    take_as(&mut h, "b", Ok(granted()));
    let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
    assert_eq!(judged.verdict, Verdict::Skipped, "{}", judged.reason);
    assert!(
        judged
            .reason
            .contains("lease.renew (unsupported: no renewals here)"),
        "{}",
        judged.reason
    );
    // A declined read is named, and the rest is judged.
    let mut h = History::default();
    partitioned(&mut h, |h| take(h, Ok(granted())));
    let read = Call {
        op: "lease.read".into(),
        args: json!({"tree": "t"}),
    };
    h.invoke("a", &read, Some(2), 2);
    h.complete(
        "a",
        "lease.read",
        &Err(StoreError::new(ErrorKind::Unsupported, "no reads")),
        Some(3),
        3,
    );
    let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
    assert_eq!(judged.verdict, Verdict::Pass, "{}", judged.reason);
    assert!(
        judged.reason.contains("declined: lease.read"),
        "{}",
        judged.reason
    );
}

#[test]
fn the_drain_s_answers_never_decide_a_check() {
    // Every operation under the fault was refused; only the drain (after
    // the faults, on a direct connection) was answered.
    let mut h = History::default();
    partitioned(&mut h, |h| {
        take(h, Err(StoreError::new(ErrorKind::BadRequest, "no")))
    });
    take_as(&mut h, workload::DRAIN, Ok(granted()));
    let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
    assert_eq!(judged.verdict, Verdict::Unknown, "{}", judged.reason);
    assert!(
        judged.reason.contains("nothing to judge"),
        "{}",
        judged.reason
    );
}

#[test]
fn a_store_that_refused_everything_is_never_a_pass() {
    let mut h = History::default();
    partitioned(&mut h, |h| {
        take(h, Err(StoreError::new(ErrorKind::BadRequest, "no")))
    });
    let judged = judge(WorkloadCheck::Linearizable, &[run_with(h)]);
    assert_eq!(judged.verdict, Verdict::Unknown, "{}", judged.reason);
    assert!(
        judged.reason.contains("nothing to judge"),
        "{}",
        judged.reason
    );

    let mut h = History::default();
    partitioned(&mut h, |h| take(h, Ok(granted())));
    assert_eq!(
        judge(WorkloadCheck::Linearizable, &[run_with(h)]).verdict,
        Verdict::Pass
    );
}
