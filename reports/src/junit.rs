//! `junit.xml`: one test suite per storeproof suite, one test case per check.
//! Written by hand: the format is a dozen lines and the crates for it pull in
//! far more than they save.

use std::collections::BTreeMap;

use model::{CheckResult, Report, Verdict};

use crate::escape;

/// Renders the report as JUnit XML: with several servers, a test suite per
/// server and suite (`valkey-9/conformance`), the classnames named so too.
pub fn render_junit(report: &Report) -> String {
    let several = !report.per_server.is_empty();
    let mut suites: BTreeMap<String, Vec<&CheckResult>> = BTreeMap::new();
    for run in report.runs() {
        let on = run.server.name.as_deref().filter(|_| several);
        for c in &run.checks {
            let name = match on {
                Some(server) => format!("{server}/{}", c.suite),
                None => c.suite.clone(),
            };
            suites.entry(name).or_default().push(c);
        }
    }
    let all: Vec<&CheckResult> = suites.values().flatten().copied().collect();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let failures = all.iter().filter(|c| c.verdict == Verdict::Fail).count();
    let errors = all.iter().filter(|c| c.verdict == Verdict::Unknown).count();
    out.push_str(&format!(
        "<testsuites name=\"storeproof\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\">\n",
        all.len()
    ));
    for (suite, checks) in suites {
        let suite = suite.as_str();
        let classname = suite.replace('/', ".");
        let fails = checks.iter().filter(|c| c.verdict == Verdict::Fail).count();
        let skipped = checks
            .iter()
            .filter(|c| c.verdict == Verdict::Skipped)
            .count();
        let errors = checks
            .iter()
            .filter(|c| c.verdict == Verdict::Unknown)
            .count();
        let time: f64 = checks.iter().map(|c| c.seconds).sum();
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{fails}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time:.3}\">\n",
            escape(suite),
            checks.len()
        ));
        for c in checks {
            out.push_str(&format!(
                "    <testcase classname=\"storeproof.{}\" name=\"{}\" time=\"{:.3}\"",
                escape(&classname),
                escape(&c.id),
                c.seconds
            ));
            match c.verdict {
                Verdict::Pass => out.push_str("/>\n"),
                Verdict::Fail => out.push_str(&format!(
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                    escape(&c.reason),
                    escape(&serde_json::to_string_pretty(&c.counterexample).unwrap_or_default())
                )),
                Verdict::Skipped => out.push_str(&format!(
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                    escape(&c.reason)
                )),
                // The harness could not decide it: a JUnit error (trouble
                // in the test itself), not a failure of the store.
                Verdict::Unknown => out.push_str(&format!(
                    ">\n      <error message=\"{}\" type=\"unknown\"/>\n    </testcase>\n",
                    escape(&c.reason)
                )),
                Verdict::Warn => out.push_str(&format!(
                    ">\n      <system-out>warning (SHOULD): {}</system-out>\n    </testcase>\n",
                    escape(&c.reason)
                )),
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
