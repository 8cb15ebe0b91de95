//! Every check id is written once in the code: its suite declares it, and
//! everything else (certify, reports, replay, bench, other suites) reaches
//! it through that declaration. Tests may name ids; the library and binary
//! code may not repeat one. One exception: the sabotage list
//! (`sabotage/src/lib.rs` and its groups `crash_named.rs`,
//! `explorer_named.rs`) names the check that must catch each sabotage
//! (`caught_by`), as data about the checks rather than a second declaration;
//! `sabotage/tests/lua_sabotages.rs` proves every one names a declared check,
//! so a renamed check fails there, never silently.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The non-test Rust sources of the workspace: every crate's `src/`.
fn sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![root.join("src")];
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.join("Cargo.toml").is_file() && path.join("src").is_dir() {
            dirs.push(path.join("src"));
        }
    }
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The string literals of `code` that look like a check id:
/// `<suite>.<name>` with lower-case words, digits, dots and dashes.
fn id_literals(code: &str) -> Vec<String> {
    let suites = [
        "conformance.",
        "explorer.",
        "crash.",
        "layout.",
        "faults.",
        "sabotage.",
    ];
    code.split('"')
        .skip(1)
        .step_by(2)
        .filter(|lit| {
            suites
                .iter()
                .any(|s| lit.starts_with(s) && lit.len() > s.len())
                && lit
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
                && !lit.ends_with('.')
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn the_id_finder_sees_ids_and_nothing_else() {
    assert_eq!(
        id_literals(
            r#"let a = "crash.acknowledged-epochs-survive"; let b = "crash."; let c = "x.y";"#
        ),
        vec!["crash.acknowledged-epochs-survive".to_string()]
    );
    assert!(id_literals(r#""conformance.lease.take-busy is wrong""#).is_empty());
}

#[test]
fn every_check_id_is_written_once_outside_tests() {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let files = sources();
    assert!(files.len() > 40, "found only {} source files", files.len());
    let sabotage_lists: Vec<_> = ["lib.rs", "crash_named.rs", "explorer_named.rs"]
        .iter()
        .map(|f| Path::new("sabotage").join("src").join(f))
        .collect();
    for file in files {
        if sabotage_lists.iter().any(|l| file.ends_with(l)) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        // A file's unit tests follow its code: only the code counts.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        // Doc examples are tests too (`cargo test --doc`): comments do not
        // count.
        let code: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for id in id_literals(&code) {
            seen.entry(id).or_default().push(file.display().to_string());
        }
    }
    assert!(
        seen.len() >= 60,
        "found only {} check ids in the code: is the finder broken?",
        seen.len()
    );
    let repeated: Vec<String> = seen
        .iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|(id, files)| format!("{id} in {}", files.join(", ")))
        .collect();
    assert!(
        repeated.is_empty(),
        "check ids written more than once:\n{}",
        repeated.join("\n")
    );
}

/// The exception above holds only if every `caught_by` of the sabotage list
/// names a check some suite declares.
#[test]
fn every_sabotage_names_a_declared_check() {
    use harness::Suite;
    let suites: Vec<Box<dyn Suite>> = vec![
        Box::new(conformance::ConformanceSuite::new()),
        Box::new(explorer::ExplorerSuite::new(explorer::ExplorerConfig {
            depth: 4,
            walks: 1,
            walk_steps: 4,
            seed: 0,
            threads: 1,
            skews: vec![0],
            absolute_times: false,
            ..Default::default()
        })),
        Box::new(faults::FaultsSuite::default()),
        Box::new(crash::CrashSuite::new(crash::CrashConfig::new(
            1,
            1,
            1,
            crash::BackendChoice::Process,
        ))),
    ];
    let declared: std::collections::BTreeSet<&str> = suites
        .iter()
        .flat_map(|s| s.checks())
        .map(|c| c.id)
        .collect();
    for named in sabotage::named() {
        assert!(
            declared.contains(named.caught_by),
            "sabotage:{} names {}, which no suite declares",
            named.name,
            named.caught_by
        );
    }
}
