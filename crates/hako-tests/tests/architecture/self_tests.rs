//! The checker on small trees of its own, so a broken checker cannot pass
//! the real workspace by seeing nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::layers::{self, Line};
use super::rules::{against_layers, circles, long_files, strongly_connected};
use super::scan::{blank, paths_in, Source};
use super::tree::{ModPath, Tree};
use super::workspace::Workspace;

fn m(s: &str) -> ModPath {
    s.split("::").map(String::from).collect()
}

fn line(block: &str) -> Line {
    let doc = format!("# Doc\n\n```layers\n{block}\n```\n");
    layers::parse(&doc).expect("a block").remove(0)
}

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
    assert!(edges[&m("a::x")].contains_key(&m("a::y")));
    assert!(edges[&m("a::y")].contains_key(&m("b")));
    assert!(edges[&m("a::y")].contains_key(&m("b::other")));
    assert_eq!(
        edges[&m("b::other")].keys().collect::<Vec<_>>(),
        [&m("a::x")]
    );
    let bad = circles(&tree, &edges);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("among a::x, a::y, b::other"), "{bad:?}");
    assert!(
        bad[0].contains("a::y -> b::other (crate::b::other::Z)"),
        "{bad:?}"
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
    let bad = circles(&tree, &tree.edges());
    assert!(bad[0].contains("a -> lib (crate::Thing)"), "{bad:?}");
    let tree = Tree::from_files(&[
        ("lib.rs", "mod a;\npub use a::Thing;\n"),
        (
            "a.rs",
            "pub struct Thing;\nfn f() -> crate::a::Thing { todo!() }\n",
        ),
    ]);
    assert_eq!(circles(&tree, &tree.edges()), Vec::<String>::new());
}

#[test]
fn every_circle_is_named_with_what_ties_it() {
    let tree = Tree::from_files(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n"),
        ("a.rs", "use crate::b::B;\n"),
        ("b.rs", "fn f() { crate::a::g() }\n"),
        ("c.rs", "use crate::d::{D, E};\n"),
        ("d.rs", "use super::c::C;\n"),
    ]);
    let bad = circles(&tree, &tree.edges());
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].contains("b -> a (crate::a::g)"), "{bad:?}");
    assert!(
        bad[1].contains("c -> d (crate::d::D, crate::d::E)"),
        "{bad:?}"
    );
    assert!(bad[1].contains("d -> c (super::c::C)"), "{bad:?}");
    assert_eq!(strongly_connected(&tree.edges()).len(), 3); // and lib alone
}

#[test]
fn a_path_from_a_child_module_is_an_import() {
    let tree = Tree::from_files(&[
        ("main.rs", "mod domain;\nmod talk;\npub struct CliError;\nfn main() {\n    domain::list();\n    hako::domain::x();\n    v.domain::<u8>();\n    talk::call();\n}\n"),
        ("domain.rs", "use crate::CliError;\npub fn list() {}\n"),
        ("talk/mod.rs", "mod events;\nmod open;\npub use events::call;\n"),
        ("talk/events.rs", "use super::open::node;\npub fn call() {}\n"),
        ("talk/open.rs", "use hako::{events::X};\npub fn node() {}\n"),
    ]);
    let edges = tree.edges();
    let paths: Vec<_> = edges[&vec![]][&m("domain")].iter().collect();
    assert_eq!(paths, ["domain::list"]);
    assert!(edges[&m("talk")].contains_key(&m("talk::events")));
    assert!(edges[&m("talk::open")].is_empty(), "{edges:?}");
    let bad = circles(&tree, &edges);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("main.rs: import circle among main, domain:"));
    assert!(
        bad[0].contains("domain -> main (crate::CliError)"),
        "{bad:?}"
    );
}

#[test]
fn path_attributes_and_test_only_files_are_followed() {
    let tree = Tree::from_files(&[
        ("lib.rs", "mod core;\n"),
        (
            "core/mod.rs",
            "pub mod ring;\n#[cfg(all(test, loom))]\nmod loom_tests;\n",
        ),
        (
            "core/ring.rs",
            "#[path = \"ring_consumer.rs\"]\nmod consumer;\n\n#[cfg(all(test, not(loom)))]\n\
             #[path = \"ring_tests.rs\"]\nmod tests;\npub(in crate::core) fn f() {}\n",
        ),
        ("core/ring_consumer.rs", "use super::f;\n"),
        ("core/ring_tests.rs", "use crate::core::ring::consumer;\n"),
        ("core/loom_tests.rs", "use crate::core::ring;\n"),
    ]);
    let keys: Vec<_> = tree.files.keys().cloned().collect();
    assert_eq!(
        keys,
        [
            vec![],
            m("core"),
            m("core::ring"),
            m("core::ring::consumer")
        ]
    );
    assert_eq!(tree.reached.len(), 6);
    assert!(tree.missing.is_empty(), "{:?}", tree.missing);
    let edges = tree.edges();
    assert!(edges[&m("core::ring::consumer")].contains_key(&m("core::ring")));
    assert!(edges[&m("core::ring")].is_empty(), "{edges:?}");
    assert!(edges[&m("core")].is_empty(), "{edges:?}");
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
    let line = line("lib.rs: core; port; [pubsub event]; lib");
    let bad = against_layers(&tree, &tree.edges(), &line);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].contains("core imports port (a layer up: crate::port::x)"));
    assert!(bad[1].contains("pubsub imports event (another pattern"));
}

