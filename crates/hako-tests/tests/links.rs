//! No link is ever followed and nothing outside a domain is ever touched:
//! the attacks of a hostile local user who plants symbolic links where a
//! root process of hako looks for its files.
//!
//! Each test keeps a victim directory (this user's, not writable by
//! others, so it passes every ownership check) with files that the old
//! code deleted when a link led to it; every file must survive. The links
//! are planted by `nobody` (through `setpriv`) when the tests run as root,
//! else by this user: what a link leads to does not depend on who made it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use hako::{Config, NodeBuilder, NodeCreateError, ServiceError};
use hako_tests::harness::Domain;
use hako_tests::{fnv1a, TestMsg, FNV_OFFSET};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");
const NOBODY: u32 = 65534;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A sticky directory everyone may write to, like `/dev/shm`, holding the
/// victim and whatever the test makes; removed on drop.
struct Place {
    base: PathBuf,
}

/// The victim's files, and what each holds.
const VICTIM_FILES: [(&str, &str); 4] = [
    ("precious", "keep me"),
    (
        "node_00000000000000aa",
        "an unlocked file named like a node",
    ),
    ("pub_00000000000000bb", "named like a data segment"),
    (
        "svc_00000000000000cc/inside",
        "a directory named like a service",
    ),
];

impl Place {
    fn new(test: &str) -> Self {
        let base = PathBuf::from(format!(
            "/dev/shm/hako-it-place-{test}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir(&base).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let victim = base.join("victim");
        std::fs::create_dir_all(victim.join("svc_00000000000000cc")).unwrap();
        for (f, text) in VICTIM_FILES {
            std::fs::write(victim.join(f), text).unwrap();
        }
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { base }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    fn victim(&self) -> PathBuf {
        self.path("victim")
    }

    /// Every file of the victim is there, with what it held.
    fn assert_victim_intact(&self) {
        for (f, text) in VICTIM_FILES {
            let got = std::fs::read_to_string(self.victim().join(f));
            assert_eq!(
                got.ok().as_deref(),
                Some(text),
                "the victim's {f} was touched"
            );
        }
    }

    /// Makes `link` a symbolic link to `to`, as `nobody` when we are root.
    fn plant(&self, to: &Path, link: &Path) {
        if is_root() {
            let st = Command::new("setpriv")
                .args([
                    &format!("--reuid={NOBODY}"),
                    &format!("--regid={NOBODY}"),
                    "--clear-groups",
                    "ln",
                    "-s",
                ])
                .arg(to)
                .arg(link)
                .status()
                .unwrap();
            assert!(st.success(), "nobody could not plant {}", link.display());
        } else {
            std::os::unix::fs::symlink(to, link).unwrap();
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn service_key(name: &str) -> String {
    format!("svc_{:016x}", fnv1a(FNV_OFFSET, name.as_bytes()))
}

fn config(root: &Path) -> Config {
    Config::default().with_root(root)
}

/// Another user makes this user's default-style root a link to a
/// directory of this user's: every way of joining or reading the domain
/// refuses it, and nothing in the link's target is removed. (The old code
/// accepted the link, as the ownership check followed it, and its reclaim
/// deleted the target's `svc_*` directories without `static.toml` and its
/// unlocked `node_*` files.)
#[test]
fn a_root_planted_as_a_link_is_refused() {
    let p = Place::new("root");
    let root = p.path("hako-0");
    p.plant(&p.victim(), &root);
    let cfg = config(&root);
    let e = NodeBuilder::new().config(&cfg).create().unwrap_err();
    assert!(matches!(e, NodeCreateError::UntrustedRoot { .. }), "{e}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let e = hako::reclaim_dead_nodes(&cfg, false).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert!(hako::inspect::services(&cfg).is_err());
    assert!(hako::inspect::nodes(&cfg).is_err());
    // Read anyway (say, root looking into a user's domain): still no link.
    assert!(hako::inspect::DomainView::open_untrusted(&cfg).is_err());
    p.assert_victim_intact();
}

/// In a domain shared with a group, a member replaces a service's
/// directory by a link: this user's next publisher of the service refuses
/// it, and nothing in the link's target is removed. (The old code followed
/// the link when it created the service and "cleaned" what it found
/// there: every file of the target.)
#[test]
fn a_service_directory_planted_as_a_link_is_refused() {
    let p = Place::new("service");
    let root = p.path("shared");
    let mut cfg = config(&root);
    if is_root() {
        cfg.group = Some(NOBODY.to_string());
    }
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let name = "it/linked";
    let open = || {
        node.service_builder(&name.try_into().unwrap())
            .publish_subscribe::<TestMsg>()
            .open_or_create()
    };
    // Before the service exists: its directory's name is known to all.
    p.plant(&p.victim(), &root.join(service_key(name)));
    let e = open().unwrap_err();
    assert!(matches!(e, ServiceError::Untrusted { .. }), "{e}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    p.assert_victim_intact();
    std::fs::remove_file(root.join(service_key(name))).unwrap();

    // While it exists and is used: the member renames the directory and
    // puts a link in its place. Those holding the service go on in the
    // directory they hold; whoever opens it anew is refused; when the last
    // user leaves, the files go from the held directory, not the link's.
    let svc = open().unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    std::fs::rename(root.join(service_key(name)), root.join("moved")).unwrap();
    p.plant(&p.victim(), &root.join(service_key(name)));
    let e = open().unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let sub = svc.subscriber_builder().create().unwrap();
    publisher.send_copy(TestMsg::new(0, 1)).unwrap();
    assert_eq!(sub.receive().unwrap().unwrap().seq, 1);
    drop((sub, publisher, svc));
    assert_eq!(
        std::fs::read_dir(root.join("moved")).unwrap().count(),
        0,
        "the held directory is emptied"
    );
    p.assert_victim_intact();
    drop(node);
}

/// This user's own domain directory lies in a directory another user
/// owns: that user could rename the domain and put a link in its place,
/// so the root is refused, with the directory above named. (The old code
/// checked only the last component.)
#[test]
fn a_root_below_a_directory_another_user_owns_is_refused() {
    if !is_root() {
        println!("not root: cannot give a directory to another user; skipped");
        return;
    }
    let p = Place::new("parent");
    let parent = p.path("theirs");
    std::fs::create_dir(&parent).unwrap();
    std::os::unix::fs::chown(&parent, Some(NOBODY), Some(NOBODY)).unwrap();
    let root = parent.join("domain");
    let e = NodeBuilder::new()
        .config(&config(&root))
        .create()
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("above it") && text.contains(&format!("belongs to uid {NOBODY}")),
        "{text}"
    );
    assert!(!root.exists(), "nothing made below an untrusted directory");
    // The swap itself: the owner puts a link where the domain was.
    std::fs::create_dir(&root).unwrap();
    Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "mv",
        ])
        .arg(&root)
        .arg(parent.join("old"))
        .status()
        .unwrap();
    p.plant(&p.victim(), &root);
    assert!(NodeBuilder::new().config(&config(&root)).create().is_err());
    assert!(hako::reclaim_dead_nodes(&config(&root), false).is_err());
    p.assert_victim_intact();
}

/// A root renamed away while a node uses it, a link put in its place: the
/// node goes on in the directory it opened (every file is made, used and
/// removed through that directory's descriptor) and never touches the
/// link's target.
#[test]
fn a_held_root_is_never_left_for_a_link_in_its_place() {
    let p = Place::new("held");
    let root = p.path("domain");
    let node = NodeBuilder::new().config(&config(&root)).create().unwrap();
    std::fs::rename(&root, p.path("moved")).unwrap();
    p.plant(&p.victim(), &root);
    let svc = node
        .service_builder(&"it/held".try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    let sub = svc.subscriber_builder().create().unwrap();
    publisher.send_copy(TestMsg::new(0, 7)).unwrap();
    assert_eq!(sub.receive().unwrap().unwrap().seq, 7);
    let lock = node.try_lock_named("tool").unwrap().unwrap();
    assert!(p.path("moved/tool.lock").exists() && !p.victim().join("tool.lock").exists());
    drop(lock);
    assert!(p.path("moved").join(service_key("it/held")).is_dir());
    drop((sub, publisher, svc, node));
    assert_eq!(std::fs::read_dir(p.path("moved")).unwrap().count(), 0);
    p.assert_victim_intact();
}

/// A publisher's data segment replaced by a link: a new subscriber
/// reports the publisher as it reports other segments it cannot trust.
/// (The old code opened nothing and said nothing: the subscriber silently
/// saw no publisher.)
#[test]
fn a_data_segment_replaced_by_a_link_is_reported() {
    let d = Domain::new("links-segment", HELPER);
    let p = Place::new("segment");
    let node = d.node();
    let svc = node
        .service_builder(&"it/segment".try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    let dir = d.root.join(service_key("it/segment"));
    let file = dir.join(format!("pub_{:016x}", publisher.id()));
    std::fs::rename(&file, dir.join("saved")).unwrap();
    // By someone who may write in the domain (this user, here).
    std::os::unix::fs::symlink(p.victim().join("precious"), &file).unwrap();
    let sub = svc.subscriber_builder().create().unwrap();
    let e = sub.receive().unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert!(sub.receive().unwrap().is_none(), "reported once");
    drop(sub);
    std::fs::remove_file(&file).unwrap();
    std::fs::rename(dir.join("saved"), &file).unwrap();
    drop((publisher, svc, node));
    p.assert_victim_intact();
    d.finish();
}
