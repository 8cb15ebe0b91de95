//! `--suite layout`: the one-backend rule proved on the harness's own
//! assembly. Every check is deterministic and needs no server.

use std::path::Path;
use std::time::Instant;

use async_trait::async_trait;
use harness::evidence::{Evidence, LayoutEvidence};
use harness::figures::{Figures, GivenLayout, LayoutFigures};
use harness::{
    CheckResult, CheckSpec, Level, Needs, Progress, Subject, Suite, SuiteError, SuiteRun, Verdict,
};

use crate::assemble::assemble;
use crate::error::{LayoutError, MISMATCH_ID};
use crate::file::{Layout, LayoutFile, Store};

const SUITE: &str = "layout";

/// What a check's layout must come to.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Assembles,
    /// Refused under the one-backend rule, naming exactly these stores.
    Refused(&'static [Store]),
}

/// Where a check's layout comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A supported layout, by its constructor.
    Named(fn() -> Layout),
    /// A layout file's text, read as a file would be.
    Toml(&'static str),
}

/// A check with the layout it assembles and what must come of it.
struct Case {
    spec: CheckSpec,
    source: Source,
    expect: Expect,
}

const fn must(id: &'static str, about: &'static str) -> CheckSpec {
    CheckSpec {
        id,
        level: Level::Must,
        contracts: &[],
        needs: Needs::AnyServer,
        about,
    }
}

const CASES: [Case; 7] = [
    Case {
        spec: must(
            "layout.supported.redis-queue-and-rate-beside-durable",
            "the Redis queue and rate limits beside durable leases, lease log, fenced effects and outbound calls assemble",
        ),
        source: Source::Named(Layout::redis_queue_and_rate_beside_durable),
        expect: Expect::Assembles,
    },
    Case {
        spec: must(
            "layout.supported.coordination-set",
            "Redis leases, queue and rate limits with no lease log, fenced-effect or outbound-call store assemble",
        ),
        source: Source::Named(Layout::coordination_set),
        expect: Expect::Assembles,
    },
    Case {
        spec: must(
            "layout.refused.fenced-effect-off-lease-backend",
            "a fenced-effect store on another backend than the lease store's is refused, naming it",
        ),
        source: Source::Toml(
            "[stores]\nlease = \"postgres\"\nqueue = \"redis\"\nrate = \"redis\"\nlease_log = \"postgres\"\nfenced_effect = \"sqlite\"\noutbound_call = \"postgres\"\n",
        ),
        expect: Expect::Refused(&[Store::FencedEffect]),
    },
    Case {
        spec: must(
            "layout.refused.outbound-call-off-lease-backend",
            "an outbound-call store on another backend than the lease store's is refused, naming it",
        ),
        source: Source::Toml(
            "[stores]\nlease = \"sqlite\"\nqueue = \"redis\"\nrate = \"redis\"\nfenced_effect = \"sqlite\"\noutbound_call = \"postgres\"\n",
        ),
        expect: Expect::Refused(&[Store::OutboundCall]),
    },
    Case {
        spec: must(
            "layout.refused.both-off-lease-backend",
            "fenced-effect and outbound-call stores both off the lease store's backend are refused in one error naming both",
        ),
        source: Source::Toml(
            "[stores]\nlease = \"redis\"\nqueue = \"redis\"\nrate = \"redis\"\nfenced_effect = \"postgres\"\noutbound_call = \"mongodb\"\n",
        ),
        expect: Expect::Refused(&[Store::FencedEffect, Store::OutboundCall]),
    },
    Case {
        spec: must(
            "layout.refused.redis-lease-sqlite-fenced-effect",
            "Redis leases beside a SQLite fenced-effect store are refused: the rule is not relaxed for Redis",
        ),
        source: Source::Toml(
            "[stores]\nlease = \"redis\"\nqueue = \"redis\"\nrate = \"redis\"\nlease_log = \"sqlite\"\nfenced_effect = \"sqlite\"\n",
        ),
        expect: Expect::Refused(&[Store::FencedEffect]),
    },
    Case {
        spec: must(
            "layout.refused.fenced-without-lease",
            "fenced-effect and outbound-call stores with no lease store to share a backend with are refused, naming them",
        ),
        source: Source::Toml(
            "[stores]\nqueue = \"redis\"\nrate = \"redis\"\nfenced_effect = \"sqlite\"\noutbound_call = \"sqlite\"\n",
        ),
        expect: Expect::Refused(&[Store::FencedEffect, Store::OutboundCall]),
    },
];

