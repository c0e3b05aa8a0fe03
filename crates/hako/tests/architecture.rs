//! The shape of `crates/hako/src`, checked on every test run: no two files
//! import each other (directly or in a circle), imports point down the
//! layers of `docs/ARCHITECTURE.md`, no pattern imports another, and no
//! file is over 600 lines (its test module aside).
//!
//! An import is any path in code that starts with `crate::`, `super::` or
//! `self::` (in `use` items and inline); it points at the file of the
//! longest module prefix of the path. Comments, doc links and string
//! literals are not imports. A path to an item of `lib.rs` (a re-export)
//! points at `lib.rs`, which re-exports from every layer: that is a circle,
//! so inside the crate every path names the module that defines the item.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest file, not counting its `#[cfg(test)]` module.
const MAX_LINES: usize = 600;

/// The layers, bottom first; a file may import its own layer and those
/// below. Patterns share a layer but may not import each other.
const LAYERS: &[&[&str]] = &[
    &["core"],
    &["os"],
    &["domain"],
    &["port"],
    &["pubsub", "event", "reqres"],
    &["describe", "waitset", "inspect", "aio"],
    &["lib"],
];
/// Folders of the pattern layer: none imports another.
const PATTERNS: &[&str] = &["pubsub", "event", "reqres"];

/// A module path, e.g. `["domain", "service", "inner"]`; `[]` is the crate.
type ModPath = Vec<String>;

struct Tree {
    /// Module path → file (relative to `src`) and its code, comments and
    /// strings blanked.
    files: BTreeMap<ModPath, (PathBuf, String)>,
}

