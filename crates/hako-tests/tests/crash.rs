//! Processes killed with SIGKILL: what a dead node held is reclaimed by
//! whoever notices its death (the README's "What it offers", crash
//! recovery).
//!
//! * a publisher blocked by backpressure on a subscriber whose process is
//!   killed notices the death (the node's flock is gone), drops that
//!   connection and finishes its sends;
//! * a killed process's node file, node slot and ports are reclaimed once
//!   another process creates a node, so the root ends empty;
//! * chunks a killed subscriber held come back to the publisher's pool when
//!   its node is reclaimed (`hako::reclaim_dead_nodes`, also as a dry run);
//! * samples of a killed publisher stay readable, held or queued.

use hako_tests::exit;
use hako_tests::harness::{refs, with, Domain, WATCHDOG};
use hako_tests::TestMsg;

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

#[test]
fn blocked_publisher_goes_on_when_its_subscriber_is_killed() {
    let d = Domain::new("killed-sub", HELPER);
    let svc = [
        "--service",
        "it/killed",
        "--overflow",
        "backpressure",
        "--buffer",
        "2",
        "--borrowed",
        "2",
    ];
    let held = d.arg("held");
    let never = d.arg("never");
    // Holds samples 0 and 1, then never reads again.
    let s = with(
        &[
            "subscribe",
            "--hold",
            "2",
            "--held-file",
            &held,
            "--wait-file",
            &never,
            "--expect",
            "2",
        ],
        &svc,
    );
    let mut procs = vec![d.spawn("sub", &refs(&s))];
    // Sends 0 and 1, waits until they are held, then 2 and 3 fill the
    // queue and 4 blocks until the subscriber is found dead.
    let p = with(
        &[
            "publish",
            "--count",
            "20",
            "--strategy",
            "block",
            "--wait-subscribers",
            "1",
            "--pause-at",
            "2",
            "--pause-file",
            &held,
        ],
        &svc,
    );
    let publ = d.spawn("pub", &refs(&p));
    d.wait_file("held", &mut procs);
    let killed = procs.pop().unwrap().kill();
    assert_eq!(killed.code, None, "{}", killed.describe("was not killed"));

    let out = publ.wait();
    out.assert_code(exit::OK);
    let r = out.result();
    // 0..=3 reached the subscriber; 4..19 found it gone.
    assert_eq!(r.num("delivered"), 4);
    assert_eq!(r.num("zero"), 16);
    assert_eq!(r.num("free"), r.num("pool"), "chunks leaked");
    // The dead subscriber's node file and entries are reclaimed by the next
    // node created in the domain (see killed_process_resources_are_reclaimed).
}

/// A killed process leaves its node file, its node-table entry, its port
/// and its FIFO; the next process that creates a node reclaims them all, and
/// when it leaves the root is empty.
#[test]
fn killed_process_resources_are_reclaimed() {
    let d = Domain::new("killed-holder", HELPER);
    let ready = d.arg("ready");
    let never = d.arg("never");
    let mut procs = vec![d.spawn(
        "victim",
        &[
            "hold",
            "--service",
            "it/victim",
            "--port",
            "subscriber",
            "--ready-file",
            &ready,
            "--release-file",
            &never,
        ],
    )];
    d.wait_file("ready", &mut procs);
    procs.pop().unwrap().kill();
    // Another process uses the service and leaves: it notices the dead node.
    let o = d
        .spawn(
            "survivor",
            &["open", "--service", "it/victim", "--mode", "open-or-create"],
        )
        .wait();
    o.assert_code(exit::OK);
    d.finish();
}

/// A node of this process in the test's domain, and the service `name` opened
/// through it (default QoS, as the helper opens it).
fn in_test_service(
    d: &Domain,
    name: &str,
) -> (hako::Config, hako::Node, hako::PubSubService<TestMsg>) {
    let cfg = hako::Config::default().with_root(&d.root);
    let node = hako::NodeBuilder::new()
        .name("survivor")
        .unwrap()
        .config(&cfg)
        .create()
        .unwrap();
    let svc = node
        .service_builder(&name.try_into().unwrap())
        .publish_subscribe::<TestMsg>()
        .open_or_create()
        .unwrap();
    (cfg, node, svc)
}

