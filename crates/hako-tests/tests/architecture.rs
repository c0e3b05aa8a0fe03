//! The shape of every crate of the workspace, checked on every test run
//! (`docs/ARCHITECTURE.md` says what each crate's cut is):
//!
//! * no two files of a crate import each other, directly or in a circle;
//! * imports point down the layers of the ```` ```layers ```` block of
//!   `docs/ARCHITECTURE.md`, and no pattern imports another;
//! * that block is whole and up to date: every library or program with
//!   modules of its own has a line, every line names a crate root that
//!   exists and modules it has, every top module is in a layer;
//! * no `.rs` file is over 600 lines, its `#[cfg(test)]` modules aside.
//!
//! The members are the root `Cargo.toml`'s; a crate root is a library,
//! a program (`src/main.rs`, `src/bin/NAME.rs` with its folder
//! `src/bin/NAME/`), a test, a benchmark, an example or a build script, and
//! its files are found from its `mod` declarations as rustc finds them
//! (`#[path]` too). An import is a path in code that starts with `crate::`,
//! `super::` or `self::`, any path of a `use` item, or a path that starts
//! with the name of one of the file's own file modules (in `main.rs`,
//! `domain::list(a)`); it points at the file of the longest module prefix
//! of the path. Comments, doc links, string literals and the test modules
//! (which `use super::*` freely) are not imports. A path to an item of the
//! root file (a re-export of `lib.rs`) points at the root, the top layer:
//! an import up, and a circle when the root imports from that file; so
//! inside a crate every path names the module that defines the item.

#[path = "architecture/layers.rs"]
mod layers;
#[path = "architecture/rules.rs"]
mod rules;
#[path = "architecture/scan.rs"]
mod scan;
#[path = "architecture/self_tests.rs"]
mod self_tests;
#[path = "architecture/tree.rs"]
mod tree;
#[path = "architecture/workspace.rs"]
mod workspace;

use std::path::Path;

use layers::Line;
use workspace::Workspace;

fn workspace() -> Workspace {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Workspace::read(&base.canonicalize().expect("the workspace's folder"))
}

fn lines(ws: &Workspace) -> Vec<Line> {
    let doc = std::fs::read_to_string(ws.base.join("docs/ARCHITECTURE.md")).expect("the doc");
    layers::parse(&doc).unwrap_or_else(|e| panic!("docs/ARCHITECTURE.md: {e}"))
}

fn assert_none(what: &str, bad: Vec<String>) {
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

#[test]
fn every_file_is_in_a_crate_tree() {
    let ws = workspace();
    assert!(ws.files.len() > 200, "read {} files", ws.files.len());
    assert!(ws.trees.len() > 50, "read {} crate roots", ws.trees.len());
    assert_none("files the checker cannot place", ws.unplaced());
}

#[test]
fn no_file_imports_another_in_a_circle() {
    let ws = workspace();
    let bad = ws
        .trees
        .iter()
        .flat_map(|t| rules::circles(t, &t.edges()))
        .collect();
    assert_none(
        "import circles (move what ties them into a file below)",
        bad,
    );
}

#[test]
fn every_crate_has_its_layers_in_the_doc() {
    let ws = workspace();
    let lines = lines(&ws);
    assert!(lines.len() >= 5, "{lines:?}");
    assert_none(
        "the layers block of docs/ARCHITECTURE.md",
        layers::stale_or_missing(&ws, &lines),
    );
}

#[test]
fn imports_point_down_the_layers() {
    let ws = workspace();
    let mut bad = Vec::new();
    for line in lines(&ws) {
        if let Some(t) = ws
            .trees
            .iter()
            .find(|t| t.root.to_string_lossy() == line.root)
        {
            bad.extend(rules::against_layers(t, &t.edges(), &line));
        }
    }
    assert_none("imports against the layers", bad);
}

#[test]
fn no_file_is_over_600_lines() {
    assert_none(
        "files over 600 lines (test modules aside); split them",
        rules::long_files(&workspace().files),
    );
}
