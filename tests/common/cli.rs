//! What the CLI tests (`tests/cli_*.rs`) share: running the binary with an
//! environment, and the shape of a setup error.

use std::path::Path;
use std::process::Output;

use super::storeproof_in;

/// Runs storeproof with `args` and `env` added, in the test's own directory.
pub fn storeproof(args: &[&str], env: &[(&str, &str)]) -> Output {
    storeproof_in(None, args, env)
}

/// What storeproof wrote to stderr, line by line.
pub fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Asserts exit 2, exactly one stderr line containing every `needle`, and no
/// report directory.
pub fn assert_setup_error(out: &Output, report_dir: &Path, needles: &[&str]) {
    assert_eq!(out.status.code(), Some(2));
    let lines = stderr_lines(out);
    assert_eq!(lines.len(), 1, "one line expected: {lines:?}");
    for n in needles {
        assert!(lines[0].contains(n), "{:?} does not say {n:?}", lines[0]);
    }
    assert!(
        !report_dir.exists(),
        "a report was written after a setup error"
    );
}
