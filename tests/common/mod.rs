//! What the binary's end-to-end tests share: running the built `storeproof`
//! and reading the report it wrote.

#![allow(dead_code)] // each test crate uses its own part of it

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// The built storeproof, with `CI` taken out of its environment: a test
/// decides for itself whether the explorer fails fast (`--fail-fast`, whose
/// default follows `CI`), whatever machine runs it.
pub fn command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_storeproof"));
    cmd.env_remove("CI");
    cmd
}

/// Runs storeproof with `args` in the test's own directory.
pub fn storeproof(args: &[&str]) -> Output {
    storeproof_in(None, args, &[])
}

/// Runs storeproof in `cwd` (else the test's own directory) with `env`
/// added, printing the command, its exit code and output for a failing
/// test's log.
pub fn storeproof_in(cwd: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command();
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run storeproof");
    eprintln!(
        "$ storeproof {}\nexit: {:?}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The `report.json` in `dir` as raw JSON, for what the typed report
/// (`testkit::read_report`) cannot show: whether an optional field is
/// written at all, the words a listing prints, a report edited by hand.
pub fn read_report(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json");
    serde_json::from_str(&text).expect("report.json is JSON")
}

pub mod cli;
mod python;
#[allow(unused_imports)] // each test crate uses its own part of it
pub use python::python;
