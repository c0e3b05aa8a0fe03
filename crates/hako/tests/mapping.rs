//! What a subscriber maps of a publisher's segment: its own connection
//! block and the pool, not the blocks of every subscriber the service
//! allows (issue 24: a service allowing thousands of subscribers made each
//! of them map the whole segment, hundreds of MB each).

mod common;
use common::Root;

/// Bytes this process maps of files whose name starts with `prefix`
/// (from /proc/self/maps), one entry per mapping.
fn mapped(prefix: &str) -> Vec<u64> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(5)
                .and_then(|p| p.rsplit('/').next())
                .is_some_and(|name| name.starts_with(prefix))
        })
        .map(|l| {
            let range = l.split_whitespace().next().unwrap();
            let (a, b) = range.split_once('-').unwrap();
            u64::from_str_radix(b, 16).unwrap() - u64::from_str_radix(a, 16).unwrap()
        })
        .collect()
}

#[test]
fn a_subscriber_maps_its_own_connection_block_and_the_pool_only() {
    let guard = Root::new("mapping");
    let root = guard.0.clone();
    {
        let node = guard.node();
        let svc = node
            .service_builder(&"test/wide".try_into().unwrap())
            .publish_subscribe::<u64>()
            .max_subscribers(1024)
            .open_or_create()
            .unwrap();
        let publisher = svc.publisher_builder().create().unwrap();
        let before: u64 = mapped("pub_").iter().sum();
        let subscriber = svc.subscriber_builder().create().unwrap();
        publisher.send_copy(7).unwrap();
        assert_eq!(*subscriber.receive().unwrap().unwrap(), 7);
        let file = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
            .find(|f| f.file_name().to_string_lossy().starts_with("pub_"))
            .unwrap()
            .metadata()
            .unwrap()
            .len();
        let subscriber_bytes: u64 = mapped("pub_").iter().sum::<u64>() - before;
        println!("segment {file} B; the subscriber maps {subscriber_bytes} B of it");
        // The publisher maps it all; the subscriber its block and the pool,
        // a small part of a segment whose connection blocks dominate.
        assert!(before >= file, "{before} {file}");
        assert!(
            subscriber_bytes * 10 < file,
            "the subscriber maps {subscriber_bytes} B of a {file} B segment"
        );
    }
    std::fs::remove_dir_all(&root).unwrap();
    drop(guard);
}
