//! Garbage in a service's own files: an unreadable `static.toml`, the debris
//! of a creator that died halfway, entries in the port tables no port made.

use hako::unstable::layout::LAYOUT_VERSION;
use hako::{Config, ServiceError};
use hako_tests::harness::Domain;
use hako_tests::{exit, TestMsg};

use super::{node, service, service_dir, HELPER};

/// Writes `content` over the service's static.toml while this process holds
/// the service open, then checks `open` here and in a helper process.
fn garbage_static(test: &str, content: &[u8], reason: &str) {
    let d = Domain::new(test, HELPER);
    let name = "it/static";
    {
        let owner = node(&d);
        let _svc = service(&owner, name);
        let path = service_dir(&d.root, name).join("static.toml");
        assert!(path.is_file());
        std::fs::write(&path, content).unwrap();

        let other = node(&d);
        let b = || {
            other
                .service_builder(&name.try_into().unwrap())
                .publish_subscribe::<TestMsg>()
        };
        for r in [b().open(), b().open_or_create()] {
            match r {
                Err(e @ ServiceError::Corrupted { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains(reason), "{msg:?} should contain {reason:?}");
                }
                other => panic!("expected Corrupted, got {other:?}"),
            }
        }
        for mode in ["open", "open-or-create"] {
            let o = d
                .spawn(
                    &format!("open-{mode}"),
                    &["open", "--service", name, "--mode", mode],
                )
                .wait();
            o.assert_code(exit::CORRUPTED);
            let line = o.error_line();
            assert!(line.contains("is corrupted"), "{line}");
            assert!(line.contains(reason), "{line} should contain {reason:?}");
        }
    }
    // The owner's drop removes the service, garbage and all.
    d.finish();
}

#[test]
fn static_description_that_does_not_parse() {
    garbage_static(
        "static-garbage",
        b"this is = = not toml [",
        "does not parse",
    );
}

#[test]
fn static_description_with_values_out_of_range() {
    let desc = format!("version = {LAYOUT_VERSION}\n")
        + "name = \"it/static\"\npattern = \"publish_subscribe\"\n\n[payload]\n\
                type_name = \"hako_tests::TestMsg\"\nsize = 64\nalign = 8\nslice = false\n\n[qos]\n\
                max_publishers = 0\nmax_subscribers = 8\nmax_nodes = 32\n\
                subscriber_max_buffer_size = 4\nsubscriber_max_borrowed_samples = 2\n\
                history_size = 0\noverflow = \"drop_oldest\"\n";
    garbage_static("static-range", desc.as_bytes(), "max_publishers");
}

#[test]
fn static_description_that_is_not_text() {
    garbage_static(
        "static-binary",
        &[0xff, 0xfe, 0x00, 0x80, 0xc3],
        "not UTF-8",
    );
}

#[test]
fn static_description_of_another_service() {
    let desc = format!("version = {LAYOUT_VERSION}\n")
        + "name = \"it/someone-else\"\npattern = \"publish_subscribe\"\n\n[payload]\n\
                type_name = \"hako_tests::TestMsg\"\nsize = 64\nalign = 8\nslice = false\n\n[qos]\n\
                max_publishers = 2\nmax_subscribers = 8\nmax_nodes = 32\n\
                subscriber_max_buffer_size = 4\nsubscriber_max_borrowed_samples = 2\n\
                history_size = 0\noverflow = \"drop_oldest\"\n";
    garbage_static("static-other", desc.as_bytes(), "it/someone-else");
}

