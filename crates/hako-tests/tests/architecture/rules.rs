//! The rules: no import circle in a tree, imports down the layers and not
//! from one pattern into another, no file over [`MAX_LINES`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::layers::{top, Line};
use super::scan::Source;
use super::tree::{Edges, ModPath, Tree};

/// Longest file, not counting its `#[cfg(test)]` modules.
pub const MAX_LINES: usize = 600;

/// Every import circle of a tree: each group of files that import each
/// other (a strongly connected component), with the imports between them
/// and the paths that make each, so the message says what to move.
pub fn circles(tree: &Tree, edges: &Edges) -> Vec<String> {
    strongly_connected(edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let names: Vec<String> = c.iter().map(|m| tree.name(m)).collect();
            let mut text = format!(
                "{}: import circle among {}:",
                tree.root.display(),
                names.join(", ")
            );
            for from in &c {
                for (to, paths) in &edges[from] {
                    if c.contains(to) {
                        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
                        text.push_str(&format!(
                            "\n  {} -> {} ({})",
                            tree.name(from),
                            tree.name(to),
                            paths.join(", ")
                        ));
                    }
                }
            }
            text
        })
        .collect()
}

/// Tarjan's strongly connected components, each sorted.
pub fn strongly_connected(edges: &Edges) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(s: &mut State<'a>, n: &'a ModPath) {
        let i = s.index.len();
        s.index.insert(n, i);
        s.low.insert(n, i);
        s.stack.push(n);
        let edges = s.edges;
        for m in edges.get(n).into_iter().flat_map(|t| t.keys()) {
            if !s.index.contains_key(m) {
                visit(s, m);
                let l = s.low[m].min(s.low[n]);
                s.low.insert(n, l);
            } else if s.stack.contains(&m) {
                let l = s.index[m].min(s.low[n]);
                s.low.insert(n, l);
            }
        }
        if s.low[n] == s.index[n] {
            let mut c = Vec::new();
            while let Some(m) = s.stack.pop() {
                c.push(m.clone());
                if m == n {
                    break;
                }
            }
            c.sort();
            s.out.push(c);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for n in edges.keys() {
        if !s.index.contains_key(n) {
            visit(&mut s, n);
        }
    }
    s.out
}

/// Imports that point up a layer, or from one pattern into another.
pub fn against_layers(tree: &Tree, edges: &Edges, line: &Line) -> Vec<String> {
    let mut bad = Vec::new();
    for (from, tos) in edges {
        let Some((lf, pf)) = line.place(top(tree, from)) else {
            continue; // said by the line's own check
        };
        for (to, paths) in tos {
            let Some((lt, pt)) = line.place(top(tree, to)) else {
                continue;
            };
            let why = if lt > lf {
                "a layer up"
            } else if pf && pt && top(tree, from) != top(tree, to) {
                "another pattern"
            } else {
                continue;
            };
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            bad.push(format!(
                "{}: {} imports {} ({why}: {})",
                tree.root.display(),
                tree.name(from),
                tree.name(to),
                paths.join(", ")
            ));
        }
    }
    bad
}

/// Files over [`MAX_LINES`] lines, their test modules aside.
pub fn long_files(files: &[(PathBuf, Source)]) -> Vec<String> {
    files
        .iter()
        .filter(|(_, s)| s.lines > MAX_LINES)
        .map(|(p, s)| format!("{}: {} lines", p.display(), s.lines))
        .collect()
}
