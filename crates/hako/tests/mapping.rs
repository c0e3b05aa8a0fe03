//! Memory per publisher and per subscriber: linear in the subscribers a
//! service allows (issue 24: a `u64` service allowing 4,096 subscribers
//! had a 540 MB publisher segment, because every connection had a return
//! word per chunk of a pool that grows with the subscribers, and every
//! subscriber mapped all of it).

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

/// The mappings of `after` that are not in `before` (by size).
fn added(before: &[u64], after: &[u64]) -> Vec<u64> {
    let mut rest = before.to_vec();
    let mut new = Vec::new();
    for &m in after {
        match rest.iter().position(|&b| b == m) {
            Some(i) => {
                rest.swap_remove(i);
            }
            None => new.push(m),
        }
    }
    new
}

/// The size of the publisher segment under `root`.
fn segment_size(root: &std::path::Path) -> u64 {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .find(|f| f.file_name().to_string_lossy().starts_with("pub_"))
        .unwrap()
        .metadata()
        .unwrap()
        .len()
}

/// For a `u64` service allowing `n` subscribers: the publisher's segment,
/// and what one subscriber maps of it (all of its mappings, and the
/// smallest, its connection block).
fn footprint(guard: &Root, n: u32) -> (u64, u64, u64) {
    let node = guard.node();
    let svc = node
        .service_builder(&format!("test/wide{n}").as_str().try_into().unwrap())
        .publish_subscribe::<u64>()
        .max_subscribers(n)
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    let before = mapped("pub_");
    let subscriber = svc.subscriber_builder().create().unwrap();
    publisher.send_copy(7).unwrap();
    assert_eq!(*subscriber.receive().unwrap().unwrap(), 7);
    let new = added(&before, &mapped("pub_"));
    let file = segment_size(&guard.0);
    // The publisher maps it all.
    assert!(before.iter().sum::<u64>() >= file, "{before:?} {file}");
    (
        file,
        new.iter().sum(),
        new.iter().copied().min().unwrap_or(0),
    )
}

#[test]
fn memory_grows_linearly_with_the_subscribers_a_service_allows() {
    let mut per_sub = Vec::new();
    for n in [1, 64, 1024, 4096] {
        let guard = Root::new(&format!("mapping{n}"));
        let (file, sub, block) = footprint(&guard, n);
        println!(
            "{n} subscribers allowed: segment {file} B ({} B each); the subscriber maps {sub} B, its block {block} B",
            file / u64::from(n)
        );
        // A subscriber maps the pages of its own connection block (one or
        // two) and the pool, not the other subscribers' blocks.
        assert!(block <= 2 * 4096, "{n}: the block mapping is {block} B");
        per_sub.push((n, file / u64::from(n), sub / u64::from(n)));
        std::fs::remove_dir_all(&guard.0).unwrap();
    }
    // Linear: the bytes per allowed subscriber do not grow with their
    // number (a segment that grew with subscribers x chunks was 540 MB at
    // 4,096, some 130 KB each, and ~40x that of 64).
    let (_, seg64, sub64) = per_sub[1];
    for &(n, seg, sub) in &per_sub[2..] {
        assert!(
            seg <= seg64 + seg64 / 4,
            "{n}: {seg} B per subscriber, {seg64} at 64"
        );
        assert!(
            sub <= sub64 + sub64 / 4,
            "{n}: the subscriber maps {sub} B per subscriber, {sub64} at 64"
        );
    }
}
