//! Checks and the run model: ids, levels, verdicts, evidence, and the report
//! every suite fills and `reports` renders. Pure data, no I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::contract::Contract;
use crate::counterexample::Counterexample;
use crate::evidence::Evidence;
use crate::history::History;
use crate::violation::Violation;

/// How much a check matters (docs/CONTRACTS.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Breaking it is unsafe: a failure fails the run.
    Must,
    /// A safe deviation from the contract: a warning that does not fail the run.
    Should,
}

/// A check's outcome. There is no silent skip: `Skipped` always has a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It holds: nothing broke the check.
    Pass,
    /// A MUST check broke: the run fails.
    Fail,
    /// A SHOULD check broke (a safe deviation): the run still passes.
    Warn,
    /// Not run; `reason` says why (never a silent skip).
    Skipped,
    /// Run, but the harness could not decide it (its own trouble: a failed
    /// connect, snapshot or clock move; never the store's doing): `reason`
    /// says why. A MUST check left unknown makes the run INCOMPLETE, never FAIL.
    Unknown,
}

impl Verdict {
    /// The word the report and the summary use: `pass`, `fail`, `warn`,
    /// `skipped` or `unknown`.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Warn => "warn",
            Verdict::Skipped => "skipped",
            Verdict::Unknown => "unknown",
        }
    }
}

/// What a check needs from the run to be decided at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Any server the store can reach, the user's too: only keys under the
    /// run's prefix are read and written.
    AnyServer,
    /// The server the store is pointed at must be one storeproof started:
    /// its clock is moved, its keyspace read whole, it is restored or flushed.
    ManagedServer,
    /// Servers of the check's own, started by storeproof from a local
    /// `redis-server` (or a container built from it), holding the store's
    /// state: they are misconfigured, killed or restarted under the store.
    /// A store that keeps no state in Redis cannot be judged this way: a
    /// check about the server alone (no contracts: which servers the store
    /// accepts) is outside its claim, any other is skipped with the reason.
    OwnServers,
    /// The store's keys under the run's prefix on the server it is pointed
    /// at (any server): the check is about what the store keeps in Redis,
    /// outside the claim of a store that keeps nothing there.
    StoreKeys,
    /// The managed server's whole keyspace: the check is about every key
    /// the store writes (e.g. none outside its prefix). Implies
    /// [`Needs::ManagedServer`]; outside the claim of a store that keeps
    /// nothing in Redis.
    AllKeys,
    /// The store's Redis commands on a managed server, interleaved through a
    /// gate, the server's keyspace restored between runs (the explorer).
    /// Implies [`Needs::ManagedServer`]; a store that sends no Redis
    /// commands cannot be driven this way, and the check is skipped with the
    /// reason (its contract is claimed, so the run is left INCOMPLETE).
    StoreCommands,
    /// Worlds of the check's own in which the store is restored to any
    /// earlier state and its instances' steps interleaved (the explorer).
    /// A store keeping its state in Redis: as [`Needs::StoreCommands`]. A
    /// store keeping it outside Redis: a copy of itself on a file of its own
    /// ([`StoreFactory::sqlite_copy`]), driven an operation a step; a store
    /// offering none cannot be explored, and the check is skipped with the
    /// reason.
    Interleavings,
    /// Redis servers of the check's own beside the store under test (the
    /// fault suite: restarted, filled, cut off by gates). A store that keeps
    /// its state outside Redis runs beside them on the run's managed
    /// server's clock, which it follows, so it also needs that server.
    FaultServers,
    /// A Redis server of the check's own, filled to `maxmemory` under the
    /// store: outside the claim of a store that keeps nothing in Redis.
    FullRedis,
}

/// A check as its suite declares it, once: the only place its id is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckSpec {
    /// Stable id named for what it checks, e.g. `explorer.one-live-holder`.
    pub id: &'static str,
    /// MUST or SHOULD: whether a failure fails the run or only warns.
    pub level: Level,
    /// The contracts it is about; outside the claim when the store offers
    /// none of them. Empty: about the server, within every claim.
    pub contracts: &'static [Contract],
    /// What the run must offer for the check to be decided.
    pub needs: Needs,
    /// One sentence: what passing proves.
    pub about: &'static str,
}