#[test]
fn half_created_service_is_cleaned_by_open_or_create() {
    let d = Domain::new("half-created", HELPER);
    let name = "it/half";
    let dir = service_dir(&d.root, name);
    // What a creator that died before publishing static.toml leaves behind.
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("dynamic"), vec![0xa5u8; 4096]).unwrap();
    std::fs::write(dir.join("static.toml.tmp"), b"version = 1\nname = ").unwrap();

    let o = d
        .spawn("open", &["open", "--service", name, "--mode", "open"])
        .wait();
    o.assert_code(exit::DOES_NOT_EXIST);
    assert!(
        dir.join("dynamic").exists(),
        "open must not touch the debris"
    );

    // Another process cleans the debris and creates the service.
    let o = d
        .spawn(
            "open-or-create",
            &["open", "--service", name, "--mode", "open-or-create"],
        )
        .wait();
    o.assert_code(exit::OK);
    assert_eq!(o.result().get("type"), "hako_tests::TestMsg");
    d.assert_root_empty();

    // And once more in this process, with traffic over the fresh segments.
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("dynamic"), vec![0x5au8; 100]).unwrap();
    {
        let node = node(&d);
        let svc = service(&node, name);
        let sub = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        assert_eq!(publisher.send_copy(TestMsg::new(3, 7)).unwrap(), 1);
        let s = sub.receive().unwrap().unwrap();
        assert_eq!((s.publisher, s.seq), (3, 7));
        assert!(s.is_intact());
    }
    d.finish();
}

#[test]
fn garbage_in_the_port_tables() {
    // Entries that no port made: a publisher whose segment does not exist
    // and whose limits are absurd, a subscriber that never reads. Nobody
    // panics, the real ports keep talking, and since no live node owns the
    // entries, the ports that follow the change reclaim them.
    use hako::unstable::layout::{DynGeometry, PORT_SLOT_SIZE, SUB_COUNTERS_SIZE};
    use std::os::unix::fs::FileExt;
    let d = Domain::new("garbage-tables", HELPER);
    let name = "it/tables";
    {
        let node = node(&d);
        let svc = service(&node, name);
        let publisher = svc.publisher_builder().create().unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let q = svc.qos().clone();
        let geo = DynGeometry::new(
            q.max_nodes,
            q.max_publishers * 2,
            q.max_subscribers,
            SUB_COUNTERS_SIZE,
            0,
        );
        let dynamic = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(service_dir(&d.root, name).join("dynamic"))
            .unwrap();
        let put = |off: u64, v: u64| dynamic.write_all_at(&v.to_le_bytes(), off).unwrap();
        let slot = |base: u64, i: u64| base + i * PORT_SLOT_SIZE;
        let last_pub = slot(geo.pubs_offset, u64::from(q.max_publishers) * 2 - 1);
        for (k, v) in [0xbad0_0001u64, 0xdead_beef, u64::MAX, u64::MAX]
            .iter()
            .enumerate()
        {
            put(last_pub + 8 * k as u64, *v);
        }
        let last_sub = slot(geo.subs_offset, u64::from(q.max_subscribers) - 1);
        put(last_sub, 0xbad0_0002);
        put(last_sub + 8, 0xdead_beef);
        let mut gen = [0u8; 8];
        dynamic.read_exact_at(&mut gen, 24).unwrap();
        put(24, u64::from_le_bytes(gen) + 1);
        for seq in 0..20 {
            publisher.send_copy(TestMsg::new(0, seq)).unwrap();
            match sub.receive() {
                Ok(Some(s)) => assert!(s.is_intact() && s.seq == seq),
                other => panic!("message {seq}: {other:?}"),
            }
        }
        // The ports that followed the change of the tables found the
        // entries' node dead and reclaimed them already.
        let mut word = [0u8; 8];
        for off in [last_pub, last_sub] {
            dynamic.read_exact_at(&mut word, off).unwrap();
            assert_eq!(u64::from_le_bytes(word), 0, "entry at {off} still there");
        }
        let done = hako::reclaim_dead_nodes(&Config::default().with_root(&d.root), false).unwrap();
        assert!(done.is_empty(), "{done:?}");
        publisher.send_copy(TestMsg::new(0, 20)).unwrap();
        assert_eq!(sub.receive().unwrap().unwrap().seq, 20);
        assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
    }
    d.finish();
}
