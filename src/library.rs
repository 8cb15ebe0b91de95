//! The library's way in: [`Certification`] runs `storeproof certify` on a
//! store given in-process, and returns its [`Certificate`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use harness::store::StoreFactory;
use harness::{CheckResult, Report, RunVerdict, Verdict};

use crate::certify::{
    self, Bounds, CertifyArgs, CrashBackendArg, OptOut, StoreInWorkdir, SuiteName,
};

/// The suites a certification may run (`--suite`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// Every operation and edge case, judged against the contracts' models.
    Conformance,
    /// Every interleaving of instances with skewed clocks, one command at a time.
    Explorer,
    /// Lost replies, delays, partitions and paused instances.
    Faults,
    /// SIGKILLs and power cuts of the server mid-workload.
    Crash,
    /// Keys under the prefix and the one-backend rule.
    Layout,
}

impl Suite {
    fn name(self) -> SuiteName {
        match self {
            Suite::Conformance => SuiteName::Conformance,
            Suite::Explorer => SuiteName::Explorer,
            Suite::Faults => SuiteName::Faults,
            Suite::Crash => SuiteName::Crash,
            Suite::Layout => SuiteName::Layout,
        }
    }
}

/// Where the crash suite kills its server (`--crash-backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashBackend {
    /// Docker when the engine answers, else a managed process.
    Auto,
    /// A container built here from the local redis-server.
    Docker,
    /// A managed redis-server process, `kill -9`.
    Process,
}

/// Why a certification could not run: a setup error (`storeproof certify`'s
/// exit 2), one line naming the cause and the fix. No report was written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A size out of its bounds, named with what it must be.
    #[error("{option}: {problem}")]
    Option {
        /// The option, as the command line spells it (`--cases`).
        option: &'static str,
        /// What is wrong with the value given.
        problem: String,
    },
    /// The run could not be set up or finished (no server, a store that
    /// refused it, an unwritable `out`): the command line's one line.
    #[error("{0}")]
    Setup(String),
}

/// One certification of an in-process store: the options of `storeproof
/// certify` as typed setters, every one at the command line's default
/// until set, and the run.
#[derive(Debug)]
pub struct Certification {
    args: CertifyArgs,
    error: Option<Error>,
}

impl Certification {
    /// Certifies `store` on a Redis server the run starts itself (or
    /// [`redis_url`](Self::redis_url)'s), every suite but sabotage, the
    /// report written to `storeproof-report/` (see [`out`](Self::out)),
    /// progress printed only as the summary's counts in the certificate.
    pub fn of(store: impl StoreFactory + 'static) -> Certification {
        let store: Arc<dyn StoreFactory> = Arc::new(store);
        Certification::with(Arc::new(move |_: &Path| store.clone()))
    }

    /// As [`of`](Self::of), for a store that keeps durable side files (its
    /// kept executions, say): `make` is given the run's working directory,
    /// which lives as long as the run and is removed after it (an
    /// adapter's `STOREPROOF_WORKDIR`), and is called once per run.
    pub fn of_in_workdir<S, F>(make: F) -> Certification
    where
        S: StoreFactory + 'static,
        F: Fn(&Path) -> S + Send + Sync + 'static,
    {
        Certification::with(Arc::new(move |dir: &Path| {
            Arc::new(make(dir)) as Arc<dyn StoreFactory>
        }))
    }

    fn with(make: Arc<StoreInWorkdir>) -> Certification {
        let mut args = CertifyArgs::defaults_for(make);
        args.quiet = true;
        Certification { args, error: None }
    }

    /// Runs only these suites (`--suite`).
    pub fn suites(mut self, suites: &[Suite]) -> Self {
        self.args.suite = suites.iter().map(|s| s.name()).collect();
        self
    }

    /// Runs only the checks whose id starts with `prefix` (`--check`,
    /// repeatable).
    pub fn check(mut self, prefix: &str) -> Self {
        self.args.check.push(prefix.to_string());
        self
    }

    /// Where the report folder goes (`--out`): replaced only when it holds
    /// a previous report, as on the command line.
    pub fn out(mut self, dir: impl AsRef<Path>) -> Self {
        self.args.out = dir.as_ref().to_path_buf();
        self
    }

    /// The seed of every random choice (`--seed`); the same seed replays
    /// the same run.
    pub fn seed(mut self, seed: u64) -> Self {
        self.args.seed = Some(seed);
        self
    }

    /// Sequences each generated conformance check plays (`--cases`).
    pub fn cases(mut self, n: usize) -> Self {
        self.args.cases = self.bounded("--cases", certify::CASES, n);
        self
    }

    /// The explorer's depths for the lease, the queue and the rate limits
    /// (`--depth`, `--queue-depth`, `--rate-depth`).
    pub fn depths(mut self, lease: usize, queue: usize, rate: usize) -> Self {
        self.args.depth = self.bounded("--depth", certify::DEPTH, lease);
        self.args.queue_depth = self.bounded("--queue-depth", certify::DEPTH, queue);
        self.args.rate_depth = self.bounded("--rate-depth", certify::DEPTH, rate);
        self
    }

    /// The explorer's skews of the second clock, in ms (`--skews`; by
    /// default seven, from none to ten leases either way).
    pub fn skews(mut self, skews: &[i64]) -> Self {
        let text: Vec<String> = skews.iter().map(i64::to_string).collect();
        match explorer::parse_skews(&text.join(",")) {
            Ok(skews) => self.args.skews = Some(certify::Skews(skews)),
            Err(problem) => {
                self.error.get_or_insert(Error::Option {
                    option: "--skews",
                    problem,
                });
            }
        }
        self
    }

