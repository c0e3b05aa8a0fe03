//! Runs `hako-pingpong` end to end with a handful of round trips: the
//! follower starts, every transport completes its rows, the JSON file is
//! written, and the run directory is gone afterwards. Asserts behaviour only,
//! never speed.

use std::process::Command;

#[test]
fn pingpong_runs_and_cleans_up() {
    let dir = std::env::temp_dir().join(format!("hako-bench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A leftover of a "dead run" (no process has a pid that large).
    std::fs::create_dir_all(dir.join("hako-bench-999999999")).unwrap();
    let json = dir.join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hako-pingpong"))
        .args([
            "--no-pin",
            "--iterations",
            "200",
            "--warmup",
            "20",
            "--block-ms",
            "5",
        ])
        .args([
            "--probe-iterations",
            "100",
            "--sizes",
            "64,4K",
            "--reference",
        ])
        .args(["--blocks", "2", "--shm-dir"])
        .arg(&dir)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("64 B |"), "{stdout}");
    assert!(stdout.contains("4 KiB |"), "{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = v["runs"][0]["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["size"] == 4096), "{text}");
    // The default transports and the reference all ran.
    for name in [
        "reference",
        "hako",
        "hako-park",
        "hako-spin-park",
        "futex",
        "pipe",
        "unix",
        "mq",
    ] {
        assert!(
            rows.iter().all(|r| r[name]["ratio"].is_number()),
            "{name}: {text}"
        );
    }
    assert!(
        rows[0]["hako"]["cpu_per_round_trip"]["follower"]["cpu_ns"].is_number(),
        "{text}"
    );
    assert!(stdout.contains("issue #3:"), "{stdout}");
    // Only the JSON file is left: the run's root and the stale one are gone.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("out.json")]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_arguments_are_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_hako-pingpong"))
        .args(["--sizes", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn unknown_transports_are_refused_by_name() {
    let out = Command::new(env!("CARGO_BIN_EXE_hako-pingpong"))
        .args(["--transports", "hako,carrier-pigeon"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown transport \"carrier-pigeon\""),
        "{stderr}"
    );
    // The message lists what is known.
    assert!(stderr.contains("hako-spin-park"), "{stderr}");
}

#[test]
fn same_cpu_mode_leaves_out_busy_polling_and_skips_large_mq() {
    let dir = std::env::temp_dir().join(format!("hako-bench-same-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("out.json");
    let cpu = hako_bench::sys::cpu::allowed_cpus().unwrap()[0];
    let out = Command::new(env!("CARGO_BIN_EXE_hako-pingpong"))
        .args(["--same-cpu", "--leader-cpu", &cpu.to_string()])
        .args(["--transports", "hako,hako-park,futex,mq"])
        .args(["--iterations", "100", "--probe-iterations", "50"])
        .args(["--blocks", "2", "--block-ms", "5", "--sizes", "64,1M"])
        .arg("--shm-dir")
        .arg(&dir)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("left out: hako (busy-polling"), "{stdout}");
    assert!(stdout.contains("(futex probes)"), "{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["pinning"], "same-cpu", "{text}");
    let rows = run["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r.get("hako").is_none()), "{text}");
    assert!(
        rows.iter().all(|r| r["hako-park"]["ratio"].is_number()),
        "{text}"
    );
    if hako_bench::transports::kernel::msgsize_max().is_some_and(|m| m < 1 << 20) {
        assert!(stdout.contains("skipped: "), "{stdout}");
        assert!(
            rows.iter().any(|r| r["mq"]["skipped"].is_string()),
            "{text}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
