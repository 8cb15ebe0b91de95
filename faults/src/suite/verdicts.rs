//! The figures of a workload and the verdict of each check over the
//! workloads (and of the full server).

use std::time::Instant;

use harness::contract::Contract;
use harness::evidence::{
    Evidence, FaultDetail, FaultLayout, FullServerEvidence, LinearizableDetail,
};
use harness::figures::WorkloadFigures;
use harness::{EventKind, Happened, History, Verdict};

use harness::findings::{Checked, Findings};
use harness::violation::Violation;

use crate::evidence;
use crate::nemesis::Ending;
use crate::workload::{self, EndState, LayoutKind};
use crate::{children, fencing, full_server, linearizable, rate_bounds};

use super::checks::WorkloadCheck;
use super::roles::{about, behind, declined, judged_here, Player, Roles, WorkloadRun, DECLINABLE};

pub(super) fn figures_of(
    layout: LayoutKind,
    roles: &Roles,
    instances: usize,
    history: &History,
    end: &EndState,
    lease_off_wire: bool,
    started: Instant,
) -> WorkloadFigures {
    let trees: std::collections::BTreeSet<String> = linearizable::lease_ops(history)
        .0
        .into_iter()
        .map(|op| op.tree)
        .collect();
    let mut f = WorkloadFigures {
        layout: layout.name().to_string(),
        stores: roles.figures(),
        instances,
        children_saved: end.saved.len(),
        children_done: end.effects.applied.len(),
        trees_judged: if roles.lease == Player::Subject {
            trees.len()
        } else {
            0
        },
        seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        ..WorkloadFigures::default()
    };
    for fault in evidence::played(history) {
        let name = fault.kind.name().to_string();
        match fault.ended {
            Some(Ending::Disarmed) => *f.disarmed.entry(name).or_default() += 1,
            Some(_) => *f.faults.entry(name).or_default() += 1,
            // Not applied: the nemesis's trouble says why.
            None => {}
        }
    }
    for check in WorkloadCheck::ALL {
        if judged_here(check, roles, layout) {
            let met = evidence::meetings(history, about(check), behind(lease_off_wire));
            f.met.insert(check.spec().id.to_string(), met);
        }
    }
    let mut invoked = 0;
    for e in &history.events {
        match (&e.what, e.what.kind()) {
            (_, EventKind::Invoke) => invoked += 1,
            (_, EventKind::Ok) => f.ok += 1,
            (_, EventKind::Fail) => f.refused += 1,
            (_, EventKind::Info) => f.unknown += 1,
            _ => {}
        }
    }
    f.operations = invoked;
    // Sent and never answered: unknown too.
    f.unknown += invoked.saturating_sub(f.ok + f.refused + f.unknown);
    f
}

/// One check's verdict over the workloads, with its evidence.
pub(super) struct Judged {
    pub(super) verdict: Verdict,
    pub(super) reason: String,
    pub(super) evidence: Evidence,
    pub(super) failing: Option<usize>,
    /// The failing workload's violations (the first failing layout's), each
    /// naming events of its history.
    pub(super) violations: Vec<Violation>,
}

