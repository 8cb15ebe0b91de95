//! Adapters that crash, hang, print garbage or flood: bad input, so each run
//! ends with exit 2 and one line naming the instance, the request and the
//! fix, no report and no process left behind.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

fn broken_adapter() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/adapters/broken/broken_adapter.py")
}

/// Runs one check against the broken adapter in `mode`; the adapter command
/// carries a marker so its processes can be found afterwards.
fn certify_with(mode: &str, marker: &str) -> (Output, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let store = format!("cmd:python3 {} {mode} {marker}", broken_adapter().display());
    let out = common::command()
        .args([
            "certify",
            "--store",
            &store,
            "--check",
            "conformance.lease.take-free-tree",
            "--adapter-timeout",
            "1",
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    eprintln!(
        "mode {mode}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, out_dir, dir)
}

/// Processes whose command line contains `marker`.
fn leftovers(marker: &str) -> Vec<String> {
    let out = Command::new("pgrep")
        .args(["-af", marker])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("pgrep"))
        .map(str::to_string)
        .collect()
}

/// The one error line of a run that stopped on a broken adapter.
fn the_error_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("storeproof: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains('\u{1b}'),
        "{stderr}"
    );
    errors[0].to_string()
}

/// A broken adapter is bad input: exit 2, one line naming the instance, the
/// request and the fix, no report, no process left. Returns the line.
fn assert_run_stopped_naming(mode: &str, needles: &[&str]) -> String {
    let mut all = needles.to_vec();
    all.extend(["instance a", "fix the adapter", "no report written"]);
    assert_setup_error(mode, &all)
}

/// The run on the adapter in `mode` is a setup error: exit 2, one line
/// saying each of `needles`, no report, no process left. Returns the line.
fn assert_setup_error(mode: &str, needles: &[&str]) -> String {
    let marker = format!("sp-marker-{mode}-{}", std::process::id());
    let (out, out_dir, _dir) = certify_with(mode, &marker);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a broken adapter is a setup error"
    );
    let line = the_error_line(&out);
    for n in needles {
        assert!(line.contains(n), "{line:?} does not say {n:?}");
    }
    assert!(!out_dir.exists(), "a report was written");
    assert_eq!(
        leftovers(&marker),
        Vec::<String>::new(),
        "adapter processes left behind"
    );
    line
}

#[test]
fn an_adapter_that_exits_mid_run_is_named_with_its_request_and_stderr() {
    assert_run_stopped_naming(
        "exit",
        &[
            "exited",
            "request 1 (lease.take",
            "broken adapter: exit on lease.take",
        ],
    );
}

#[test]
fn an_adapter_that_prints_garbage_is_named_with_its_request() {
    assert_run_stopped_naming(
        "garbage",
        &["request 1 (lease.take", "not JSON", "this is not json"],
    );
}

#[test]
fn an_adapter_that_answers_another_id_is_named() {
    assert_run_stopped_naming("wrong-id", &["request 1", "id is not 1"]);
}

#[test]
fn an_adapter_that_never_answers_times_out_and_is_killed() {
    assert_run_stopped_naming(
        "hang",
        &[
            "did not answer request 1 (lease.take",
            "within 1s",
            "raise --adapter-timeout",
        ],
    );
}

#[test]
fn an_adapter_that_streams_without_a_newline_is_stopped_at_one_mib() {
    assert_run_stopped_naming(
        "flood",
        &["request 1 (lease.take", "longer than 1048576 bytes"],
    );
    // The largest finished child of this test process is the storeproof run
    // above (nextest runs each test in a process of its own): it must not
    // have held much more than the 1 MiB line.
    // SAFETY: getrusage only writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    let max_rss_mib = usage.ru_maxrss / 1024;
    eprintln!("largest child's peak RSS: {max_rss_mib} MiB");
    assert!(max_rss_mib < 100, "peak RSS {max_rss_mib} MiB");
}

#[test]
fn control_characters_in_an_adapters_stderr_are_escaped() {
    let line = assert_run_stopped_naming(
        "control",
        &["exited", r"\u{1b}[31mred\u{7} bell\r back\u{0} nul"],
    );
    assert!(!line.chars().any(char::is_control), "{line:?}");
}

