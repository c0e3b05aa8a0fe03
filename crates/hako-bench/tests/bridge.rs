//! The bridge rows of `hako bench` (`--patterns bridge`) as a user runs
//! them: with the `bridge` feature, a short round trip through plain Zenoh
//! and through two `hako-bridge` processes (sleeping between messages, and
//! polling with `--low-latency`), in every report, leaving
//! no process and no file behind; a missing `hako-bridge` program is a
//! skip (or, named, an error) that says how to build it. Without the
//! feature, the rows are a note. Asserts behaviour, never speed.
//!
//! The program is `$HAKO_BRIDGE` if set, else the `hako-bridge` of this
//! build's target directory (the test command builds it earlier, for the
//! bridge's own tests), else this test builds it (`cargo build -p
//! hako-zenoh`); only if that fails is the round trip left out, saying why.

mod common;
use common::{hako, left_in, scratch, text};

/// A short run of the bridge rows only.
fn bridge_run(shm: &std::path::Path) -> std::process::Command {
    let mut cmd = hako();
    cmd.args(["--patterns", "bridge", "--no-footprint"])
        .args(["--iterations", "20", "--blocks", "1", "--block-ms", "1"])
        .arg("--shm-dir")
        .arg(shm);
    cmd
}

#[cfg(feature = "bridge")]
mod with_zenoh {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use serde_json::Value;

    use super::*;

    /// The `hako-bridge` program for these tests, or `None` (said why).
    fn bridge_program() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("HAKO_BRIDGE").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let bin = Path::new(env!("CARGO_BIN_EXE_hako-bench"));
        let dir = bin.parent()?;
        let program = dir.join("hako-bridge");
        if !program.is_file() {
            // This test's profile, in this test's target directory.
            let mut build = Command::new(env!("CARGO"));
            build.args(["build", "-p", "hako-zenoh", "--bin", "hako-bridge"]);
            if dir.ends_with("release") {
                build.arg("--release");
            }
            if let Some(target) = dir.parent() {
                build.arg("--target-dir").arg(target);
            }
            match build.output() {
                Ok(o) if o.status.success() => {}
                other => {
                    let why = match other {
                        Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                        Err(e) => e.to_string(),
                    };
                    eprintln!(
                        "skipping the hako-bridge round trip: {} is missing and `cargo build \
                         -p hako-zenoh` failed:\n{why}",
                        program.display()
                    );
                    return None;
                }
            }
        }
        Some(program)
    }

    /// Processes whose command line mentions `needle` (bridges of a run
    /// name their domain roots, which lie in the test's directory).
    fn processes_naming(needle: &str) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                found.push(cmdline);
            }
        }
        found
    }

    #[test]
    fn zenoh_and_hako_bridge_round_trips_report_in_every_format() {
        let dir = scratch("bridge");
        let shm = dir.join("shm");
        std::fs::create_dir(&shm).unwrap();
        let program = bridge_program();
        let (json, md) = (dir.join("out.json"), dir.join("out.md"));
        let mut cmd = bridge_run(&shm);
        cmd.args(["--bridge-sizes", "64,4K"])
            .arg("--json")
            .arg(&json)
            .arg("--markdown")
            .arg(&md);
        match &program {
            Some(p) => cmd.env("HAKO_BRIDGE", p),
            None => cmd.args(["--bridge-transports", "zenoh"]),
        };
        let out = cmd.output().unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
        assert!(stdout.contains("Bridge: round trip"), "{stdout}");

        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let bridge = &v["bridge"];
        assert!(bridge["not_measured"].is_null(), "{bridge}");
        let rows = bridge["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 4, "2 sizes x 2 modes: {bridge}");
        let mut want = vec!["zenoh"];
        if program.is_some() {
            want.extend(["hako-bridge", "hako-bridge-low-latency"]);
        }
        for row in rows {
            let measured = row["transports"].as_array().unwrap();
            for name in &want {
                let t = measured
                    .iter()
                    .find(|t| t["transport"] == *name)
                    .unwrap_or_else(|| panic!("{name} missing in {row}"));
                for key in ["median_ns", "p99_ns", "mean_ns"] {
                    assert!(t["stats"][key].as_f64().unwrap() > 0.0, "{key}: {t}");
                }
                assert_eq!(t["stats"]["count"], 20, "{t}");
            }
        }
        if program.is_some() {
            let ratios = bridge["ratios"].as_array().unwrap();
            assert_eq!(ratios.len(), 8, "2 sizes x 2 modes x 2 bridged: {bridge}");
            for r in ratios {
                assert!(r["vs_zenoh"].as_f64().unwrap() > 0.0, "{r}");
            }
            let summary = v["summary"].as_array().unwrap();
            assert!(
                summary.iter().any(|l| l.as_str().unwrap().starts_with(
                    "bridge: hako through two low-latency bridges / plain Zenoh round trip: "
                )),
                "{summary:?}"
            );
            let goals = v["goals"].as_array().unwrap();
            assert!(
                goals.iter().any(|g| g
                    .as_str()
                    .unwrap()
                    .contains("hako through two bridges at most 1.5x")),
                "{goals:?}"
            );
        }
        let md_text = std::fs::read_to_string(&md).unwrap();
        assert!(md_text.contains("### Bridge: round trip"), "{md_text}");

        // The bridges are gone, and so are the run's files.
        let left = processes_naming(shm.to_str().unwrap());
        assert!(left.is_empty(), "still running: {left:?}");
        assert_eq!(left_in(&shm), Vec::<String>::new());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_bridge_program_is_skipped_or_refused_with_how_to_build_it() {
        let dir = scratch("bridge-missing");
        let missing = dir.join("no-such-program");
        let out = bridge_run(&dir)
            .args(["--bridge-sizes", "64", "--payload", "touch"])
            .env("HAKO_BRIDGE", &missing)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
        assert!(
            stdout.contains("hako-bridge skipped:")
                && stdout.contains("cargo build --release -p hako-zenoh"),
            "{stdout}"
        );
        // Named: an error, with the same advice.
        let out = bridge_run(&dir)
            .args(["--bridge-sizes", "64", "--bridge-transports", "hako-bridge"])
            .env("HAKO_BRIDGE", &missing)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{stdout}");
        assert!(
            stderr.contains("cargo build --release -p hako-zenoh"),
            "{stderr}"
        );
        assert_eq!(left_in(&dir), Vec::<String>::new());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(not(feature = "bridge"))]
#[test]
fn without_the_feature_the_bridge_rows_are_a_note() {
    let dir = scratch("bridge-none");
    let out = bridge_run(&dir).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("bridge: not measured") && stdout.contains("--features bridge"),
        "{stdout}"
    );
    let out = bridge_run(&dir)
        .args(["--bridge-transports", "zenoh"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("--features bridge"), "{stderr}");
    assert_eq!(left_in(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}
