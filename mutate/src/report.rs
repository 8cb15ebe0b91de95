//! `mutate-report.json` and `mutate-report.md`: the score, the counts, the
//! wall time, per-script figures and every survivor with its diff.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{io, MutantResult, MutateError, Options, RunOutcome, Status};

/// One script's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScriptFigures {
    /// Mutants of the script.
    pub mutants: usize,
    /// Killed.
    pub killed: usize,
    /// Survived.
    pub survived: usize,
    /// Undecided.
    pub unknown: usize,
}

/// The whole report. `score` is killed / total: an undecided mutant counts
/// as not killed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Mutants generated.
    pub total: usize,
    /// Killed by a check.
    pub killed: usize,
    /// Passed every check of their contract.
    pub survived: usize,
    /// Undecided (harness trouble).
    pub unknown: usize,
    /// killed / total, 0 when there are none.
    pub score: f64,
    /// This run's wall time, seconds.
    pub wall_seconds: f64,
    /// Mutants an earlier run decided (not run again).
    pub resumed: usize,
    /// Seconds the mutants took, summed over jobs and runs.
    pub mutant_seconds: f64,
    /// Jobs side by side.
    pub jobs: usize,
    /// The run's seed.
    pub seed: u64,
    /// Sequences per generated check.
    pub cases: u32,
    /// Per script.
    pub scripts: BTreeMap<String, ScriptFigures>,
    /// Mutants killed per check.
    pub killed_by: BTreeMap<String, usize>,
    /// Every mutant's result.
    pub mutants: Vec<MutantResult>,
}

impl Report {
    /// The figures of `outcome`.
    pub fn of(outcome: &RunOutcome, opts: &Options) -> Report {
        let rs = &outcome.results;
        let count = |s: Status| rs.iter().filter(|r| r.status == s).count();
        let killed = count(Status::Killed);
        let mut scripts: BTreeMap<String, ScriptFigures> = BTreeMap::new();
        let mut killed_by: BTreeMap<String, usize> = BTreeMap::new();
        for r in rs {
            let f = scripts.entry(r.script.clone()).or_default();
            f.mutants += 1;
            match r.status {
                Status::Killed => f.killed += 1,
                Status::Survived => f.survived += 1,
                Status::Unknown => f.unknown += 1,
            }
            if let Some(c) = &r.killed_by {
                *killed_by.entry(c.clone()).or_default() += 1;
            }
        }
        Report {
            total: rs.len(),
            killed,
            survived: count(Status::Survived),
            unknown: count(Status::Unknown),
            score: if rs.is_empty() {
                0.0
            } else {
                killed as f64 / rs.len() as f64
            },
            wall_seconds: outcome.wall.as_secs_f64(),
            resumed: outcome.resumed,
            mutant_seconds: rs.iter().map(|r| r.seconds).sum(),
            jobs: opts.jobs,
            seed: opts.seed,
            cases: opts.cases,
            scripts,
            killed_by,
            mutants: rs.clone(),
        }
    }

    /// The short summary and every survivor with its diff, as markdown.
    pub fn markdown(&self) -> String {
        let mut s = format!(
            "# Mutation score of the built-in Lua\n\n\
             **{:.1} %** ({} killed of {} mutants; {} survived, {} undecided). \
             Wall time {:.1} s on {} jobs ({} decided by an earlier run); seed {}, {} cases per generated check.\n\n\
             | script | mutants | killed | survived | undecided |\n|---|---|---|---|---|\n",
            self.score * 100.0,
            self.killed,
            self.total,
            self.survived,
            self.unknown,
            self.wall_seconds,
            self.jobs,
            self.resumed,
            self.seed,
            self.cases,
        );
        for (name, f) in &self.scripts {
            s.push_str(&format!(
                "| {name} | {} | {} | {} | {} |\n",
                f.mutants, f.killed, f.survived, f.unknown
            ));
        }
        s.push_str("\n## Survivors\n\n");
        for r in self.mutants.iter().filter(|r| r.status != Status::Killed) {
            s.push_str(&format!(
                "### {}:{} ({}, {}, `{}`)\n\n```diff\n{}```\n\n",
                r.script,
                r.line,
                r.kind.name(),
                match r.status {
                    Status::Unknown => "undecided",
                    _ => "survived",
                },
                r.id,
                r.diff()
            ));
        }
        s
    }
}

/// Writes `mutate-report.json` and `mutate-report.md` into `opts.out`
/// (each written whole to a temporary name, then renamed).
pub fn write_reports(outcome: &RunOutcome, opts: &Options) -> Result<Report, MutateError> {
    let report = Report::of(outcome, opts);
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    write(&opts.out.join("mutate-report.json"), &json)?;
    write(&opts.out.join("mutate-report.md"), &report.markdown())?;
    Ok(report)
}

fn write(path: &Path, text: &str) -> Result<(), MutateError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}
