//! Single-process checks of the API (cross-process tests live in hako-tests).
//!
//! Here: a message's way and the clean-up, slices, which types are `Send`
//! and `Sync`, and inspection; loans and the chunk pool in
//! `in_process/loans.rs`, ports and samples shared by threads in
//! `in_process/threads.rs`.

use hako::{Config, NodeBuilder, OverflowPolicy, ServiceError, ShmSafe};

/// Loans, the pool running out, and chunks reused.
#[path = "in_process/loans.rs"]
mod loans;

/// Publishers, subscribers and samples on several threads.
#[path = "in_process/threads.rs"]
mod threads;

#[derive(Debug, Clone, Copy, Default, PartialEq, ShmSafe)]
#[repr(C)]
struct Msg {
    seq: u64,
    data: [u32; 4],
}

fn config(test: &str) -> Config {
    let root = std::path::PathBuf::from(format!(
        "/dev/shm/hako-test-{}-{}",
        test,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    Config::default().with_root(root)
}

#[test]
fn publish_receive_and_cleanup() {
    let cfg = config("basic");
    {
        let node = NodeBuilder::new()
            .name("t")
            .unwrap()
            .config(&cfg)
            .create()
            .unwrap();
        let svc = node
            .service_builder(&"a/b".try_into().unwrap())
            .publish_subscribe::<Msg>()
            .subscriber_max_buffer_size(4)
            .open_or_create()
            .unwrap();
        let sub = svc.subscriber_builder().create().unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        assert!(sub.receive().unwrap().is_none());
        for i in 0..3 {
            let n = publisher
                .loan_uninit()
                .unwrap()
                .write_payload(Msg {
                    seq: i,
                    data: [i as u32; 4],
                })
                .send();
            assert_eq!(n, 1);
        }
        for i in 0..3 {
            let s = sub.receive().unwrap().unwrap();
            assert_eq!(s.seq, i);
            assert_eq!(s.data, [i as u32; 4]);
        }
        assert!(sub.receive().unwrap().is_none());
        // drop-oldest by default: 10 sends into a queue of 4 keep the last 4.
        for i in 0..10 {
            publisher
                .send_copy(Msg {
                    seq: i,
                    data: [0; 4],
                })
                .unwrap();
        }
        let got: Vec<u64> = std::iter::from_fn(|| sub.receive().unwrap().map(|s| s.seq)).collect();
        assert_eq!(got, vec![6, 7, 8, 9]);
        assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);

        let e = node
            .service_builder(&"a/b".try_into().unwrap())
            .publish_subscribe::<u64>()
            .open()
            .unwrap_err();
        assert!(
            matches!(
                e,
                ServiceError::IncompatibleType {
                    field: "type_name",
                    ..
                }
            ),
            "{e}"
        );
        let e = node
            .service_builder(&"a/b".try_into().unwrap())
            .publish_subscribe::<Msg>()
            .overflow_policy(OverflowPolicy::Backpressure)
            .open()
            .unwrap_err();
        assert!(
            matches!(
                e,
                ServiceError::IncompatibleQos {
                    field: "overflow",
                    ..
                }
            ),
            "{e}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&cfg.root).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn slices() {
    let cfg = config("slices");
    let node = NodeBuilder::new().config(&cfg).create().unwrap();
    let svc = node
        .service_builder(&"s".try_into().unwrap())
        .publish_subscribe::<[u8]>()
        .create()
        .unwrap();
    let publisher = svc
        .publisher_builder()
        .max_slice_len(1000)
        .create()
        .unwrap();
    let sub = svc.subscriber_builder().create().unwrap();
    publisher
        .loan_slice_uninit(10)
        .unwrap()
        .write_from_fn(|i| i as u8)
        .send();
    let s = sub.receive().unwrap().unwrap();
    assert_eq!(&*s, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert!(publisher.loan_slice_uninit(1001).is_err());
    drop((s, sub, publisher, svc, node));
    std::fs::remove_dir(&cfg.root).unwrap();
}

#[test]
fn ports_and_samples_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    fn send<T: Send>() {}
    both::<hako::Node>();
    both::<hako::PubSubService<Msg>>();
    both::<hako::Publisher<Msg>>();
    // A subscriber moves between threads but is used by one at a time.
    send::<hako::Subscriber<Msg>>();
    send::<hako::Listener>();
    both::<hako::Sample<Msg>>();
    both::<hako::SampleMut<Msg>>();
    both::<hako::SampleMutUninit<Msg>>();
    both::<hako::Sample<[u8]>>();
    both::<hako::SampleMut<[u8]>>();
}

#[test]
fn inspection_shows_nodes_ports_and_counters() {
    use hako::inspect::{self, PortCounters};
    let cfg = config("inspect");
    let node = NodeBuilder::new()
        .name("looker")
        .unwrap()
        .config(&cfg)
        .create()
        .unwrap();
    let name: hako::ServiceName = "inspect/me".try_into().unwrap();
    let svc = node
        .service_builder(&name)
        .publish_subscribe::<Msg>()
        .subscriber_max_buffer_size(2)
        .create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    let reader = svc.subscriber_builder().create().unwrap();
    let sleeper = svc.subscriber_builder().create().unwrap();
    for seq in 0..5 {
        publisher.send_copy(Msg { seq, data: [0; 4] }).unwrap();
        if seq < 3 {
            drop(reader.receive().unwrap().unwrap());
        }
    }
    let loan = publisher.loan().unwrap();

    let nodes = inspect::nodes(&cfg).unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].id, node.id());
    assert_eq!(nodes[0].name, "looker");
    assert_eq!(nodes[0].pid, Some(std::process::id()));
    assert!(nodes[0].alive);

    let all = inspect::services(&cfg).unwrap();
    assert_eq!(all.len(), 1);
    let info = inspect::service(&cfg, &name).unwrap();
    assert_eq!(&info, all[0].as_ref().unwrap());
    assert_eq!(info.name, "inspect/me");
    assert_eq!(info.nodes, vec![node.id()]);
    assert_eq!(info.publishers.len(), 1);
    let p = &info.publishers[0];
    assert_eq!(
        (p.id, p.node, p.node_alive, p.retired),
        (publisher.id(), node.id(), true, false)
    );
    match p.counters {
        PortCounters::Publisher {
            sent,
            deliveries,
            dropped,
            loans,
            chunks_in_use,
            pool_size,
        } => {
            assert_eq!((sent, deliveries, loans), (5, 10, 1));
            // The sleeper's queue of 2 overflowed three times.
            assert_eq!(dropped, 3);
            assert_eq!(pool_size, u64::from(publisher.pool_size()));
            assert!(chunks_in_use >= 2, "{chunks_in_use}");
        }
        other => panic!("{other:?}"),
    }
    let counts: Vec<_> = info
        .subscribers
        .iter()
        .map(|s| (s.id, s.counters))
        .collect();
    assert!(counts.contains(&(
        reader.id(),
        PortCounters::Subscriber {
            received: 3,
            dropped: 0
        }
    )));
    assert!(counts.contains(&(
        sleeper.id(),
        PortCounters::Subscriber {
            received: 0,
            dropped: 3
        }
    )));
    drop((loan, reader, sleeper, publisher, svc, node));
    assert!(inspect::services(&cfg).unwrap().is_empty());
    std::fs::remove_dir(&cfg.root).unwrap();
}
