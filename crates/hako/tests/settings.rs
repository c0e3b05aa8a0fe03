//! Explicit settings are honoured as given, or refused with an error that
//! names them; never quietly changed.

use hako::{Config, NodeBuilder};

#[test]
fn a_pool_larger_than_the_worst_case_is_made_as_asked() {
    let root = std::path::PathBuf::from(format!(
        "/dev/shm/hako-test-settings-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    {
        let node = NodeBuilder::new()
            .config(&Config::default().with_root(&root))
            .create()
            .unwrap();
        let svc = node
            .service_builder(&"test/pool".try_into().unwrap())
            .publish_subscribe::<u64>()
            .max_subscribers(2)
            .subscriber_max_buffer_size(2)
            .subscriber_max_borrowed_samples(2)
            .open_or_create()
            .unwrap();
        // The worst case is 2 x (2 + 2) + the loans: far fewer than asked.
        let publisher = svc.publisher_builder().pool_size(100_000).create().unwrap();
        assert_eq!(publisher.pool_size(), 100_000);
        let sub = svc.subscriber_builder().create().unwrap();
        publisher.send_copy(7).unwrap();
        assert_eq!(*sub.receive().unwrap().unwrap(), 7);
        assert_eq!(publisher.free_chunks(), 100_000);
        // Fewer than the loans it may hold is refused, naming the setting.
        let e = svc
            .publisher_builder()
            .max_loaned_samples(4)
            .pool_size(3)
            .create()
            .unwrap_err();
        assert!(e.to_string().contains("pool_size"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

mod a {
    #[derive(Clone, Copy, hako::ShmSafe)]
    #[repr(C)]
    pub struct Frame {
        pub x: u32,
    }
}

mod b {
    #[derive(Clone, Copy, hako::ShmSafe)]
    #[repr(C)]
    pub struct Frame {
        pub x: f32,
    }
}

#[derive(Clone, Copy, hako::ShmSafe)]
#[repr(C)]
struct Gen<T: Copy> {
    v: T,
}

#[test]
fn payload_types_are_told_apart_by_full_name() {
    use hako::ShmSafe;
    let root = std::path::PathBuf::from(format!("/dev/shm/hako-test-types-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    {
        let node = NodeBuilder::new()
            .config(&Config::default().with_root(&root))
            .create()
            .unwrap();
        assert_eq!(<a::Frame as ShmSafe>::type_name(), "settings::a::Frame");
        assert_eq!(<Gen<u32> as ShmSafe>::type_name(), "settings::Gen<u32>");
        assert_eq!(<[u16; 4] as ShmSafe>::type_name(), "[u16; 4]");
        // Each pair has the same size and alignment; only the name differs.
        fn clash<A: hako::ShmSafe, B: hako::ShmSafe>(node: &hako::Node, service: &str) {
            let name = service.try_into().unwrap();
            let _kept = node
                .service_builder(&name)
                .publish_subscribe::<A>()
                .create()
                .unwrap();
            let e = node
                .service_builder(&name)
                .publish_subscribe::<B>()
                .open()
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&A::type_name()) && e.contains(&B::type_name()),
                "the error names both types: {e}"
            );
        }
        clash::<a::Frame, b::Frame>(&node, "test/frames");
        clash::<[u16; 4], [i16; 4]>(&node, "test/arrays");
        clash::<Gen<u32>, Gen<f32>>(&node, "test/generic");
    }
    let _ = std::fs::remove_dir_all(&root);
}
