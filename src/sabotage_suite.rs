//! `--suite sabotage`: storeproof certifying itself. Every named sabotage
//! (`sabotage::named()`) is run as the store under test through the suites
//! that apply to it, on the run's managed server, and every check's verdict
//! is kept: the matrix, sabotage × check. Its check `sabotage.<name>` passes
//! only when the check named to catch the sabotage failed on it.
//!
//! Each sabotage gets a `Subject` of its own and each suite runs through the
//! same `harness::plan` and `Suite::run` path `certify` uses, so a check
//! that is skipped for a store there is skipped here too.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use harness::evidence::{Evidence, SabotageEvidence};

use harness::contract::Contract;
use harness::figures::{Figures, SabotageFigures, SabotageRow};
use harness::server::{self, ManagedServer};
use harness::store::StoreFactory;
use harness::{
    CheckResult, CheckSpec, Level, Needs, Progress, ServerRef, Silent, Subject, Suite, SuiteError,
    SuiteRun, Verdict,
};

use crate::store_spec::StoreSpec;

/// The suite's name, as `--suite` and the report write it.
const NAME: &str = "sabotage";

/// What passing one of this suite's checks proves.
const ABOUT: &str = "the check named to catch this sabotage fails on it (storeproof's own proof that the check bites; says which other checks caught it too)";

/// How much of a check's reason a sabotage's reason quotes.
const QUOTED: usize = 240;

/// One sabotage the suite runs: the store, and the check that must catch it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its name after `sabotage:`.
    pub name: &'static str,
    /// The promise it breaks, in one sentence.
    pub breaks: &'static str,
    /// The id of the check that must fail on it.
    pub caught_by: &'static str,
    /// What the named check must say to have caught it.
    pub caught_when: sabotage::Caught,
    /// The store run as the sabotage.
    pub store: StoreSpec,
    /// `sabotage.<name>`: this suite's check about it.
    id: &'static str,
}

impl Entry {
    /// An entry for `store` under `name`, which `caught_by` must catch.
    pub fn new(
        name: &'static str,
        breaks: &'static str,
        caught_by: &'static str,
        store: StoreSpec,
    ) -> Entry {
        Entry {
            name,
            breaks,
            caught_by,
            caught_when: sabotage::Caught::Fails,
            store,
            id: check_id(name),
        }
    }

    /// Every named sabotage of this version, in `sabotage::named()` order.
    pub fn named() -> Vec<Entry> {
        sabotage::named()
            .map(|n| Entry {
                caught_when: n.caught_when,
                ..Entry::new(n.name, n.breaks, n.caught_by, StoreSpec::Sabotage(n.name))
            })
            .collect()
    }

    /// This suite's check about the sabotage (MUST, within every claim:
    /// it is about storeproof, not the store).
    fn spec(&self) -> CheckSpec {
        CheckSpec {
            id: self.id,
            level: Level::Must,
            contracts: &[],
            // The sabotages run on the run's managed server and follow its
            // clock; several suites also start servers of their own.
            needs: Needs::ManagedServer,
            about: ABOUT,
        }
    }
}

/// `sabotage.<name>` as a `&'static str` (a `CheckSpec` id is one). Each
/// name is leaked once per process, and names come from a fixed list.
fn check_id(name: &str) -> &'static str {
    static IDS: Mutex<BTreeMap<String, &'static str>> = Mutex::new(BTreeMap::new());
    let mut ids = match IDS.lock() {
        Ok(ids) => ids,
        // The map is only ever inserted into: a panic elsewhere left it whole.
        Err(poisoned) => poisoned.into_inner(),
    };
    ids.entry(name.to_string())
        .or_insert_with(|| Box::leak(format!("{NAME}.{name}").into_boxed_str()))
}

/// The sabotage suite: `entries` run through `suites` (each at the small
/// sizes it was built with).
pub struct SabotageSuite {
    entries: Vec<Entry>,
    suites: Vec<Box<dyn Suite>>,
    sizes: BTreeMap<String, String>,
    adapter_timeout: Duration,
}