#[test]
fn an_adapters_children_die_with_it() {
    // The adapter starts a sleeping grandchild (its command line carries
    // the marker) and hangs: killing the process group must take both.
    let marker = format!("sp-marker-spawn-{}", std::process::id());
    let (out, out_dir, _dir) = certify_with("spawn-and-hang", &marker);
    assert_eq!(out.status.code(), Some(2));
    assert!(!out_dir.exists());
    let line = the_error_line(&out);
    let pid: u32 = line
        .split("grandchild pid ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .expect("the adapter reported its grandchild");
    // Gone, or a zombie waiting for init to reap it: either way not running.
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let running = state
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .is_some_and(|s| s != "Z" && s != "X");
    assert!(!running, "grandchild {pid} outlived the run: {state}");
    assert_eq!(
        leftovers(&marker),
        Vec::<String>::new(),
        "the grandchild outlived the run"
    );
}

#[test]
fn an_adapter_that_dies_at_hello_is_a_setup_error() {
    let marker = format!("sp-marker-hello-{}", std::process::id());
    let (out, out_dir, _dir) = certify_with("hello-exit", &marker);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    for n in [
        "instance probe",
        "exited",
        "request 0 (hello",
        "refusing to start",
        "fix the adapter",
    ] {
        assert!(lines[0].contains(n), "{:?} does not say {n:?}", lines[0]);
    }
    assert!(!out_dir.exists());
    assert_eq!(leftovers(&marker), Vec::<String>::new());
}

#[test]
fn an_unsupported_answer_skips_the_check_with_that_reason() {
    let marker = format!("sp-marker-unsupported-{}", std::process::id());
    let (out, out_dir, _dir) = certify_with("unsupported", &marker);
    // Skipped inside a contract the store claims: INCOMPLETE, not a pass.
    assert_eq!(out.status.code(), Some(3));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    let check = &report["checks"][0];
    assert_eq!(check["verdict"], "skipped");
    let reason = check["reason"].as_str().unwrap();
    assert!(
        reason.contains("unsupported") && reason.contains("lease.take is not offered here"),
        "{reason}"
    );
}

#[test]
fn a_reply_the_contract_does_not_allow_fails_the_check_naming_the_field() {
    let marker = format!("sp-marker-malformed-{}", std::process::id());
    let (out, out_dir, _dir) = certify_with("malformed", &marker);
    // The adapter speaks the protocol; its store answered wrongly: that is
    // the store's failure (exit 1, a report), not a broken adapter (exit 2).
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    let check = &report["checks"][0];
    assert_eq!(check["verdict"], "fail");
    let reason = check["reason"].as_str().unwrap();
    assert!(
        reason.contains("malformed_reply") && reason.contains("granted.epoch"),
        "{reason}"
    );
    assert_eq!(leftovers(&marker), Vec::<String>::new());
}

#[test]
fn a_hello_that_declares_an_unknown_state_is_a_setup_error() {
    assert_setup_error(
        "bad-state",
        &[
            "instance probe",
            "\"state\" must be",
            "got \"postgres\"",
            "fix the adapter",
        ],
    );
}

#[test]
fn a_store_that_selects_another_database_is_refused_at_hello() {
    assert_setup_error("select-db", &["database 3", "SELECT 3", "database 0"]);
}

#[test]
fn a_store_that_writes_in_another_database_later_is_refused_without_a_report() {
    assert_setup_error(
        "select-late",
        &[
            "wrote 1 key in database 3",
            "database 0",
            "no report written",
        ],
    );
}

#[test]
fn a_durable_store_is_never_judged_on_redis_keys() {
    // A check that reads the store's keys would pass on the 0 keys a
    // durable store writes there: it is settled, with the reason.
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("r");
    let store = format!("cmd:python3 {} durable", broken_adapter().display());
    let out = common::command()
        .args([
            "certify",
            "--store",
            &store,
            "--check",
            "conformance.lease.bytes-per-tree",
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(2), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    let check = &report["checks"][0];
    assert_eq!(check["id"], "conformance.lease.bytes-per-tree");
    assert_eq!(check["verdict"], "skipped", "{check}");
    let reason = check["reason"].as_str().unwrap();
    assert!(
        reason.contains("outside Redis") && reason.contains("\"state\": \"durable\""),
        "{reason}"
    );
}
