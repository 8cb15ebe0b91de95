//! The CI recipe (`docs/ci/*.yml`, `docs/CI.md`): each file is valid YAML,
//! and every storeproof command in it is one this version's command line
//! accepts and the README documents (a renamed flag breaks this test, not a
//! backend author's pipeline).

mod common;

use std::path::Path;

use common::storeproof;
use yaml_rust2::{Yaml, YamlLoader};

/// Every string in a YAML document.
fn strings<'a>(doc: &'a Yaml, out: &mut Vec<&'a str>) {
    match doc {
        Yaml::String(s) => out.push(s),
        Yaml::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Yaml::Hash(map) => map.iter().for_each(|(k, v)| {
            strings(k, out);
            strings(v, out);
        }),
        _ => {}
    }
}

/// The storeproof command lines in `file` (after the binary's path), each
/// split into words with the recipe's variables set to sample values.
fn storeproof_commands(file: &str) -> Vec<Vec<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let docs = YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{file} is not valid YAML: {e}"));
    assert_eq!(docs.len(), 1, "{file}: one document");
    let mut all = Vec::new();
    strings(&docs[0], &mut all);
    let mut commands = Vec::new();
    for line in all.iter().flat_map(|s| s.lines()) {
        let Some((_, rest)) = line.split_once("target/release/storeproof ") else {
            continue;
        };
        let rest = rest
            .replace("${{ matrix.server }}", "valkey-9")
            .replace("${{ matrix.shard }}", "1")
            .replace("\"$STORE\"", "builtin:redis")
            .replace("\"$SEED\"", "7")
            .replace("\"$SERVER\"", "valkey-9")
            .replace("\"$SHARD/3\"", "1/3")
            .replace("\"shard-$SERVER-$SHARD\"", "shard-valkey-9-1");
        assert!(!rest.contains('$'), "{file}: a variable left in {rest:?}");
        commands.push(rest.split_whitespace().map(str::to_string).collect());
    }
    commands
}

#[test]
fn the_ci_recipes_are_yaml_and_their_commands_are_accepted_and_documented() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CI.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for file in ["docs/ci/github-actions.yml", "docs/ci/gitlab-ci.yml"] {
        assert!(
            guide.contains(file.trim_start_matches("docs/")),
            "docs/CI.md names {file}"
        );
        let commands = storeproof_commands(file);
        let subcommands: Vec<&str> = commands.iter().map(|c| c[0].as_str()).collect();
        assert_eq!(subcommands, ["certify", "merge"], "{file}");
        for command in &commands {
            // Documented: the subcommand and every flag it uses.
            assert!(
                readme.contains(&format!("storeproof {}", command[0])),
                "{file}: {command:?}"
            );
            for flag in command.iter().filter(|w| w.starts_with("--")) {
                assert!(
                    readme.contains(flag.as_str()),
                    "{file}: README does not document {flag}"
                );
            }
            // Accepted: everything but where it writes, which goes to a
            // temporary directory of the test's.
            let mut words: Vec<String> = Vec::new();
            let mut it = command.iter();
            while let Some(w) = it.next() {
                if w == "--out" {
                    it.next();
                } else if w.starts_with("shard-") {
                    words.push(dir.path().join("no-such-shard").display().to_string());
                } else {
                    words.push(w.clone());
                }
            }
            let out_dir = dir.path().join("out");
            words.extend(["--out".to_string(), out_dir.display().to_string()]);
            if command[0] == "certify" {
                // A --check naming nothing stops the run after the command
                // line was accepted, before anything starts.
                words.extend(["--check".to_string(), "no.such.check".to_string()]);
            }
            let args: Vec<&str> = words.iter().map(String::as_str).collect();
            let out = storeproof(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{file}: {args:?}: {stderr}");
            assert!(
                !stderr.contains("Usage:") && !stderr.contains("unexpected argument"),
                "{file}: the command line is not accepted: {args:?}: {stderr}"
            );
            if command[0] == "certify" {
                assert!(stderr.contains("no.such.check"), "{file}: {stderr}");
            }
        }
    }
    assert!(readme.contains("scripts/setup"));
}
