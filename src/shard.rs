//! `certify --shard K/N`: a deterministic part of a run, so that N CI jobs
//! together do exactly the work of one run and `storeproof merge` can join
//! their reports.
//!
//! The run's work is cut into units in a fixed order — each conformance
//! check, each explorer skew's exhaustive search, each crash kill round
//! (every series, in series order), and the fault, layout and sabotage
//! suites whole — and unit `u` (counted from 0 across the suites in run
//! order, and across servers) belongs to shard `(u mod N) + 1`. The
//! explorer's walks are cut into N contiguous ranges of walk numbers, one a
//! shard; walk `n` keeps its seed, so a shard's walks are exactly those of
//! the whole run. A suite of which a shard has no unit is not run there and
//! its checks are not in that shard's report.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use async_trait::async_trait;
use harness::{CheckResult, CheckSpec, Progress, Subject, Suite, SuiteError, SuiteRun};

/// One shard of a run: `k` of `n`, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard's number, 1 to `n`.
    pub k: usize,
    /// How many shards the run is cut into.
    pub n: usize,
}

/// The largest shard count accepted: more CI jobs than that would each do
/// next to nothing.
pub const MAX_SHARDS: usize = 1000;

impl FromStr for Shard {
    type Err = String;

    /// `K/N` with 1 ≤ K ≤ N ≤ [`MAX_SHARDS`].
    fn from_str(text: &str) -> Result<Shard, String> {
        let (k, n) = text
            .trim()
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not K/N (e.g. 2/3)"))?;
        let number = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("{text:?} is not K/N with whole numbers (e.g. 2/3)"))
        };
        let (k, n) = (number(k)?, number(n)?);
        if n == 0 || n > MAX_SHARDS {
            return Err(format!("N must be 1 to {MAX_SHARDS}, not {n}"));
        }
        if k == 0 || k > n {
            return Err(format!("K must be 1 to {n}, not {k}"));
        }
        Ok(Shard { k, n })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// Deals a run's units to the shards, suite after suite in run order:
/// each call takes the next units of the count and says which are this
/// shard's. One plan serves the whole run (every server), so the counting
/// goes on from one suite (and server) to the next.
#[derive(Debug)]
pub struct Plan {
    shard: Shard,
    next: usize,
}

impl Plan {
    /// The plan of `shard`, from the run's first unit.
    pub fn new(shard: Shard) -> Plan {
        Plan { shard, next: 0 }
    }

    /// Which of the next `count` units are this shard's, as indices from 0.
    fn take(&mut self, count: usize) -> Vec<usize> {
        let first = self.next;
        self.next += count;
        (0..count)
            .filter(|i| (first + i) % self.shard.n == self.shard.k - 1)
            .collect()
    }

    /// A suite run whole on one shard (faults, layout, sabotage): `None`
    /// when it is another shard's.
    pub fn whole(&mut self, suite: Box<dyn Suite>) -> Option<Box<dyn Suite>> {
        (!self.take(1).is_empty()).then_some(suite)
    }

    /// A suite whose units are its checks (conformance): only this shard's
    /// checks, `None` when it has none.
    pub fn per_check(&mut self, suite: Box<dyn Suite>) -> Option<Box<dyn Suite>> {
        let ids: Vec<&'static str> = suite.checks().iter().map(|c| c.id).collect();
        let keep: BTreeSet<&'static str> =
            self.take(ids.len()).into_iter().map(|i| ids[i]).collect();
        (!keep.is_empty()).then(|| Box::new(Part { inner: suite, keep }) as Box<dyn Suite>)
    }

    /// The explorer's part: the searches of this shard's skews and its range
    /// of walks; `None` when it has neither.
    pub fn explorer(&mut self, config: explorer::ExplorerConfig) -> Option<Box<dyn Suite>> {
        let search = self.take(config.skews.len());
        let walks = walk_range(self.shard, config.walks);
        if search.is_empty() && walks.is_empty() {
            return None;
        }
        let part = explorer::ExplorerPart {
            search: Some(search),
            walks: Some(walks),
        };
        Some(Box::new(explorer::ExplorerSuite::with_part(config, part)))
    }

    /// The crash suite's part: this shard's kill rounds, and the checks
    /// judged on the series it has a round of; `None` when it has none.
    pub fn crash(&mut self, suite: crash::CrashSuite) -> Option<Box<dyn Suite>> {
        let mut rounds = crash::Rounds::new();
        let mut keep = BTreeSet::new();
        for series in suite.series() {
            for k in self.take(series.kills) {
                rounds.insert((series.label, k));
                keep.extend(series.checks.iter().copied());
            }
        }
        if rounds.is_empty() {
            return None;
        }
        Some(Box::new(Part {
            inner: Box::new(suite.only_rounds(rounds)),
            keep,
        }))
    }
}

/// Shard `shard`'s walks of `walks`: the k-th of N contiguous ranges, as
/// even as whole walks allow.
pub fn walk_range(shard: Shard, walks: usize) -> std::ops::Range<usize> {
    walks * (shard.k - 1) / shard.n..walks * shard.k / shard.n
}

/// A suite reduced to some of its checks: it declares only those, so the
/// run plans, runs and reports only those.
struct Part {
    inner: Box<dyn Suite>,
    keep: BTreeSet<&'static str>,
}

#[async_trait]
impl Suite for Part {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn checks(&self) -> Vec<CheckSpec> {
        self.inner
            .checks()
            .into_iter()
            .filter(|c| self.keep.contains(c.id))
            .collect()
    }

    async fn run(
        &self,
        subject: &Subject<'_>,
        to_run: &[CheckSpec],
        progress: &dyn Progress,
    ) -> Result<SuiteRun, SuiteError> {
        self.inner.run(subject, to_run, progress).await
    }

    async fn replay(
        &self,
        subject: &Subject<'_>,
        check: &CheckSpec,
        counterexample: Option<&harness::counterexample::Counterexample>,
        progress: &dyn Progress,
    ) -> Result<CheckResult, SuiteError> {
        self.inner
            .replay(subject, check, counterexample, progress)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_of_n_parses_and_nonsense_is_refused() {
        assert_eq!("2/3".parse::<Shard>(), Ok(Shard { k: 2, n: 3 }));
        assert_eq!(
            "1/1".parse::<Shard>().map(|s| s.to_string()),
            Ok("1/1".into())
        );
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", "1/1001", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn every_unit_and_every_walk_goes_to_exactly_one_shard() {
        let counts = [5, 7, 1, 13, 0, 1];
        let n = 3;
        let mut owner: Vec<Vec<usize>> = counts.iter().map(|c| vec![0; *c]).collect();
        let mut walks = vec![0; 10];
        for k in 1..=n {
            let mut plan = Plan::new(Shard { k, n });
            for (suite, count) in counts.iter().enumerate() {
                for i in plan.take(*count) {
                    owner[suite][i] += 1;
                }
            }
            for w in walk_range(Shard { k, n }, walks.len()) {
                walks[w] += 1;
            }
        }
        assert!(owner.iter().flatten().all(|o| *o == 1), "{owner:?}");
        assert!(walks.iter().all(|o| *o == 1), "{walks:?}");
        // Round-robin goes on across suites: shard 1 has units 0, 3, 6 of
        // the first 7, whichever suite they fall in.
        let mut plan = Plan::new(Shard { k: 1, n: 3 });
        assert_eq!(plan.take(5), vec![0, 3]);
        assert_eq!(plan.take(2), vec![1]);
    }
}