/// The check of the layout file the run was given.
const GIVEN: CheckSpec = must(
    "layout.given-assembles",
    "the layout file the run was given assembles under the one-backend rule",
);

/// A check's result and whether its layout assembled (`None`: none was read).
struct Outcome {
    result: CheckResult,
    assembled: Option<bool>,
}

/// The layout suite: the built-in cases, and the given layout when there is one.
#[derive(Debug, Clone, Default)]
pub struct LayoutSuite {
    given: Option<(String, Layout)>,
}

impl LayoutSuite {
    /// The suite with its built-in checks only.
    pub fn new() -> LayoutSuite {
        LayoutSuite::default()
    }

    /// The suite that also checks the layout file at `path`; the file is
    /// read now, so an unreadable or malformed file is one line before any run.
    pub fn with_file(path: &Path) -> Result<LayoutSuite, LayoutError> {
        let layout = Layout::from_file(path)?;
        Ok(LayoutSuite::with_layout(path.display().to_string(), layout))
    }

    /// The suite that also checks `layout`, read from `origin`.
    pub fn with_layout(origin: impl Into<String>, layout: Layout) -> LayoutSuite {
        LayoutSuite {
            given: Some((origin.into(), layout)),
        }
    }

    /// Runs the checks of `to_run` that are this suite's: one result each,
    /// in order, and the figures. Needs nothing of a store or server.
    pub fn run_checks(&self, to_run: &[CheckSpec]) -> (Vec<CheckResult>, LayoutFigures) {
        let started = Instant::now();
        let mut figures = LayoutFigures::default();
        let mut results = Vec::with_capacity(to_run.len());
        for spec in to_run {
            let outcome = self.run_one(spec);
            match outcome.assembled {
                Some(true) => figures.assembled += 1,
                Some(false) => figures.refused += 1,
                None => {}
            }
            results.push(outcome.result);
        }
        figures.given = self.given.as_ref().map(|(origin, layout)| {
            let refusal = assemble(layout).err().map(|e| e.to_string());
            GivenLayout {
                origin: origin.clone(),
                stores: layout
                    .stores()
                    .map(|(store, backend)| (store.name().to_string(), backend.name().to_string()))
                    .collect(),
                assembled: refusal.is_none(),
                refusal,
            }
        });
        figures.seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        (results, figures)
    }

    fn run_one(&self, spec: &CheckSpec) -> Outcome {
        match LayoutCheck::of(spec.id) {
            Some(LayoutCheck::Given) => match &self.given {
                Some((origin, layout)) => judge_given(origin, layout),
                None => Outcome {
                    result: spec.result(
                        SUITE,
                        Verdict::Skipped,
                        "no layout file was given to check",
                    ),
                    assembled: None,
                },
            },
            Some(LayoutCheck::Case(case)) => judge_case(case),
            None => Outcome {
                result: spec.result(SUITE, Verdict::Unknown, "not a check of the layout suite"),
                assembled: None,
            },
        }
    }
}

