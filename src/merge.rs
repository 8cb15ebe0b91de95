//! `storeproof merge DIR...`: the reports of the shards of one run
//! (`certify --shard K/N`) joined into the report of the whole run.
//!
//! Refused (exit 2, one line): reports of different storeproof versions,
//! seeds, stores, command lines (sizes, suites, checks) or shard counts, a
//! report that is not a shard's, a missing or duplicated shard. A check
//! reported by several shards gets the strongest verdict — fail > unknown >
//! warn > pass > skipped — with the reason, evidence and counterexample of
//! the first shard that gave it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;

use harness::figures::{ConformanceFigures, Stats};
use harness::{CheckResult, Report, Verdict};

use crate::shard::Shard;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The report directories of the shards (each holding the report.json
    /// `certify --shard K/N --out DIR` wrote), one for every K of N.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Where to write the merged index.html, report.json and junit.xml.
    #[arg(long, value_name = "DIR", default_value_os_t = crate::default_out())]
    out: PathBuf,
}

/// Runs `merge`: exit as the merged run's verdict (0, 1 or 3); `Err` is a
/// refusal (exit 2).
pub fn run(args: MergeArgs) -> anyhow::Result<ExitCode> {
    reports::check_out_dir(&args.out)?;
    let mut shards = Vec::new();
    for dir in &args.dirs {
        let file = dir.join("report.json");
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let report: Report = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a storeproof report", file.display()))?;
        let shard = shard_of(&report).ok_or_else(|| {
            anyhow::anyhow!(
                "{} is not a shard's report (its command line has no --shard K/N)",
                file.display()
            )
        })?;
        shards.push((shard, file, report));
    }
    let merged = merge(shards)?;
    reports::write_all(&merged, &args.out)?;
    let counts = merged.counts();
    println!(
        "merged {} shards: checks: {}",
        args.dirs.len(),
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("verdict: {}", merged.verdict.word());
    println!("report: {}", args.out.join("index.html").display());
    Ok(ExitCode::from(merged.verdict.exit_code()))
}

/// The shard a report was made by, read from its command line.
fn shard_of(report: &Report) -> Option<Shard> {
    let command = &report.run.command;
    command.iter().enumerate().find_map(|(i, arg)| {
        let value = match arg.strip_prefix("--shard") {
            Some("") => command.get(i + 1)?.as_str(),
            Some(rest) => rest.strip_prefix('=')?,
            None => return None,
        };
        value.parse().ok()
    })
}

/// A command line without what may differ between the shards of one run:
/// the program's path, `--shard`, `--out`, `--quiet`, and `--server` (a CI
/// matrix runs each server in jobs of its own; merge groups by server).
fn comparable(command: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut args = command.iter().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--shard" | "--out" | "--server" => {
                args.next();
            }
            "--quiet" | "-q" => {}
            a if a.starts_with("--shard=")
                || a.starts_with("--out=")
                || a.starts_with("--server=") => {}
            a => kept.push(a.to_string()),
        }
    }
    kept
}