impl SabotageSuite {
    /// The suite over `entries`, running each through `suites` (the suite
    /// owning its named check first, then every other one with a check that
    /// applies to it). `sizes` says, for the report, how big those suites are.
    pub fn new(
        entries: Vec<Entry>,
        suites: Vec<Box<dyn Suite>>,
        sizes: BTreeMap<String, String>,
        adapter_timeout: Duration,
    ) -> SabotageSuite {
        SabotageSuite {
            entries,
            suites,
            sizes,
            adapter_timeout,
        }
    }

    /// The suites to run on `entry`: its named check's owner first (found by
    /// the id's prefix), then the others in their order.
    fn ordered(&self, entry: &Entry) -> Vec<&dyn Suite> {
        let owns = |s: &dyn Suite| owner_of(entry.caught_by) == s.name();
        let all = || self.suites.iter().map(|s| s.as_ref());
        all()
            .filter(|s| owns(*s))
            .chain(all().filter(|s| !owns(*s)))
            .collect()
    }

    /// Runs every suite that applies on `entry` as the store under test, on
    /// the server of `outer`: each check's result, the suites run, and any
    /// trouble of storeproof's own.
    async fn run_one(
        &self,
        outer: &Subject<'_>,
        server: &ServerRef<'_>,
        entry: &Entry,
        index: usize,
    ) -> Result<Ran, SuiteError> {
        let clock = server.managed().and_then(|m| m.clock().cloned());
        let mut ran = Ran::default();
        let workdir = match workdir() {
            Ok(dir) => dir,
            Err(e) => {
                ran.trouble
                    .push(format!("cannot create a working directory: {e}"));
                return Ok(ran);
            }
        };
        let factory: Arc<dyn StoreFactory> =
            entry
                .store
                .factory(workdir.path(), self.adapter_timeout, clock);
        let prefix = format!("{}sab{index}:", outer.run_prefix);
        let url = server.url();
        // A sabotage that refuses the probe still claims the coordination
        // contracts: its refusal is what the checks must then catch.
        let contracts = match crate::certify::probe(
            factory.as_ref(),
            &url,
            &format!("{prefix}probe:"),
            outer.opt_out.clone(),
        )
        .await
        {
            Ok(info) => info.contracts,
            Err(e) => {
                ran.refused = Some(format!("{e:#}"));
                Contract::COORDINATION.to_vec()
            }
        };
        let subject = Subject {
            spec: factory.spec(),
            factory,
            opt_out: outer.opt_out.clone(),
            run_prefix: prefix,
            contracts,
            server: match server {
                ServerRef::Managed(m) => ServerRef::Managed(m),
                ServerRef::External { url } => ServerRef::External { url: url.clone() },
            },
            seed: outer.seed,
            may_start_servers: outer.may_start_servers,
        };
        for suite in self.ordered(entry) {
            let owner = suite.name() == owner_of(entry.caught_by);
            let declared = suite.checks();
            let (settled, to_run) = harness::plan(suite.name(), declared.clone(), &subject);
            // A suite none of whose checks applies says nothing about the
            // sabotage; the owner's verdicts are kept whatever they are.
            if to_run.is_empty() && !owner {
                continue;
            }
            let mut found = settled;
            if !to_run.is_empty() {
                match suite.run(&subject, &to_run, &Silent).await {
                    Ok(run) => found.extend(run.checks),
                    Err(SuiteError::AdapterFailed(line)) => {
                        return Err(SuiteError::AdapterFailed(line))
                    }
                    Err(SuiteError::Setup(e)) => {
                        ran.trouble.push(format!("the {} suite: {e}", suite.name()))
                    }
                }
            }
            ran.suites.push(suite.name().to_string());
            ran.results
                .extend(harness::in_declared_order(suite.name(), &declared, found));
        }
        drop(subject);
        Ok(ran)
    }
}

