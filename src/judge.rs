//! `storeproof check PATH`: judges saved conformance histories again, with
//! no server and no store: the checker is a pure function of the history and
//! the server observations recorded beside it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};
use clap::Args;
use serde_json::Value;

use conformance::{CheckHistory, Step};
use model::counterexample::Counterexample;
use model::evidence::Evidence;
use model::{CheckResult, Verdict};

use crate::progress::printable;

/// What to re-judge.
#[derive(Debug, Args)]
#[command(after_help = "\
PATH is either a report.json written by `storeproof certify` (every check \
whose evidence carries a history is judged again: the conformance scenario \
checks, and the shrunk failing sequence of a generated check; a passing \
generated check keeps only its figures and is named as not judged), or a JSON file holding one such evidence object, with the fields \
check, level, start_ms, history and observations (copy a check's \"evidence\" \
out of report.json).

Prints one line per check: the verdict the report recorded and the verdict \
judged again. Exit 0: no re-judged check fails and each agrees with the \
report; 1: a re-judged check fails or disagrees with the report (each is \
named); 2: PATH cannot be read as either shape.")]
pub struct CheckArgs {
    /// A report.json from `storeproof certify`, or one check's saved evidence.
    path: PathBuf,
}

/// One history to judge, and what the report said of it.
struct Saved {
    id: String,
    recorded: Option<Verdict>,
    history: CheckHistory,
    /// The steps the history follows when they are not the check's own
    /// scenario: a generated check's shrunk sequence, from its counterexample.
    steps: Option<Vec<Step>>,
}

/// Runs `check`; `Err` is unreadable input (exit 2), one line.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    check(&args.path).map_err(|e| anyhow!(printable(&format!("{e:#}"))))
}

fn check(path: &Path) -> anyhow::Result<ExitCode> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).with_context(|| {
        format!("cannot read {shown}; give the report.json that storeproof certify wrote")
    })?;
    let value: Value = serde_json::from_str(&text).with_context(|| {
        format!("{shown} is not JSON; give the report.json that storeproof certify wrote")
    })?;
    let saved = saved_histories(&value, &shown.to_string())?;
    let mut wrong = Vec::new();
    for s in &saved {
        let judged = match &s.steps {
            Some(steps) => conformance::judge_steps(steps, &s.history),
            None => conformance::judge(&s.history)
                .with_context(|| format!("{}: cannot be judged by this version", s.id))?,
        };
        let recorded = s.recorded.map_or("-", |v| v.word());
        let now = judged.verdict.word();
        let agrees = s.recorded.is_none_or(|v| v == judged.verdict);
        let fails = judged.verdict == Verdict::Fail;
        let mut line = format!("{}: recorded {recorded}, re-judged {now}", s.id);
        // A plain pass has nothing to explain.
        if !judged.reason.is_empty() {
            line.push_str(&format!(" ({})", judged.reason));
        }
        if !agrees {
            line.push_str(" DISAGREES");
        }
        println!("{}", printable(&line));
        if fails || !agrees {
            wrong.push(s.id.clone());
        }
    }
    if wrong.is_empty() {
        println!(
            "{} histories judged again: each agrees with the report, none fails",
            saved.len()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "judged again, {} fail or disagree with the report: {}",
            wrong.len(),
            printable(&wrong.join(", "))
        );
        Ok(ExitCode::from(1))
    }
}

/// Whether an evidence object is a saved history.
fn is_history(evidence: &Value) -> bool {
    evidence.get("check").is_some_and(Value::is_string)
        && evidence.get("history").is_some_and(Value::is_object)
        && evidence.get("start_ms").is_some()
}

/// The histories `value` holds: every check of a report whose evidence is
/// one, or the one history the file is.
fn saved_histories(value: &Value, shown: &str) -> anyhow::Result<Vec<Saved>> {
    let read = |evidence: &Value, id: &str| -> anyhow::Result<CheckHistory> {
        serde_json::from_value(evidence.clone()).with_context(|| {
            format!("{shown}: the saved history of {id} does not read; it must be the evidence storeproof certify wrote")
        })
    };
    if let Some(checks) = value.get("checks").and_then(Value::as_array) {
        let mut saved = Vec::new();
        for c in checks {
            if c["suite"] != "conformance" {
                continue;
            }
            let id = c["id"].as_str().unwrap_or("?").to_string();
            let c: CheckResult = serde_json::from_value(c.clone()).with_context(|| {
                format!("{shown}: the check {id} does not read; it must be as storeproof certify wrote it")
            })?;
            let recorded = Some(c.verdict);
            let generated = match c.evidence {
                Evidence::Scenario(e) => {
                    saved.push(Saved {
                        recorded,
                        history: e.recorded,
                        id,
                        steps: None,
                    });
                    continue;
                }
                Evidence::Generated(g) => g,
                _ => continue,
            };
            // A generated check keeps the history of its failing (or
            // warned) sequence, whose steps are in its counterexample; a
            // pass keeps only its figures, so there is nothing to judge.
            let case = [generated.failing, generated.case]
                .into_iter()
                .flatten()
                .find_map(|e| match e {
                    Evidence::Scenario(e) => Some(e.recorded),
                    _ => None,
                });
            let steps = match c.counterexample {
                Some(Counterexample::Scenario(cx)) => Some(cx.steps),
                _ => None,
            };
            match (case, steps) {
                (Some(case), Some(steps)) => saved.push(Saved {
                    recorded,
                    history: case,
                    id,
                    steps: Some(steps),
                }),
                _ => println!(
                    "{}",
                    printable(&format!(
                        "{id}: recorded {}, not judged again (a generated check keeps the history of a failing sequence only; this one kept its figures)",
                        recorded.map_or("-", |v: Verdict| v.word())
                    ))
                ),
            }
        }
        if saved.is_empty() {
            bail!(
                "no check in {shown} carries a history to judge again (the conformance scenario checks do); run storeproof certify --suite conformance"
            );
        }
        return Ok(saved);
    }
    if is_history(value) {
        let id = value["check"].as_str().unwrap_or("?").to_string();
        return Ok(vec![Saved {
            recorded: None,
            history: read(value, &id)?,
            id,
            steps: None,
        }]);
    }
    bail!(
        "{shown} is neither a storeproof report.json nor one check's saved history; give the report.json that storeproof certify wrote"
    )
}
