//! The blackboard across processes: a writer updating an entry while
//! readers in other processes read it, by copy and in place, and crashes.
//!
//! * ten million updates of a 64-byte entry (`HAKO_IT_BOARD_UPDATES`
//!   overrides the count) read concurrently by copy and in place: every
//!   value read is whole (its words agree with its checksum and sequence
//!   number), and neither versions nor values ever go back;
//! * the same for a 64 KiB entry, where a copy takes long enough for the
//!   writer to overtake it;
//! * a writer killed (SIGKILL) while it updates a 64 KiB entry in a tight
//!   loop leaves a whole value, and a writer in a new process takes over
//!   from the version the dead one reached (the board lives on while a
//!   node holds it: the test's own);
//! * a reader in another process sleeps in the kernel until the writer's
//!   update wakes it (no polling), and reads each change;
//! * a reader killed while it holds a value in place holds nothing back:
//!   the writer goes on updating, and once the dead reader is reclaimed
//!   its place can be taken again.
//!
//! The helper is `hako-board-helper` (src/bin). Every value read is
//! checked by the helper; a torn one fails it.

use std::time::Duration;

use hako_tests::board::open_board;
use hako_tests::harness::Domain;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-board-helper");

/// Generous: hang detection only (a debug build on 2 vCPUs).
const BOUND: Duration = Duration::from_secs(900);

#[test]
fn ten_million_updates_are_never_read_torn() {
    let count: u64 = std::env::var("HAKO_IT_BOARD_UPDATES")
        .ok()
        .map(|v| v.parse().expect("HAKO_IT_BOARD_UPDATES must be a number"))
        .unwrap_or(10_000_000);
    let count = count.to_string();
    let d = Domain::new("bb-torn", HELPER);
    let copy = d.spawn_bounded(
        "copy",
        &["read", "--entry", "small", "--until", &count],
        BOUND,
    );
    let in_place = d.spawn_bounded(
        "in-place",
        &["read", "--entry", "small", "--until", &count, "--in-place"],
        BOUND,
    );
    let writer = d.spawn_bounded(
        "writer",
        &["write", "--entry", "small", "--count", &count],
        BOUND,
    );
    let out = d.wait_all(vec![copy, in_place, writer]);
    for o in &out[..2] {
        let r = o.result();
        assert_eq!(r.get("last"), count);
        assert!(r.get("reads").parse::<u64>().unwrap() > 0);
    }
    assert_eq!(out[2].result().get("version"), count);
    d.finish();
}

#[test]
fn large_values_are_never_read_torn() {
    let d = Domain::new("bb-torn-big", HELPER);
    let until = "20000";
    let copy = d.spawn_bounded("copy", &["read", "--entry", "big", "--until", until], BOUND);
    let in_place = d.spawn_bounded(
        "in-place",
        &["read", "--entry", "big", "--until", until, "--in-place"],
        BOUND,
    );
    let writer = d.spawn_bounded(
        "writer",
        &["write", "--entry", "big", "--count", until],
        BOUND,
    );
    let out = d.wait_all(vec![copy, in_place, writer]);
    for o in &out[..2] {
        assert_eq!(o.result().get("last"), until);
    }
    d.finish();
}

#[test]
fn a_writer_killed_mid_update_leaves_a_whole_value_and_a_new_one_takes_over() {
    let d = Domain::new("bb-writer-killed", HELPER);
    // The board lives while a node holds it: this process's, here (a
    // service no live node holds is removed with the last one's files).
    let node = d.node();
    let _board = open_board(&node).unwrap();
    for round in 0..3 {
        let ready = format!("ready-{round}");
        let mut writer = d.spawn_bounded(
            "writer",
            &[
                "write",
                "--entry",
                "big",
                "--forever",
                "--ready-file",
                &d.arg(&ready),
            ],
            BOUND,
        );
        d.wait_file(&ready, std::slice::from_mut(&mut writer));
        // Killed somewhere in an update: 64 KiB written in place per update.
        std::thread::sleep(Duration::from_millis(20));
        writer.kill();
        let check = d.spawn("check", &["check", "--entry", "big"]);
        let out = d.wait_all(vec![check]);
        let version: u64 = out[0].result().get("version").parse().unwrap();
        assert!(version >= 100, "round {round}: version {version}");
        // A new writer (its node reclaims the dead one's port) goes on.
        let next = d.spawn("next", &["write", "--entry", "big", "--count", "5"]);
        let out = d.wait_all(vec![next]);
        let after: u64 = out[0].result().get("version").parse().unwrap();
        assert_eq!(after, version + 5, "round {round}");
    }
    drop(_board);
    drop(node);
    hako::reclaim_dead_nodes(&hako::Config::default().with_root(&d.root), false).unwrap();
    d.finish();
}

#[test]
fn a_reader_killed_while_it_holds_a_value_holds_nothing_back() {
    let d = Domain::new("bb-reader-killed", HELPER);
    let mut pinners = Vec::new();
    for k in 0..3 {
        let ready = format!("pinned-{k}");
        let mut p = d.spawn(
            "pin",
            &["pin", "--entry", "small", "--ready-file", &d.arg(&ready)],
        );
        d.wait_file(&ready, std::slice::from_mut(&mut p));
        pinners.push(p);
    }
    // Three readers pin a value each; one more reader may come (four at
    // most). Two die holding their pin.
    pinners.pop().unwrap().kill();
    pinners.pop().unwrap().kill();
    // The writer never waits: the dead readers' pins take two buffers of
    // six, the live one a third, the current value a fourth.
    let writer = d.spawn("writer", &["write", "--entry", "small", "--count", "10000"]);
    let reader = d.spawn("reader", &["read", "--entry", "small", "--until", "10000"]);
    let out = d.wait_all(vec![writer, reader]);
    assert_eq!(out[1].result().get("last"), "10000");
    // Once reclaimed, the dead readers' places are free: three readers at
    // once beside the live pinner (the helpers' own readers).
    hako::reclaim_dead_nodes(&hako::Config::default().with_root(&d.root), false).unwrap();
    let readers: Vec<_> = (0..3)
        .map(|_| d.spawn("later", &["read", "--entry", "small", "--until", "10000"]))
        .collect();
    d.wait_all(readers);
    pinners.pop().unwrap().kill();
    hako::reclaim_dead_nodes(&hako::Config::default().with_root(&d.root), false).unwrap();
    d.finish();
}

#[test]
fn a_reader_sleeps_until_a_writer_in_another_process_changes_its_entry() {
    let d = Domain::new("bb-wait", HELPER);
    let mut waiter = d.spawn(
        "waiter",
        &[
            "wait",
            "--entry",
            "small",
            "--until",
            "50",
            "--ready-file",
            &d.arg("waiting"),
        ],
    );
    d.wait_file("waiting", std::slice::from_mut(&mut waiter));
    // Asleep in the kernel, not spinning, before anything changed.
    let start = std::time::Instant::now();
    while !waiter.parked_in_futex() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the waiter never slept"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let writer = d.spawn(
        "writer",
        &[
            "write",
            "--entry",
            "small",
            "--count",
            "50",
            "--interval-ms",
            "2",
        ],
    );
    let out = d.wait_all(vec![waiter, writer]);
    let r = out[0].result();
    assert_eq!(r.get("last"), "50");
    let wakes: u64 = r.get("wakes").parse().unwrap();
    assert!((1..=50).contains(&wakes), "{wakes} wakes");
    d.finish();
}