/// A check of the layout suite, by what judges it: the layout file given,
/// or one of the built-in cases.
#[derive(Clone, Copy)]
enum LayoutCheck {
    /// [`GIVEN`]: the layout file `--layout` named.
    Given,
    /// A built-in case of [`CASES`].
    Case(&'static Case),
}

impl LayoutCheck {
    /// The check with `id`, if the suite has one.
    fn of(id: &str) -> Option<LayoutCheck> {
        if id == GIVEN.id {
            return Some(LayoutCheck::Given);
        }
        CASES
            .iter()
            .find(|c| c.spec.id == id)
            .map(LayoutCheck::Case)
    }
}

/// Judges a built-in case: its layout must assemble, or be refused naming
/// exactly the expected stores, each with its backend and the lease store's.
fn judge_case(case: &Case) -> Outcome {
    let spec = &case.spec;
    let layout = match case.source {
        Source::Named(make) => make(),
        Source::Toml(text) => match Layout::from_toml_str(text, spec.id) {
            Ok(layout) => layout,
            Err(e) => {
                // The case's own text is the harness's, not a layout under test.
                return Outcome {
                    result: spec.result(
                        SUITE,
                        Verdict::Unknown,
                        format!("the check's layout could not be read: {e}"),
                    ),
                    assembled: None,
                };
            }
        },
    };
    let assembled = assemble(&layout);
    let evidence = LayoutEvidence {
        layout: Some(layout.clone()),
        assembled: assembled.is_ok(),
        refusal: assembled.as_ref().err().map(|e| e.to_string()),
    };
    let (verdict, reason) = match (&case.expect, &assembled) {
        (Expect::Assembles, Ok(a)) => (Verdict::Pass, format!("assembles: {a}")),
        (Expect::Assembles, Err(e)) => (
            Verdict::Fail,
            format!("a supported layout ({layout}) was refused: {e}"),
        ),
        (Expect::Refused(_), Ok(a)) => (
            Verdict::Fail,
            format!("a layout breaking the one-backend rule assembled: {a}"),
        ),
        (Expect::Refused(expected), Err(e)) => match names_offenders(&layout, e, expected) {
            Ok(()) => (Verdict::Pass, format!("refused: {e}")),
            Err(why) => (Verdict::Fail, format!("refused, but {why}: {e}")),
        },
    };
    let mut result = spec.result(SUITE, verdict, reason);
    result.evidence = Evidence::Layout(evidence);
    Outcome {
        result,
        assembled: Some(assembled.is_ok()),
    }
}

/// Judges the given layout: it must assemble.
fn judge_given(origin: &str, layout: &Layout) -> Outcome {
    let assembled = assemble(layout);
    let evidence = LayoutEvidence {
        layout: Some(layout.clone()),
        assembled: assembled.is_ok(),
        refusal: assembled.as_ref().err().map(|e| e.to_string()),
    };
    let (verdict, reason) = match &assembled {
        Ok(a) => (Verdict::Pass, format!("{origin} assembles: {a}")),
        Err(e) => (Verdict::Fail, format!("{origin} is refused: {e}")),
    };
    let mut result = GIVEN.result(SUITE, verdict, reason);
    result.evidence = Evidence::Layout(evidence);
    Outcome {
        result,
        assembled: Some(assembled.is_ok()),
    }
}

/// Whether refusal `e` of `layout` is the one-backend rule's, naming exactly
/// `expected`, each with its backend, and the lease store with its own.
fn names_offenders(layout: &Layout, e: &LayoutError, expected: &[Store]) -> Result<(), String> {
    let line = e.to_string();
    if !line.starts_with(MISMATCH_ID) {
        return Err(format!("the error does not start with {MISMATCH_ID}"));
    }
    let named = e.offending_stores();
    if named != expected {
        let list = |s: &[Store]| s.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ");
        return Err(format!(
            "it names {} where it must name {}",
            list(&named),
            list(expected)
        ));
    }
    for store in expected {
        let Some(backend) = layout.backend(*store) else {
            return Err(format!("{store} is not in the layout"));
        };
        if !line.contains(&format!("{store} on {backend}")) {
            return Err(format!("the line does not say {store} is on {backend}"));
        }
    }
    let lease = match layout.backend(Store::Lease) {
        Some(b) => format!("lease on {b}"),
        None => "no lease store".to_string(),
    };
    if !line.contains(&lease) {
        return Err(format!("the line does not say {lease}"));
    }
    Ok(())
}

#[async_trait]
impl Suite for LayoutSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    /// The built-in cases, and `layout.given-assembles` only when the suite
    /// was given a layout (never a skipped MUST check that would leave the
    /// run incomplete).
    fn checks(&self) -> Vec<CheckSpec> {
        let mut checks: Vec<CheckSpec> = CASES.iter().map(|c| c.spec).collect();
        if self.given.is_some() {
            checks.push(GIVEN);
        }
        checks
    }

    async fn run(
        &self,
        _subject: &Subject<'_>,
        to_run: &[CheckSpec],
        progress: &dyn Progress,
    ) -> Result<SuiteRun, SuiteError> {
        progress.part(SUITE, to_run.len() as u64);
        let (checks, figures) = self.run_checks(to_run);
        for result in &checks {
            progress.step(&result.id);
        }
        Ok(SuiteRun {
            checks,
            figures: Figures::Layout(figures),
        })
    }

