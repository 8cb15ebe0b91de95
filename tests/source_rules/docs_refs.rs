//! The repository's references keep their promises: nothing cites the
//! product specification, which is not in the repository (the parts the code
//! relies on are in docs/CONTRACTS.md and docs/PROTOCOL.md), and every
//! `docs/X.md §N` names a document in `docs/` and a section it has. A
//! renumbered heading breaks this test, not a reader's way to the text.

use std::path::{Path, PathBuf};

/// The text files a reference can hide in.
const EXTENSIONS: [&str; 8] = ["rs", "md", "py", "lua", "toml", "yml", "yaml", "sh"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every text file of the repository, build output and VCS data left out.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                files(&path, out);
            }
        } else if EXTENSIONS.iter().any(|e| name.ends_with(&format!(".{e}")))
            || path.parent().is_some_and(|p| p.ends_with("scripts"))
        {
            out.push(path);
        }
    }
}

fn texts() -> Vec<(String, String)> {
    let mut paths = Vec::new();
    files(&root(), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            let rel = p.strip_prefix(root()).unwrap_or(&p).display().to_string();
            Some((rel, text))
        })
        .collect()
}

#[test]
fn nothing_cites_the_specification() {
    // Spelt in two halves so that this file does not find itself.
    let spec = ["SP", "EC"].concat();
    let mut found = Vec::new();
    for (file, text) in texts() {
        for (n, line) in text.lines().enumerate() {
            // The word alone, whatever follows it (a section, `.md`), never
            // part of a longer name.
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            let cites = line.match_indices(&spec).any(|(at, _)| {
                !word(line[..at].chars().next_back())
                    && !word(line[at + spec.len()..].chars().next())
            });
            if cites {
                found.push(format!("{file}:{}: {line}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cite docs/CONTRACTS.md or docs/PROTOCOL.md by section instead:\n{}",
        found.join("\n")
    );
}

/// The sections a Markdown document has: `4.2` of `### 4.2 Lease`, `4` of
/// `## 4. Operations`.
fn sections(doc: &str) -> Vec<String> {
    doc.lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| {
            let title = l.trim_start_matches('#').trim_start();
            let number: String = title
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let number = number.trim_end_matches('.');
            (!number.is_empty()).then(|| number.to_string())
        })
        .collect()
}

#[test]
fn every_cited_section_exists() {
    let mut cited = 0;
    let mut broken = Vec::new();
    for (file, text) in texts() {
        for (n, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices(".md §") {
                let name: String = line[..at]
                    .chars()
                    .rev()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                let section: String = line[at + ".md §".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let section = section.trim_end_matches('.');
                if name.is_empty() || section.is_empty() {
                    // Not a citation: how one is spelt (this file's own text).
                    continue;
                }
                let doc = root().join("docs").join(format!("{name}.md"));
                let whence = format!("{file}:{}: {name}.md §{section}", n + 1);
                cited += 1;
                match std::fs::read_to_string(&doc) {
                    Err(_) => broken.push(format!("{whence}: no docs/{name}.md")),
                    Ok(doc) if !sections(&doc).iter().any(|s| s == section) => {
                        broken.push(format!("{whence}: docs/{name}.md has no section {section}"))
                    }
                    Ok(_) => {}
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    // The scan itself works: the code does cite the docs by section.
    assert!(cited > 20, "only {cited} citations found");
}