#[test]
fn the_layers_block_is_parsed() {
    let l = line("# bottom first\nx/src/lib.rs: a b; [c d] e; lib # the root");
    assert_eq!(l.root, "x/src/lib.rs");
    assert_eq!(l.layers.len(), 3);
    assert_eq!(l.layers[1].names, ["c", "d", "e"]);
    assert_eq!(l.layers[1].patterns, ["c", "d"]);
    assert_eq!(l.place("e"), Some((1, false)));
    assert_eq!(l.place("c"), Some((1, true)));
    assert_eq!(l.place("f"), None);
    assert!(layers::parse("```text\na: b\n```\n").is_err());
    assert!(layers::parse("\n```layers\na: [b; c]\n```\n").is_err());
    assert!(layers::parse("\n```layers\na: b\n```\n\n```layers\na: b\n```\n").is_err());
}

#[test]
fn test_modules_do_not_count() {
    let text = format!(
        "fn a() {{}}\n#[cfg(test)]\nmod tests {{\n    use crate::x;\n{}}}\nfn b() {{}}\n",
        "// x\n".repeat(700)
    );
    let s = Source::parse(&text);
    assert_eq!(s.lines, 2);
    assert!(!s.code.contains("mod tests") && s.code.contains("fn b"));
    assert!(paths_in(&s.code, &[]).is_empty());
}

#[test]
fn comments_and_literals_are_not_code() {
    let text = "fn f<'a>(x: &'a str) -> char {\n    let _ = r#\"crate::a \"q\" \"#;\n    \
                let _ = b'\"';\n    /* crate::b /* nested */ crate::c */\n    let _ = \"\\\"crate::d\";\n    \
                '→'\n}\nuse crate::e;\n";
    let code = blank(text);
    assert_eq!(code.len(), text.len());
    assert_eq!(code.lines().count(), text.lines().count());
    assert_eq!(paths_in(&code, &[]), [vec!["crate", "e"]]);
}

/// A workspace on disk: `(path, text)` under a fresh folder.
fn on_disk(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("architecture-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for (p, t) in files {
        let p = base.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    }
    base
}

#[test]
fn a_workspace_is_read_from_its_members() {
    let long = "fn f() {}\n".repeat(601);
    let base = on_disk(
        "members",
        &[
            ("Cargo.toml", "[workspace]\nmembers = [\"a\",\n  \"b\"]\n"),
            ("a/Cargo.toml", "[package]\nname = \"a\"\n"),
            ("a/src/main.rs", "mod x;\nfn main() {}\n"),
            ("a/src/x.rs", ""),
            (
                "a/src/bin/tool.rs",
                "#[path = \"tool/y.rs\"]\nmod y;\nfn main() {}\n",
            ),
            ("a/src/bin/tool/y.rs", "use crate::z;\n"),
            (
                "a/tests/t.rs",
                "mod common;\n#[path = \"t/u.rs\"]\nmod u;\n",
            ),
            ("a/tests/t/u.rs", ""),
            ("a/tests/common/mod.rs", ""),
            ("a/tests/long.rs", &long),
            ("b/Cargo.toml", "[lib]\npath = \"top.rs\"\n"),
            ("b/top.rs", "mod gone;\n"),
            ("b/stray.rs", ""),
            ("c/src/lib.rs", "this member is not in the workspace"),
        ],
    );
    let ws = Workspace::read(&base);
    let roots: BTreeSet<_> = ws.trees.iter().map(|t| t.root.clone()).collect();
    let want = [
        "a/src/main.rs",
        "a/src/bin/tool.rs",
        "a/tests/t.rs",
        "a/tests/long.rs",
        "b/top.rs",
    ];
    assert_eq!(roots, want.iter().map(PathBuf::from).collect());
    let tool = ws
        .trees
        .iter()
        .find(|t| t.root.ends_with("tool.rs"))
        .unwrap();
    assert_eq!(tool.root_name, "main");
    assert!(tool.files.contains_key(&m("y")));
    let t = ws.trees.iter().find(|t| t.root.ends_with("t.rs")).unwrap();
    assert!(t.files.contains_key(&m("common")) && t.files.contains_key(&m("u")));
    assert_eq!(ws.unplaced().len(), 2, "{:?}", ws.unplaced());
    assert_eq!(
        ws.unplaced()[0],
        "b/top.rs: `mod gone`, but no b/gone.rs nor b/gone/mod.rs"
    );
    assert_eq!(ws.unplaced()[1], "b/stray.rs: in no crate's module tree");
    assert_eq!(long_files(&ws.files), ["a/tests/long.rs: 601 lines"]);

    let doc = "```layers\na/src/main.rs: x; main; nothing\na/src/old.rs: main\n```\n";
    let bad = layers::stale_or_missing(&ws, &layers::parse(&format!("\n{doc}")).unwrap());
    assert_eq!(bad.len(), 3, "{bad:?}");
    assert!(bad[0].contains("names `nothing`, which is no module of it"));
    assert!(bad[1].starts_with("a/src/old.rs: in the layers block, but no such file"));
    assert!(bad[2].starts_with("a/src/bin/tool.rs: has modules of its own but no line"));
    let _ = std::fs::remove_dir_all(&base);
}