    async fn replay(
        &self,
        _subject: &Subject<'_>,
        check: &CheckSpec,
        _counterexample: Option<&harness::counterexample::Counterexample>,
        _progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError> {
        if !self.checks().iter().any(|c| c.id == check.id) {
            return Err(SuiteError::Setup(format!(
                "{} is not a check of the layout suite{}",
                check.id,
                if matches!(LayoutCheck::of(check.id), Some(LayoutCheck::Given)) {
                    " run without a layout file (pass the file again)"
                } else {
                    ""
                }
            )));
        }
        // Deterministic: the check run again is its replay.
        Ok(self.run_one(check).result)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use harness::{ServerRef, Silent};
    use stores::redis::RedisStoreFactory;

    use super::*;
    use crate::file::Backend;

    fn ids(specs: &[CheckSpec]) -> Vec<&'static str> {
        specs.iter().map(|s| s.id).collect()
    }

    #[test]
    fn every_check_is_a_must_layout_check_needing_no_server_and_written_once() {
        let suite = LayoutSuite::with_layout("x", Layout::coordination_set());
        let checks = suite.checks();
        let unique: BTreeSet<&str> = ids(&checks).into_iter().collect();
        assert_eq!(unique.len(), checks.len());
        for c in &checks {
            assert!(c.id.starts_with("layout."), "{}", c.id);
            assert_eq!(c.level, Level::Must, "{}", c.id);
            assert!(c.contracts.is_empty(), "{}", c.id);
            assert_eq!(c.needs, Needs::AnyServer, "{}", c.id);
        }
    }

    #[test]
    fn the_given_check_is_declared_only_when_a_layout_is_given() {
        assert!(!ids(&LayoutSuite::new().checks()).contains(&GIVEN.id));
        let given = LayoutSuite::with_layout("x", Layout::coordination_set());
        assert_eq!(ids(&given.checks()).last(), Some(&GIVEN.id));
    }

    #[test]
    fn every_built_in_check_holds_with_one_result_each_in_order() {
        let suite = LayoutSuite::new();
        let to_run = suite.checks();
        let (results, figures) = suite.run_checks(&to_run);
        assert_eq!(
            results.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ids(&to_run)
        );
        for r in &results {
            assert_eq!(r.verdict, Verdict::Pass, "{}: {}", r.id, r.reason);
            assert_eq!(r.suite, SUITE);
            assert!(
                matches!(&r.evidence, Evidence::Layout(e) if e.layout.is_some()),
                "{}",
                r.id
            );
        }
        assert_eq!(figures.assembled, 2);
        assert_eq!(figures.refused, 5);
        assert_eq!(figures.given, None);
    }

    #[test]
    fn a_refusal_check_passes_with_the_refusal_line_as_its_reason() {
        let spec = CASES[5].spec;
        let (results, _) = LayoutSuite::new().run_checks(&[spec]);
        assert!(results[0].reason.starts_with("refused: [application.store-backend-mismatch] fenced_effect on sqlite beside lease on redis"), "{}", results[0].reason);
        assert!(matches!(&results[0].evidence, Evidence::Layout(e) if !e.assembled));
    }

    fn case(source: Source, expect: Expect) -> Case {
        Case {
            spec: CASES[0].spec,
            source,
            expect,
        }
    }

    #[test]
    fn a_case_fails_when_assembly_does_not_do_what_the_rule_says() {
        // A supported layout refused, a bad one assembled, or a refusal naming
        // the wrong stores must each fail the check.
        let bad = "[stores]\nlease = \"redis\"\nfenced_effect = \"sqlite\"\n";
        let wrong = [
            case(Source::Toml(bad), Expect::Assembles),
            case(
                Source::Named(Layout::coordination_set),
                Expect::Refused(&[Store::FencedEffect]),
            ),
            case(Source::Toml(bad), Expect::Refused(&[Store::OutboundCall])),
            case(
                Source::Toml(bad),
                Expect::Refused(&[Store::FencedEffect, Store::OutboundCall]),
            ),
        ];
        for c in &wrong {
            let out = judge_case(c);
            assert_eq!(out.result.verdict, Verdict::Fail, "{}", out.result.reason);
        }
        let missing_lease = case(
            Source::Toml("[stores]\nqueue = \"redis\"\n"),
            Expect::Refused(&[]),
        );
        let out = judge_case(&missing_lease);
        assert_eq!(out.result.verdict, Verdict::Fail, "{}", out.result.reason);
        assert!(
            out.result.reason.contains("does not start with"),
            "{}",
            out.result.reason
        );
    }

    #[test]
    fn a_case_whose_own_text_is_unreadable_is_unknown_not_failed() {
        let out = judge_case(&case(Source::Toml("[stores"), Expect::Assembles));
        assert_eq!(
            out.result.verdict,
            Verdict::Unknown,
            "{}",
            out.result.reason
        );
        assert_eq!(out.assembled, None);
    }

    #[test]
    fn a_given_layout_passes_when_it_assembles_and_fails_when_refused() {
        let good =
            LayoutSuite::with_layout("good.toml", Layout::redis_queue_and_rate_beside_durable());
        let (results, figures) = good.run_checks(&[GIVEN]);
        assert_eq!(results[0].verdict, Verdict::Pass, "{}", results[0].reason);
        let given = figures.given.unwrap();
        assert!(given.assembled);
        assert_eq!(given.origin, "good.toml");

        let bad_layout = Layout::coordination_set().with(Store::OutboundCall, Backend::Sqlite);
        let bad = LayoutSuite::with_layout("bad.toml", bad_layout.clone());
        let (results, figures) = bad.run_checks(&[GIVEN]);
        assert_eq!(results[0].verdict, Verdict::Fail);
        assert!(
            results[0].reason.starts_with(
                "bad.toml is refused: [application.store-backend-mismatch] outbound_call on sqlite"
            ),
            "{}",
            results[0].reason
        );
        let given = figures.given.unwrap();
        assert!(!given.assembled);
        assert_eq!(
            given.stores,
            bad_layout
                .stores()
                .map(|(s, b)| (s.name().to_string(), b.name().to_string()))
                .collect()
        );
        assert!(given.refusal.unwrap().contains("outbound_call on sqlite"));
    }

    #[test]
    fn a_layout_file_is_read_when_the_suite_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("layout.toml");
        std::fs::write(&path, "[stores]\nlease = \"redis\"\n").unwrap();
        let suite = LayoutSuite::with_file(&path).unwrap();
        assert!(ids(&suite.checks()).contains(&GIVEN.id));
        std::fs::write(&path, "[stores]\nleese = \"redis\"\n").unwrap();
        let e = LayoutSuite::with_file(&path).unwrap_err();
        assert!(matches!(e, LayoutError::UnknownStore { .. }), "{e}");
    }