/// The shards' reports as the report of the whole run; `Err` names what
/// does not belong together, or the shard missing or given twice.
fn merge(mut shards: Vec<(Shard, PathBuf, Report)>) -> anyhow::Result<Report> {
    let Some((first_shard, first_file, first)) = shards.first().cloned() else {
        bail!("no report to merge");
    };
    let at = |f: &Path| f.display().to_string();
    for (shard, file, report) in &shards[1..] {
        let differs = |what: &str, a: String, b: String| {
            anyhow::anyhow!(
                "{} and {} are not shards of one run: different {what} ({a} and {b})",
                at(&first_file),
                at(file)
            )
        };
        if shard.n != first_shard.n {
            return Err(differs(
                "shard counts",
                first_shard.n.to_string(),
                shard.n.to_string(),
            ));
        }
        if report.storeproof != first.storeproof {
            return Err(differs(
                "storeproof versions",
                first.storeproof.clone(),
                report.storeproof.clone(),
            ));
        }
        if report.run.seed != first.run.seed {
            return Err(differs(
                "seeds",
                first.run.seed.to_string(),
                report.run.seed.to_string(),
            ));
        }
        if report.store.spec != first.store.spec || report.run.store != first.run.store {
            return Err(differs(
                "stores",
                first.store.spec.clone(),
                report.store.spec.clone(),
            ));
        }
        if comparable(&report.run.command) != comparable(&first.run.command) {
            return Err(differs(
                "command lines (sizes, suites or checks)",
                comparable(&first.run.command).join(" "),
                comparable(&report.run.command).join(" "),
            ));
        }
    }
    shards.sort_by_key(|(s, _, _)| s.k);
    // Every shard's run on each server, grouped by server in the order the
    // servers first appear: a job may have run one server (a CI matrix of
    // servers × shards) or several.
    let mut groups: Vec<(Option<String>, Vec<ShardRun<'_>>)> = Vec::new();
    for (shard, file, report) in &shards {
        for run in report.runs() {
            let name = run.server.name.clone();
            match groups.iter_mut().find(|(n, _)| *n == name) {
                Some((_, runs)) => runs.push((*shard, file, run)),
                None => groups.push((name, vec![(*shard, file, run)])),
            }
        }
    }
    let mut merged = Vec::new();
    for (name, runs) in &groups {
        let server = name
            .as_deref()
            .map(|n| format!(" of {n}"))
            .unwrap_or_default();
        for k in 1..=first_shard.n {
            let given: Vec<&PathBuf> = runs
                .iter()
                .filter(|(s, _, _)| s.k == k)
                .map(|(_, f, _)| *f)
                .collect();
            match given.as_slice() {
                [] => bail!(
                    "shard {k}/{}{server} is missing: merge needs the report of every shard",
                    first_shard.n
                ),
                [_] => {}
                [a, b, ..] => bail!(
                    "shard {k}/{}{server} is given twice ({} and {})",
                    first_shard.n,
                    at(a),
                    at(b)
                ),
            }
        }
        let runs: Vec<(Shard, &Report)> = runs.iter().map(|(s, _, r)| (*s, *r)).collect();
        merged.push(merge_runs(&runs));
    }
    Report::of_servers(merged).context("no server's run to merge")
}

/// One shard's run on one server, with the file it came from.
type ShardRun<'a> = (Shard, &'a PathBuf, &'a Report);

/// One server's runs of every shard (in shard order) as one run.
fn merge_runs(runs: &[(Shard, &Report)]) -> Report {
    let first = runs[0].1;
    let order = check_order(runs);
    let mut by_id: BTreeMap<&str, Vec<(Shard, &CheckResult)>> = BTreeMap::new();
    for (shard, run) in runs {
        for c in &run.checks {
            by_id.entry(c.id.as_str()).or_default().push((*shard, c));
        }
    }
    let checks: Vec<CheckResult> = order
        .iter()
        .filter_map(|id| by_id.get(id.as_str()).map(|r| join(r)))
        .collect();
    let stats: Vec<Stats> = runs.iter().map(|(_, r)| r.stats.clone()).collect();
    let mut stats = Stats::merged(&stats, &explorer::skews());
    if let Some(c) = stats.conformance.take() {
        let mine: Vec<&CheckResult> = checks.iter().filter(|c| c.suite == "conformance").collect();
        let count = |v: Verdict| mine.iter().filter(|r| r.verdict == v).count();
        stats.conformance = Some(ConformanceFigures {
            checks: mine.len(),
            pass: count(Verdict::Pass),
            fail: count(Verdict::Fail),
            warn: count(Verdict::Warn),
            skipped: count(Verdict::Skipped),
            unknown: count(Verdict::Unknown),
            ..c
        });
    }
    let mut run = first.run.clone();
    // The merged run is the whole run: its command line is shard 1's
    // without --shard.
    let mut command = Vec::new();
    let mut args = run.command.iter();
    while let Some(arg) = args.next() {
        if arg == "--shard" {
            args.next();
        } else if !arg.starts_with("--shard=") {
            command.push(arg.clone());
        }
    }
    run.command = command;
    Report {
        storeproof: first.storeproof.clone(),
        verdict: Report::verdict_of(&checks),
        store: first.store.clone(),
        server: first.server.clone(),
        checks,
        stats,
        run,
        per_server: Vec::new(),
    }
}

/// How strongly a verdict speaks: the merged check takes the strongest.
fn rank(v: Verdict) -> u8 {
    match v {
        Verdict::Fail => 4,
        Verdict::Unknown => 3,
        Verdict::Warn => 2,
        Verdict::Pass => 1,
        Verdict::Skipped => 0,
    }
}

/// One check's results from the shards that reported it (shard order) as
/// one: the strongest verdict, with the reason, evidence and counterexample
/// of the first shard that gave it; when every shard gave that verdict for
/// reasons of its own, each shard's reason; the seconds summed.
fn join(results: &[(Shard, &CheckResult)]) -> CheckResult {
    let strongest = results
        .iter()
        .map(|(_, c)| rank(c.verdict))
        .max()
        .unwrap_or(0);
    let (_, decided) = results
        .iter()
        .find(|(_, c)| rank(c.verdict) == strongest)
        .copied()
        .unwrap_or(results[0]);
    let mut joined = decided.clone();
    joined.seconds =
        (results.iter().map(|(_, c)| c.seconds).sum::<f64>() * 1000.0).round() / 1000.0;
    let all_alike = results.iter().all(|(_, c)| c.verdict == decided.verdict);
    let reasons_differ = results.iter().any(|(_, c)| c.reason != decided.reason);
    if all_alike && reasons_differ {
        joined.reason = results
            .iter()
            .map(|(s, c)| format!("shard {s}: {}", c.reason))
            .collect::<Vec<_>>()
            .join("; ");
    }
    joined
}

/// The ids of every check of `runs` in the whole run's order: suites in the
/// order the shards ran them, checks in the order their suite declares
/// them (ids no suite of this version declares after, as first seen).
fn check_order(runs: &[(Shard, &Report)]) -> Vec<String> {
    let sequences: Vec<Vec<String>> = runs
        .iter()
        .map(|(_, r)| {
            let mut suites: Vec<String> = r.checks.iter().map(|c| c.suite.clone()).collect();
            suites.dedup();
            suites
        })
        .collect();
    let suites = interleave(sequences);
    let declared: Vec<&'static str> = crate::certify::every_suite()
        .iter()
        .flat_map(|s| s.checks())
        .map(|c| c.id)
        .collect();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (_, r) in runs {
        for c in &r.checks {
            if !seen.iter().any(|(id, _)| *id == c.id) {
                seen.push((c.id.as_str(), c.suite.as_str()));
            }
        }
    }
    let key = |(i, (id, suite)): &(usize, &(&str, &str))| {
        (
            suites.iter().position(|s| s == suite).unwrap_or(usize::MAX),
            declared.iter().position(|d| d == id).unwrap_or(usize::MAX),
            *i,
        )
    };
    let mut ordered: Vec<(usize, &(&str, &str))> = seen.iter().enumerate().collect();
    ordered.sort_by_key(key);
    ordered
        .into_iter()
        .map(|(_, (id, _))| id.to_string())
        .collect()
}

/// One order holding each of `sequences` as a subsequence (each shard ran
/// its suites in the run's order): repeatedly the first head that comes
/// later in no sequence.
fn interleave(mut sequences: Vec<Vec<String>>) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        sequences.retain(|s| !s.is_empty());
        let heads: Vec<String> = sequences.iter().map(|s| s[0].clone()).collect();
        let Some(next) = heads
            .iter()
            .find(|h| !sequences.iter().any(|s| s[1..].contains(h)))
            .or(heads.first())
            .cloned()
        else {
            return out;
        };
        for s in &mut sequences {
            if s.first() == Some(&next) {
                s.remove(0);
            }
        }
        out.push(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::Level;

    fn result(id: &str, verdict: Verdict, reason: &str) -> CheckResult {
        CheckResult {
            level: Level::Must,
            ..CheckResult::undecided(id, "x", verdict, reason)
        }
    }

    fn shard(k: usize) -> Shard {
        Shard { k, n: 3 }
    }

    #[test]
    fn the_strongest_verdict_wins_with_the_reason_of_the_shard_that_gave_it() {
        let pass = result("x.a", Verdict::Pass, "held here");
        let skipped = result("x.a", Verdict::Skipped, "none asked");
        let unknown = result("x.a", Verdict::Unknown, "server gone");
        let mut fail = result("x.a", Verdict::Fail, "broke in shard 3");
        fail.counterexample = Some(harness::counterexample::Counterexample::Scenario(
            harness::counterexample::ScenarioCounterexample {
                steps: vec![harness::scenario::Step::At(3)],
                observed: harness::counterexample::Answer::Nothing,
            },
        ));
        let warn = CheckResult {
            level: Level::Should,
            ..result("x.a", Verdict::Warn, "slow")
        };
        let j = join(&[(shard(1), &pass), (shard(2), &unknown), (shard(3), &fail)]);
        assert_eq!(j.verdict, Verdict::Fail);
        assert_eq!(j.reason, "broke in shard 3");
        assert!(j.counterexample.is_some());
        let j = join(&[(shard(1), &pass), (shard(2), &unknown), (shard(3), &warn)]);
        assert_eq!(
            (j.verdict, j.reason.as_str()),
            (Verdict::Unknown, "server gone")
        );
        // A SHOULD's warn stays a warn over a pass; a skip gives way.
        let j = join(&[(shard(1), &warn), (shard(2), &pass)]);
        assert_eq!(j.verdict, Verdict::Warn);
        let j = join(&[(shard(1), &skipped), (shard(2), &pass)]);
        assert_eq!((j.verdict, j.reason.as_str()), (Verdict::Pass, "held here"));
        // The same verdict for reasons of each shard's own: every reason.
        let other = result("x.a", Verdict::Pass, "held there");
        let j = join(&[(shard(1), &pass), (shard(2), &other)]);
        assert_eq!(j.reason, "shard 1/3: held here; shard 2/3: held there");
    }

    #[test]
    fn suites_keep_the_order_every_shard_ran_them_in() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            interleave(vec![
                s(&["conformance", "crash"]),
                s(&["conformance", "explorer", "crash"]),
                s(&["explorer", "faults"]),
            ]),
            s(&["conformance", "explorer", "crash", "faults"])
        );
    }

    #[test]
    fn the_shard_is_read_from_the_command_line_and_left_out_of_the_comparison() {
        let mut report = Report {
            storeproof: "0".into(),
            verdict: harness::RunVerdict::Pass,
            store: harness::StoreSection {
                spec: "builtin:redis".into(),
                name: String::new(),
                version: String::new(),
                contracts: Vec::new(),
            },
            server: harness::ServerSection {
                version: "7".into(),
                managed: true,
                settings: BTreeMap::new(),
                name: None,
                product: None,
            },
            checks: Vec::new(),
            stats: Stats::default(),
            run: harness::RunSection::default(),
            per_server: Vec::new(),
        };
        let line = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        report.run.command = line(&["sp", "certify", "--shard", "2/3", "--seed", "5"]);
        assert_eq!(shard_of(&report), Some(Shard { k: 2, n: 3 }));
        report.run.command = line(&["sp", "certify", "--shard=3/3"]);
        assert_eq!(shard_of(&report), Some(Shard { k: 3, n: 3 }));
        report.run.command = line(&["sp", "certify"]);
        assert_eq!(shard_of(&report), None);
        assert_eq!(
            comparable(&line(&[
                "/x/sp", "certify", "--shard", "1/3", "--out", "a", "-q", "--seed", "5"
            ])),
            comparable(&line(&[
                "sp",
                "certify",
                "--seed",
                "5",
                "--out=b",
                "--shard=2/3"
            ]))
        );
    }
}
