//! The verdicts of what a kill must keep and of the down server, and the
//! evidence every crash check carries.

use harness::counterexample::{Counterexample, CrashTag};
use harness::evidence::{DownServerEvidence, Evidence, KillsFoundEvidence};
use harness::figures::CrashFigures;
use harness::{CheckResult, CheckSpec, Verdict};

use crate::verify::Kept;

use super::checks::DOCKER;
use super::series::{series_figures, Probe, Series, PROBE_WAIT};
use super::{BackendChoice, CrashConfig, CrashRerun, NAME};

pub use harness::evidence::KillHistory;

/// The events of the first kill of `s` with a finding of `check` (of any
/// check: `None`) about what it found; `None` when there are none.
pub(super) fn first_kill_history(s: &Series, check: Option<Kept>) -> Option<KillHistory> {
    let round = s.rounds.iter().find(|r| match check {
        Some(k) => !r.of(k).is_empty(),
        None => !r.findings.is_empty(),
    })?;
    let history = round.history_of(check);
    (!history.events.is_empty()).then_some(KillHistory {
        kill: round.figures.kill,
        history,
    })
}

/// How a check over one series words its verdict.
pub(super) struct Judgement<'a> {
    pub(super) spec: &'a CheckSpec,
    pub(super) series: &'a Series,
    pub(super) found: Vec<String>,
    /// The reason when nothing was found and every kill ran.
    pub(super) pass: String,
    /// The first words of the reason when something was found.
    pub(super) fail: String,
    /// Why no kill ran, when none was asked for.
    pub(super) none_asked: &'a str,
    pub(super) evidence: Evidence,
    /// The re-run attached to a failure.
    pub(super) rerun: Option<Counterexample>,
    /// The verdict and reason when every kill ran and found nothing, but
    /// nothing the check is about happened (no write of its kind judged).
    pub(super) nothing_judged: Option<(Verdict, String)>,
}

/// The verdict of a check over one series: a finding fails it (warns, for a
/// SHOULD check); harness trouble leaves it unknown; no kill asked, skipped.
pub(super) fn judge(j: Judgement<'_>) -> CheckResult {
    let (verdict, reason) = if !j.found.is_empty() {
        let more = j.found.len().saturating_sub(3);
        (
            Verdict::Fail,
            format!(
                "{}: {}{}",
                j.fail,
                j.found
                    .iter()
                    .take(3)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            ),
        )
    } else if let Some(trouble) = &j.series.trouble {
        (
            Verdict::Unknown,
            format!(
                "could not be decided, the harness failed at {trouble}{}",
                match j.series.rounds.len() {
                    0 => String::new(),
                    n => format!(" (the {n} kill(s) before it showed nothing wrong)"),
                }
            ),
        )
    } else if j.series.rounds.is_empty() {
        (Verdict::Skipped, j.none_asked.to_string())
    } else if let Some(undecided) = j.nothing_judged {
        undecided
    } else {
        (Verdict::Pass, j.pass)
    };
    let mut result = j.spec.result(NAME, verdict, reason);
    result.evidence = j.evidence;
    if verdict == Verdict::Fail {
        result.counterexample = j.rerun;
    }
    result
}

/// The verdict of `crash.docker-backend`: pass when the kills ran in a
/// container, warn when Docker was wanted (auto) but not there, skipped when
/// the process backend was asked for.
pub fn docker_backend_check(
    fallback: Option<&str>,
    choice: BackendChoice,
    evidence: Evidence,
) -> CheckResult {
    let (verdict, reason) = match (fallback, choice) {
        (Some(e), _) => (
            Verdict::Fail,
            format!("the kills ran on the process backend (kill -9) because {e}"),
        ),
        (None, BackendChoice::Process) => (
            Verdict::Skipped,
            "--crash-backend process was asked for: the kills ran on a managed redis-server (kill -9)"
                .to_string(),
        ),
        (None, _) => (
            Verdict::Pass,
            "the kills ran on the server in a Docker container built here (docker kill -s KILL)"
                .to_string(),
        ),
    };
    let mut result = DOCKER.result(NAME, verdict, reason);
    result.evidence = evidence;
    result
}