impl CheckSpec {
    /// Why the check is outside the claim of a store offering `claimed`, or
    /// `None` when the store claims a contract it is about.
    pub fn outside_claim(&self, claimed: &[Contract]) -> Option<String> {
        if self.contracts.is_empty() || self.contracts.iter().any(|c| claimed.contains(c)) {
            return None;
        }
        let names: Vec<&str> = self.contracts.iter().map(|c| c.name()).collect();
        Some(format!(
            "the check is about the {} contract{}, which the store does not offer (its hello listed {})",
            names.join(" and "),
            if names.len() == 1 { "" } else { "s" },
            if claimed.is_empty() {
                "none".to_string()
            } else {
                claimed
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))
    }

    /// The result of this check with `verdict` and `reason` (a SHOULD
    /// check's failure is a warning); evidence and counterexample empty.
    pub fn result(&self, suite: &str, verdict: Verdict, reason: impl Into<String>) -> CheckResult {
        let verdict = match (verdict, self.level) {
            (Verdict::Fail, Level::Should) => Verdict::Warn,
            (v, _) => v,
        };
        CheckResult {
            level: self.level,
            about: self.about.to_string(),
            ..CheckResult::undecided(self.id, suite, verdict, reason)
        }
    }
}

/// One check's result as the report carries it (docs/CONTRACTS.md §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// Stable id named for what it checks, e.g. `conformance.lease.take-busy`.
    pub id: String,
    /// The suite that ran it, e.g. `conformance`, `explorer` or `crash`.
    pub suite: String,
    /// MUST or SHOULD: whether a failure fails the run.
    pub level: Level,
    /// Pass, fail, warn, skipped or unknown.
    pub verdict: Verdict,
    /// Skipped because the check is about a contract the store does not
    /// claim: such a skip does not make the run INCOMPLETE.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_claim: bool,
    /// Why it failed, warned or was skipped; what it proved when it passed.
    pub reason: String,
    /// What the check saw: its figures and findings.
    pub evidence: Evidence,
    /// For a failure: the minimal sequence of steps that shows it.
    pub counterexample: Option<Counterexample>,
    /// For a failure found in a history: what broke, each naming the
    /// events of that history it blames (the counterexample's history, or
    /// the evidence's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// Wall time of the check.
    pub seconds: f64,
    /// One sentence: what passing proves (the check's `CheckSpec::about`);
    /// empty when the result was not made from its spec.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub about: String,
}

impl CheckResult {
    /// Whether this result fails the run: a MUST check that failed.
    pub fn fails_run(&self) -> bool {
        self.verdict == Verdict::Fail
    }

    /// Whether this result leaves the run INCOMPLETE: a MUST check of a
    /// claimed contract that was not decided (unknown) or not run (skipped).
    pub fn leaves_incomplete(&self) -> bool {
        self.level == Level::Must
            && match self.verdict {
                Verdict::Unknown => true,
                Verdict::Skipped => !self.outside_claim,
                _ => false,
            }
    }

    /// The history the check recorded beside its findings (a scenario's
    /// calls, a kill's writes about what was lost, a full server's
    /// workload), if its evidence holds one.
    pub fn recorded_history(&self) -> Option<&History> {
        self.evidence.history()
    }

    /// The line progress prints for a check that did not pass (`FAIL id:
    /// reason`, `warn …`, `skip …`, `unknown …`); none for a pass.
    pub fn progress_line(&self) -> Option<String> {
        let mark = match self.verdict {
            Verdict::Pass => return None,
            Verdict::Fail => "FAIL",
            Verdict::Warn => "warn",
            Verdict::Skipped => "skip",
            Verdict::Unknown => "unknown",
        };
        Some(format!("{mark} {}: {}", self.id, self.reason))
    }

    /// A MUST check of `suite` that was not run because the store does not
    /// claim the contract it is about (`reason` says which): not INCOMPLETE.
    pub fn outside_claim(id: &str, suite: &str, reason: impl Into<String>) -> Self {
        CheckResult {
            outside_claim: true,
            ..CheckResult::undecided(id, suite, Verdict::Skipped, reason)
        }
    }