pub(super) fn judge(check: WorkloadCheck, runs: &[WorkloadRun]) -> Judged {
    let spec = check.spec();
    let mut parts = Vec::new();
    let mut layouts = Vec::new();
    let mut failing = None;
    let mut violations = Vec::new();
    let mut unknown = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut judged = 0;
    for (i, run) in runs.iter().enumerate() {
        let layout = run.options.layout.name();
        if !judged_here(check, &run.roles, run.options.layout) {
            continue;
        }
        judged += 1;
        if let Some(trouble) = &run.nemesis_trouble {
            unknown.push(format!(
                "{layout} layout: the nemesis stopped early ({trouble})"
            ));
            continue;
        }
        // `unsupported`: the store declines what it does not offer. A
        // declined read or pause changes nothing the other rules judge (it
        // is named); any other declined operation settles this layout as
        // skipped with the store's message, never failed.
        let (harmless, blocking): (Vec<_>, Vec<_>) = declined(&run.history, about(check))
            .into_iter()
            .partition(|(op, _)| DECLINABLE.contains(&op.as_str()));
        if !blocking.is_empty() {
            let said: Vec<String> = blocking
                .iter()
                .map(|(op, message)| format!("{op} (unsupported: {message})"))
                .collect();
            skipped.push(format!(
                "{layout} layout: the store declined {}",
                said.join(", ")
            ));
            continue;
        }
        let harmless: Vec<String> = harmless
            .iter()
            .map(|(op, message)| format!("{op} (unsupported: {message})"))
            .collect();
        // A store that refused every request of the contract leaves nothing
        // to judge: that is no pass (conformance blames the refusals). The
        // drain's answers come after the faults, on a direct connection:
        // they never count.
        let contract = spec.contracts.first().copied();
        let answered = run
            .history
            .events
            .iter()
            .filter(|e| e.instance != workload::DRAIN)
            .filter(
                |e| matches!(&e.what, Happened::Ok { op, .. } if Contract::of_op(op) == contract),
            )
            .count();
        if answered == 0 {
            unknown.push(format!(
                "{layout} layout: the store answered none of the workload's {} operations with a reply: nothing to judge",
                contract.map_or("", Contract::name)
            ));
            continue;
        }
        let ops = run.history.operations();
        let (checked, summary, detail) = match check {
            WorkloadCheck::Linearizable => {
                let v = linearizable::check(&run.history);
                let detail = FaultDetail::Linearizable(LinearizableDetail {
                    not_linearizable: v.not_linearizable(),
                    trees: v.trees.len(),
                });
                (v.checked(&ops), v.summary(), detail)
            }
            WorkloadCheck::ChildrenOnce => {
                if let Err(why) = &run.end.drained {
                    unknown.push(format!("{layout} layout: {why}"));
                    continue;
                }
                let v = children::check(&run.history, &run.end.effects);
                (v.checked(&ops), v.summary(), FaultDetail::Children(v))
            }
            WorkloadCheck::Fencing => {
                let v = fencing::check(&run.history, &run.durable);
                (v.checked(&ops), v.summary(), FaultDetail::Fencing(v))
            }
            WorkloadCheck::RateBounds => {
                let v = rate_bounds::check(&run.history);
                (v.checked(&ops), v.summary(), FaultDetail::Rate(v))
            }
        };
        let (holds, undecided, found) = match checked {
            Checked::Holds => (true, None, Vec::new()),
            Checked::Violated(found) => (false, None, found),
            Checked::Undecided(why) => (true, Some(why), Vec::new()),
        };
        // A violation is the store's doing whatever else happened; a pass
        // needs more: its faults met the store, and the store answered
        // again once they healed.
        let (mut holds, mut summary) = (holds, summary);
        let met = evidence::meetings(&run.history, about(check), behind(run.lease_off_wire));
        let stuck = evidence::not_recovered(&run.history, about(check));
        if holds && !stuck.is_empty() {
            let who: Vec<String> = stuck
                .iter()
                .map(|(instance, n)| format!("instance {instance}'s {n}"))
                .collect();
            let who = who.join(", ");
            match &run.route_trouble {
                None => {
                    holds = false;
                    summary = format!(
                        "the store did not answer again after the faults healed: {who} operations of this check sent after the last fault ended (each store read again {} times over about 5 s) all ended unknown, while storeproof's server answered PING directly and through every instance's gate; {summary}", workload::RECOVERY_TRIES
                    );
                }
                Some(trouble) => {
                    unknown.push(format!(
                        "{layout} layout: {who} operations after the faults healed ended unknown, and storeproof's own route did not answer ({trouble}): not the store's doing"
                    ));
                    continue;
                }
            }
        }
        if holds && evidence::met(&met) == 0 {
            let missed: usize = met.values().map(|m| m.missed).sum();
            let disarmed: usize = met.values().map(|m| m.disarmed).sum();
            unknown.push(format!(
                "{layout} layout: none of the faults played met an operation of the store under test this check is about ({missed} took effect elsewhere, {disarmed} one-shot faults disarmed unfired): no fault was judged"
            ));
            continue;
        }
        if !holds {
            if failing.is_none() {
                failing = Some(i);
                violations = found;
            }
        } else if let Some(why) = undecided {
            unknown.push(format!("{layout} layout: {why}"));
        }
        if !harmless.is_empty() {
            summary.push_str(&format!(
                "; not judged, the store declined: {}",
                harmless.join(", ")
            ));
        }
        let met_by_kind: Vec<String> = met
            .iter()
            .filter(|(_, m)| m.met > 0)
            .map(|(kind, m)| format!("{kind} ×{}", m.met))
            .collect();
        parts.push(format!(
            "{layout} layout: {summary}; faults that met its operations: {}",
            met_by_kind.join(", ")
        ));
        layouts.push(FaultLayout {
            layout: layout.to_string(),
            holds,
            detail,
            faults_met: met,
            not_recovered: stuck,
            figures: run.figures.clone(),
        });
    }
    let reason = parts
        .iter()
        .chain(&skipped)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    let evidence = Evidence::FaultLayouts(layouts);
    if failing.is_none() && unknown.is_empty() && parts.is_empty() && !skipped.is_empty() {
        return Judged {
            verdict: Verdict::Skipped,
            reason: skipped.join("; "),
            evidence,
            failing: None,
            violations: Vec::new(),
        };
    }
    if judged == 0 {
        return Judged {
            verdict: Verdict::Skipped,
            reason: "no workload had the store under test in this check's role".into(),
            evidence,
            failing: None,
            violations: Vec::new(),
        };
    }
    let verdict = if failing.is_some() {
        Verdict::Fail
    } else if !unknown.is_empty() {
        return Judged {
            verdict: Verdict::Unknown,
            reason: unknown.join("; "),
            evidence,
            failing: None,
            violations: Vec::new(),
        };
    } else {
        Verdict::Pass
    };
    Judged {
        verdict,
        reason,
        evidence,
        failing,
        violations,
    }
}

pub(super) fn judge_full_server(
    history: &History,
    room_from: usize,
    claimed: &[Contract],
) -> Judged {
    let v = full_server::judge(history, claimed, room_from);
    let (verdict, reason, violations) = match v.checked(&[]) {
        Checked::Holds => (Verdict::Pass, v.summary(), Vec::new()),
        Checked::Violated(found) => (Verdict::Fail, v.summary(), found),
        Checked::Undecided(why) => (Verdict::Unknown, why, Vec::new()),
    };
    Judged {
        verdict,
        reason,
        violations,
        evidence: Evidence::FullServer(Box::new(FullServerEvidence {
            found: v,
            history: history.clone(),
        })),
        failing: None,
    }
}
