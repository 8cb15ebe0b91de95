//! Issue 22, item 4: the adapter kits are checked by storeproof's own
//! checks. The kits' examples run on a copy of their kit with one rule
//! wrong: a request rule dropped (a `ttl_ms` of 0 let through) fails
//! `conformance.lease.bad-input`, and a reply builder that misnames a field
//! fails the check whose answer it built. The kits as shipped pass both.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

const NODE_PATH: &str = "/usr/share/nodejs";
const CHECKS: [&str; 2] = [
    "conformance.lease.bad-input",
    "conformance.lease.take-free-tree",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `text` with `find` replaced by `replace`, which must be there once.
fn patched(text: &str, (find, replace): (&str, &str)) -> String {
    assert_eq!(
        text.matches(find).count(),
        1,
        "{find:?} is not in the kit once"
    );
    text.replace(find, replace)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The Node kit and its example copied under `dir`, the kit's `index.js`
/// patched: the `--store` of that example.
fn node_store(dir: &Path, patch: Option<(&str, &str)>) -> String {
    assert!(
        Path::new(NODE_PATH).join("redis/package.json").is_file(),
        "node-redis is not under {NODE_PATH}: run scripts/setup"
    );
    let kit = dir.join("node");
    copy_dir(&repo().join("adapters/node/example"), &kit.join("example"));
    for file in ["index.js", "package.json"] {
        std::fs::copy(repo().join("adapters/node").join(file), kit.join(file)).unwrap();
    }
    if let Some(patch) = patch {
        let index = std::fs::read_to_string(kit.join("index.js")).unwrap();
        std::fs::write(kit.join("index.js"), patched(&index, patch)).unwrap();
    }
    format!(
        "cmd:NODE_PATH={NODE_PATH} node {}",
        kit.join("example/adapter.js").display()
    )
}

/// The Python example on a copy of the kit under `dir`, one of its files
/// patched: the `--store` (the copy first on `PYTHONPATH`).
fn python_store(dir: &Path, file: &str, patch: (&str, &str)) -> String {
    let kit = dir.join("py/storeproof_kit");
    copy_dir(&repo().join("adapters/python/storeproof_kit"), &kit);
    let text = std::fs::read_to_string(kit.join(file)).unwrap();
    std::fs::write(kit.join(file), patched(&text, patch)).unwrap();
    format!(
        "cmd:PYTHONPATH={} {} {}",
        dir.join("py").display(),
        common::python(),
        repo()
            .join("fixtures/adapters/python/storeproof_adapter.py")
            .display()
    )
}

/// The two checks of [`CHECKS`] on `store`: the exit code and each check's
/// verdict.
fn judged(store: &str, out: &Path) -> (Option<i32>, Vec<(String, String)>) {
    let out_dir = out.to_string_lossy();
    let mut args = vec!["certify", "--suite", "conformance", "--seed", "3"];
    for check in CHECKS {
        args.extend(["--check", check]);
    }
    args.extend(["--store", store, "--out", &out_dir]);
    let output = common::storeproof_in(None, &args, &[]);
    let report: Value = common::read_report(out);
    let verdicts = report["checks"]
        .as_array()
        .map(|checks| {
            checks
                .iter()
                .map(|c| {
                    (
                        c["id"].as_str().unwrap_or_default().to_string(),
                        c["verdict"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    (output.status.code(), verdicts)
}

fn verdict(verdicts: &[(String, String)], id: &str) -> String {
    verdicts
        .iter()
        .find(|(c, _)| c == id)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("{id} was not judged: {verdicts:?}"))
}

/// The duration rule of both kits, dropped.
const NODE_DURATION: (&str, &str) = (
    "rule === 'duration' && (v < 1n || v > MAX_DURATION_MS)",
    "rule === 'duration' && false",
);
const PYTHON_DURATION: (&str, &str) = (
    "if rule == \"duration\" and not 1 <= v <= MAX_DURATION_MS:",
    "if rule == \"duration\" and False:",
);

#[test]
fn the_node_kit_passes_and_each_wrong_rule_fails_its_check() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = node_store(&dir.path().join("shipped"), None);
    let (code, verdicts) = judged(&shipped, &dir.path().join("r0"));
    assert_eq!(code, Some(0), "{verdicts:?}");
    for check in CHECKS {
        assert_eq!(verdict(&verdicts, check), "pass");
    }

    let lax = node_store(&dir.path().join("lax"), Some(NODE_DURATION));
    let (code, verdicts) = judged(&lax, &dir.path().join("r1"));
    assert_eq!(code, Some(1), "{verdicts:?}");
    assert_eq!(verdict(&verdicts, "conformance.lease.bad-input"), "fail");

    let misnamed = node_store(
        &dir.path().join("misnamed"),
        Some((
            "expires_at_ms: toInt(expiresAtMs, 'granted.expires_at_ms')",
            "expires_at: toInt(expiresAtMs, 'granted.expires_at_ms')",
        )),
    );
    let (code, verdicts) = judged(&misnamed, &dir.path().join("r2"));
    assert_eq!(code, Some(1), "{verdicts:?}");
    assert_eq!(
        verdict(&verdicts, "conformance.lease.take-free-tree"),
        "fail"
    );
}

#[test]
fn a_python_kit_with_a_wrong_rule_fails_its_check() {
    let dir = tempfile::tempdir().unwrap();
    let lax = python_store(&dir.path().join("lax"), "requests.py", PYTHON_DURATION);
    let (code, verdicts) = judged(&lax, &dir.path().join("r1"));
    assert_eq!(code, Some(1), "{verdicts:?}");
    assert_eq!(verdict(&verdicts, "conformance.lease.bad-input"), "fail");

    let misnamed = python_store(
        &dir.path().join("misnamed"),
        "replies.py",
        (
            "\"expires_at_ms\": _int(\"granted.expires_at_ms\", expires_at_ms)",
            "\"expires_at\": _int(\"granted.expires_at_ms\", expires_at_ms)",
        ),
    );
    let (code, verdicts) = judged(&misnamed, &dir.path().join("r2"));
    assert_eq!(code, Some(1), "{verdicts:?}");
    assert_eq!(
        verdict(&verdicts, "conformance.lease.take-free-tree"),
        "fail"
    );
}
