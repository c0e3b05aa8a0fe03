//! A domain root too small for what is asked: creating the port fails with a
//! clear error (the space of every segment is reserved when it is created),
//! never a SIGBUS later, and what fits still works.
//!
//! Mounts a 256 KiB tmpfs, which needs root; elsewhere it says so.

use std::path::PathBuf;
use std::process::Command;

use hako::{Config, NodeBuilder, PublisherCreateError};

struct SmallTmpfs(PathBuf);

impl SmallTmpfs {
    fn mount(size: &str) -> Option<Self> {
        let dir = std::env::temp_dir().join(format!("hako-small-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            Some(Self(dir))
        } else {
            let _ = std::fs::remove_dir(&dir);
            None
        }
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_full_domain_root_is_an_error_at_creation() {
    let Some(fs) = SmallTmpfs::mount("256k") else {
        println!("cannot mount a tmpfs (needs root): skipped");
        return;
    };
    let cfg = Config::default().with_root(fs.0.join("domain"));
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = node
        .service_builder(&"it/big".try_into().unwrap())
        .publish_subscribe::<[u8]>()
        .open_or_create()
        .unwrap();
    // 1 MiB slices: the pool alone needs megabytes.
    let err = svc
        .publisher_builder()
        .max_slice_len(1 << 20)
        .create()
        .unwrap_err();
    assert!(
        matches!(err, PublisherCreateError::Segment { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("No space left on device"), "{msg}");
    // Nothing half-made stays behind, and a publisher that fits works.
    let publisher = svc
        .publisher_builder()
        .max_slice_len(1024)
        .create()
        .unwrap();
    let sub = svc.subscriber_builder().create().unwrap();
    publisher.send_slice_copy(&[7u8; 1000]).unwrap();
    assert_eq!(sub.receive().unwrap().unwrap().len(), 1000);
    drop((sub, publisher, svc, node));
    assert!(std::fs::read_dir(&cfg.root).unwrap().next().is_none());
}
