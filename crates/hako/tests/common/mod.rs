//! What the integration tests of this crate share: a private domain root,
//! removed when dropped (a failed assertion included), its nodes, and the
//! files of its services.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use hako::{Config, Node, NodeBuilder};

/// `/dev/shm/hako-test-<name>-<pid>`, empty at first, removed on drop.
pub struct Root(pub PathBuf);

impl Root {
    pub fn new(name: &str) -> Self {
        let p = PathBuf::from(format!("/dev/shm/hako-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        Self(p)
    }

    /// The configuration of this root.
    pub fn config(&self) -> Config {
        Config::default().with_root(&self.0)
    }

    /// A node of this root.
    pub fn node(&self) -> Node {
        NodeBuilder::new().config(&self.config()).create().unwrap()
    }

    /// The one file of the root's services whose name starts with `prefix`.
    pub fn file(&self, prefix: &str) -> PathBuf {
        let mut found = Vec::new();
        for dir in std::fs::read_dir(&self.0).unwrap() {
            let dir = dir.unwrap().path();
            if !dir.is_dir() {
                continue;
            }
            for f in std::fs::read_dir(&dir).unwrap() {
                let f = f.unwrap().path();
                if f.file_name().unwrap().to_string_lossy().starts_with(prefix) {
                    found.push(f);
                }
            }
        }
        assert_eq!(found.len(), 1, "{prefix}: {found:?}");
        found.pop().unwrap()
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
