//! Runs `hako bench` end to end on the ping-pong rows of the wait
//! strategies, cross-CPU then on one CPU (`--pinning both`), with a handful
//! of round trips: the followers start, every transport completes its rows,
//! the raw times are dumped, the JSON file holds both modes, and the run
//! directory is gone afterwards. Asserts behaviour only, never speed.

use std::process::Command;

use serde_json::Value;

fn names(row: &Value) -> Vec<&str> {
    row["transports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["transport"].as_str().unwrap())
        .collect()
}

#[test]
fn both_pinnings_run_dump_and_clean_up() {
    let dir = std::env::temp_dir().join(format!("hako-bench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let shm = dir.join("shm");
    let dump = dir.join("dump");
    std::fs::create_dir_all(&dump).unwrap();
    // A leftover of a "dead run" (no process has a pid that large).
    std::fs::create_dir_all(shm.join("hako-bench-999999999")).unwrap();
    let json = dir.join("out.json");
    let cpu = hako_bench::sys::cpu::allowed_cpus().unwrap()[0];
    let out = Command::new(env!("CARGO_BIN_EXE_hako-bench"))
        .args(["--pinning", "both", "--leader-cpu", &cpu.to_string()])
        .args([
            "--patterns",
            "pingpong",
            "--payload",
            "touch",
            "--no-footprint",
        ])
        .args([
            "--transports",
            "reference,hako,hako-park,hako-spin-park,futex,pipe,unix,mq",
        ])
        .args(["--iterations", "200", "--warmup", "20", "--block-ms", "5"])
        .args([
            "--probe-iterations",
            "100",
            "--sizes",
            "64,4K",
            "--blocks",
            "2",
        ])
        .args(["--no-progress", "--shm-dir"])
        .arg(&shm)
        .arg("--dump")
        .arg(&dump)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("removed the leftovers of a dead run"),
        "{stderr}"
    );
    assert!(stdout.contains("cross-cpu (leader on CPU"), "{stdout}");
    assert!(stdout.contains("same-cpu (leader on CPU"), "{stdout}");
    assert!(stdout.contains("Wait strategies"), "{stdout}");
    assert!(stdout.contains("hako in one thread"), "{stdout}");
    assert!(
        stdout.contains(
            "goal: hako-park round trip at the smallest size at most 1.1x the futex floor's"
        ),
        "{stdout}"
    );
    // On one CPU the busy-polling transports are left out.
    assert!(
        stdout
            .contains("left out (busy-polling, and both processes share one CPU): reference, hako"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&json).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{text}");
    let (cross, same) = (&runs[0], &runs[1]);
    assert_eq!(cross["pinning"]["mode"], "cross-cpu", "{text}");
    assert_eq!(same["pinning"]["mode"], "same-cpu", "{text}");
    assert_eq!(same["probe_transport"], "futex", "{text}");
    assert!(v["single_thread_ns"].as_f64().unwrap() > 0.0, "{text}");
    let rows = cross["ping_pong"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{text}");
    for row in rows {
        let n = names(row);
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
            assert!(n.contains(&name), "{name}: {text}");
        }
        let t = &row["transports"][0];
        assert!(
            t["cpu_per_round_trip"]["follower"]["cpu_ns"].is_number(),
            "{text}"
        );
    }
    for row in same["ping_pong"].as_array().unwrap() {
        let n = names(row);
        assert!(!n.contains(&"hako") && n.contains(&"hako-park"), "{text}");
    }
    // A file of raw times per block's row, transport and size.
    let dumped = std::fs::read_dir(&dump).unwrap().count();
    assert!(dumped > 0, "nothing dumped");
    // Nothing of the run is left in the shared-memory directory: the run's
    // root and the stale one are gone.
    let left: Vec<_> = std::fs::read_dir(&shm).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_arguments_are_refused() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hako-bench"))
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run(&["--sizes", "0"]).contains("at least 1 byte"));
    let e = run(&["--transports", "hako,carrier-pigeon"]);
    assert!(e.contains("unknown transport \"carrier-pigeon\""), "{e}");
    // The message lists what is known.
    assert!(e.contains("hako-spin-park"), "{e}");
    let e = run(&["--dump", "/nonexistent/hako-bench-dump"]);
    assert!(e.contains("not a directory"), "{e}");
    let e = run(&["--hako-buffer", "0"]);
    assert!(e.contains("--hako-buffer"), "{e}");
}
