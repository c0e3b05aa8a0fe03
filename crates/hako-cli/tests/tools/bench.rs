//! `hako bench` runs the suite's program, `hako-bench` (its own tests are
//! crates/hako-bench/tests/cli.rs): the arguments go through unchanged,
//! its exit code is the command's, and a missing program is a clear error.

use super::*;

#[test]
fn bench_hands_its_arguments_to_the_suite_program() {
    let d = Domain::new("bench-forward");
    let dir = std::env::temp_dir().join(format!("hako-cli-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A stand-in for hako-bench: prints its arguments, exits with 7.
    let fake = dir.join("hako-bench");
    std::fs::write(&fake, "#!/bin/sh\necho \"$@\"\nexit 7\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = d
        .cmd(&["bench", "--quick", "--json", "out.json", "--help"])
        .env("HAKO_BENCH", &fake)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", text(&o.stderr));
    // The suite's own `--json FILE` is not the tool's `--json`.
    assert_eq!(text(&o.stdout).trim(), "--quick --json out.json --help");

    let o = d
        .cmd(&["bench", "--quick"])
        .env("HAKO_BENCH", dir.join("no-such-program"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("hako-bench") && err.contains("cargo build --release -p hako-bench"),
        "{err}"
    );
    // The tool's --json before `bench`: a usage error, as JSON.
    let o = d
        .cmd(&["--json", "bench", "--quick"])
        .env("HAKO_BENCH", &fake)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e: Value = serde_json::from_slice(&o.stderr).unwrap();
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("hako bench --json FILE"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
