//! The demonstrations (the reference store's loss shows the kills are real),
//! the power cuts, and the verdict of each check of a run.

use harness::contract::Contract;
use harness::figures::SeriesFigures;
use harness::{CheckResult, CheckSpec, Verdict};

use super::checks::CrashCheck;
use super::series::{series_figures, Series};
use super::verdicts::{
    docker_backend_check, first_kill_history, judge, Demonstrated, Findings, Judgement,
};
use super::NAME;
use harness::evidence::{CrashFiguresEvidence, Evidence, KillsFoundEvidence, LossShownEvidence};

impl Findings<'_> {
    /// With the append-only file off, every kill loses writes of the
    /// reference store: the kills are real. The store's own figures are
    /// reported beside it and never judged (PROTOCOL never asks a store to
    /// lose writes: it may keep more than its server).
    pub(super) fn opt_out_loses(&self, spec: &CheckSpec) -> CheckResult {
        self.demonstration(
            spec,
            self.opted,
            Demonstrated {
                setting: "with appendonly no",
                kills: "kills",
                kill: "kill",
                none_asked: "not run: no opted-out kill was asked for (--opt-out-kills 0)",
            },
        )
    }

    /// A demonstration over series `s`: decided by the reference store's
    /// rounds alone; a kill where it lost nothing leaves it unknown (the
    /// demonstration did not happen), never the store's failure.
    pub(super) fn demonstration(
        &self,
        spec: &CheckSpec,
        s: &Series,
        d: Demonstrated,
    ) -> CheckResult {
        let claimed = &self.config.contracts;
        let reference = SeriesFigures::of(s.reference_figures(), s.asked, s.trouble.clone());
        let store = series_figures(s);
        let every = &Contract::COORDINATION;
        let quiet: Vec<String> = s
            .reference
            .iter()
            .filter(|r| r.figures.lost() == 0)
            .map(|r| {
                format!(
                    "{} {}: the reference store lost nothing ({})",
                    d.kill,
                    r.figures.kill,
                    r.figures.sentence_of(every)
                )
            })
            .collect();
        let beside = format!(
            "beside it, the store ({}) lost {} of {} acknowledged writes, in {} of {} {} ({}); reported, not judged: \
             a store may keep more than its server",
            self.spec_name(),
            store.lost,
            store.acknowledged,
            store.kills_showing_loss,
            store.kills,
            d.kills,
            store.total.sentence_of(claimed)
        );
        let (verdict, reason) = if let Some(trouble) = &s.trouble {
            (
                Verdict::Unknown,
                format!("could not be decided, the harness failed at {trouble}"),
            )
        } else if s.rounds.is_empty() {
            (Verdict::Skipped, d.none_asked.to_string())
        } else if s.reference.len() < s.rounds.len() {
            (
                Verdict::Unknown,
                format!(
                    "not decided: the reference store wrote in {} of {} {}",
                    s.reference.len(),
                    s.rounds.len(),
                    d.kills
                ),
            )
        } else if !quiet.is_empty() {
            (
                Verdict::Unknown,
                format!(
                    "the demonstration did not happen {}: {}; {beside}",
                    d.setting,
                    quiet.join("; ")
                ),
            )
        } else {
            (
                Verdict::Pass,
                format!(
                    "{}, every one of {} {} lost acknowledged writes of storeproof's reference store (the built-in Redis store, \
                     run beside the store on the same server): {} of {} in all ({}); {beside}",
                    d.setting,
                    s.reference.len(),
                    d.kills,
                    reference.lost,
                    reference.acknowledged,
                    s.reference
                        .iter()
                        .map(|r| format!(
                            "{} {}: {} of {} lost",
                            d.kill,
                            r.figures.kill,
                            r.figures.lost(),
                            r.figures.acknowledged()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        };
        let example = s
            .reference
            .iter()
            .flat_map(|r| r.findings.values().flatten())
            .next()
            .cloned();
        let mut result = spec.result(NAME, verdict, reason);
        result.evidence = Evidence::LossShown(Box::new(LossShownEvidence {
            reference,
            store,
            example,
        }));
        result
    }

    /// The store's spec as the report names it.
    pub(super) fn spec_name(&self) -> &str {
        &self.spec
    }

    /// Power cuts with appendfsync always lose nothing.
    pub(super) fn power_always_keeps(&self, spec: &CheckSpec) -> CheckResult {
        let s = self.always;
        let claimed = &self.config.contracts;
        let found = s.all_findings();
        let total = s.total();
        judge(Judgement {
            spec,
            series: s,
            pass: format!(
                "with appendfsync always, {} simulated power cuts (SIGKILL, then the append-only file cut back \
                 to its last fsync) lost nothing: {}",
                s.rounds.len(),
                total.sentence_of(claimed)
            ),
            fail: format!(
                "{} of {} acknowledged writes lost in power cuts with appendfsync always ({})",
                total.lost(),
                total.acknowledged(),
                total.sentence_of(claimed)
            ),
            none_asked: "not run: no power cut was asked for (--power-losses 0)",
            evidence: Evidence::KillsFound(Box::new(KillsFoundEvidence {
                figures: series_figures(s),
                found: found.clone(),
                history: first_kill_history(s, None),
            })),
            rerun: self.rerun(&found),
            found,
            nothing_judged: (total.acknowledged() == 0).then(|| {
                (
                    Verdict::Unknown,
                    format!(
                        "not decided: the {} power cuts had no acknowledged write to judge",
                        s.rounds.len()
                    ),
                )
            }),
        })
    }

    /// Power cuts with appendfsync everysec (opted out) lose writes of the
    /// reference store: why always is required. As [`Self::opt_out_loses`].
    pub(super) fn power_everysec_loses(&self, spec: &CheckSpec) -> CheckResult {
        self.demonstration(
            spec,
            self.everysec,
            Demonstrated {
                setting: "with appendfsync everysec (opted out), why the store requires appendfsync always",
                kills: "power cuts",
                kill: "cut",
                none_asked: "not run: no power cut was asked for (--power-losses 0)",
            },
        )
    }

    /// The verdict of check `spec` of this run.
    pub(super) fn check(&self, spec: &CheckSpec) -> CheckResult {
        let Some(check) = CrashCheck::of(spec.id) else {
            return spec.result(NAME, Verdict::Unknown, "not a check of the crash suite");
        };
        match check {
            CrashCheck::Kept(kept) => self.kept(spec, kept),
            CrashCheck::OptOut => self.opt_out_loses(spec),
            CrashCheck::PowerAlways => self.power_always_keeps(spec),
            CrashCheck::PowerEverysec => self.power_everysec_loses(spec),
            CrashCheck::DownServer => self.down_server(spec),
            CrashCheck::Docker => docker_backend_check(
                self.required.fallback.as_deref(),
                self.config.backend,
                Evidence::CrashFigures(Box::new(CrashFiguresEvidence {
                    figures: self.figures.clone(),
                })),
            ),
        }
    }
}