    /// A MUST check of `suite` that was skipped or left unknown
    /// (`verdict`), with `reason`; it makes the run INCOMPLETE.
    pub fn undecided(id: &str, suite: &str, verdict: Verdict, reason: impl Into<String>) -> Self {
        CheckResult {
            id: id.to_string(),
            suite: suite.to_string(),
            level: Level::Must,
            verdict,
            outside_claim: false,
            reason: reason.into(),
            evidence: Evidence::None,
            counterexample: None,
            violations: Vec::new(),
            seconds: 0.0,
            about: String::new(),
        }
    }
}

/// The store section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreSection {
    /// What `--store` named, e.g. `builtin:redis`.
    pub spec: String,
    /// The store's own name, from its hello.
    pub name: String,
    /// The store's own version, from its hello.
    pub version: String,
    /// The contracts it offers (`lease`, `queue`, `rate`, `fenced`).
    pub contracts: Vec<String>,
}

/// The server section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSection {
    /// The Redis server's version, e.g. `7.0.15`.
    pub version: String,
    /// Started and controlled by storeproof (virtual clock, restarts).
    pub managed: bool,
    /// The settings docs/CONTRACTS.md §1.6 is about (durability, role,
    /// cluster), as the server reported them.
    pub settings: BTreeMap<String, String>,
    /// The managed server asked for with `--server` (`redis-6.2`,
    /// `valkey-9`, …); absent for the default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the server is, e.g. `Valkey 9.1.2` (which reports
    /// `redis_version` 7.2.4 too); absent when it is the Redis of `version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
}

impl ServerSection {
    /// How the server is named in text: its product, else `Redis <version>`.
    pub fn describe(&self) -> String {
        self.product
            .clone()
            .unwrap_or_else(|| format!("Redis {}", self.version))
    }
}

/// Everything one `storeproof certify` found, in the shape of
/// docs/CONTRACTS.md §3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The storeproof version that made the report.
    pub storeproof: String,
    /// Fail if a MUST check failed, else incomplete if one was not decided,
    /// else pass.
    pub verdict: RunVerdict,
    /// The store certified.
    pub store: StoreSection,
    /// The server it ran against.
    pub server: ServerSection,
    /// Every check run, in report order.
    pub checks: Vec<CheckResult>,
    /// Figures per suite: checks run, seconds, and suite-specific ones.
    pub stats: crate::figures::Stats,
    /// How this run can be repeated: command line and run prefix.
    pub run: RunSection,
    /// With several servers (`--server` given more than once): the run on
    /// each, a whole report of its own, in the order given. Then `verdict`
    /// is over them all and `checks` and `stats` are empty; `store`,
    /// `server` and `run` are the first server's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_server: Vec<Report>,
}

/// How a run can be repeated, and what it left on a `--redis-url` server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSection {
    /// The seed of every random choice.
    pub seed: u64,
    /// Every key the run wrote starts with it (`sp:<run>:`).
    pub prefix: String,
    /// `--store` as given, secrets redacted.
    pub store: String,
    /// What became of the run's keys: `removed (n)`, `kept`, `not removed`,
    /// or gone with the managed server.
    pub keys: String,
    /// The opt-out given to the store, if any.
    pub opt_out: Option<String>,
    /// The command line, secrets redacted.
    pub command: Vec<String>,
    /// The `--check` prefixes the run was limited to (none: every check).
    /// A run limited so certifies only what it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// The suites this version has that the run left out (`--suite`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suites_left_out: Vec<String>,
}