/// What running one sabotage through its suites gave.
#[derive(Default)]
struct Ran {
    results: Vec<CheckResult>,
    suites: Vec<String>,
    trouble: Vec<String>,
    /// Why the sabotage refused the probe, if it did.
    refused: Option<String>,
}

/// How many sabotages run at once: one per core, at most four (each run is
/// mostly waiting on its server, and the explorer in it uses two threads).
fn workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 4)
}

/// `m` locked; a panic elsewhere cannot leave these plain values half-made.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The suite that owns check `id`: its first dotted part.
fn owner_of(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

/// A working directory for one sabotage's durable files: inside the run's
/// own (which the signal handler removes), else a fresh one marked as ours.
fn workdir() -> std::io::Result<tempfile::TempDir> {
    let builder = {
        let mut b = tempfile::Builder::new();
        b.prefix("sabotage-");
        b
    };
    match crate::RUN_WORKDIR.get() {
        Some(run) if run.is_dir() => builder.tempdir_in(run),
        _ => {
            let dir = tempfile::Builder::new()
                .prefix("storeproof-sabotage-")
                .tempdir()?;
            server::mark_owned(dir.path())?;
            Ok(dir)
        }
    }
}

/// The verdict of `sabotage.<name>` from every check's result on it: pass
/// only when the named check failed (or warned: a SHOULD check's failure);
/// fail when it passed (the sabotage escaped); unknown when it was not
/// decided or not run at all. The reason names the other checks that failed.
pub fn judge(entry: &Entry, results: &[CheckResult]) -> (Verdict, String) {
    let others: Vec<&str> = results
        .iter()
        .filter(|r| r.id != entry.caught_by && matches!(r.verdict, Verdict::Fail | Verdict::Warn))
        .map(|r| r.id.as_str())
        .collect();
    let also = if others.is_empty() {
        "no other check failed".to_string()
    } else {
        format!("also failed: {}", others.join(", "))
    };
    let Some(named) = results.iter().find(|r| r.id == entry.caught_by) else {
        return (
            Verdict::Unknown,
            format!(
                "its named check {} was not run: no suite run on it declares it ({also})",
                entry.caught_by
            ),
        );
    };
    let quoted = quote(&named.reason);
    let caught = entry.caught_when.is_met(named.verdict, &named.reason);
    if caught {
        return (
            Verdict::Pass,
            format!("caught by {}: {quoted} ({also})", entry.caught_by),
        );
    }
    let undecided_because = match entry.caught_when {
        sabotage::Caught::Undecided(because) => Some(because),
        sabotage::Caught::Fails => None,
    };
    match named.verdict {
        // Only a check expected to be undecided gets here failing: a check
        // that never blames the store cannot fail, so this is storeproof's
        // own fault either way.
        Verdict::Fail | Verdict::Warn => (
            Verdict::Fail,
            format!(
                "its named check {} {} on it, where it was to be undecided ({also})",
                entry.caught_by,
                named.verdict.word()
            ),
        ),
        Verdict::Pass => (
            Verdict::Fail,
            format!(
                "escaped: its named check {} passed on it ({also})",
                entry.caught_by
            ),
        ),
        // Undecided, but not for what the sabotage did (harness trouble,
        // say): that catches nothing, and blames nothing either.
        Verdict::Unknown if undecided_because.is_some() => (
            Verdict::Unknown,
            format!(
                "its named check {} was unknown, but not for the sabotage's cause (\"{}\"): {quoted} ({also})",
                entry.caught_by,
                undecided_because.unwrap_or_default()
            ),
        ),
        Verdict::Skipped | Verdict::Unknown => (
            Verdict::Unknown,
            format!(
                "its named check {} was {}{}: {quoted} ({also})",
                entry.caught_by,
                named.verdict.word(),
                if named.outside_claim {
                    ", outside the sabotage's claim"
                } else {
                    ""
                }
            ),
        ),
    }
}

/// `text` cut to [`QUOTED`] characters.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTED) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[async_trait]
impl Suite for SabotageSuite {
    fn name(&self) -> &'static str {
        NAME
    }

    fn checks(&self) -> Vec<CheckSpec> {
        self.entries.iter().map(Entry::spec).collect()
    }

    async fn run(
        &self,
        subject: &Subject<'_>,
        to_run: &[CheckSpec],
        progress: &dyn Progress,
    ) -> Result<SuiteRun, SuiteError> {
        let started = Instant::now();
        let entries: Vec<(usize, &Entry)> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| to_run.iter().any(|c| c.id == e.id))
            .collect();
        progress.part(NAME, entries.len() as u64);
        let ran_all = self.run_all(subject, &entries, progress).await?;
        let mut checks = Vec::new();
        let mut rows = Vec::new();
        for ((_, entry), (ran, seconds)) in entries.into_iter().zip(ran_all) {
            let (mut verdict, mut reason) = judge(entry, &ran.results);
            // A pass resting on a run with trouble of storeproof's own is
            // still a pass (the named check did fail); anything else it
            // leaves undecided, never escaped.
            if !ran.trouble.is_empty() && verdict != Verdict::Pass {
                verdict = Verdict::Unknown;
                reason = format!("{reason}; storeproof's trouble: {}", ran.trouble.join("; "));
            }
            let verdicts: BTreeMap<String, Verdict> = ran
                .results
                .iter()
                .map(|r| (r.id.clone(), r.verdict))
                .collect();
            let spec = entry.spec();
            checks.push(CheckResult {
                evidence: Evidence::Sabotage(SabotageEvidence {
                    store: entry.store.to_string(),
                    caught_by: entry.caught_by.to_string(),
                    named_verdict: verdicts.get(entry.caught_by).copied(),
                    failed: ran
                        .results
                        .iter()
                        .filter(|r| matches!(r.verdict, Verdict::Fail | Verdict::Warn))
                        .map(|r| r.id.clone())
                        .collect(),
                    suites: ran.suites.clone(),
                    probe_refused: ran.refused.clone(),
                    trouble: ran.trouble.clone(),
                }),
                seconds,
                ..spec.result(NAME, verdict, reason)
            });
            rows.push(SabotageRow {
                sabotage: entry.name.to_string(),
                store: entry.store.to_string(),
                breaks: entry.breaks.to_string(),
                caught_by: entry.caught_by.to_string(),
                suites: ran.suites,
                verdicts,
                verdict,
                seconds,
            });
        }
        let figures = SabotageFigures {
            catching: self.catching(&rows),
            rows,
            sizes: self.sizes.clone(),
            seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        };
        Ok(SuiteRun {
            checks,
            figures: Figures::Sabotage(figures),
        })
    }

    async fn replay(
        &self,
        _subject: &Subject<'_>,
        check: &CheckSpec,
        _counterexample: Option<&harness::counterexample::Counterexample>,
        _progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError> {
        Err(SuiteError::Setup(format!(
            "{} has no counterexample of its own to replay: run storeproof certify --suite sabotage --check {}, or replay the named check's counterexample",
            check.id, check.id
        )))
    }
}

