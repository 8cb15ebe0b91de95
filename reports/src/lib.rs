//! The run model's renderings: `report.json` (SPEC §5's fields, for CI
//! scripts), `junit.xml` (one test case per check) and a self-contained
//! `index.html` (no network, no build step). Rendering is pure; [`write_all`]
//! is the only I/O and never leaves a half-written report behind.

#![warn(missing_docs)]

mod html;
mod junit;

use std::fs;
use std::path::{Path, PathBuf};

use harness::check::Report;

pub use html::render_html;
pub use junit::render_junit;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or directory of the report could not be written.
    #[error("cannot write the report to {path}: {source}; pick another --out directory")]
    Io {
        /// The file or directory that could not be written.
        path: PathBuf,
        /// Why the write failed.
        source: std::io::Error,
    },
    /// The report could not be encoded as JSON.
    #[error("cannot encode the report: {0}")]
    Json(#[from] serde_json::Error),
}

/// The replay file of every failed or warned check that has a
/// counterexample: `(file name, JSON)`. `storeproof replay FILE` re-runs it.
pub fn replay_files(report: &Report) -> Vec<(String, String)> {
    report
        .checks
        .iter()
        .filter(|c| c.counterexample.is_some())
        .map(|c| {
            let body = serde_json::json!({
                "storeproof": report.storeproof,
                "kind": "check",
                "check": c.id,
                "store": report.run.get("store").cloned().unwrap_or(report.store.spec.clone().into()),
                "opt_out": report.run.get("opt_out").cloned().unwrap_or_default(),
                "seed": report.run.get("seed").cloned().unwrap_or_default(),
                "verdict": c.verdict,
                "reason": c.reason,
                "counterexample": c.counterexample,
            });
            (
                replay_file_name(&c.id),
                serde_json::to_string_pretty(&body).unwrap_or_default(),
            )
        })
        .collect()
}

/// Where a check's replay file goes inside the report directory.
pub fn replay_file_name(check_id: &str) -> String {
    format!("replays/{check_id}.json")
}

/// `report.json` as text.
pub fn render_json(report: &Report) -> Result<String, ReportError> {
    Ok(serde_json::to_string_pretty(report)?)
}

/// Writes `index.html`, `report.json` and `junit.xml` into `dir`. All three
/// are first written into a sibling staging directory that then replaces
/// `dir`, so a failure leaves either the old report or none, never half.
pub fn write_all(report: &Report, dir: &Path) -> Result<(), ReportError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io { path, source }
    };
    let json = render_json(report)?;
    let junit = render_junit(report);
    let html = render_html(report);
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(io(&parent))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "storeproof-report".into());
    let staging = parent.join(format!(".{name}.staging-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    let result = (|| {
        fs::create_dir_all(&staging).map_err(io(&staging))?;
        let mut files = vec![
            ("report.json".to_string(), json),
            ("junit.xml".to_string(), junit),
            ("index.html".to_string(), html),
        ];
        files.extend(replay_files(report));
        for (file, body) in &files {
            let path = staging.join(file);
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(io(dir))?;
            }
            fs::write(&path, body).map_err(io(&path))?;
        }
        if dir.exists() {
            fs::remove_dir_all(dir).map_err(io(dir))?;
        }
        fs::rename(&staging, dir).map_err(io(dir))
    })();
    if result.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    result
}

/// Escapes text for HTML and XML.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
