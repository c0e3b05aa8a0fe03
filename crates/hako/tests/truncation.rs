//! A file truncated under its mappings (by anyone with write access to the
//! domain) is survived: the faulting access reads zeros instead of killing
//! the process with SIGBUS, the subscriber reports the publisher or the
//! service as corrupted, the publisher says it is corrupted, and `hako
//! clean`'s reclaim removes what is left once the processes are gone. The
//! cross-process campaign (truncation at random moments during traffic)
//! is in crates/hako-tests/tests/truncation.rs.

use std::path::{Path, PathBuf};

use hako::ReceiveError;

mod common;
use common::Root;

fn truncate(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Receives until something other than `Ok(None)` comes (a bounded
/// number of tries: the error is reported at the first empty receive).
fn next(sub: &hako::Subscriber<u64>) -> Result<Option<u64>, ReceiveError> {
    for _ in 0..1000 {
        match sub.receive() {
            Ok(None) => continue,
            other => return other.map(|s| s.map(|s| *s)),
        }
    }
    Ok(None)
}

/// Receives until an error comes; samples before it may read zeros (their
/// payload was in the lost range: the read that faulted got zeros).
fn error(sub: &hako::Subscriber<u64>) -> ReceiveError {
    for _ in 0..1000 {
        match sub.receive() {
            Ok(Some(s)) => assert!(*s == 0 || *s == 2, "{}", *s),
            Ok(None) => {}
            Err(e) => return e,
        }
    }
    panic!("no error reported");
}

#[test]
fn a_truncated_publisher_segment_is_survived_and_reported() {
    for len in [0, 4096] {
        let root = Root::new(&format!("truncate-pub-{len}"));
        let node = root.node();
        let svc = node
            .service_builder(&"test/truncate".try_into().unwrap())
            .publish_subscribe::<u64>()
            .open_or_create()
            .unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        let subscriber = svc.subscriber_builder().create().unwrap();
        publisher.send_copy(1).unwrap();
        assert_eq!(next(&subscriber), Ok(Some(1)));
        assert!(!publisher.is_corrupted());
        truncate(&root.file("pub_"), len);
        // The publisher writes into its pool: past the file's end now.
        publisher.send_copy(2).unwrap();
        assert!(publisher.is_corrupted(), "the publisher knows");
        let e = error(&subscriber);
        assert!(
            matches!(e, ReceiveError::CorruptedPublisher { .. }),
            "truncated to {len}: {e}"
        );
        // The connection is closed for good: nothing more, no error.
        publisher.send_copy(3).unwrap();
        assert_eq!(next(&subscriber), Ok(None));
        assert_eq!(subscriber.publisher_count(), 0);
    }
}

#[test]
fn a_truncated_service_file_is_survived_and_reported() {
    let root = Root::new("truncate-dynamic");
    let node = root.node();
    let svc = node
        .service_builder(&"test/truncate".try_into().unwrap())
        .publish_subscribe::<u64>()
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    let subscriber = svc.subscriber_builder().create().unwrap();
    publisher.send_copy(1).unwrap();
    assert_eq!(next(&subscriber), Ok(Some(1)));
    truncate(&root.file("dynamic"), 0);
    // Every port reads the service's generation on each call: a fault,
    // survived.
    let _ = publisher.send_copy(2);
    assert!(publisher.is_corrupted());
    let e = error(&subscriber);
    assert!(matches!(e, ReceiveError::CorruptedService(_)), "{e}");
    assert!(e.to_string().contains("test/truncate"), "{e}");
}

#[test]
fn a_fault_outside_hako_still_ends_the_process() {
    // In a child: a SIGBUS on a mapping of the program's own must keep its
    // default effect (the handler only takes faults in hako's mappings).
    if let Some(dir) = std::env::var_os("HAKO_TRUNCATION_CHILD") {
        let root = Root(PathBuf::from(dir));
        let _node = root.node(); // hako's handler is installed by now
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(root.0.join("own-file"))
            .unwrap();
        f.set_len(8192).unwrap();
        let own = mapping_of_my_own(&f);
        f.set_len(0).unwrap();
        // SAFETY: deliberately past the file's end: SIGBUS.
        let v = unsafe { own.read_volatile() };
        println!("survived a foreign fault ({v})");
        return;
    }
    let root = Root::new("truncate-child");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_fault_outside_hako_still_ends_the_process",
            "--nocapture",
        ])
        .env("HAKO_TRUNCATION_CHILD", &root.0)
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    // SIGBUS is 7 on x86-64 and aarch64.
    assert_eq!(
        out.status.signal(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The child's files go with `root`.
}

/// A shared mapping of `f`'s first page, made without hako (so not in its
/// table).
fn mapping_of_my_own(f: &std::fs::File) -> *const u8 {
    use std::os::fd::AsFd;
    // SAFETY: a fresh mapping of one page of the file, leaked on purpose.
    let p = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            4096,
            rustix::mm::ProtFlags::READ,
            rustix::mm::MapFlags::SHARED,
            f.as_fd(),
            0,
        )
    }
    .unwrap();
    p.cast::<u8>()
}