impl SabotageSuite {
    /// Runs every entry (with its index) through its suites, [`workers`] at
    /// a time, each worker on a managed server of its own (the run's, then
    /// servers this suite starts, so no two sabotages move one server's
    /// clock): what each run gave and its seconds, in `entries` order.
    async fn run_all(
        &self,
        subject: &Subject<'_>,
        entries: &[(usize, &Entry)],
        progress: &dyn Progress,
    ) -> Result<Vec<(Ran, f64)>, SuiteError> {
        let mut extra = Vec::new();
        if subject.server.managed().is_some() && subject.may_start_servers {
            for _ in 1..workers().min(entries.len()) {
                let server = ManagedServer::start(subject.server_options())
                    .await
                    .map_err(|e| {
                        SuiteError::Setup(format!("cannot start a server for a sabotage: {e}"))
                    })?;
                extra.push(server);
            }
        }
        let servers: Vec<ServerRef<'_>> = std::iter::once(match &subject.server {
            ServerRef::Managed(m) => ServerRef::Managed(m),
            ServerRef::External { url } => ServerRef::External { url: url.clone() },
        })
        .chain(extra.iter().map(ServerRef::Managed))
        .collect();
        let next = Mutex::new(0usize);
        let done: Mutex<Vec<Option<(Ran, f64)>>> =
            Mutex::new(entries.iter().map(|_| None).collect());
        let outcomes = futures_util::future::join_all(
            servers
                .iter()
                .map(|server| self.work(subject, server, entries, &next, &done, progress)),
        )
        .await;
        outcomes.into_iter().collect::<Result<Vec<()>, _>>()?;
        let done = done.into_inner().unwrap_or_else(|p| p.into_inner());
        Ok(done
            .into_iter()
            .map(|d| d.unwrap_or_else(|| (Ran::default(), 0.0)))
            .collect())
    }

    /// One worker of [`run_all`](Self::run_all): takes the next entry not
    /// taken yet, runs it on `server`, keeps what it gave in `done`.
    async fn work(
        &self,
        subject: &Subject<'_>,
        server: &ServerRef<'_>,
        entries: &[(usize, &Entry)],
        next: &Mutex<usize>,
        done: &Mutex<Vec<Option<(Ran, f64)>>>,
        progress: &dyn Progress,
    ) -> Result<(), SuiteError> {
        loop {
            let k = {
                let mut n = lock(next);
                *n += 1;
                *n - 1
            };
            let Some((index, entry)) = entries.get(k) else {
                return Ok(());
            };
            progress.step(entry.name);
            let started = Instant::now();
            let ran = self.run_one(subject, server, entry, *index).await?;
            SuiteError::unless_an_adapter_broke(subject.factory.as_ref())?;
            let seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
            progress.line(&format!(
                "sabotage {}: {} ({seconds} s)",
                entry.name,
                judge(entry, &ran.results).0.word()
            ));
            lock(done)[k] = Some((ran, seconds));
        }
    }

    /// The checks that failed (or warned) on any row, in the order the
    /// suites declare them.
    fn catching(&self, rows: &[SabotageRow]) -> Vec<String> {
        let caught: BTreeSet<&str> = rows.iter().flat_map(|r| r.caught_by_all()).collect();
        self.suites
            .iter()
            .flat_map(|s| s.checks())
            .map(|c| c.id)
            .filter(|id| caught.contains(id))
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::server::{ManagedServer, ServerOptions};

    /// The named check every test entry here is given.
    const TAKE_RACES: &str = "conformance.lease.take-races";

    fn result(id: &str, verdict: Verdict, outside_claim: bool) -> CheckResult {
        CheckResult {
            outside_claim,
            ..CheckResult::undecided(id, "x", verdict, format!("{id} said so"))
        }
    }

    fn entry(name: &'static str, store: &str) -> Entry {
        Entry::new(name, "a broken promise", TAKE_RACES, store.parse().unwrap())
    }

    #[test]
    fn a_sabotage_passes_only_when_its_named_check_failed() {
        let e = entry("t", "builtin:redis");
        let other = |v| result("conformance.queue.claim-once", v, false);
        let with = |named: Option<(Verdict, bool)>| {
            let mut results = vec![other(Verdict::Fail)];
            if let Some((v, outside)) = named {
                results.push(result(TAKE_RACES, v, outside));
            }
            judge(&e, &results)
        };
        let (v, why) = with(Some((Verdict::Fail, false)));
        assert_eq!(v, Verdict::Pass, "{why}");
        assert!(
            why.contains("also failed: conformance.queue.claim-once"),
            "{why}"
        );
        assert_eq!(with(Some((Verdict::Warn, false))).0, Verdict::Pass);
        let (v, why) = with(Some((Verdict::Pass, false)));
        assert_eq!(v, Verdict::Fail, "{why}");
        assert!(why.starts_with("escaped"), "{why}");
        for undecided in [
            Some((Verdict::Skipped, false)),
            Some((Verdict::Skipped, true)),
            Some((Verdict::Unknown, false)),
            None,
        ] {
            let (v, why) = with(undecided);
            assert_eq!(v, Verdict::Unknown, "{undecided:?}: {why}");
        }
        assert!(with(Some((Verdict::Skipped, true))).1.contains("outside"));
        assert_eq!(e.spec().id, "sabotage.t");
        assert_eq!(owner_of(TAKE_RACES), "conformance");
    }

    #[test]
    fn an_undecided_sabotage_is_caught_only_for_its_own_cause() {
        let e = Entry {
            caught_when: sabotage::Caught::Undecided("only the depth kept it away"),
            ..entry("u", "builtin:redis")
        };
        let named = |reason: &str| {
            let r = CheckResult {
                reason: reason.to_string(),
                ..result(TAKE_RACES, Verdict::Unknown, false)
            };
            judge(&e, &[r])
        };
        let (v, why) = named("not decided: only the depth kept it away");
        assert_eq!(v, Verdict::Pass, "{why}");
        // Harness trouble is an unknown too: it catches nothing.
        let (v, why) = named("not decided: cannot start a managed server: no port");
        assert_eq!(v, Verdict::Unknown, "{why}");
        assert!(why.contains("not for the sabotage's cause"), "{why}");
    }

    /// Two sabotages through the conformance suite on a managed server: the
    /// real read-then-write take is caught by its check; the built-in store
    /// entered as a sabotage escapes it, and the suite fails.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_suite_fails_when_a_sabotage_escapes_and_passes_when_it_is_caught() {
        let server = ManagedServer::start(ServerOptions::default())
            .await
            .unwrap();
        let suite = SabotageSuite::new(
            vec![
                entry("read-then-write-take", "sabotage:read-then-write-take"),
                entry("builtin-in-disguise", "builtin:redis"),
            ],
            // Few generated sequences: this test is about the matrix, not them.
            vec![Box::new(conformance::ConformanceSuite::with_cases(4))],
            BTreeMap::new(),
            Duration::from_secs(10),
        );
        let factory = StoreSpec::BuiltinRedis.factory(
            tempfile::tempdir().unwrap().path(),
            Duration::from_secs(10),
            None,
        );
        let subject = Subject {
            spec: factory.spec(),
            factory,
            opt_out: None,
            run_prefix: "sp:sabotage-test:".into(),
            contracts: Contract::COORDINATION.to_vec(),
            server: ServerRef::Managed(&server),
            seed: 11,
            may_start_servers: true,
        };
        let (settled, to_run) = harness::plan(suite.name(), suite.checks(), &subject);
        assert!(settled.is_empty(), "{settled:?}");
        let run = suite.run(&subject, &to_run, &Silent).await.unwrap();
        let got: Vec<(&str, Verdict)> = run
            .checks
            .iter()
            .map(|c| (c.id.as_str(), c.verdict))
            .collect();
        assert_eq!(
            got,
            vec![
                ("sabotage.read-then-write-take", Verdict::Pass),
                ("sabotage.builtin-in-disguise", Verdict::Fail),
            ],
            "{:#?}",
            run.checks
        );
        assert_eq!(
            harness::Report::verdict_of(&run.checks),
            harness::RunVerdict::Fail
        );
        let Figures::Sabotage(f) = run.figures else {
            panic!("not the sabotage figures");
        };
        assert_eq!(f.rows.len(), 2);
        assert_eq!(f.rows[0].verdicts.get(TAKE_RACES), Some(&Verdict::Fail));
        assert_eq!(f.rows[1].verdicts.get(TAKE_RACES), Some(&Verdict::Pass));
        assert!(
            f.catching.iter().any(|c| c == TAKE_RACES),
            "{:?}",
            f.catching
        );
        assert_eq!(f.rows[0].suites, vec!["conformance".to_string()]);
    }
}
