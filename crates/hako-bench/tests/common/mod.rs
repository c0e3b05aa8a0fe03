//! What the tests of the suite's program share: the program, a scratch
//! directory standing in for /dev/shm, its output as text, the transports
//! of the build and the files a run left.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The suite's program, as `hako bench` runs it.
pub fn hako() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hako-bench"))
}

/// A private directory for one test, standing in for /dev/shm.
pub fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hako-bench-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Its standard output and error, as text.
pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every transport this build knows, from the error of an unknown name.
pub fn all_transports() -> Vec<String> {
    let out = hako()
        .args(["--transports", "no-such-transport"])
        .output()
        .unwrap();
    let (_, err) = text(&out);
    let known = err
        .split("known: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect(&err)
        .trim();
    known.split(", ").map(str::to_owned).collect()
}

/// Names of the files left in `dir`, sorted.
pub fn left_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}
