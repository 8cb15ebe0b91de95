//! Unit tests of the run's rendering and verdicts.

use harness::contract::{Reply, StoreError};
use harness::{CheckResult, EventKind, Happened, Verdict};

use super::verdicts::*;
use super::*;
use crate::state::{Note, Pending, Tick};
use crate::world::request;
use crate::LEASE_MS;

const START: i64 = 1_000_000;

/// `after` with the answer `out` recorded, as the step that finished an
/// operation leaves it.
fn answering(mut after: State, out: Result<Reply, StoreError>) -> State {
    after.note = Note {
        commands: vec![],
        answer: Some(out),
    };
    after
}

#[test]
fn a_path_becomes_invocations_and_completions_and_a_crash_leaves_one_open() {
    let start = State::initial(START, &[0, 500]);
    let mut path: Vec<(Action, State)> = Vec::new();
    // a takes in one command and is granted epoch 1.
    let mut s = start.clone();
    s.insts[0].held = Some(1);
    let s = answering(
        s,
        Ok(Reply::Granted {
            epoch: 1,
            expires_at_ms: START + 1000,
        }),
    );
    path.push((Action::Start(0, Op::Take), s.clone()));
    // b's take delivers its first command of two.
    let mut s = State {
        note: Note::default(),
        ..s
    };
    s.insts[1].pending = Some(Pending {
        op: Op::Take,
        clock_ms: START + 500,
        acked_before: 1,
        contended: true,
        delivered: vec![],
        full_seen: false,
        quiet_since: None,
        quiet_print: 0,
        watch: Default::default(),
        upcoming: Default::default(),
        deferred: 0,
    });
    path.push((Action::Start(1, Op::Take), s.clone()));
    // Time moves; b's take then answers busy.
    let mut s = State {
        now: START + 500,
        ..s
    };
    path.push((Action::Tick(Tick::HalfLease), s.clone()));
    s.insts[1].pending = None;
    let s = answering(
        s,
        Ok(Reply::Busy {
            holder: "a".into(),
            epoch: 1,
            expires_at_ms: START + 1000,
        }),
    );
    path.push((Action::Continue(1), s.clone()));
    // a starts a renew of epoch 1 and crashes in the middle of it.
    let mut s = State {
        note: Note::default(),
        ..s
    };
    s.insts[0].pending = Some(Pending {
        op: Op::Renew,
        clock_ms: START + 500,
        acked_before: 1,
        contended: false,
        delivered: vec![],
        full_seen: false,
        quiet_since: None,
        quiet_print: 0,
        watch: Default::default(),
        upcoming: Default::default(),
        deferred: 0,
    });
    path.push((Action::Start(0, Op::Renew), s.clone()));
    s.insts[0].pending = None;
    s.insts[0].crashed = true;
    path.push((Action::Crash(0), s));

    let h = history_of(&start, &path);
    let seen: Vec<(&str, EventKind, &str, Option<i64>, i64)> = h
        .events
        .iter()
        .map(|e| {
            (
                e.instance.as_str(),
                e.kind(),
                e.op(),
                e.server_ms,
                e.clock_ms,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("a", EventKind::Invoke, "lease.take", Some(START), START),
            ("a", EventKind::Ok, "lease.take", Some(START), START),
            (
                "b",
                EventKind::Invoke,
                "lease.take",
                Some(START),
                START + 500
            ),
            (
                "b",
                EventKind::Ok,
                "lease.take",
                Some(START + 500),
                START + 500
            ),
            (
                "a",
                EventKind::Invoke,
                "lease.renew",
                Some(START + 500),
                START + 500
            ),
        ]
    );
    // The renew names the epoch a believed it held.
    let Happened::Invoke(call) = &h.events[4].what else {
        panic!("{:?}", h.events[4]);
    };
    assert_eq!(call.args["epoch"], 1);
    assert!(matches!(
        h.events[3].what,
        Happened::Ok {
            reply: Reply::Busy { .. },
            ..
        }
    ));
}

fn found(property: Property, replays: bool) -> Finding {
    let mut history = History::default();
    history.invoke(
        "a",
        &request(&State::initial(START, &[0]), 0, Op::Read).to_call(),
        Some(START),
        START,
    );
    Finding {
        property,
        message: format!("{property} broke"),
        found_in: "a test".into(),
        schedule: Schedule {
            skews: vec![0],
            actions: vec![Action::Start(0, Op::Read)],
        },
        steps: Vec::new(),
        history,
        replays,
    }
}

/// The checks of `findings` under `context`, every race reached, at the
/// default sizes and with no figures.
fn judged(findings: &[Finding], context: &Context) -> Vec<CheckResult> {
    checks(
        findings,
        &[],
        &ExplorerFigures::default(),
        &ExplorerConfig::default(),
        context,
    )
}

fn verdicts(findings: &[Finding], unreached: &[(Property, i64)]) -> Vec<(Property, Verdict)> {
    let figures = ExplorerFigures::default();
    let results = checks(
        findings,
        unreached,
        &figures,
        &ExplorerConfig::default(),
        &Context::default(),
    );
    // The default explores the lease alone: its checks and the harness's.
    let explored: Vec<Property> = Property::ALL
        .into_iter()
        .filter(|p| p.contract().is_none_or(|c| c == Contract::Lease))
        .collect();
    assert_eq!(results.len(), explored.len());
    explored
        .into_iter()
        .zip(results)
        .map(|(p, r)| {
            assert_eq!(r.id, p.id());
            (p, r.verdict)
        })
        .collect()
}

#[test]
fn nothing_found_and_every_race_reached_passes_every_check() {
    let all = verdicts(&[], &[]);
    assert!(all.iter().all(|(_, v)| *v == Verdict::Pass), "{all:?}");
}

#[test]
fn a_violation_that_replays_fails_with_its_history_and_one_that_does_not_is_unknown() {
    let findings = [
        found(Property::OneLiveHolder, true),
        found(Property::EpochMonotonic, false),
    ];
    let figures = ExplorerFigures::default();
    let results = checks(
        &findings,
        &[],
        &figures,
        &ExplorerConfig::default(),
        &Context::default(),
    );
    let of = |p: Property| results.iter().find(|r| r.id == p.id()).unwrap();
    assert_eq!(of(Property::OneLiveHolder).verdict, Verdict::Fail);
    assert_eq!(of(Property::EpochMonotonic).verdict, Verdict::Unknown);
    assert_eq!(of(Property::ZombieRefused).verdict, Verdict::Pass);
    let cx = of(Property::OneLiveHolder)
        .counterexample
        .as_ref()
        .and_then(|c| c.explorer())
        .unwrap();
    assert_eq!(cx.kind, ExplorerTag::ExplorerSchedule);
    assert_eq!(cx.history.events.len(), 1);
    assert_eq!(cx.history.events[0].op(), "lease.read");
}

#[test]
fn the_harness_trouble_is_unknown_never_a_failure() {
    let all = verdicts(
        &[found(Property::HarnessOk, false)],
        &[(Property::ZombieRenewRace, 0)],
    );
    for (p, v) in all {
        let expected = match p {
            Property::ZombieReleaseRace => Verdict::Pass,
            _ => Verdict::Unknown,
        };
        assert_eq!(v, expected, "{p}");
    }
}

#[test]
fn a_race_never_reached_is_undecided_never_the_stores_failure() {
    // Nothing broke, yet the search did not reach the race: only its
    // depth kept it away, so the store is not blamed.
    let unreached = [(Property::ZombieReleaseRace, LEASE_MS)];
    let all = verdicts(&[], &unreached);
    assert!(all.contains(&(Property::ZombieReleaseRace, Verdict::Unknown)));
    assert!(all.contains(&(Property::ZombieRenewRace, Verdict::Pass)));
    assert!(all
        .iter()
        .filter(|(p, _)| *p != Property::ZombieReleaseRace)
        .all(|(_, v)| *v == Verdict::Pass));
    let results = checks(
        &[],
        &unreached,
        &ExplorerFigures::default(),
        &ExplorerConfig::default(),
        &Context::default(),
    );
    let race = results
        .iter()
        .find(|r| r.id == Property::ZombieReleaseRace.id())
        .unwrap();
    assert!(
        race.reason.starts_with("not decided")
            && race.reason.contains("+1000 ms")
            && race.reason.contains("within 8 steps")
            && race.reason.contains("--depth"),
        "{}",
        race.reason
    );
    // A violation that stopped the search still leaves the race unjudged.
    let all = verdicts(&[found(Property::NoTreeStuck, true)], &unreached);
    assert!(all.contains(&(Property::ZombieReleaseRace, Verdict::Skipped)));
    assert!(all.contains(&(Property::NoTreeStuck, Verdict::Fail)));
}

/// `answered` also says a write refused on the full server changed
/// nothing: with the server filled in the searches but no write ever
/// met it full, that part was never tried, so the check is undecided;
/// once refusals were judged it passes and counts them. A store with
/// no server to fill is judged on its answers alone.
#[test]
fn answered_is_undecided_until_a_write_met_the_full_server() {
    let with = |refusals: usize, filled: bool| {
        let mut figures = ExplorerFigures::default();
        let mut row = ExplorerFigures::skew_row(0);
        row.contract = "lease".into();
        row.full_refusals = refusals;
        figures.per_skew.push(row);
        let context = Context {
            filled,
            ..Context::default()
        };
        let results = checks(&[], &[], &figures, &ExplorerConfig::default(), &context);
        results
            .into_iter()
            .find(|r| r.id == Property::Answered.id())
            .unwrap()
    };
    let none = with(0, true);
    assert_eq!(none.verdict, Verdict::Unknown, "{}", none.reason);
    assert!(
        none.reason
            .contains("no search met a write on the full server"),
        "{}",
        none.reason
    );
    let some = with(3, true);
    assert_eq!(some.verdict, Verdict::Pass, "{}", some.reason);
    assert!(some.reason.contains("3 refusals"), "{}", some.reason);
    let unfilled = with(0, false);
    assert_eq!(unfilled.verdict, Verdict::Pass, "{}", unfilled.reason);
    // The other properties do not depend on it.
    let results = checks(
        &[],
        &[],
        &ExplorerFigures::default(),
        &ExplorerConfig::default(),
        &Context {
            filled: true,
            ..Context::default()
        },
    );
    let one = results
        .iter()
        .find(|r| r.id == Property::OneLiveHolder.id())
        .unwrap();
    assert_eq!(one.verdict, Verdict::Pass, "{}", one.reason);
}

#[test]
fn an_unsupported_operation_skips_the_checks_about_it_with_the_stores_message() {
    let said = [(Op::Read, "no reads here".to_string())];
    let context = Context {
        unsupported: &said,
        ..Context::default()
    };
    let results = judged(&[], &context);
    let of = |p: Property| results.iter().find(|r| r.id == p.id()).unwrap();
    let answered = of(Property::Answered);
    assert_eq!(answered.verdict, Verdict::Skipped, "{}", answered.reason);
    assert!(
        answered.reason.contains("lease.read") && answered.reason.contains("no reads here"),
        "{}",
        answered.reason
    );
    // The checks that are not about reads are judged.
    for p in [
        Property::OneLiveHolder,
        Property::EpochMonotonic,
        Property::ZombieRefused,
        Property::NoTreeStuck,
        Property::ZombieRenewRace,
        Property::ZombieReleaseRace,
        Property::HarnessOk,
    ] {
        assert_eq!(of(p).verdict, Verdict::Pass, "{p}: {}", of(p).reason);
    }
    // A renew the store does not offer: what broke with the others
    // still fails, what did not is skipped.
    let said = [(Op::Renew, "no renew".to_string())];
    let context = Context {
        unsupported: &said,
        ..Context::default()
    };
    let results = judged(&[found(Property::OneLiveHolder, true)], &context);
    let of = |p: Property| results.iter().find(|r| r.id == p.id()).unwrap();
    assert_eq!(of(Property::OneLiveHolder).verdict, Verdict::Fail);
    assert_eq!(of(Property::ZombieRefused).verdict, Verdict::Skipped);
    assert_eq!(of(Property::ZombieRenewRace).verdict, Verdict::Skipped);
    assert_eq!(of(Property::EpochMonotonic).verdict, Verdict::Pass);
}

#[test]
fn what_held_says_where_schedules_through_a_violation_were_cut() {
    let mut figures = ExplorerFigures {
        walks: 200,
        walks_cut: 3,
        ..ExplorerFigures::default()
    };
    let mut row = ExplorerFigures::skew_row(LEASE_MS);
    row.violating_states_cut = 12;
    row.shallowest_cut = Some(3);
    figures.per_skew.push(row);
    figures.per_skew.push(ExplorerFigures::skew_row(0));
    let results = checks(
        &[found(Property::OneLiveHolder, true)],
        &[],
        &figures,
        &ExplorerConfig::default(),
        &Context::default(),
    );
    let epoch = results
        .iter()
        .find(|r| r.id == Property::EpochMonotonic.id())
        .unwrap();
    assert_eq!(epoch.verdict, Verdict::Pass);
    assert!(
        epoch.reason.contains("held in every schedule explored (")
            && epoch
                .reason
                .contains("not followed past it (12 such states")
            && epoch.reason.contains("+1000 ms, the shallowest at depth 3")
            && epoch.reason.contains("3 of the 200 walks ended early"),
        "{}",
        epoch.reason
    );
    // Nothing cut: the plain scope.
    let results = judged(&[], &Context::default());
    assert!(results
        .iter()
        .all(|r| !r.reason.contains("explored (") && !r.reason.contains("cut")));
}

#[test]
fn a_counterexample_without_a_history_still_reads() {
    let cx = serde_json::json!({
        "kind": "explorer-schedule",
        "property": "one-live-holder",
        "schedule": {"skews": [0, 500], "actions": [{"start": [0, "take"]}]},
        "steps": [],
    });
    let cx: Counterexample = serde_json::from_value(cx).unwrap();
    assert!(cx.history.events.is_empty());
    assert_eq!(cx.property, Property::OneLiveHolder);
}

/// A store whose adapter failed partway: what did not break in the
/// searches that ran is unknown, never PASS and never skipped, and the
/// reason names the failure and what was left out; what did break stays
/// failed.
#[test]
fn after_the_adapters_failure_what_held_is_unknown_and_what_broke_fails() {
    let context = Context {
        cut: Some("the searches from second clock +500 ms on (the store's adapter failed)"),
        adapter_failed: Some("the adapter of instance sp_inst_a exited"),
        ..Context::default()
    };
    let results = judged(&[found(Property::OneLiveHolder, true)], &context);
    let of = |p: Property| results.iter().find(|r| r.id == p.id()).unwrap();
    assert_eq!(of(Property::OneLiveHolder).verdict, Verdict::Fail);
    let held = of(Property::EpochMonotonic);
    assert_eq!(held.verdict, Verdict::Unknown, "{}", held.reason);
    assert!(
        held.reason
            .contains("the store's adapter failed (the adapter of instance sp_inst_a exited)")
            && held.reason.contains("+500 ms on"),
        "{}",
        held.reason
    );
}
