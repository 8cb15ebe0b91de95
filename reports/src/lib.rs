//! The run model's renderings: `report.json` (docs/CONTRACTS.md §3's fields,
//! for CI scripts), `junit.xml` (one test case per check) and a self-contained
//! `index.html` (no network, no build step), and `badge.svg` for a README.
//! Rendering is pure; [`write_all`] is the only I/O and never leaves a
//! half-written report behind.
//!
//! ```rust
//! use model::figures::Stats;
//! use model::{CheckResult, Level, Report, RunSection, RunVerdict, ServerSection, StoreSection, Verdict};
//!
//! let check = CheckResult {
//!     id: "conformance.lease.take-busy".into(),
//!     suite: "conformance".into(),
//!     level: Level::Must,
//!     verdict: Verdict::Fail,
//!     outside_claim: false,
//!     reason: "step 2: expected busy, got granted".into(),
//!     evidence: model::evidence::Evidence::None,
//!     counterexample: None,
//!     violations: Vec::new(),
//!     seconds: 0.1,
//!     about: String::new(),
//! };
//! let report = Report {
//!     storeproof: "0.1.0".into(),
//!     verdict: Report::verdict_of(std::slice::from_ref(&check)),
//!     store: StoreSection {
//!         spec: "cmd:./my-adapter".into(),
//!         name: "my-store".into(),
//!         version: "1.0".into(),
//!         contracts: vec!["lease".into()],
//!     },
//!     server: ServerSection {
//!         version: "7.0.15".into(),
//!         managed: true,
//!         settings: Default::default(),
//!         name: None,
//!         product: None,
//!     },
//!     checks: vec![check],
//!     stats: Stats::default(),
//!     run: RunSection::default(),
//!     per_server: Vec::new(),
//! };
//! // A failed MUST check fails the run.
//! assert_eq!(report.verdict, RunVerdict::Fail);
//!
//! let json: serde_json::Value =
//!     serde_json::from_str(&reports::render_json(&report).unwrap()).unwrap();
//! assert_eq!(json["verdict"], "fail");
//! assert_eq!(json["checks"][0]["level"], "must");
//! assert!(reports::render_junit(&report).contains("conformance.lease.take-busy"));
//! assert!(!reports::render_html(&report).contains("<script"));
//! ```

mod html;
mod junit;

use std::fs;
use std::path::{Path, PathBuf};

use model::Report;

pub use html::{render_badge, render_html};
pub use junit::render_junit;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or directory of the report could not be written.
    #[error("cannot write the report to {path}: {cause}; pick another --out directory")]
    Io {
        /// The file or directory that could not be written.
        path: PathBuf,
        /// Why the write failed (not a `source`: the message already says
        /// it, and a chain would print it twice).
        cause: std::io::Error,
    },
    /// `--out` names something storeproof must not replace: a file, a
    /// directory of someone else's files, the current or home directory.
    #[error("--out {path}: {why}; storeproof replaces the whole --out directory, so give a new or empty directory, or one holding a previous storeproof report")]
    Refused {
        /// The `--out` path as given.
        path: PathBuf,
        /// What is there, one line.
        why: String,
    },
    /// The report could not be encoded as JSON.
    #[error("cannot encode the report: {0}")]
    Json(#[from] serde_json::Error),
}

/// The file written into every report directory. A directory holding it
/// (and nothing storeproof does not write) is a previous report, which the
/// next run may replace; storeproof replaces no other non-empty directory.
pub const MARKER: &str = ".storeproof-report";

/// The names storeproof writes at the top of a report directory.
const REPORT_ENTRIES: [&str; 6] = [
    MARKER,
    "report.json",
    "junit.xml",
    "index.html",
    "badge.svg",
    "replays",
];