    /// Stops the explorer at the first violation of a check the run asks
    /// for (`--fail-fast`); what it did not explore is named, and no check
    /// it would have decided passes.
    pub fn fail_fast(mut self, on: bool) -> Self {
        self.args.fail_fast = Some(on);
        self
    }

    /// The explorer's random walks (`--walks`).
    pub fn walks(mut self, n: usize) -> Self {
        self.args.walks = self.bounded("--walks", certify::WALKS, n);
        self
    }

    /// The fault suite's rounds per layout and faults per layout
    /// (`--fault-rounds`, `--faults`).
    pub fn faults(mut self, rounds: usize, faults: usize) -> Self {
        self.args.fault_rounds = self.bounded("--fault-rounds", certify::FAULT_ROUNDS, rounds);
        self.args.faults = self.bounded("--faults", certify::FAULTS, faults);
        self
    }

    /// The crash suite's kills, opt-out kills and power cuts (`--kills`,
    /// `--opt-out-kills`, `--power-losses`) and where it kills.
    pub fn crash(mut self, kills: usize, power_losses: usize, backend: CrashBackend) -> Self {
        self.args.kills = self.bounded("--kills", certify::KILLS, kills);
        self.args.opt_out_kills = self.bounded("--opt-out-kills", certify::KILLS, kills.min(2));
        self.args.power_losses = self.bounded("--power-losses", certify::KILLS, power_losses);
        self.args.crash_backend = match backend {
            CrashBackend::Auto => CrashBackendArg::Auto,
            CrashBackend::Docker => CrashBackendArg::Docker,
            CrashBackend::Process => CrashBackendArg::Process,
        };
        self
    }

    /// Tells the store to accept a server that may lose acknowledged
    /// writes (`--opt-out acknowledged-writes-may-be-lost`).
    pub fn opt_out_writes_may_be_lost(mut self) -> Self {
        self.args.opt_out = Some(OptOut::AcknowledgedWritesMayBeLost);
        self
    }

    /// Certifies on this existing server instead of starting one
    /// (`--redis-url`): only keys under the run's prefix are touched, and
    /// the checks that need a clock storeproof controls are skipped.
    pub fn redis_url(mut self, url: &str) -> Self {
        self.args.redis_url = Some(url.to_string());
        self
    }

    /// Prints the run's progress lines, as the command line does.
    pub fn verbose(mut self) -> Self {
        self.args.quiet = false;
        self
    }

    /// Runs the suites and writes the report folder; the certificate
    /// carries the report. `Err` is a setup error: nothing was judged and
    /// no report was written.
    pub async fn run(self) -> Result<Certificate, Error> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let out = self.args.out.clone();
        let report = certify::report(self.args)
            .await
            .map_err(|e| Error::Setup(format!("{e:#}")));
        // Adapters the store started through storeproof (none for an
        // in-process store) end with the run, as on the command line.
        harness::store::external::kill_all();
        Ok(Certificate {
            report: report?,
            out,
        })
    }

    /// [`run`](Self::run) on a runtime of its own, for a test that is not
    /// async. Not from inside a runtime (use `run` there).
    pub fn run_blocking(self) -> Result<Certificate, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Setup(format!("cannot start the async runtime: {e}")))?;
        runtime.block_on(self.run())
    }

    /// `n` when within `bounds`; else the first such error is kept for
    /// [`run`](Self::run) to return, and the default stays.
    fn bounded(&mut self, option: &'static str, bounds: Bounds, n: usize) -> usize {
        match bounds.check(n) {
            Ok(n) => n,
            Err(problem) => {
                self.error.get_or_insert(Error::Option { option, problem });
                n
            }
        }
    }
}

/// What a certification found: the report (as `report.json` holds it) and
/// where its folder was written. Its `Display` is the verdict and each
/// failed or undecided MUST check with its reason and counterexample.
#[derive(Debug, Clone)]
pub struct Certificate {
    /// The whole report.
    pub report: Report,
    /// The report folder (`index.html`, `report.json`, `junit.xml`, replays).
    pub out: PathBuf,
}

impl Certificate {
    /// PASS: every MUST check of every contract the store claims was
    /// decided and held.
    pub fn passed(&self) -> bool {
        self.report.verdict == RunVerdict::Pass
    }

    /// The run's verdict.
    pub fn verdict(&self) -> RunVerdict {
        self.report.verdict
    }

    /// The checks that failed (each with its counterexample, when found).
    pub fn failed(&self) -> impl Iterator<Item = &CheckResult> {
        self.report
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Fail)
    }

    /// The check of this id, if it ran.
    pub fn check(&self, id: &str) -> Option<&CheckResult> {
        self.report.checks.iter().find(|c| c.id == id)
    }
}

impl fmt::Display for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let counts = self.report.counts();
        let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
        writeln!(
            f,
            "{} ({}): {} ({}); report in {}",
            self.report.store.name,
            self.report.store.spec,
            match self.report.verdict {
                RunVerdict::Pass => "PASS",
                RunVerdict::Fail => "FAIL",
                RunVerdict::Incomplete => "INCOMPLETE",
            },
            counts.join(", "),
            self.out.display()
        )?;
        for c in self
            .report
            .checks
            .iter()
            .filter(|c| c.fails_run() || c.leaves_incomplete())
        {
            if let Some(line) = c.progress_line() {
                writeln!(f, "  {line}")?;
            }
            if let Some(counterexample) = &c.counterexample {
                let text = serde_json::to_string(counterexample).map_err(|_| fmt::Error)?;
                writeln!(f, "    counterexample: {text}")?;
            }
        }
        Ok(())
    }
}
