//! `hako bridge` runs the bridge's program, `hako-bridge` (its own tests
//! are in crates/hako-zenoh/tests), and `hako list` marks the services a
//! bridge carries.

use super::*;

#[test]
fn bridge_hands_its_arguments_to_the_bridge_program() {
    let d = Domain::new("bridge-forward");
    let dir = std::env::temp_dir().join(format!("hako-cli-bridge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A stand-in for hako-bridge: prints its arguments, exits with 5.
    let fake = dir.join("hako-bridge");
    std::fs::write(&fake, "#!/bin/sh\necho \"$@\"\nexit 5\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = d
        .cmd(&[
            "bridge",
            "--service",
            "robot/**",
            "--connect",
            "tcp/10.0.0.2:7447",
        ])
        .env("HAKO_BRIDGE", &fake)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout).trim(),
        "--service robot/** --connect tcp/10.0.0.2:7447"
    );
    let o = d
        .cmd(&["bridge"])
        .env("HAKO_BRIDGE", dir.join("no-such-program"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("hako-bridge") && err.contains("cargo build --release -p hako-zenoh"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn list_marks_the_services_a_bridge_carries() {
    let d = Domain::new("bridged-list");
    let cfg = hako::Config::default().with_root(&d.0);
    let plain = hako::NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = plain
        .service_builder(&"t/local".try_into().unwrap())
        .publish_subscribe::<u64>()
        .open_or_create()
        .unwrap();
    let _p = svc.publisher_builder().create().unwrap();
    // A node named as the bridge's, with a port in another service.
    let bridge = hako::NodeBuilder::new()
        .name(hako::inspect::BRIDGE_NODE_NAME)
        .unwrap()
        .config(&cfg)
        .create()
        .unwrap();
    let remote = bridge
        .service_builder(&"t/remote".try_into().unwrap())
        .publish_subscribe::<u64>()
        .open_or_create()
        .unwrap();
    let _q = remote.publisher_builder().create().unwrap();
    let o = d.cmd(&["--json", "list"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    let bridged = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()["bridged"]
            .as_bool()
            .unwrap()
    };
    assert!(!bridged("t/local"));
    assert!(bridged("t/remote"));
    let o = d.cmd(&["list"]).output().unwrap();
    let out = text(&o.stdout);
    assert!(out.contains("BRIDGED"), "{out}");
    let line = out.lines().find(|l| l.contains("t/remote")).unwrap();
    assert!(line.contains("yes"), "{out}");
}