/// Checks that a report may be written to `dir` without deleting anything
/// storeproof did not write: `dir` does not exist yet (under a directory),
/// is an empty directory, or holds a previous storeproof report and nothing
/// else. Refused: a file, a symbolic link, `/`, the home directory, the
/// current directory or one holding it, and any other non-empty directory.
/// Cheap; `storeproof certify` calls it before the run starts, and
/// [`write_all`] again before it replaces anything.
pub fn check_out_dir(dir: &Path) -> Result<(), ReportError> {
    let refuse = |why: String| ReportError::Refused {
        path: dir.to_path_buf(),
        why,
    };
    if dir.as_os_str().is_empty() {
        return Err(refuse("the path is empty".into()));
    }
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // The report will create it: the nearest existing ancestor must
            // be a directory.
            let absolute = std::path::absolute(dir).map_err(|cause| ReportError::Io {
                path: dir.to_path_buf(),
                cause,
            })?;
            let mut ancestor = absolute.parent();
            while let Some(a) = ancestor {
                match fs::metadata(a) {
                    Ok(m) if m.is_dir() => return Ok(()),
                    Ok(_) => {
                        return Err(refuse(format!(
                            "{} is a file, so no directory can be made under it",
                            a.display()
                        )))
                    }
                    Err(_) => ancestor = a.parent(),
                }
            }
            return Ok(());
        }
        Err(cause) => {
            return Err(ReportError::Io {
                path: dir.to_path_buf(),
                cause,
            })
        }
    };
    if meta.file_type().is_symlink() {
        return Err(refuse("it is a symbolic link".into()));
    }
    if !meta.is_dir() {
        return Err(refuse("it is a file, not a directory".into()));
    }
    let io = |cause| ReportError::Io {
        path: dir.to_path_buf(),
        cause,
    };
    let canonical = fs::canonicalize(dir).map_err(io)?;
    let home = std::env::var_os("HOME").and_then(|h| fs::canonicalize(h).ok());
    let cwd = std::env::current_dir().ok();
    if canonical.parent().is_none() {
        return Err(refuse("it is the root directory".into()));
    }
    if home.as_deref() == Some(canonical.as_path()) {
        return Err(refuse("it is your home directory".into()));
    }
    if let Some(cwd) = cwd.filter(|c| c.starts_with(&canonical)) {
        return Err(refuse(if cwd == canonical {
            "it is the current directory".into()
        } else {
            "it holds the current directory".into()
        }));
    }
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir).map_err(io)? {
        entries.push(entry.map_err(io)?);
    }
    if entries.is_empty() {
        return Ok(());
    }
    if !entries.iter().any(|e| e.file_name() == MARKER) && !is_unmarked_report(dir, &entries) {
        return Err(refuse(format!(
            "the directory is not empty and holds no storeproof report (no {MARKER} file), and storeproof never deletes what it did not write"
        )));
    }
    // A previous report: still, everything in it must be storeproof's.
    let foreign = |name: String| {
        refuse(format!(
            "it holds a previous report but also {name}, which storeproof did not write"
        ))
    };
    for entry in &entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !REPORT_ENTRIES.contains(&name.as_str()) {
            return Err(foreign(name));
        }
        if name == "replays" {
            for replay in fs::read_dir(entry.path()).map_err(io)? {
                let replay = replay.map_err(io)?;
                let file = replay.file_name().to_string_lossy().into_owned();
                let is_file = replay.file_type().map(|t| t.is_file()).unwrap_or(false);
                if !is_file || !file.ends_with(".json") {
                    return Err(foreign(format!("replays/{file}")));
                }
            }
        }
    }
    Ok(())
}

/// The replay file of every failed or warned check that has a
/// counterexample: `(file name, JSON)`. `storeproof replay FILE` re-runs it.
pub fn replay_files(report: &Report) -> Vec<(String, String)> {
    let several = !report.per_server.is_empty();
    report
        .runs()
        .into_iter()
        .flat_map(|run| {
            let on = run.server.name.as_deref().filter(|_| several);
            run.checks
                .iter()
                .filter(|c| c.counterexample.is_some())
                .map(move |c| {
                    let body = model::ReplayFile::of(run, c);
                    (
                        replay_file_name_on(on, &c.id),
                        serde_json::to_string_pretty(&body).unwrap_or_default(),
                    )
                })
        })
        .collect()
}

