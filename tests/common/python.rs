//! The Python interpreter the adapter tests run, shared by the binary's
//! tests and the explorer's (`#[path]`-included there).

use std::sync::OnceLock;

/// The interpreter `python3` runs, resolved once: a version manager's shim
/// (pyenv's) costs most of a second per adapter process, and a conformance
/// run starts dozens of them.
pub fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|p| !p.is_empty() && !p.contains(char::is_whitespace))
            .unwrap_or_else(|| "python3".into())
    })
}
