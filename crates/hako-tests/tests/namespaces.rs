//! Containers: processes in different PID namespaces that share a domain
//! (one tmpfs seen from each) have equal PIDs, as each is PID 1 of its
//! own. Liveness is a lock on the node's file, never a PID, so none takes
//! another for dead, and a dead one is still reclaimed.
//!
//! Each helper runs under `unshare --pid --fork --kill-child` (needs
//! root, as the suite's other tests of users do; elsewhere it says so).

use std::process::Command;
use std::time::Duration;

use hako::Config;
use hako_tests::harness::{Domain, Proc, WATCHDOG};

const HELPER: &str = env!("CARGO_BIN_EXE_hako-test-helper");

/// The helper with `args`, as PID 1 of a PID namespace of its own.
fn in_own_pid_namespace(d: &Domain, label: &str, args: &[&str]) -> Proc {
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--kill-child", HELPER])
        .env("HAKO_ROOT", &d.root)
        .env_remove("HAKO_CONFIG");
    d.spawn_command(label, cmd, args, WATCHDOG)
}

fn may_unshare() -> bool {
    rustix::process::geteuid().is_root()
        && Command::new("unshare")
            .args(["--pid", "--fork", "true"])
            .status()
            .is_ok_and(|s| s.success())
}

#[test]
fn nodes_with_equal_pids_in_other_namespaces_are_alive_and_a_dead_one_is_reclaimed() {
    if !may_unshare() {
        println!("cannot make PID namespaces here (not root, or no unshare): skipped");
        return;
    }
    let d = Domain::new("pidns", HELPER);
    let cfg = Config::default().with_root(&d.root);
    let svc = [
        "--service",
        "it/pidns",
        "--overflow",
        "backpressure",
        "--buffer",
        "4",
    ];
    // A holder with a publisher port, which will die; a subscriber.
    let (held, release) = (d.arg("held"), d.arg("release"));
    let mut hold = vec!["hold", "--port", "publisher", "--ready-file", &held];
    hold.extend(["--release-file", &release]);
    hold.extend(svc);
    let mut procs = vec![in_own_pid_namespace(&d, "holder", &hold)];
    d.wait_file("held", &mut procs);
    let mut sub = vec!["subscribe", "--expect", "100", "--ready-file"];
    let ready = d.arg("sub-ready");
    sub.push(&ready);
    sub.extend(svc);
    procs.push(in_own_pid_namespace(&d, "subscriber", &sub));
    d.wait_file("sub-ready", &mut procs);
    // Every node there says PID 1, and every one is alive.
    let nodes = hako::inspect::nodes(&cfg).unwrap();
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert!(
        nodes.iter().all(|n| n.pid == Some(1) && n.alive),
        "{nodes:?}"
    );
    // A publisher, PID 1 too: joining reclaims dead nodes, and finds none.
    let mut publish = vec![
        "publish",
        "--count",
        "100",
        "--wait-subscribers",
        "1",
        "--linger",
    ];
    publish.extend(svc);
    procs.push(in_own_pid_namespace(&d, "publisher", &publish));
    let publisher = procs.pop().unwrap().wait();
    publisher.assert_code(0);
    let subscriber = procs.pop().unwrap().wait();
    subscriber.assert_code(0);
    assert_eq!(subscriber.result().get("seqs"), "0:0-99");
    assert!(hako::reclaim_dead_nodes(&cfg, true)
        .unwrap()
        .dead_nodes
        .is_empty());

    // The holder dies (its namespace's PID 1 killed): it alone is dead,
    // and reclaimed with its port, while a node of this process lives on.
    let mine = d.node();
    let holder = procs.pop().unwrap();
    holder.kill();
    let start = std::time::Instant::now();
    while hako::inspect::nodes(&cfg)
        .unwrap()
        .iter()
        .any(|n| n.pid == Some(1) && n.alive)
    {
        assert!(start.elapsed() < WATCHDOG, "the holder's node never died");
        std::thread::sleep(Duration::from_millis(10));
    }
    let done = hako::reclaim_dead_nodes(&cfg, false).unwrap();
    assert_eq!(done.dead_nodes.len(), 1, "{done:?}");
    assert_eq!(done.dead_nodes[0].pid, Some(1));
    assert_eq!(done.ports, 1, "{done:?}");
    let left = hako::inspect::nodes(&cfg).unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].alive && left[0].id == mine.id());
    drop(mine);
    d.finish();
}
