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