/// Where a check's replay file goes inside the report directory.
pub fn replay_file_name(check_id: &str) -> String {
    replay_file_name_on(None, check_id)
}

/// Where a check's replay file goes in a report of several servers: named
/// for the server it failed on too (`<check>@<server>.json`).
pub fn replay_file_name_on(server: Option<&str>, check_id: &str) -> String {
    match server {
        Some(server) => format!("replays/{check_id}@{server}.json"),
        None => format!("replays/{check_id}.json"),
    }
}

/// `report.json` as text.
pub fn render_json(report: &Report) -> Result<String, ReportError> {
    Ok(serde_json::to_string_pretty(report)?)
}

/// A report of a storeproof from before the marker: only the names a
/// report has, and a `report.json` that reads as one.
fn is_unmarked_report(dir: &Path, entries: &[fs::DirEntry]) -> bool {
    let names_ok = entries
        .iter()
        .all(|e| REPORT_ENTRIES.contains(&e.file_name().to_string_lossy().as_ref()));
    let json = fs::read_to_string(dir.join("report.json")).ok();
    let value: Option<serde_json::Value> = json.and_then(|t| serde_json::from_str(&t).ok());
    names_ok
        && value.is_some_and(|v| {
            v.get("storeproof").is_some_and(|s| s.is_string())
                && v.get("checks").is_some_and(|c| c.is_array())
        })
}

/// Writes `index.html`, `report.json`, `junit.xml`, `badge.svg`, the replay files and
/// the [`MARKER`] into `dir`. Refuses (before writing anything) what
/// [`check_out_dir`] refuses. Every secret in the report (a password in a
/// URL, anywhere) is redacted first. All files are written into a sibling
/// staging directory that then replaces `dir`, so a failure leaves either
/// the old report or none, never half.
pub fn write_all(report: &Report, dir: &Path) -> Result<(), ReportError> {
    check_out_dir(dir)?;
    let report = &redacted(report)?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| ReportError::Io { path, cause }
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
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    let result = (|| {
        fs::create_dir_all(&staging).map_err(io(&staging))?;
        let mut files = vec![
            (
                MARKER.to_string(),
                format!(
                    "This directory is a report of storeproof {}. The next run with --out here replaces it whole;\nstoreproof replaces no directory without this file.\n",
                    report.storeproof
                ),
            ),
            ("report.json".to_string(), json),
            ("junit.xml".to_string(), junit),
            ("index.html".to_string(), html),
            ("badge.svg".to_string(), render_badge(report)),
        ];
        files.extend(replay_files(report));
        for (file, body) in &files {
            let path = staging.join(file);
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).map_err(io(dir))?;
            }
            fs::write(&path, body).map_err(io(&path))?;
        }
        // Checked again right before: only a report or an empty directory
        // is ever moved aside, and it is put back if the swap fails.
        check_out_dir(dir)?;
        let had_old = dir.exists();
        if had_old {
            fs::rename(dir, &old).map_err(io(dir))?;
        }
        if let Err(cause) = fs::rename(&staging, dir) {
            if had_old {
                let _ = fs::rename(&old, dir);
            }
            return Err(ReportError::Io {
                path: dir.to_path_buf(),
                cause,
            });
        }
        if had_old {
            fs::remove_dir_all(&old).map_err(io(&old))?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    result
}

/// `report` with every string in it passed through
/// [`model::redact_secrets`]: the command line, reasons,
/// evidence, adapter messages — whatever may quote a URL with a password.
fn redacted(report: &Report) -> Result<Report, ReportError> {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) if s.contains("://") => {
                *s = model::redact_secrets(s);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(walk),
            serde_json::Value::Object(map) => map.values_mut().for_each(walk),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(report)?;
    walk(&mut value);
    Ok(serde_json::from_value(value)?)
}

/// Escapes text for HTML and XML. Control characters other than tab, line
/// feed and carriage return (which XML 1.0 forbids even as references, and
/// which would reach a terminal raw) become a visible `\u{..}`, as do the
/// non-characters U+FFFE and U+FFFF.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}
