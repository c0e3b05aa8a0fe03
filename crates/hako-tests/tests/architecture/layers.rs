//! The layers of each crate, read from the one fenced block with the info
//! string `layers` in `docs/ARCHITECTURE.md`, and checked against the
//! trees: every line names a crate root that exists and modules it has,
//! every module of a root with a line is in a layer, and every library or
//! program with modules of its own has a line.
//!
//! A line is `ROOT: LAYER; LAYER; ...`, bottom first; a layer is the
//! names of top modules (a file or a folder) separated by spaces, `lib` or
//! `main` naming the root file itself; names in brackets (`[pubsub event]`)
//! are patterns, which may not import each other. `#` starts a comment.

use std::collections::BTreeSet;

use super::tree::{ModPath, Tree};
use super::workspace::Workspace;

/// One crate root's line.
#[derive(Debug)]
pub struct Line {
    /// The root file as written, e.g. `crates/hako/src/lib.rs`.
    pub root: String,
    /// The layers, bottom first.
    pub layers: Vec<Layer>,
}

#[derive(Debug, Default)]
pub struct Layer {
    pub names: Vec<String>,
    /// The names of this layer that are patterns.
    pub patterns: Vec<String>,
}

/// The lines of the document's `layers` block.
pub fn parse(doc: &str) -> Result<Vec<Line>, String> {
    let mut blocks = doc.split("\n```").skip(1).step_by(2);
    let block = blocks
        .find(|b| b.lines().next().map(str::trim) == Some("layers"))
        .ok_or("no ```layers block")?;
    if blocks.any(|b| b.lines().next().map(str::trim) == Some("layers")) {
        return Err("more than one ```layers block".into());
    }
    let mut lines = Vec::new();
    for l in block.lines().skip(1) {
        let l = l.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        let (root, rest) = l
            .split_once(':')
            .ok_or_else(|| format!("`{l}`: not `ROOT: LAYER; LAYER; ...`"))?;
        let mut layers = Vec::new();
        for part in rest.split(';') {
            let mut layer = Layer::default();
            let mut in_group = false;
            for tok in part
                .replace('[', " [ ")
                .replace(']', " ] ")
                .split_whitespace()
            {
                match tok {
                    "[" if !in_group => in_group = true,
                    "]" if in_group => in_group = false,
                    "[" | "]" => return Err(format!("`{l}`: unbalanced brackets")),
                    name => {
                        layer.names.push(name.to_owned());
                        if in_group {
                            layer.patterns.push(name.to_owned());
                        }
                    }
                }
            }
            if in_group || layer.names.is_empty() {
                return Err(format!("`{l}`: an empty layer or an open bracket"));
            }
            layers.push(layer);
        }
        lines.push(Line {
            root: root.trim().to_owned(),
            layers,
        });
    }
    Ok(lines)
}

impl Line {
    /// The layer of a top name, and whether it is a pattern.
    pub fn place(&self, top: &str) -> Option<(usize, bool)> {
        self.layers.iter().enumerate().find_map(|(i, l)| {
            l.names
                .iter()
                .any(|n| n == top)
                .then(|| (i, l.patterns.iter().any(|n| n == top)))
        })
    }
}

/// The top name of a module: its first segment, or the root's name.
pub fn top<'a>(tree: &'a Tree, m: &'a ModPath) -> &'a str {
    m.first().map_or(tree.root_name, String::as_str)
}

/// What is wrong between the lines and the workspace's trees.
pub fn stale_or_missing(ws: &Workspace, lines: &[Line]) -> Vec<String> {
    let mut bad = Vec::new();
    let mut seen = BTreeSet::new();
    for line in lines {
        if !seen.insert(&line.root) {
            bad.push(format!("{}: two lines in the layers block", line.root));
        }
        let Some(tree) = ws
            .trees
            .iter()
            .find(|t| t.root.to_string_lossy() == line.root)
        else {
            bad.push(if ws.base.join(&line.root).exists() {
                format!("{}: in the layers block, but no crate root", line.root)
            } else {
                format!("{}: in the layers block, but no such file", line.root)
            });
            continue;
        };
        let tops: BTreeSet<&str> = tree.files.keys().map(|m| top(tree, m)).collect();
        for name in line.layers.iter().flat_map(|l| &l.names) {
            if !tops.contains(name.as_str()) {
                bad.push(format!(
                    "{}: the layers block names `{name}`, which is no module of it",
                    line.root
                ));
            }
        }
        for t in tops {
            if line.place(t).is_none() {
                bad.push(format!(
                    "{}: `{t}` is in no layer; add it to the crate's line of the \
                     layers block in docs/ARCHITECTURE.md",
                    line.root
                ));
            }
        }
    }
    for tree in &ws.trees {
        let under_src = ws
            .members
            .iter()
            .any(|m| tree.root.starts_with(m.join("src")));
        let line = lines.iter().find(|l| tree.root.to_string_lossy() == l.root);
        if under_src && tree.files.len() > 1 && line.is_none() {
            bad.push(format!(
                "{}: has modules of its own but no line in the layers block of \
                 docs/ARCHITECTURE.md",
                tree.root.display()
            ));
        }
    }
    bad
}
