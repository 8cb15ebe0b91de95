//! A server the virtual clock does not move is refused before anything is
//! judged on it: one setup line naming the binary and the fix, exit 2, no
//! report, no process left.

mod common;

use std::os::unix::fs::PermissionsExt;

#[test]
fn a_server_that_ignores_the_virtual_clock_is_a_setup_error_not_a_failing_store() {
    let dir = tempfile::tempdir().unwrap();
    // A redis-server that never loads the clock shim; it records its pid
    // (exec keeps it) so the test can tell whether it is left running.
    let pids = dir.path().join("pids");
    let wrapper = dir.path().join("redis-server-without-shim");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ >> '{}'\nexec env -u LD_PRELOAD redis-server \"$@\"\n",
            pids.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out_dir = dir.path().join("report");
    let out = common::command()
        .args(["certify", "--suite", "conformance", "--out"])
        .arg(&out_dir)
        .env("STOREPROOF_REDIS_SERVER", &wrapper)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    for needle in [
        "storeproof: error:",
        wrapper.to_str().unwrap(),
        "does not follow storeproof's virtual clock",
        "STOREPROOF_REDIS_SERVER",
    ] {
        assert!(
            lines[0].contains(needle),
            "{:?} does not say {needle:?}",
            lines[0]
        );
    }
    assert!(!out_dir.exists(), "a report was written");
    let started = std::fs::read_to_string(&pids).unwrap();
    assert!(!started.trim().is_empty(), "the wrapper never ran");
    for pid in started.split_whitespace() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(") ")
            .next()
            .and_then(|r| r.split_whitespace().next());
        assert!(
            matches!(state, None | Some("Z") | Some("X")),
            "server {pid} left running: {stat}"
        );
    }
}