/// How a demonstration words its verdict.
pub(super) struct Demonstrated {
    /// The setting, as the reason opens with it.
    pub(super) setting: &'static str,
    /// What its kills are called, and one of them.
    pub(super) kills: &'static str,
    pub(super) kill: &'static str,
    /// Why no kill ran, when none was asked for.
    pub(super) none_asked: &'static str,
}

/// The four series of a run and what judging them needs.
pub(super) struct Findings<'a> {
    pub(super) config: &'a CrashConfig,
    /// The store's spec (`builtin:redis`, `cmd:…`).
    pub(super) spec: String,
    pub(super) required: &'a Series,
    pub(super) opted: &'a Series,
    pub(super) always: &'a Series,
    pub(super) everysec: &'a Series,
    pub(super) figures: &'a CrashFigures,
}

impl Findings<'_> {
    /// What re-runs this run, with the first of what was `found`.
    pub(super) fn rerun(&self, found: &[String]) -> Option<Counterexample> {
        let rerun = CrashRerun {
            kind: CrashTag::CrashRun,
            seed: self.config.seed,
            kills: self.config.kills,
            opt_out_kills: self.config.opt_out_kills,
            power_losses: self.config.power_losses,
            instances: self.config.instances,
            backend: self.figures.backend.clone(),
            contracts: self.config.contracts.clone(),
            found: found.iter().take(5).cloned().collect(),
        };
        Some(Counterexample::Crash(rerun))
    }

    /// A check that every acknowledged write of one kind survived each
    /// SIGKILL. It is decided only on writes of its own kind that were
    /// judged: with none in any kill it is unknown (skipped, with the
    /// store's message, when the store does not offer them).
    pub(super) fn kept(&self, spec: &CheckSpec, kept: Kept) -> CheckResult {
        let s = self.required;
        let total = s.total();
        let kills = s.rounds.len();
        let sigkills = format!(
            "{kills} SIGKILL{} ({} backend)",
            if kills == 1 { "" } else { "s" },
            self.figures.backend
        );
        let found = s.findings(kept);
        let judged: usize = s.rounds.iter().map(|r| r.judged_of(kept)).sum();
        let kills_judged = s.rounds.iter().filter(|r| r.judged_of(kept) > 0).count();
        let unsupported = s.rounds.iter().find_map(|r| r.unsupported.get(&kept));
        let (unit, what, acked, lost, not_judged) = match kept {
            Kept::Epochs => (
                "epochs",
                "every acknowledged epoch was on the restarted server",
                total.epochs_acknowledged,
                total.epochs_lost,
                total.epochs_not_judged,
            ),
            Kept::NextTake => (
                "epochs",
                "the first take after each restart was granted above every acknowledged epoch of its tree",
                total.epochs_acknowledged,
                total.epochs_lost,
                total.epochs_acknowledged.saturating_sub(judged),
            ),
            Kept::Renews => (
                "renews",
                "every acknowledged renew still ran to its acknowledged expiry on the restarted server",
                total.renews_acknowledged,
                total.renews_lost,
                total.renews_not_judged,
            ),
            Kept::Children => (
                "children",
                "every acknowledged child was on the restarted server",
                total.children_acknowledged,
                total.children_lost,
                total.children_not_judged,
            ),
            Kept::Claims => (
                "claims",
                "every acknowledged claim was still held on the restarted server and no claimed child was handed out again",
                total.claims_acknowledged,
                total.claims_lost,
                total.claims_not_judged,
            ),
            Kept::CompletedOnce => (
                "completions",
                "every completed child stayed done on the restarted server and none was handed out again",
                total.completions_acknowledged,
                total.completions_lost,
                total.completions_not_judged,
            ),
            Kept::Pauses => (
                "pauses",
                "every acknowledged provider pause was in force on the restarted server",
                total.pauses_acknowledged,
                total.pauses_lost,
                total.pauses_not_judged,
            ),
        };
        let unjudged = match (not_judged, kept) {
            (0, _) => String::new(),
            (n, Kept::Renews) => format!(
                ", not judged {n} (released afterwards, ended before the read, or not readable)"
            ),
            (n, _) => format!(", not judged {n}"),
        };
        let figures =
            format!("{unit} acknowledged {acked}, judged {judged}, lost {lost}{unjudged}");
        let in_kills = if kills_judged < kills {
            format!(
                " (judged in {kills_judged} of the {kills} kills: the others had none of its kind to judge)"
            )
        } else {
            String::new()
        };
        let fail = if kept == Kept::NextTake {
            format!(
                "{} take(s) after a restart were not granted above the acknowledged epochs ({sigkills})",
                found.len()
            )
        } else {
            format!("{lost} of {acked} acknowledged {unit} lost across {sigkills}")
        };
        let nothing_judged = (judged == 0).then(|| match unsupported {
            Some(why) => (
                Verdict::Skipped,
                format!("the store does not offer what this check needs: {why} ({figures})"),
            ),
            None => (
                Verdict::Unknown,
                format!(
                    "not decided: no acknowledged write of its kind could be judged in {sigkills} ({})",
                    total.sentence_of(&self.config.contracts)
                ),
            ),
        });
        judge(Judgement {
            spec,
            series: s,
            pass: format!("{what} after each of {sigkills}: {figures}{in_kills}"),
            fail,
            none_asked: "not run: no kill was asked for (--kills 0)",
            evidence: Evidence::KillsFound(Box::new(KillsFoundEvidence {
                figures: series_figures(s),
                found: found.clone(),
                history: first_kill_history(s, Some(kept)),
            })),
            rerun: self.rerun(&found),
            found,
            nothing_judged,
        })
    }

    /// While the killed server was down, a new instance of the store
    /// acknowledged nothing (a store whose state is not in Redis: outside it).
    pub(super) fn down_server(&self, spec: &CheckSpec) -> CheckResult {
        let s = self.required;
        if !s.rounds.is_empty() && s.probes.is_empty() && s.trouble.is_none() {
            let mut r = spec.result(
                NAME,
                Verdict::Skipped,
                "the store keeps its state outside the Redis server it is given: whether it answers while that server is down says nothing",
            );
            r.outside_claim = true;
            return r;
        }
        let found: Vec<String> = s
            .rounds
            .iter()
            .zip(&s.probes)
            .filter_map(|(r, p)| match p {
                Probe::Acknowledged(what) => Some(format!(
                    "kill {}, while the server was down: {what}",
                    r.figures.kill
                )),
                _ => None,
            })
            .collect();
        let refused = s
            .probes
            .iter()
            .filter(|p| matches!(p, Probe::Refused(_)))
            .count();
        let silent = s.probes.iter().filter(|p| **p == Probe::Silent).count();
        let server_up = s
            .probes
            .iter()
            .filter(|p| matches!(p, Probe::ServerUp(_)))
            .count();
        // A probe is decided only if the server was down while it was asked.
        let nothing_judged = (!s.probes.is_empty() && server_up == s.probes.len()).then(|| {
            (
                Verdict::Unknown,
                format!(
                    "not decided: in each of the {server_up} kills the store acknowledged a write while storeproof's own server still answered PING (the kill had not held), so its answer says nothing"
                ),
            )
        });
        let example = s.probes.iter().find_map(|p| match p {
            Probe::Refused(e) => Some(e.clone()),
            _ => None,
        });
        judge(Judgement {
            spec,
            series: s,
            pass: format!(
                "while the server was down after each of {} SIGKILLs, a new instance of the store acknowledged nothing: \
                 {refused} answered an error{}, {silent} gave no answer within {} s{}",
                s.probes.len() - server_up,
                example.map_or(String::new(), |e| format!(" (first: {e})")),
                PROBE_WAIT.as_secs(),
                match server_up {
                    0 => String::new(),
                    n => format!(
                        "; {n} more kill(s) not judged: storeproof's server still answered PING"
                    ),
                }
            ),
            fail: format!(
                "the store acknowledged writes while the server it was given was down ({} of {} kills): its state is not on that server",
                found.len(),
                s.probes.len()
            ),
            none_asked: "not run: no kill was asked for (--kills 0)",
            evidence: Evidence::DownServer(DownServerEvidence {
                probes: s.probes.len(),
                refused,
                silent,
                acknowledged: found.len(),
                server_up,
            }),
            rerun: self.rerun(&found),
            found,
            nothing_judged,
        })
    }
}
