//! The tools obey the rule the library obeys: a domain root another user
//! could have filled is refused (nothing is read as hako's, nothing is
//! removed), a link is never followed, and a root may be read anyway,
//! read-only, with `--untrusted`.

use std::os::unix::fs::PermissionsExt;

use super::{text, Domain};

const NOBODY: u32 = 65534;

/// What someone else's domain holds: names the cleaner would remove in a
/// domain of ours (a node nobody holds, a half-made service, a lock).
const THEIRS: [&str; 3] = [
    "node_00000000000000aa",
    "svc_00000000000000cc/inside",
    "bridge.lock",
];

fn fill(d: &Domain) {
    std::fs::create_dir_all(d.0.join("svc_00000000000000cc")).unwrap();
    for f in THEIRS {
        std::fs::write(d.0.join(f), "theirs").unwrap();
    }
}

fn all_there(d: &Domain) {
    for f in THEIRS {
        assert!(d.0.join(f).exists(), "{f} was removed");
    }
}

/// A root everyone may write to (and, as root, one that `nobody` owns):
/// `clean` removes nothing there and says why; `list`, `nodes`, `inspect`
/// and `monitor` refuse it too and say how to read it anyway; with
/// `--untrusted` they read it, and nothing changes. (The old tools
/// trusted any root: run by root in a 0777 root of nobody's, `clean`
/// deleted nobody's files.)
#[test]
fn the_tools_refuse_a_root_others_could_fill_and_never_clean_it() {
    let d = Domain::new("untrusted");
    std::fs::create_dir_all(&d.0).unwrap();
    fill(&d);
    std::fs::set_permissions(&d.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(&d.0, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    for args in [vec!["clean"], vec!["clean", "--dry-run"]] {
        let o = d.run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = text(&o.stderr);
        assert!(e.contains("refusing domain root"), "{args:?}: {e}");
        assert!(
            !e.contains("--untrusted"),
            "clean has no way around it: {e}"
        );
    }
    all_there(&d);
    for args in [
        vec!["list"],
        vec!["nodes"],
        vec!["inspect", "some/service"],
        vec!["monitor", "--count", "1"],
    ] {
        let o = d.run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = text(&o.stderr);
        assert!(
            e.contains("refusing domain root") && e.contains("--untrusted"),
            "{args:?}: {e}"
        );
    }
    // Read anyway: the node nobody holds shows as dead; nothing is removed.
    let nodes = d.json(&["nodes", "--untrusted", "--json"]);
    assert_eq!(nodes[0]["id"], "00000000000000aa", "{nodes}");
    assert_eq!(nodes[0]["alive"], false, "{nodes}");
    let o = d.run(&["list", "--untrusted"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = d.run(&["monitor", "--untrusted", "--count", "1", "--interval", "10"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = d.run(&["clean", "--untrusted"]);
    assert_eq!(o.status.code(), Some(2), "clean takes no --untrusted");
    all_there(&d);
}

/// A root that is a link, and a service directory that is one: refused,
/// even with `--untrusted`, and the target untouched.
#[test]
fn the_tools_follow_no_link() {
    let d = Domain::new("linked");
    let target = Domain::new("linked-target");
    std::fs::create_dir_all(&target.0).unwrap();
    std::fs::set_permissions(&target.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    fill(&target);
    std::os::unix::fs::symlink(&target.0, &d.0).unwrap();
    for args in [
        vec!["clean"],
        vec!["list"],
        vec!["list", "--untrusted"],
        vec!["nodes", "--untrusted"],
    ] {
        let o = d.run(&args);
        assert!(!o.status.success(), "{args:?}");
        assert!(
            text(&o.stderr).contains("symbolic link"),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    all_there(&target);
    // Inside a domain of ours: a service directory that is a link to the
    // target is left alone by clean, and list says what it is.
    std::fs::remove_file(&d.0).unwrap();
    std::fs::create_dir_all(&d.0).unwrap();
    std::fs::set_permissions(&d.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&target.0, d.0.join("svc_00000000000000dd")).unwrap();
    std::fs::write(d.0.join("node_00000000000000ee"), "").unwrap();
    let o = d.run(&["clean"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = d.run(&["list"]);
    assert!(
        text(&o.stdout).contains("symbolic link"),
        "{}",
        text(&o.stdout)
    );
    all_there(&target);
}

/// A named lock (the bridge's) nobody holds is removed by `clean`; one a
/// process holds is left.
#[test]
fn clean_removes_a_lock_nobody_holds() {
    let d = Domain::new("locks");
    let node = hako::NodeBuilder::new()
        .config(&hako::Config::default().with_root(&d.0))
        .create()
        .unwrap();
    let held = node.try_lock_named("held").unwrap().unwrap();
    std::fs::write(d.0.join("bridge.lock"), "").unwrap();
    let dry = d.json(&["clean", "--dry-run", "--json"]);
    let files = dry["files"].to_string();
    assert!(
        files.contains("bridge.lock") && !files.contains("held.lock"),
        "{dry}"
    );
    assert!(
        d.0.join("bridge.lock").exists(),
        "a dry run removes nothing"
    );
    let done = d.json(&["clean", "--json"]);
    assert_eq!(dry["files"], done["files"]);
    assert!(!d.0.join("bridge.lock").exists());
    assert!(d.0.join("held.lock").exists());
    drop(held);
    assert!(
        !d.0.join("held.lock").exists(),
        "the holder removes its file"
    );
    drop(node);
}
