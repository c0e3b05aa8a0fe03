//! Single-process checks of the blackboard: creating and opening, reading
//! and writing by copy and in place, versions, and every refusal (the
//! cross-process tests, torn reads and crashes, live in hako-tests).

use hako::{BlackboardError, BlackboardService, Config, Node, NodeBuilder, ServiceError, ShmSafe};

#[derive(Debug, Clone, Copy, PartialEq, ShmSafe)]
#[repr(C)]
struct Pose {
    x: f64,
    y: f64,
    heading: f32,
    quality: u8,
}

const HOME: Pose = Pose {
    x: 0.0,
    y: 0.0,
    heading: 0.0,
    quality: 0,
};

struct Root(std::path::PathBuf);

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn node(test: &str) -> (Root, Node) {
    let root = std::path::PathBuf::from(format!(
        "/dev/shm/hako-test-bb-{}-{}",
        test,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let cfg = Config::default().with_root(&root);
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    (Root(root), node)
}

fn board(node: &Node, name: &str) -> BlackboardService {
    node.service_builder(&name.try_into().unwrap())
        .blackboard()
        .entry::<Pose>("pose", HOME)
        .entry::<u32>("mode", 7)
        .entry::<[u8; 4096]>("map", [1; 4096])
        .max_readers(2)
        .open_or_create()
        .unwrap()
}

#[test]
fn defaults_then_updates_with_their_versions() {
    let (_root, node) = node("updates");
    let b = board(&node, "bb/updates");
    let writer = b.writer_builder().create().unwrap();
    let reader = b.reader_builder().create().unwrap();
    let pose = reader.entry::<Pose>("pose").unwrap();
    let mode = reader.entry::<u32>("mode").unwrap();
    assert_eq!(pose.get_with_version().unwrap(), (HOME, 0));
    assert_eq!(mode.get().unwrap(), 7);

    let mut w = writer.entry::<Pose>("pose").unwrap();
    for k in 1..=100u64 {
        let p = Pose {
            x: k as f64,
            y: -(k as f64),
            heading: 0.5,
            quality: (k % 256) as u8,
        };
        assert_eq!(w.update(p).unwrap(), k);
        assert_eq!(pose.get_with_version().unwrap(), (p, k));
        assert_eq!(pose.version().unwrap(), k);
    }
    assert_eq!(w.version().unwrap(), 100);
    assert_eq!(b.version("pose"), Some(100));
    // Other entries are untouched.
    assert_eq!(mode.get_with_version().unwrap(), (7, 0));
    assert_eq!(b.version("nothing"), None);
}

#[test]
fn loans_write_in_place_and_publish_only_when_told() {
    let (_root, node) = node("loans");
    let b = board(&node, "bb/loans");
    let writer = b.writer_builder().create().unwrap();
    let reader = b.reader_builder().create().unwrap();
    let mut w = writer.entry::<[u8; 4096]>("map").unwrap();
    let mut r = reader.entry::<[u8; 4096]>("map").unwrap();

    // A loan of the latest value, changed in one place.
    let mut loan = w.loan_latest().unwrap();
    loan[10] = 99;
    assert_eq!(loan.publish(), 1);
    let got = r.get().unwrap();
    assert_eq!((got[9], got[10], got[11]), (1, 99, 1));

    // An uninitialised loan, written whole.
    let loan = w.loan_uninit().unwrap().write([5; 4096]);
    assert_eq!(loan.publish(), 2);
    assert!(r.get().unwrap().iter().all(|&x| x == 5));

    // A loan dropped unpublished changes nothing.
    drop(w.loan_uninit().unwrap().write([6; 4096]));
    assert_eq!(r.get_with_version().unwrap().1, 2);
    assert!(r.read().unwrap().iter().all(|&x| x == 5));
}

#[test]
fn a_value_read_in_place_stays_while_the_writer_goes_on() {
    let (_root, node) = node("in-place");
    let b = board(&node, "bb/in-place");
    let writer = b.writer_builder().create().unwrap();
    let r1 = b.reader_builder().create().unwrap();
    let r2 = b.reader_builder().create().unwrap();
    let mut w = writer.entry::<u32>("mode").unwrap();
    let mut m1 = r1.entry::<u32>("mode").unwrap();
    let mut m2 = r2.entry::<u32>("mode").unwrap();
    w.update(1).unwrap();
    let held1 = m1.read().unwrap();
    w.update(2).unwrap();
    let held2 = m2.read().unwrap();
    // Both readers pin a buffer; with max_readers + 2 buffers the writer
    // always finds a free one and never waits.
    for v in 3..1000 {
        w.update(v).unwrap();
    }
    assert_eq!((*held1, held1.version()), (1, 1));
    assert_eq!((*held2, held2.version()), (2, 2));
    drop(held1);
    drop(held2);
    assert_eq!(m1.read().unwrap().version(), 999);
    assert_eq!(m2.get().unwrap(), 999);
}

#[test]
fn refusals_say_what_is_wrong() {
    let (_root, node) = node("refusals");
    let b = board(&node, "bb/refusals");
    let name = || "bb/refusals".try_into().unwrap();

    // One writer at a time; a second one is refused until the first goes.
    let writer = b.writer_builder().create().unwrap();
    let e = b.writer_builder().create().unwrap_err();
    assert!(matches!(e, BlackboardError::WriterExists { .. }), "{e}");
    drop(writer);
    let writer = b.writer_builder().create().unwrap();

    // max_readers readers.
    let r1 = b.reader_builder().create().unwrap();
    let _r2 = b.reader_builder().create().unwrap();
    let e = b.reader_builder().create().unwrap_err();
    assert!(
        matches!(e, BlackboardError::TooManyReaders { max: 2, .. }),
        "{e}"
    );

    // Keys and types are checked; one handle per entry and port.
    let e = r1.entry::<u32>("speed").unwrap_err();
    assert!(e.to_string().contains("no entry \"speed\""), "{e}");
    let e = r1.entry::<u64>("mode").unwrap_err();
    assert!(
        matches!(
            e,
            BlackboardError::Service(ServiceError::IncompatibleType { .. })
        ),
        "{e}"
    );
    let first = r1.entry::<u32>("mode").unwrap();
    let e = r1.entry::<u32>("mode").unwrap_err();
    assert!(matches!(e, BlackboardError::EntryInUse { .. }), "{e}");
    drop(first);
    r1.entry::<u32>("mode").unwrap();
    let _w = writer.entry::<u32>("mode").unwrap();
    assert!(writer.entry::<u32>("mode").is_err());

    // Opening checks the entries asked for and the settings.
    let open = |n: &Node| n.service_builder(&name()).blackboard();
    let e = open(&node).entry::<u64>("mode", 0).open().unwrap_err();
    assert!(matches!(e, ServiceError::IncompatibleType { .. }), "{e}");
    let e = open(&node).entry::<u8>("gear", 0).open().unwrap_err();
    assert!(matches!(e, ServiceError::NoSuchEntry { .. }), "{e}");
    let e = open(&node).max_readers(3).open().unwrap_err();
    assert!(matches!(e, ServiceError::IncompatibleQos { .. }), "{e}");
    let ok = open(&node).entry::<u32>("mode", 0).open().unwrap();
    assert_eq!(ok.entries().len(), 3);
    let e = node.service_builder(&name()).event().open().unwrap_err();
    assert!(matches!(e, ServiceError::IncompatiblePattern { .. }), "{e}");

    // Creating checks every entry.
    let create = |key: &str| {
        node.service_builder(&"bb/new".try_into().unwrap())
            .blackboard()
            .entry::<u32>(key, 0)
            .create()
    };
    assert!(create("")
        .unwrap_err()
        .to_string()
        .contains("1 to 128 bytes"));
    assert!(create(" x").unwrap_err().to_string().contains("space"));
    let e = node
        .service_builder(&"bb/new".try_into().unwrap())
        .blackboard()
        .create()
        .unwrap_err();
    assert!(e.to_string().contains("entries"), "{e}");
    let e = node
        .service_builder(&"bb/new".try_into().unwrap())
        .blackboard()
        .entry::<u32>("a", 0)
        .entry::<u8>("a", 0)
        .create()
        .unwrap_err();
    assert!(e.to_string().contains("each key names one entry"), "{e}");
}

#[test]
fn the_description_lists_entries_and_settings() {
    let (_root, node) = node("describe");
    let b = board(&node, "bb/describe");
    let d = b.description();
    let text = toml::to_string(&d).unwrap();
    let back = hako::StaticDescription::parse(&text).unwrap();
    assert_eq!(back, d);
    match d.pattern {
        hako::Pattern::Blackboard { qos, entries } => {
            assert_eq!(qos.max_readers, 2);
            let keys: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
            assert_eq!(keys, ["pose", "mode", "map"]);
            assert_eq!(entries[2].value.size, 4096);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reader_sleeps_until_its_entry_changes() {
    use std::time::Duration;
    let (_root, node) = node("wait");
    let b = board(&node, "bb/wait");
    let reader = b
        .reader_builder()
        .wait_strategy(hako::WaitStrategy::Park)
        .create()
        .unwrap();
    let mode = reader.entry::<u32>("mode").unwrap();
    assert!(!mode.changed().unwrap());
    // Nothing changes: the wait times out.
    assert_eq!(
        mode.wait_for_change(Some(Duration::from_millis(20)))
            .unwrap(),
        None
    );
    let writer = b.writer_builder().create().unwrap();
    let worker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        // Another entry first: no wake-up for the mode's waiter.
        writer.entry::<Pose>("pose").unwrap().update(HOME).unwrap();
        writer.entry::<u32>("mode").unwrap().update(3).unwrap();
        writer
    });
    assert_eq!(mode.wait_for_change(None).unwrap(), Some(1));
    assert!(mode.changed().unwrap());
    assert_eq!(mode.get().unwrap(), 3);
    assert!(!mode.changed().unwrap());
    drop(worker.join().unwrap());
}

#[test]
fn a_waitset_wakes_for_watched_entries() {
    use std::time::Duration;
    let (_root, node) = node("waitset");
    let b = board(&node, "bb/waitset");
    let reader = b.reader_builder().create().unwrap();
    let mode = reader.entry::<u32>("mode").unwrap();
    let pose = reader.entry::<Pose>("pose").unwrap();
    mode.watch();
    let mut ws = hako::WaitSet::new().unwrap();
    let id = ws.attach_reader(&reader).unwrap();
    let writer = b.writer_builder().create().unwrap();
    let mut w_pose = writer.entry::<Pose>("pose").unwrap();
    let mut w_mode = writer.entry::<u32>("mode").unwrap();

    // A change of an entry nobody watches wakes nothing.
    w_pose.update(HOME).unwrap();
    let mut woke = Vec::new();
    ws.wait_and_process_timeout(|e| woke.push(e), Duration::from_millis(30))
        .unwrap();
    assert!(woke.is_empty(), "{woke:?}");
    assert!(pose.changed().unwrap() && !reader.has_changes());

    let worker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        w_mode.update(9).unwrap();
    });
    let mut woke = Vec::new();
    while woke.is_empty() {
        ws.wait_and_process_timeout(|e| woke.push(e), Duration::from_secs(10))
            .unwrap();
    }
    assert_eq!(woke, [hako::WaitEvent::Ready(id)]);
    assert!(reader.has_changes());
    assert_eq!(mode.get().unwrap(), 9);
    assert!(!reader.has_changes());
    worker.join().unwrap();
}

#[test]
fn entries_as_bytes_for_the_other_faces() {
    let (_root, node) = node("bytes");
    let b = board(&node, "bb/bytes");
    let u32_type = <u32 as hako::Payload>::details();
    let writer = b.writer_builder().create().unwrap();
    let reader = b.reader_builder().create().unwrap();
    let mut w = writer.entry_described("mode", u32_type.clone()).unwrap();
    let mut r = reader.entry_described("mode", u32_type).unwrap();
    assert_eq!((w.size(), r.size()), (4, 4));
    assert_eq!(w.update_bytes(&5u32.to_ne_bytes()).unwrap(), 1);
    let mut out = [0u8; 4];
    assert_eq!(r.get_bytes(&mut out).unwrap(), 1);
    assert_eq!(u32::from_ne_bytes(out), 5);
    {
        let held = r.read_bytes().unwrap();
        assert_eq!((&*held, held.version()), (&5u32.to_ne_bytes()[..], 1));
    }
    let e = w.update_bytes(&[1, 2]).unwrap_err();
    assert!(
        matches!(
            e,
            BlackboardError::WrongSize {
                size: 4,
                given: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(r.get_bytes(&mut [0; 8]).is_err());
    // The typed face sees what the bytes wrote.
    let mut loan = w.loan().unwrap();
    loan.copy_latest();
    loan.bytes_mut()[0] = 6;
    assert_eq!(loan.publish(), 2);
    drop(r);
    assert_eq!(
        reader.entry::<u32>("mode").unwrap().get().unwrap(),
        u32::from_ne_bytes([6, 0, 0, 0])
    );
    // A described type that is not the entry's is refused.
    let e = reader
        .entry_described("mode", <u64 as hako::Payload>::details())
        .unwrap_err();
    assert!(
        matches!(
            e,
            BlackboardError::Service(ServiceError::IncompatibleType { .. })
        ),
        "{e}"
    );
}
