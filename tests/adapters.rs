//! Adapters that crash, hang or print garbage: each run ends with exit 1 or 2,
//! a message naming the instance and the request, and no process left behind.

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
    let out = Command::new(env!("CARGO_BIN_EXE_storeproof"))
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

fn assert_check_failed_naming(mode: &str, needles: &[&str]) {
    let marker = format!("sp-marker-{mode}-{}", std::process::id());
    let (out, out_dir, _dir) = certify_with(mode, &marker);
    assert_eq!(out.status.code(), Some(1), "a check must fail");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    let reason = report["checks"][0]["reason"].as_str().unwrap().to_string();
    for n in needles {
        assert!(reason.contains(n), "{reason:?} does not say {n:?}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("instance a"),
        "the summary names the instance"
    );
    assert_eq!(
        leftovers(&marker),
        Vec::<String>::new(),
        "adapter processes left behind"
    );
}

#[test]
fn an_adapter_that_exits_mid_run_is_named_with_its_request_and_stderr() {
    assert_check_failed_naming(
        "exit",
        &[
            "instance a",
            "exited",
            "request 1 (lease.take",
            "broken adapter: exit on lease.take",
        ],
    );
}

#[test]
fn an_adapter_that_prints_garbage_is_named_with_its_request() {
    assert_check_failed_naming(
        "garbage",
        &[
            "instance a",
            "request 1 (lease.take",
            "not JSON",
            "this is not json",
        ],
    );
}

#[test]
fn an_adapter_that_answers_another_id_is_named() {
    assert_check_failed_naming("wrong-id", &["instance a", "request 1", "id is not 1"]);
}

#[test]
fn an_adapter_that_never_answers_times_out_and_is_killed() {
    assert_check_failed_naming(
        "hang",
        &[
            "instance a",
            "did not answer request 1 (lease.take",
            "within 1s",
        ],
    );
}

#[test]
fn an_adapters_children_die_with_it() {
    // The adapter starts a sleeping grandchild (its command line carries
    // the marker) and hangs: killing the process group must take both.
    let marker = format!("sp-marker-spawn-{}", std::process::id());
    let (out, out_dir, _dir) = certify_with("spawn-and-hang", &marker);
    assert_eq!(out.status.code(), Some(1));
    let report = std::fs::read_to_string(out_dir.join("report.json")).unwrap();
    let pid: u32 = report
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
fn a_failure_comes_with_a_replay_file_that_reproduces_it() {
    let marker = format!("sp-marker-replay-{}", std::process::id());
    let (out, out_dir, _dir) = certify_with("garbage", &marker);
    assert_eq!(out.status.code(), Some(1));
    let file = out_dir.join("replays/conformance.lease.take-free-tree.json");
    assert!(file.exists(), "no replay file");
    let replay = |extra: &[&str]| {
        let mut args = vec!["replay", file.to_str().unwrap()];
        args.extend(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_storeproof"))
            .args(&args)
            .output()
            .unwrap();
        eprintln!("{}", String::from_utf8_lossy(&out.stdout));
        out
    };
    let again = replay(&[]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stdout).contains("still fails"));
    // The same counterexample against a correct store passes.
    let fixed = replay(&["--store", "builtin:redis"]);
    assert_eq!(fixed.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&fixed.stdout).contains("no longer fails"));
    assert_eq!(leftovers(&marker), Vec::<String>::new());
}

#[test]
fn an_unsupported_answer_skips_the_check_with_that_reason() {
    let marker = format!("sp-marker-unsupported-{}", std::process::id());
    let (out, out_dir, _dir) = certify_with("unsupported", &marker);
    assert_eq!(out.status.code(), Some(0));
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
