//! The module tree of one crate root (a library, a program, a test, an
//! example): its files found from the root's `mod` declarations as rustc
//! finds them, and which of them imports which. A `mod NAME;` inside an
//! inline module (`mod a { mod b; }`) would be read as the file's own: its
//! file would not be found, and the test would say so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::scan::{paths_in, Source};

/// A module path, e.g. `["domain", "service", "inner"]`; `[]` is the root.
pub type ModPath = Vec<String>;

/// Imports of a tree: file → file it imports → the paths that name it.
pub type Edges = BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>>;

pub struct Tree {
    /// The root file, e.g. `crates/hako-cli/src/main.rs`.
    pub root: PathBuf,
    /// What the layers call the root: `lib` for a library, else `main`.
    pub root_name: &'static str,
    /// Module path → its file and code (test modules and test-only files
    /// aside).
    pub files: BTreeMap<ModPath, (PathBuf, Source)>,
    /// Every file of the tree, test-only ones too.
    pub reached: BTreeSet<PathBuf>,
    /// `mod` declarations whose file this reading did not find.
    pub missing: Vec<String>,
}

impl Tree {
    /// Reads the tree of `root`; `read` gives a file's text, if it exists.
    pub fn read(root: &Path, lib: bool, read: &dyn Fn(&Path) -> Option<String>) -> Tree {
        let mut tree = Tree {
            root: root.to_path_buf(),
            root_name: if lib { "lib" } else { "main" },
            files: BTreeMap::new(),
            reached: BTreeSet::new(),
            missing: Vec::new(),
        };
        // (module, file, whether its `mod x;` look beside it, test-only)
        let mut todo = vec![(ModPath::new(), root.to_path_buf(), true, false)];
        while let Some((m, file, beside, test)) = todo.pop() {
            let Some(text) = read(&file) else {
                tree.missing
                    .push(format!("{}: no such file", file.display()));
                continue;
            };
            tree.reached.insert(file.clone());
            let source = Source::parse(&text);
            let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
            for d in &source.mods {
                let mut child = m.clone();
                child.push(d.name.clone());
                let base = if beside {
                    dir.clone()
                } else {
                    dir.join(file.file_stem().unwrap_or_default())
                };
                let candidates = match &d.path {
                    Some(p) => vec![(dir.join(p), true)],
                    None => vec![
                        (base.join(format!("{}.rs", d.name)), false),
                        (base.join(&d.name).join("mod.rs"), true),
                    ],
                };
                match candidates.iter().find(|(p, _)| read(p).is_some()) {
                    Some((path, beside)) => {
                        todo.push((child, path.clone(), *beside, test || d.test))
                    }
                    None => {
                        let tried: Vec<_> = candidates
                            .iter()
                            .map(|(p, _)| p.display().to_string())
                            .collect();
                        tree.missing.push(format!(
                            "{}: `mod {}`, but no {}",
                            file.display(),
                            d.name,
                            tried.join(" nor ")
                        ));
                    }
                }
            }
            if !test {
                tree.files.insert(m, (file, source));
            }
        }
        tree
    }

    /// A tree of files in memory (path → text), rooted at `lib.rs` or
    /// `main.rs`: for the checker's own tests.
    pub fn from_files(files: &[(&str, &str)]) -> Tree {
        let map: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        let lib = map.contains_key(Path::new("lib.rs"));
        let root = if lib { "lib.rs" } else { "main.rs" };
        Tree::read(Path::new(root), lib, &|p| map.get(p).cloned())
    }

    /// The display name of a module: `lib`/`main` for the root.
    pub fn name(&self, m: &ModPath) -> String {
        if m.is_empty() {
            self.root_name.into()
        } else {
            m.join("::")
        }
    }

    /// The file module a path of `from` points at: the longest prefix of
    /// the resolved path that is a file.
    fn target(&self, from: &ModPath, path: &[String]) -> Option<ModPath> {
        let first = path.first()?;
        let mut abs: ModPath = match first.as_str() {
            "crate" | "$crate" => Vec::new(),
            "super" | "self" => from.clone(),
            // `child::Item`: a path relative to this module.
            child => {
                let mut c = from.clone();
                c.push(child.to_owned());
                if !self.files.contains_key(&c) {
                    return None;
                }
                from.clone()
            }
        };
        let mut rest = if matches!(first.as_str(), "crate" | "$crate" | "super" | "self") {
            &path[1..]
        } else {
            path
        };
        if first == "super" {
            abs.pop();
            while rest.first().is_some_and(|s| s == "super") {
                abs.pop();
                rest = &rest[1..];
            }
        }
        let mut best = abs.clone();
        for seg in rest {
            abs.push(seg.clone());
            if self.files.contains_key(&abs) {
                best = abs.clone();
            }
        }
        Some(best)
    }

    /// Every file's imports of other files of the tree, with the paths
    /// that make them.
    pub fn edges(&self) -> Edges {
        self.files
            .iter()
            .map(|(m, (_, source))| {
                let children: Vec<String> = self
                    .files
                    .keys()
                    .filter(|k| k.len() == m.len() + 1 && k.starts_with(m))
                    .map(|k| k[m.len()].clone())
                    .collect();
                let mut out: BTreeMap<ModPath, BTreeSet<String>> = BTreeMap::new();
                for p in paths_in(&source.code, &children) {
                    if let Some(t) = self.target(m, &p) {
                        if &t != m && self.files.contains_key(&t) {
                            out.entry(t).or_default().insert(p.join("::"));
                        }
                    }
                }
                (m.clone(), out)
            })
            .collect()
    }
}