    #[test]
    fn figures_read_back_from_json() {
        let suite = LayoutSuite::with_layout("l.toml", Layout::coordination_set());
        let (_, figures) = suite.run_checks(&suite.checks());
        let json = serde_json::to_value(&figures).unwrap();
        assert_eq!(json["given"]["stores"]["lease"], "redis");
        let back: LayoutFigures = serde_json::from_value(json).unwrap();
        assert_eq!(back, figures);
    }

    #[tokio::test]
    async fn the_suite_runs_and_replays_through_the_trait_without_a_server() {
        let dir = tempfile::tempdir().unwrap();
        let subject = Subject {
            spec: "builtin:redis".into(),
            factory: Arc::new(RedisStoreFactory::new(dir.path().join("kept.db"))),
            opt_out: None,
            run_prefix: "sp:test:".into(),
            contracts: vec![],
            // Nothing listens here: the suite must not connect.
            server: ServerRef::External {
                url: "redis://127.0.0.1:1/".into(),
            },
            seed: 1,
            may_start_servers: false,
        };
        let suite = LayoutSuite::new();
        let checks = suite.checks();
        let (settled, to_run) = harness::plan(SUITE, checks.clone(), &subject);
        assert!(settled.is_empty());
        let run = suite.run(&subject, &to_run, &Silent).await.unwrap();
        assert_eq!(run.checks.len(), checks.len());
        assert!(run.checks.iter().all(|r| r.verdict == Verdict::Pass));

        let replayed = suite
            .replay(&subject, &checks[2], None, &Silent)
            .await
            .unwrap();
        assert_eq!(replayed, run.checks[2]);
        let err = suite
            .replay(&subject, &GIVEN, None, &Silent)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("without a layout file"), "{err}");
    }
}
