//! The workspace as the shape checks see it: its members (the root
//! `Cargo.toml`'s `members`), each member's crate roots (library,
//! programs, tests, benchmarks, examples, build script) with their module
//! trees, and every `.rs` file in the members' folders.

use std::path::{Path, PathBuf};

use super::scan::Source;
use super::tree::Tree;

pub struct Workspace {
    /// The folder of the root `Cargo.toml`.
    pub base: PathBuf,
    /// The members' folders, relative to `base`.
    pub members: Vec<PathBuf>,
    /// One tree per crate root.
    pub trees: Vec<Tree>,
    /// Every `.rs` file of the members (relative to `base`), read.
    pub files: Vec<(PathBuf, Source)>,
}

impl Workspace {
    pub fn read(base: &Path) -> Workspace {
        let manifest = std::fs::read_to_string(base.join("Cargo.toml")).expect("root Cargo.toml");
        let members: Vec<PathBuf> = members(&manifest).into_iter().map(PathBuf::from).collect();
        let read = |p: &Path| std::fs::read_to_string(base.join(p)).ok();
        let mut trees = Vec::new();
        let mut files = Vec::new();
        for m in &members {
            for (root, lib) in roots(base, m) {
                trees.push(Tree::read(&root, lib, &read));
            }
            let mut stack = vec![m.clone()];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(base.join(&dir)) else {
                    continue;
                };
                for e in entries {
                    let name = e.expect("dir entry").file_name();
                    let rel = dir.join(&name);
                    let name = name.to_string_lossy();
                    if base.join(&rel).is_dir() {
                        // Build output and tools' folders (.venv) are not
                        // the member's sources.
                        let nested = base.join(&rel).join("Cargo.toml").exists();
                        if !(name == "target" || name.starts_with('.') || nested) {
                            stack.push(rel);
                        }
                    } else if name.ends_with(".rs") {
                        let text = read(&rel).expect("read a .rs file");
                        files.push((rel, Source::parse(&text)));
                    }
                }
            }
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        Workspace {
            base: base.to_path_buf(),
            members,
            trees,
            files,
        }
    }

    /// What the checker cannot place: a `mod` declaration whose file it did
    /// not find, a `.rs` file in no crate's tree (which it would not check).
    pub fn unplaced(&self) -> Vec<String> {
        let mut bad: Vec<String> = self
            .trees
            .iter()
            .flat_map(|t| &t.missing)
            .cloned()
            .collect();
        for (p, _) in &self.files {
            if !self.trees.iter().any(|t| t.reached.contains(p)) {
                bad.push(format!("{}: in no crate's module tree", p.display()));
            }
        }
        bad
    }
}

/// The `members = [...]` of a workspace's `Cargo.toml` (no globs).
pub fn members(manifest: &str) -> Vec<String> {
    let start = manifest.find("members").expect("members = [...]");
    let open = start + manifest[start..].find('[').expect("members = [");
    let close = open + manifest[open..].find(']').expect("members = [...]");
    let list: Vec<String> = manifest[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(
        list.iter().all(|s| !s.contains('*')),
        "the shape test reads members named one by one, not globs: {list:?}"
    );
    list
}

/// The crate roots of a member, each with whether it is its library:
/// `src/lib.rs`, `src/main.rs`, `src/bin/*.rs`, `src/bin/*/main.rs`,
/// `tests/*.rs`, `benches/*.rs`, `examples/*.rs` (and `*/main.rs`),
/// `build.rs`, and the `path`s of its `[lib]`, `[[bin]]`, `[[test]]`,
/// `[[bench]]` and `[[example]]` sections.
pub fn roots(base: &Path, member: &Path) -> Vec<(PathBuf, bool)> {
    let mut out: Vec<(PathBuf, bool)> = Vec::new();
    let mut add = |p: PathBuf, lib: bool| {
        if base.join(&p).is_file() && !out.iter().any(|(q, _)| *q == p) {
            out.push((p, lib));
        }
    };
    let manifest =
        std::fs::read_to_string(base.join(member).join("Cargo.toml")).unwrap_or_default();
    let mut section = String::new();
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            section = l.to_owned();
        } else if let Some(v) = l.strip_prefix("path") {
            let targets = ["[lib]", "[[bin]]", "[[test]]", "[[bench]]", "[[example]]"];
            if let Some(v) = v.trim_start().strip_prefix('=') {
                if targets.contains(&section.as_str()) {
                    add(member.join(v.trim().trim_matches('"')), section == "[lib]");
                }
            }
        }
    }
    add(member.join("src/lib.rs"), true);
    add(member.join("src/main.rs"), false);
    add(member.join("build.rs"), false);
    for dir in ["src/bin", "tests", "benches", "examples"] {
        let Ok(entries) = std::fs::read_dir(base.join(member).join(dir)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries.map(|e| e.expect("dir entry").path()).collect();
        found.sort();
        for p in found {
            let rel = member.join(dir).join(p.file_name().unwrap_or_default());
            if p.is_dir() {
                add(rel.join("main.rs"), false);
            } else if p.extension().is_some_and(|x| x == "rs") {
                add(rel, false);
            }
        }
    }
    out
}