/// Starts a helper subscriber on `service`, sends it `send` messages (seq
/// 0..send) once it is connected, waits until it holds `hold` of them, and
/// kills it with SIGKILL.
fn kill_a_holding_subscriber(
    d: &Domain,
    service: &str,
    publisher: &hako::Publisher<TestMsg>,
    hold: u64,
    send: u64,
) {
    let (held, never, hold) = (d.arg("held"), d.arg("never"), hold.to_string());
    let s = [
        "subscribe",
        "--service",
        service,
        "--hold",
        &hold,
        "--held-file",
        &held,
        "--wait-file",
        &never,
        "--expect",
        &hold,
    ];
    let mut procs = vec![d.spawn("sub", &s)];
    let start = std::time::Instant::now();
    while publisher.subscriber_count() == 0 {
        assert!(start.elapsed() < WATCHDOG, "the subscriber never connected");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for seq in 0..send {
        assert_eq!(publisher.send_copy(TestMsg::new(0, seq)).unwrap(), 1);
    }
    d.wait_file("held", &mut procs);
    procs.pop().unwrap().kill();
}

/// A subscriber killed while it holds samples and has more queued: its
/// chunks are stuck until its node is reclaimed, then the publisher's pool is
/// whole again and sending goes on.
#[test]
fn chunks_held_by_a_killed_subscriber_come_back() {
    let d = Domain::new("killed-holder-chunks", HELPER);
    let (cfg, node, svc) = in_test_service(&d, "it/held");
    let publisher = svc.publisher_builder().create().unwrap();
    // Sends 4: the subscriber holds 2, 2 stay queued.
    kill_a_holding_subscriber(&d, "it/held", &publisher, 2, 4);
    let pool = publisher.pool_size() as usize;
    assert!(
        publisher.free_chunks() < pool,
        "the dead subscriber holds chunks"
    );

    let dry = hako::reclaim_dead_nodes(&cfg, true).unwrap();
    assert_eq!(dry.dead_nodes.len(), 1, "{dry:?}");
    assert_eq!(dry.ports, 1, "{dry:?}");
    assert!(dry.dead_nodes[0].pid.is_some());
    assert_eq!(publisher.subscriber_count(), 1, "a dry run changes nothing");

    let done = hako::reclaim_dead_nodes(&cfg, false).unwrap();
    assert_eq!(done.dead_nodes, dry.dead_nodes);
    assert_eq!(done.ports, 1);
    assert!(!done.files.is_empty());
    assert_eq!(publisher.subscriber_count(), 0);
    assert_eq!(publisher.free_chunks(), pool, "chunks leaked");
    assert!(hako::reclaim_dead_nodes(&cfg, false).unwrap().is_empty());
    let sub = svc.subscriber_builder().create().unwrap();
    assert_eq!(publisher.send_copy(TestMsg::new(0, 9)).unwrap(), 1);
    assert_eq!(sub.receive().unwrap().unwrap().seq, 9);
    drop((sub, publisher, svc, node));
    d.finish();
}

/// A publisher killed after sending: a live subscriber keeps reading what it
/// holds and what was queued, the dead publisher's entry and segment are
/// reclaimed, and a new publisher reaches the subscriber.
#[test]
fn samples_of_a_killed_publisher_stay_readable() {
    let d = Domain::new("killed-publisher", HELPER);
    let (cfg, node, svc) = in_test_service(&d, "it/dead-pub");
    let sub = svc.subscriber_builder().create().unwrap();
    let paused = d.arg("paused");
    let never = d.arg("never");
    let p = [
        "publish",
        "--service",
        "it/dead-pub",
        "--count",
        "10",
        "--wait-subscribers",
        "1",
        "--pause-at",
        "2",
        "--pause-file",
        &never,
        "--paused-file",
        &paused,
    ];
    let mut procs = vec![d.spawn("pub", &p)];
    d.wait_file("paused", &mut procs);
    let first = sub.receive().unwrap().expect("sample 0");
    procs.pop().unwrap().kill();
    let done = hako::reclaim_dead_nodes(&cfg, false).unwrap();
    assert_eq!((done.dead_nodes.len(), done.ports), (1, 1), "{done:?}");
    // Held and queued samples of the dead publisher are intact.
    assert!(first.is_intact() && first.seq == 0);
    let second = sub.receive().unwrap().expect("sample 1 was queued");
    assert!(second.is_intact() && second.seq == 1);
    drop((first, second));
    assert!(sub.receive().unwrap().is_none());
    assert_eq!(sub.publisher_count(), 0);
    let publisher = svc.publisher_builder().create().unwrap();
    assert_eq!(publisher.send_copy(TestMsg::new(1, 5)).unwrap(), 1);
    assert_eq!(sub.receive().unwrap().unwrap().seq, 5);
    drop((sub, publisher, svc, node));
    d.finish();
}

/// Nobody calls for a reclaim: the next change of the service's tables (a
/// subscriber joining) makes the ports that follow it notice the dead one.
#[test]
fn a_connection_update_notices_a_dead_subscriber() {
    let d = Domain::new("killed-noticed", HELPER);
    let (cfg, node, svc) = in_test_service(&d, "it/noticed");
    let publisher = svc.publisher_builder().create().unwrap();
    kill_a_holding_subscriber(&d, "it/noticed", &publisher, 1, 1);
    let sub = svc.subscriber_builder().create().unwrap();
    assert_eq!(publisher.send_copy(TestMsg::new(0, 1)).unwrap(), 1);
    assert_eq!(sub.receive().unwrap().unwrap().seq, 1);
    assert_eq!(publisher.subscriber_count(), 1);
    assert_eq!(publisher.free_chunks(), publisher.pool_size() as usize);
    drop((sub, publisher, svc, node));
    // Its node file is the domain's business (it may own ports elsewhere):
    // the next node created, or `hako clean`, removes it.
    let done = hako::reclaim_dead_nodes(&cfg, false).unwrap();
    assert_eq!((done.dead_nodes.len(), done.ports), (1, 0), "{done:?}");
    d.finish();
}