impl Tree {
    fn read(src: &Path) -> Tree {
        let mut files = BTreeMap::new();
        let mut stack = vec![src.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).expect("read src") {
                let p = e.expect("dir entry").path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let rel = p.strip_prefix(src).expect("under src").to_path_buf();
                    let text = std::fs::read_to_string(&p).expect("read file");
                    files.insert(module_of(&rel), (rel, code_only(&text)));
                }
            }
        }
        Tree { files }
    }

    fn from_files(files: &[(&str, &str)]) -> Tree {
        Tree {
            files: files
                .iter()
                .map(|(f, t)| (module_of(Path::new(f)), (PathBuf::from(f), code_only(t))))
                .collect(),
        }
    }

    /// The file module a path of `from` points at: the longest prefix of
    /// the resolved path that is a file.
    fn target(&self, from: &ModPath, path: &[String]) -> Option<ModPath> {
        let first = path.first()?;
        let mut abs: ModPath = match first.as_str() {
            "crate" => Vec::new(),
            "super" | "self" => from.clone(),
            // `use child::Item;`: a path relative to this module.
            child => {
                let mut c = from.clone();
                c.push(child.to_owned());
                if !self.files.contains_key(&c) {
                    return None;
                }
                from.clone()
            }
        };
        let mut rest = if matches!(first.as_str(), "crate" | "super" | "self") {
            &path[1..]
        } else {
            path
        };
        if path[0] == "super" {
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

    /// Every file's imports of other files.
    fn edges(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        self.files
            .iter()
            .map(|(m, (_, code))| {
                let out = paths_in(code)
                    .iter()
                    .filter_map(|p| self.target(m, p))
                    .filter(|t| t != m && self.files.contains_key(t))
                    .collect();
                (m.clone(), out)
            })
            .collect()
    }
}

/// `src/a/b.rs` → `a::b`, `src/a/mod.rs` → `a`, `src/lib.rs` → the crate.
fn module_of(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text with comments and string and char literals blanked, and
/// without a trailing `#[cfg(test)]` / `#[cfg(all(test, ...))]` module.
fn code_only(text: &str) -> String {
    let text = match test_module_start(text) {
        Some(i) => &text[..i],
        None => text,
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'\'' && (b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\')) {
            // A char literal ('x', '\n', '\''), not a lifetime.
            let close = (i + 2..b.len().min(i + 12)).find(|&k| b[k] == b'\'' && k > i + 1);
            i = close.map_or(i + 1, |k| k + 1);
            out.push_str("' '");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Where a file's test module begins (its `#[cfg(test)]` attribute).
fn test_module_start(text: &str) -> Option<usize> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let l = line.trim_start();
        if l.starts_with("#[cfg(test)]") || l.starts_with("#[cfg(all(test") {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// Lines of a file that count towards [`MAX_LINES`].
fn counted_lines(text: &str) -> usize {
    let text = match test_module_start(text) {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines().count()
}

/// Every `crate::`/`super::`/`self::` path in code and every path of a
/// `use` item, with `use` groups (`a::{b, c::{d, e}}`) expanded.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while let Some(k) = code[i..].find("use ") {
        let at = i + k;
        i = at + 4;
        if at > 0 && is_ident(b[at - 1]) {
            continue;
        }
        if let Some(end) = code[i..].find(';') {
            expand(&code[i..i + end], &mut Vec::new(), &mut out);
        }
    }
    let mut i = 0;
    while i < b.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .find(|s| code[i..].starts_with(**s) && (i == 0 || !is_ident(b[i - 1])));
        match starts {
            Some(_) => {
                let end = path_end(code, i);
                expand(&code[i..end], &mut Vec::new(), &mut out);
                i = end;
            }
            None => i += 1,
        }
    }
    out
}

/// End of the path (or use tree) that starts at `i`.
fn path_end(code: &str, i: usize) -> usize {
    let b = code.as_bytes();
    let mut j = i;
    let mut depth = 0;
    while j < b.len() {
        let c = b[j];
        if c == b'{' {
            depth += 1;
        } else if c == b'}' {
            if depth == 0 {
                break;
            }
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        } else if depth == 0 && !(c.is_ascii_alphanumeric() || c == b'_' || c == b':') {
            break;
        }
        j += 1;
    }
    j
}

/// Expands a use tree such as `a::{b, c::{d}}` into paths, after `prefix`.
fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    let (head, group) = match tree.find('{') {
        Some(k) => (
            &tree[..k],
            Some(&tree[k + 1..tree.rfind('}').unwrap_or(tree.len())]),
        ),
        None => (tree, None),
    };
    let before = prefix.len();
    prefix.extend(
        head.split("::")
            .map(|s| s.split_whitespace().next().unwrap_or("").to_owned())
            .filter(|s| !s.is_empty()),
    );
    match group {
        None => out.push(prefix.clone()),
        Some(g) => {
            for part in split_top(g) {
                if part.trim() == "self" {
                    out.push(prefix.clone());
                } else if !part.trim().is_empty() {
                    expand(part, prefix, out);
                }
            }
        }
    }
    prefix.truncate(before);
}

/// Splits at commas outside braces.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (k, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// A circle of imports, if there is one (as the files in it, in order).
fn find_circle(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Option<Vec<ModPath>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        n: &ModPath,
        edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
        mark: &mut BTreeMap<ModPath, Mark>,
        path: &mut Vec<ModPath>,
    ) -> Option<Vec<ModPath>> {
        mark.insert(n.clone(), Mark::Open);
        path.push(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            match mark.get(m).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let from = path.iter().position(|p| p == m).unwrap_or(0);
                    let mut circle = path[from..].to_vec();
                    circle.push(m.clone());
                    return Some(circle);
                }
                Mark::New => {
                    if let Some(c) = visit(m, edges, mark, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        mark.insert(n.clone(), Mark::Done);
        None
    }
    let mut mark = BTreeMap::new();
    for n in edges.keys() {
        if mark.get(n).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(c) = visit(n, edges, &mut mark, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("::")
    }
}

/// The layer of a module, by its top folder.
fn layer(m: &ModPath) -> (usize, &'static str) {
    let top = m.first().map(String::as_str).unwrap_or("lib");
    LAYERS
        .iter()
        .enumerate()
        .find_map(|(i, l)| l.iter().find(|x| **x == top).map(|x| (i, *x)))
        .unwrap_or_else(|| panic!("{} is in no layer; add its folder to LAYERS", name(m)))
}

/// Imports that point up a layer, or from one pattern into another.
fn upward_imports(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<String> {
    let mut bad = Vec::new();
    for (from, tos) in edges {
        let (lf, tf) = layer(from);
        for to in tos {
            let (lt, tt) = layer(to);
            if lt > lf {
                bad.push(format!("{} imports {} (a layer up)", name(from), name(to)));
            } else if tf != tt && PATTERNS.contains(&tf) && PATTERNS.contains(&tt) {
                bad.push(format!(
                    "{} imports {} (another pattern)",
                    name(from),
                    name(to)
                ));
            }
        }
    }
    bad
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_file_imports_another_in_a_circle() {
    let tree = Tree::read(&src());
    assert!(tree.files.len() > 20, "read {} files", tree.files.len());
    if let Some(c) = find_circle(&tree.edges()) {
        let c: Vec<_> = c.iter().map(name).collect();
        panic!("import circle: {}", c.join(" -> "));
    }
}

#[test]
fn imports_point_down_the_layers() {
    let bad = upward_imports(&Tree::read(&src()).edges());
    assert!(
        bad.is_empty(),
        "imports against the layers:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_file_is_over_600_lines() {
    let mut long = Vec::new();
    let mut stack = vec![src()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let n = counted_lines(&std::fs::read_to_string(&p).unwrap());
                if n > MAX_LINES {
                    long.push(format!("{}: {n} lines", p.display()));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (tests aside); split them:\n{}",
        long.join("\n")
    );
}

// The checker on small trees of its own, so a broken checker cannot pass
// the real tree by seeing nothing.

#[test]
fn a_circle_through_use_groups_and_super_is_found() {
    let tree = Tree::from_files(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod x;\nmod y;\n"),
        ("a/x.rs", "use super::y::Thing;\n"),
        (
            "a/y.rs",
            "use crate::{b::{self, other::Z}};\n// use crate::lib_item; (a comment)\n",
        ),
        ("b/mod.rs", "pub(crate) mod other;\n"),
        (
            "b/other.rs",
            "fn f() { crate::a::x::g(\"crate::nothing\"); }\n",
        ),
    ]);
    let edges = tree.edges();
    let m = |s: &str| s.split("::").map(String::from).collect::<ModPath>();
    assert!(edges[&m("a::x")].contains(&m("a::y")));
    assert!(edges[&m("a::y")].contains(&m("b")));
    assert!(edges[&m("a::y")].contains(&m("b::other")));
    assert_eq!(edges[&m("b::other")], BTreeSet::from([m("a::x")]));
    let c = find_circle(&edges).expect("a circle");
    assert_eq!(c.first(), c.last());
    assert!(
        c.contains(&m("a::x")) && c.contains(&m("b::other")),
        "{c:?}"
    );
}

#[test]
fn a_path_to_a_root_reexport_closes_a_circle() {
    let tree = Tree::from_files(&[
        ("lib.rs", "mod a;\npub use a::Thing;\n"),
        (
            "a.rs",
            "pub struct Thing;\nfn f() -> crate::Thing { todo!() }\n",
        ),
    ]);
    assert!(find_circle(&tree.edges()).is_some());
    let tree = Tree::from_files(&[
        ("lib.rs", "mod a;\npub use a::Thing;\n"),
        (
            "a.rs",
            "pub struct Thing;\nfn f() -> crate::a::Thing { todo!() }\n",
        ),
    ]);
    assert_eq!(find_circle(&tree.edges()), None);
}

#[test]
fn upward_and_sideways_imports_are_named() {
    let tree = Tree::from_files(&[
        ("lib.rs", "mod core; mod port; mod pubsub; mod event;\n"),
        ("core/mod.rs", "use crate::port::x;\n"),
        ("port/mod.rs", "use crate::core::y;\n"),
        ("pubsub/mod.rs", "use crate::event::z;\n"),
        ("event/mod.rs", ""),
    ]);
    let bad = upward_imports(&tree.edges());
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].contains("core imports port"), "{bad:?}");
    assert!(bad[1].contains("another pattern"), "{bad:?}");
}

#[test]
fn test_modules_do_not_count() {
    let text = format!(
        "fn a() {{}}\n#[cfg(test)]\nmod tests {{\n{}}}\n",
        "// x\n".repeat(700)
    );
    assert_eq!(counted_lines(&text), 1);
    assert!(!code_only(&text).contains("mod tests"));
}
