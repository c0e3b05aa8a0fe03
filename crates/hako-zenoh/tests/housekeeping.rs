//! What a bridge exposes and leaves behind: where it listens, its lock
//! file, its log.

mod common;
use std::collections::HashSet;
use std::process::Stdio;
use std::time::Duration;

use common::*;

/// The local addresses (`127.0.0.1:7447`, `[::]:41234`) on which process
/// `pid` has listening TCP sockets.
fn listening(pid: u32) -> Vec<String> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut out = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local address, state (0A: listening), ..., inode
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                out.push(address(f[1]));
            }
        }
    }
    out
}

/// `/proc/net/tcp`'s hex address (`0100007F:1F90`) as text.
fn address(hex: &str) -> String {
    let (ip, port) = hex.split_once(':').unwrap();
    let port = u16::from_str_radix(port, 16).unwrap();
    if ip.len() == 8 {
        let b = u32::from_str_radix(ip, 16).unwrap().to_le_bytes();
        format!("{}.{}.{}.{}:{port}", b[0], b[1], b[2], b[3])
    } else if ip.chars().all(|c| c == '0') {
        format!("[::]:{port}")
    } else {
        format!("[{ip}]:{port}")
    }
}

#[test]
fn a_bridge_listens_only_where_asked_and_nowhere_when_it_connects() {
    let p = prefix("listen");
    let (a, b) = (Domain::new("listen", "a"), Domain::new("listen", "b"));
    let pa = free_port();
    let ba = bridge(&a, &p, pa, &[], &[]);
    // B's bridge connects, and is given no --listen.
    let bb = bridge_logged(&b, &p, (0, &[pa]), &[], (Stdio::inherit(), "warn"));
    // Joined: a sample crosses.
    let name: hako::ServiceName = "t/listen".try_into().unwrap();
    let sa = a
        .node
        .service_builder(&name)
        .publish_subscribe::<u64>()
        .subscriber_max_buffer_size(512)
        .open_or_create()
        .unwrap();
    let publisher = sa.publisher_builder().create().unwrap();
    b.wait_for_service("t/listen");
    let sb = b
        .node
        .service_builder(&name)
        .publish_subscribe::<u64>()
        .open()
        .unwrap();
    exactly_once(&stream(
        &publisher,
        &sb.subscriber_builder().create().unwrap(),
        10,
    ));
    assert_eq!(listening(ba.child.id()), vec![format!("127.0.0.1:{pa}")]);
    assert_eq!(listening(bb.child.id()), Vec::<String>::new());
}

#[test]
fn a_stopped_bridge_leaves_no_lock_file() {
    let p = prefix("lock");
    let a = Domain::new("lock", "a");
    let ba = bridge(&a, &p, free_port(), &[], &[]);
    let lock = a.root.join(hako_zenoh::LOCK_FILE);
    wait_until("the bridge's lock file", || lock.exists());
    ba.stop();
    assert!(!lock.exists(), "{} was left behind", lock.display());
}

#[test]
fn a_log_file_has_no_colours_and_says_which_bridges_come_and_go() {
    let p = prefix("log");
    let (a, b) = (Domain::new("log", "a"), Domain::new("log", "b"));
    let (pa, pb) = (free_port(), free_port());
    let path = a.root.with_extension("log");
    let file = std::fs::File::create(&path).unwrap();
    let _ba = bridge_logged(&a, &p, (pa, &[]), &[], (Stdio::from(file), "info"));
    let text = || std::fs::read_to_string(&path).unwrap_or_default();
    wait_until("the bridge's first lines", || {
        text().contains("listening on")
    });
    let bb = bridge(&b, &p, pb, &[pa], &[]);
    let theirs = hako_zenoh::keys::DomainId::of_root(&b.root);
    wait_until("a line about B joining", || {
        text().contains(&format!("the bridge of domain {theirs} joined"))
    });
    bb.stop();
    wait_until("a line about B leaving", || {
        text().contains(&format!("the bridge of domain {theirs} left"))
    });
    std::thread::sleep(Duration::from_millis(100));
    let log = text();
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file:\n{log}"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_port_the_bridge_cannot_make_is_said_once() {
    let p = prefix("said");
    let (a, b) = (Domain::new("said", "a"), Domain::new("said", "b"));
    let (pa, pb) = (free_port(), free_port());
    // A's service has room for one subscriber, A's own: the bridge cannot
    // subscribe when B's subscriber asks for the samples.
    let name: hako::ServiceName = "t/said".try_into().unwrap();
    let sa = a
        .node
        .service_builder(&name)
        .publish_subscribe::<u64>()
        .max_subscribers(1)
        .open_or_create()
        .unwrap();
    let _publisher = sa.publisher_builder().create().unwrap();
    let _own = sa.subscriber_builder().create().unwrap();
    let mut ba = bridge_with(&a, &p, pa, &[], &[], Stdio::piped());
    let lines = log_lines(&mut ba);
    let sb = b
        .node
        .service_builder(&name)
        .publish_subscribe::<u64>()
        .open_or_create()
        .unwrap();
    let _sub = sb.subscriber_builder().create().unwrap();
    let _bb = bridge(&b, &p, pb, &[pa], &[]);
    wait_for_line(&lines, "that it cannot subscribe", |l| {
        l.contains("WARN") && l.contains("cannot subscribe locally")
    });
    // It retries every half second; the log says it once.
    std::thread::sleep(Duration::from_secs(2));
    let again: Vec<String> = lines
        .try_iter()
        .filter(|l| l.contains("cannot subscribe locally"))
        .collect();
    assert!(again.is_empty(), "said again: {again:?}");
}
