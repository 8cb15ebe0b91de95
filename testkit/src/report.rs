//! A run's `report.json`, read back typed.

use std::path::Path;

use harness::{CheckResult, Report};

/// The `report.json` a run wrote in `dir`, as a [`Report`]: a field the
/// report lacks or spells otherwise fails here, naming it.
pub fn read_report(dir: &Path) -> Report {
    let path = dir.join("report.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} could not be read: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not a report: {e}", path.display()))
}

/// The result of check `id` in `report`; a test asking for a check the
/// report lacks fails, listing the ones it has.
pub fn check<'r>(report: &'r Report, id: &str) -> &'r CheckResult {
    report
        .checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| {
            let ids: Vec<&str> = report.checks.iter().map(|c| c.id.as_str()).collect();
            panic!("the report has no check {id}; it has {ids:?}")
        })
}
