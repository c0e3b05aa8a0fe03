//! Discovery across processes: a [`hako::Watcher`] in this process (on a
//! waitset) sees the services, nodes and ports of `hako` processes come,
//! leave, die and be reclaimed; `hako list --watch --json` prints them.

use std::time::{Duration, Instant};

use hako::{Change, PortChange, Role, WaitEvent, WaitSet, Watcher};
use serde_json::Value;

use super::{text, wait, Domain, WATCHDOG};

/// Waits on a waitset (the watcher's descriptor attached) until `want`
/// holds for the changes seen so far; counts the waitset's wake-ups for
/// the watcher in `woken` (another reader of the domain may wake it for
/// nothing, so a wake-up need not bring changes).
fn until(
    w: &mut Watcher,
    seen: &mut Vec<Change>,
    woken: &mut usize,
    what: &str,
    want: impl Fn(&[Change]) -> bool,
) {
    let fd = w.ready_fd().unwrap();
    let mut ws = WaitSet::without_signal_handling().unwrap();
    let id = ws.attach_fd(std::os::fd::AsFd::as_fd(&fd)).unwrap();
    let start = Instant::now();
    while !want(seen) {
        assert!(start.elapsed() < WATCHDOG, "never: {what}; saw {seen:#?}");
        ws.wait_and_process_timeout(
            |e| *woken += usize::from(e == WaitEvent::Ready(id)),
            Duration::from_millis(500),
        )
        .unwrap();
        seen.extend(w.try_changes().unwrap());
    }
}

fn port_of(c: &Change) -> Option<(&str, &PortChange)> {
    match c {
        Change::PortAdded(p) => Some(("added", p)),
        Change::PortRemoved(p) => Some(("removed", p)),
        Change::PortDied(p) => Some(("died", p)),
        Change::PortReclaimed(p) => Some(("reclaimed", p)),
        _ => None,
    }
}

fn has_port(seen: &[Change], what: &str, service: &str, role: Role) -> bool {
    seen.iter()
        .filter_map(port_of)
        .any(|(w, p)| w == what && p.service == service && p.role == role)
}

#[test]
fn a_watcher_sees_the_domain_change() {
    let d = Domain::new("watch");
    d.make_root();
    let mut w = Watcher::new(&hako::Config::default().with_root(&d.0)).unwrap();
    let mut seen = Vec::new();
    let mut woken = 0;

    // A subscriber's process joins, with its service and port.
    let sub = d.spawn(&["sub", "demo/w", "--create", "--count", "2"]);
    until(&mut w, &mut seen, &mut woken, "a subscriber", |s| {
        s.iter().any(|c| matches!(c, Change::ServiceCreated { service, pattern } if service == "demo/w" && *pattern == "publish_subscribe"))
            && s.iter().any(|c| matches!(c, Change::NodeJoined { name, .. } if name == "hako-sub"))
            && has_port(s, "added", "demo/w", Role::Subscriber)
    });
    // A publisher comes, sends twice, and both leave. (A port that came
    // and went between two readings would not be seen: this one stays a
    // while.)
    let pub_ = d.spawn(&[
        "pub",
        "demo/w",
        "hi",
        "there",
        "--interval",
        "300",
        "--wait-subscribers",
        "1",
    ]);
    until(&mut w, &mut seen, &mut woken, "both gone", |s| {
        has_port(s, "added", "demo/w", Role::Publisher)
            && has_port(s, "removed", "demo/w", Role::Subscriber)
            && s.iter()
                .filter(|c| matches!(c, Change::NodeLeft { .. }))
                .count()
                == 2
            && s.iter()
                .any(|c| matches!(c, Change::ServiceRemoved { service } if service == "demo/w"))
    });
    assert!(wait(pub_).status.success());
    assert!(wait(sub).status.success());
    assert!(
        !seen.iter().any(|c| matches!(c, Change::NodeDied { .. })),
        "{seen:#?}"
    );

    // A process killed outright: its node and port die, and `hako clean`
    // reclaims them.
    seen.clear();
    let mut k = d.spawn(&["sub", "demo/k", "--create"]);
    until(
        &mut w,
        &mut seen,
        &mut woken,
        "the second subscriber",
        |s| has_port(s, "added", "demo/k", Role::Subscriber),
    );
    k.kill().unwrap();
    k.wait().unwrap();
    until(&mut w, &mut seen, &mut woken, "a death", |s| {
        s.iter().any(|c| matches!(c, Change::NodeDied { .. }))
            && has_port(s, "died", "demo/k", Role::Subscriber)
    });
    let o = d.run(&["clean"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    until(&mut w, &mut seen, &mut woken, "the reclaim", |s| {
        s.iter().any(|c| matches!(c, Change::NodeReclaimed { .. }))
            && has_port(s, "reclaimed", "demo/k", Role::Subscriber)
            && s.iter()
                .any(|c| matches!(c, Change::ServiceRemoved { service } if service == "demo/k"))
    });
    // The waitset woke for the watcher (it was not its time-outs).
    assert!(woken > 0);
    // Nothing more happens: nothing more is reported.
    assert!(w.wait(Some(Duration::from_millis(200))).unwrap().is_empty());
}

#[test]
fn list_watch_prints_each_change_as_json() {
    let d = Domain::new("list-watch");
    d.make_root();
    let mut list = d.spawn(&["list", "--watch", "--json", "--count", "3"]);
    // Its first line says the watch is set; then three changes (a node, a
    // service, a port).
    let mut out = std::io::BufReader::new(list.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    let watching: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(watching["watching"], d.0.to_str().unwrap());
    let sub = d.spawn(&["sub", "demo/j", "--create", "--count", "1"]);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let o = wait(list);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let changes: Vec<Value> = rest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(changes.len(), 3, "{rest}");
    let kinds: Vec<&str> = changes
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    for want in ["service_created", "node_joined", "port_added"] {
        assert!(kinds.contains(&want), "{kinds:?}");
    }
    let port = changes
        .iter()
        .find(|c| c["change"] == "port_added")
        .unwrap();
    assert_eq!(port["service"], "demo/j");
    assert_eq!(port["role"], "subscriber");
    assert_eq!(port["port"].as_str().unwrap().len(), 16);
    let o = d.run(&["pub", "demo/j", "bye", "--wait-subscribers", "1"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(wait(sub).status.success());
}