/// A failed or warned check's counterexample as `replays/<check>.json`
/// holds it: what `storeproof replay FILE` needs to run it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayFile {
    /// The storeproof version that wrote it.
    pub storeproof: String,
    /// Always `check`: the file replays one check.
    pub kind: String,
    /// The check's id.
    pub check: String,
    /// The store it failed on (`--store` spelling).
    pub store: String,
    /// The opt-out the store was given, if any.
    pub opt_out: Option<String>,
    /// The run's seed.
    pub seed: u64,
    /// The verdict it had.
    pub verdict: Verdict,
    /// Why it failed.
    pub reason: String,
    /// The steps that show it, as the check recorded them.
    pub counterexample: Option<Counterexample>,
    /// The managed server it failed on when one was named (`--server`):
    /// the replay starts that one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl ReplayFile {
    /// The replay file of `check` from `report`.
    pub fn of(report: &Report, check: &CheckResult) -> ReplayFile {
        ReplayFile {
            storeproof: report.storeproof.clone(),
            kind: "check".into(),
            check: check.id.clone(),
            store: if report.run.store.is_empty() {
                report.store.spec.clone()
            } else {
                report.run.store.clone()
            },
            opt_out: report.run.opt_out.clone(),
            seed: report.run.seed,
            verdict: check.verdict,
            reason: check.reason.clone(),
            counterexample: check.counterexample.clone(),
            server: report.server.name.clone(),
        }
    }
}

/// The whole run's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunVerdict {
    /// Every MUST check of every claimed contract was decided and held
    /// (warnings allowed): exit 0.
    Pass,
    /// At least one MUST check failed: exit 1.
    Fail,
    /// No MUST check failed, but some MUST check of a claimed contract was
    /// unknown or skipped: exit 3.
    Incomplete,
}

impl RunVerdict {
    /// The process exit code of this verdict: 0 pass, 1 fail, 3 incomplete
    /// (2 is for usage and setup errors, which have no verdict).
    pub fn exit_code(self) -> u8 {
        match self {
            RunVerdict::Pass => 0,
            RunVerdict::Fail => 1,
            RunVerdict::Incomplete => 3,
        }
    }

    /// The word the summary prints: `PASS`, `FAIL` or `INCOMPLETE`.
    pub fn word(self) -> &'static str {
        match self {
            RunVerdict::Pass => "PASS",
            RunVerdict::Fail => "FAIL",
            RunVerdict::Incomplete => "INCOMPLETE",
        }
    }
}

impl Report {
    /// The run verdict a list of checks gives: fail if any check failed,
    /// else incomplete if any MUST check of a claimed contract was not
    /// decided, else pass.
    pub fn verdict_of(checks: &[CheckResult]) -> RunVerdict {
        if checks.iter().any(CheckResult::fails_run) {
            RunVerdict::Fail
        } else if checks.iter().any(CheckResult::leaves_incomplete) {
            RunVerdict::Incomplete
        } else {
            RunVerdict::Pass
        }
    }

    /// The report of runs on several servers (`per_server`, in order): it
    /// fails if one failed, is INCOMPLETE if one was, passes if all passed.
    /// One run is returned as it is. `None` for no run.
    pub fn of_servers(mut runs: Vec<Report>) -> Option<Report> {
        if runs.len() <= 1 {
            return runs.pop();
        }
        let verdict = if runs.iter().any(|r| r.verdict == RunVerdict::Fail) {
            RunVerdict::Fail
        } else if runs.iter().any(|r| r.verdict == RunVerdict::Incomplete) {
            RunVerdict::Incomplete
        } else {
            RunVerdict::Pass
        };
        let first = &runs[0];
        Some(Report {
            storeproof: first.storeproof.clone(),
            verdict,
            store: first.store.clone(),
            server: first.server.clone(),
            checks: Vec::new(),
            stats: crate::figures::Stats::default(),
            run: first.run.clone(),
            per_server: runs,
        })
    }

    /// Every single-server report in this one: itself, or each of
    /// `per_server`.
    pub fn runs(&self) -> Vec<&Report> {
        if self.per_server.is_empty() {
            vec![self]
        } else {
            self.per_server.iter().collect()
        }
    }

    /// The MUST checks that leave the run INCOMPLETE, in report order.
    pub fn undecided(&self) -> Vec<&CheckResult> {
        self.runs()
            .into_iter()
            .flat_map(|r| r.checks.iter())
            .filter(|c| c.leaves_incomplete())
            .collect()
    }

    /// Counts of each verdict, for summaries (over every server).
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for c in self.runs().into_iter().flat_map(|r| r.checks.iter()) {
            *counts.entry(c.verdict.word()).or_insert(0) += 1;
        }
        counts
    }
}
