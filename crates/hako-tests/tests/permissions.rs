//! Who may use a domain: by default only the user that made its files; with
//! `group` in the config, the members of that group too.
//!
//! A helper runs as `nobody` (through `setpriv`): it is refused a domain of
//! another user with a clear error, and admitted to one shared with its
//! group, where it receives messages that this process (another user)
//! publishes. Needs root to switch users; elsewhere it says so and checks
//! only the file modes.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use hako::{Config, NodeBuilder};
use hako_tests::harness::{Domain, Proc, WATCHDOG};
use hako_tests::{exit, TestMsg};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");
const NOBODY: u32 = 65534;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Every file and directory under `root` (and `root`), with its mode and group.
fn modes(root: &Path) -> Vec<(String, u32, u32)> {
    let mut out = vec![];
    let mut todo = vec![root.to_path_buf()];
    while let Some(p) = todo.pop() {
        let m = std::fs::metadata(&p).unwrap();
        out.push((
            p.display().to_string(),
            m.permissions().mode() & 0o7777,
            m.gid(),
        ));
        if m.is_dir() {
            todo.extend(std::fs::read_dir(&p).unwrap().flatten().map(|e| e.path()));
        }
    }
    out
}

/// Every file under `root` is for the group `nobody`, as the config asks.
fn assert_shared_with_nobody(root: &Path) {
    for (path, m, gid) in modes(root) {
        let want = if Path::new(&path).is_dir() {
            0o2770
        } else {
            0o660
        };
        assert_eq!((m, gid), (want, NOBODY), "{path}");
    }
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The helper, copied where `nobody` may run it (the build directory may
/// not be open to other users).
fn helper_for_nobody(d: &Domain) -> String {
    let dir = d.file("bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&d.tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.join("hako-test-helper");
    std::fs::copy(HELPER, &path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn as_nobody(d: &Domain, label: &str, root: &Path, config: Option<&Path>, args: &[&str]) -> Proc {
    let helper = helper_for_nobody(d);
    let mut cmd = Command::new("setpriv");
    cmd.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
        &helper,
    ])
    .env("HAKO_ROOT", root);
    match config {
        Some(c) => cmd.env("HAKO_CONFIG", c),
        None => cmd.env_remove("HAKO_CONFIG"),
    };
    d.spawn_command(label, cmd, args, WATCHDOG)
}

#[test]
fn files_are_for_their_owner_by_default() {
    let d = Domain::new("perm-owner", HELPER);
    let root = d.root.join("domain");
    let cfg = Config::default().with_root(&root);
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = node
        .service_builder(&"it/private".try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .open_or_create()
        .unwrap();
    let _publisher = svc.publisher_builder().create().unwrap();
    let _sub = svc.subscriber_builder().create().unwrap();
    for (path, m, _) in modes(&root) {
        let want = if Path::new(&path).is_dir() {
            0o700
        } else {
            0o600
        };
        assert_eq!(m, want, "{path} has mode {m:o}");
    }
    if !is_root() {
        println!("not root: cannot run a process as another user; checked the modes only");
        return;
    }
    let o = as_nobody(
        &d,
        "nobody",
        &root,
        None,
        &["open", "--service", "it/private", "--mode", "open"],
    )
    .wait();
    assert_ne!(o.code, Some(exit::OK), "{}", o.describe("was admitted"));
    let said = format!("{}{}", o.stdout, o.stderr);
    assert!(
        said.contains("Permission denied") && said.contains(&root.display().to_string()),
        "{}",
        o.describe("failed without saying why")
    );
    drop((_publisher, _sub, svc, node));
    assert!(std::fs::read_dir(&root).unwrap().next().is_none());
    std::fs::remove_dir(&root).unwrap();
    d.finish();
}

#[test]
fn a_group_shares_the_domain_when_configured() {
    let d = Domain::new("perm-group", HELPER);
    let root = d.root.join("domain");
    let conf = d.file("hako.toml");
    std::fs::write(&conf, format!("group = \"{NOBODY}\"\n")).unwrap();
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cfg = Config::from_file(&conf).unwrap().with_root(&root);
    if !is_root() {
        println!("not root: cannot give files to another group or run as another user");
        return;
    }
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = node
        .service_builder(&"it/shared".try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .overflow_policy(hako::OverflowPolicy::Backpressure)
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    assert_eq!(mode(&root), 0o2770);
    assert_shared_with_nobody(&root);
    let mut sub = vec![as_nobody(
        &d,
        "nobody-sub",
        &root,
        Some(&conf),
        &[
            "subscribe",
            "--service",
            "it/shared",
            "--overflow",
            "backpressure",
            "--expect",
            "3",
        ],
    )];
    let start = Instant::now();
    while publisher.subscriber_count() == 0 {
        assert!(start.elapsed() < WATCHDOG, "nobody's subscriber never came");
        std::thread::sleep(Duration::from_millis(5));
    }
    for seq in 0..3 {
        assert_eq!(publisher.send_copy(TestMsg::new(0, seq)).unwrap(), 1);
    }
    let o = sub.pop().unwrap().wait();
    o.assert_code(exit::OK);
    // What nobody made is shared the same way.
    assert_shared_with_nobody(&root);
    drop((publisher, svc, node));
    // Clean up as root: the helper's node is gone, so the root is empty but
    // for the domain directory itself.
    assert!(std::fs::read_dir(&root).unwrap().next().is_none());
    std::fs::remove_dir(&root).unwrap();
    d.finish();
}

#[test]
fn a_domain_root_others_could_write_to_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let root =
        std::path::PathBuf::from(format!("/dev/shm/hako-it-untrusted-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let try_join = |config: Config| NodeBuilder::new().config(&config).create();
    let set_mode =
        |m: u32| std::fs::set_permissions(&root, std::fs::Permissions::from_mode(m)).unwrap();
    std::fs::create_dir(&root).unwrap();
    let config = Config::default().with_root(&root);

    // Writable by every user: anyone could swap its files.
    set_mode(0o777);
    let e = try_join(config.clone()).unwrap_err().to_string();
    assert!(
        e.contains("refusing domain root") && e.contains("every user may write"),
        "{e}"
    );

    // Writable by a group the config does not name; accepted once it does.
    set_mode(0o770);
    let gid = std::fs::metadata(&root)
        .map(|m| std::os::unix::fs::MetadataExt::gid(&m))
        .unwrap();
    let e = try_join(config.clone()).unwrap_err().to_string();
    assert!(e.contains(&format!("group {gid} may write")), "{e}");
    let mut shared = config.clone();
    shared.group = Some(gid.to_string());
    drop(try_join(shared).expect("the configured group may write"));

    // Owned by another user (needs root to give it away).
    set_mode(0o700);
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(&root, Some(NOBODY), None).unwrap();
        let e = try_join(config.clone()).unwrap_err().to_string();
        assert!(e.contains(&format!("belongs to uid {NOBODY}")), "{e}");
        std::os::unix::fs::chown(&root, Some(0), None).unwrap();
    } else {
        println!("not root: the test of a root owned by another user is skipped");
    }
    // Our own, for us alone: joined.
    drop(try_join(config).expect("a root of our own"));
    std::fs::remove_dir_all(&root).unwrap();
}

/// The service's own directory and files, and the publishers' segments,
/// are judged as the root is: others that could write to them, or a
/// stranger owning them, get the service refused with an error naming the
/// path and the fix; a member of a configured group may own them.
#[test]
fn service_files_others_could_swap_are_refused() {
    use hako::ServiceError;
    let d = Domain::new("perm-service", HELPER);
    let node = d.node();
    let name: hako::ServiceName = "it/untrusted".try_into().unwrap();
    let open = |node: &hako::Node| {
        node.service_builder(&name)
            .publish_subscribe::<u64>()
            .open_or_create()
    };
    // Kept open: the files stay while the test changes them.
    let svc = open(&node).unwrap();
    let dir = std::fs::read_dir(&d.root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap();
    let refused = |node: &hako::Node, path: &Path, what: &str| {
        let e = open(node).unwrap_err();
        assert!(matches!(e, ServiceError::Untrusted { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains(&path.display().to_string()) && text.contains(what),
            "{text}"
        );
    };
    let set =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    for (path, bad) in [
        (dir.clone(), 0o777),
        (dir.join("static.toml"), 0o666),
        (dir.join("dynamic"), 0o602),
    ] {
        let good = mode(&path);
        set(&path, bad);
        refused(&node, &path, "every user may write");
        set(&path, good);
    }
    drop(open(&node).expect("trusted again"));

    // A publisher's segment others may write to: its subscribers refuse it.
    let sub = svc.subscriber_builder().create().unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    let segment = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("pub_"))
        .unwrap();
    set(&segment, 0o666);
    publisher.send_copy(7).unwrap();
    let e = sub.receive().unwrap_err();
    assert!(e.to_string().contains("others may write"), "{e}");
    // A subscriber made after it: its creation looked at the table already;
    // its first receive still reports what it left out.
    let late = svc.subscriber_builder().create().unwrap();
    assert!(late
        .receive()
        .unwrap_err()
        .to_string()
        .contains("others may write"));
    assert!(late.receive().unwrap().is_none(), "reported once");
    drop(late);
    set(&segment, 0o600);
    drop((publisher, sub));

    if !is_root() {
        println!("not root: the owner checks (another uid) are skipped");
        drop((svc, node));
        d.finish();
        return;
    }
    // Owned by a stranger: refused; owned by a member of the configured
    // group (its files the group's): admitted.
    let dynamic = dir.join("dynamic");
    std::os::unix::fs::chown(&dynamic, Some(NOBODY), Some(NOBODY)).unwrap();
    refused(&node, &dynamic, &format!("belongs to uid {NOBODY}"));
    let mut shared = Config::default().with_root(&d.root);
    shared.group = Some(NOBODY.to_string());
    let member = NodeBuilder::new().config(&shared).create().unwrap();
    drop(open(&member).expect("a file of the domain's group"));
    std::os::unix::fs::chown(&dynamic, Some(0), Some(0)).unwrap();
    drop((member, svc, node));
    d.finish();
}

/// The reclaim never follows a symbolic link planted in the domain root:
/// an `svc_*` link to someone else's directory must not get its files
/// removed when a dead node's leftovers are cleaned.
#[test]
fn the_reclaim_ignores_symbolic_links_in_the_root() {
    let d = Domain::new("perm-symlink", HELPER);
    let victim = d.file("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious"), b"keep me").unwrap();
    std::os::unix::fs::symlink(&victim, d.root.join("svc_0000000000000bad")).unwrap();
    // A node file nobody holds: a dead node, so the reclaim runs.
    std::fs::write(d.root.join("node_00000000000000aa"), b"").unwrap();
    let cfg = Config::default().with_root(&d.root);
    hako::reclaim_dead_nodes(&cfg, false).unwrap();
    assert!(
        victim.join("precious").exists(),
        "the link's target was emptied"
    );
    std::fs::remove_file(d.root.join("svc_0000000000000bad")).unwrap();
    d.finish();
}
