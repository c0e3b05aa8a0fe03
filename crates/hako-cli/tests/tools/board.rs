//! `hako inspect`, `hako list` and `hako board get|set|watch` on a
//! blackboard that this test process owns (a Rust program with its own
//! types), the commands run as a user runs them.

use hako::{BlackboardService, Node, NodeBuilder, ShmSafe};
use serde_json::Value;

use super::{text, wait, Domain};

/// A struct the tool can only show and take as hex.
#[derive(Debug, Clone, Copy, PartialEq, ShmSafe)]
#[hako(type_name = "demo::Limits")]
#[repr(C)]
struct Limits {
    low: u16,
    high: u16,
}

fn node(d: &Domain) -> Node {
    NodeBuilder::new()
        .name("board-owner")
        .unwrap()
        .config(&hako::Config::default().with_root(&d.0))
        .signal_handling(false)
        .create()
        .unwrap()
}

fn board(node: &Node) -> BlackboardService {
    node.service_builder(&"demo/state".try_into().unwrap())
        .blackboard()
        .entry::<f64>("speed", 1.5)
        .entry::<u8>("gear", 2)
        .entry::<[f32; 3]>("position", [0.0, 1.0, 2.0])
        .entry::<Limits>("limits", Limits { low: 1, high: 9 })
        .create()
        .unwrap()
}

#[test]
fn inspect_lists_entries_and_board_reads_and_writes_them() {
    let d = Domain::new("board");
    d.make_root();
    let node = node(&d);
    let b = board(&node);

    let list = d.json(&["list", "--json"]);
    assert_eq!(list[0]["pattern"], "blackboard");
    assert_eq!(list[0]["payload"], "4 entries");
    let o = d.run(&["inspect", "demo/state"]);
    let out = text(&o.stdout);
    assert!(
        out.contains("speed  f64 (8 B, align 8)  version 0"),
        "{out}"
    );
    assert!(
        out.contains("limits  demo::Limits (4 B, align 2)  version 0"),
        "{out}"
    );
    assert!(
        out.contains("writers (0)") && out.contains("readers (0)"),
        "{out}"
    );

    // Every entry, as text and as JSON.
    let o = d.run(&["board", "get", "demo/state"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(out.contains("speed  version 0  f64  1.5"), "{out}");
    assert!(
        out.contains("position  version 0  [f32; 3]  [0.0,1.0,2.0]"),
        "{out}"
    );
    assert!(
        out.contains("limits  version 0  demo::Limits  01 00 09 00"),
        "{out}"
    );
    let line = d.run(&["board", "get", "demo/state", "gear", "--json"]);
    let v: Value = serde_json::from_slice(&line.stdout).unwrap();
    assert_eq!(
        (v["value"].as_u64(), v["version"].as_u64()),
        (Some(2), Some(0))
    );

    // Writing: numbers, arrays, hex; the program sees each value.
    for args in [
        &["board", "set", "demo/state", "speed", "2.25"][..],
        &["board", "set", "demo/state", "position", "1,2,3"],
        &["board", "set", "demo/state", "limits", "--hex", "0200 0800"],
    ] {
        let o = d.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        assert!(text(&o.stdout).contains("version 1"), "{}", text(&o.stdout));
    }
    let r = b.reader_builder().create().unwrap();
    assert_eq!(r.entry::<f64>("speed").unwrap().get().unwrap(), 2.25);
    assert_eq!(
        r.entry::<[f32; 3]>("position").unwrap().get().unwrap(),
        [1.0, 2.0, 3.0]
    );
    assert_eq!(
        r.entry::<Limits>("limits")
            .unwrap()
            .get_with_version()
            .unwrap(),
        (Limits { low: 2, high: 8 }, 1)
    );
    let o = d.run(&["inspect", "demo/state", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let versions: Vec<u64> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, [1, 0, 1, 1]);

    // What cannot be done says why.
    for (args, why) in [
        (&["board", "set", "demo/state", "limits", "3"][..], "--hex"),
        (
            &["board", "set", "demo/state", "gear", "300"],
            "does not fit",
        ),
        (
            &["board", "set", "demo/state", "gear", "--hex", "0102"],
            "holds 1 bytes",
        ),
        (
            &["board", "get", "demo/state", "nope"],
            "its entries: speed, gear",
        ),
        (&["board", "get", "demo/none"], "does not exist"),
    ] {
        let o = d.run(args);
        assert!(!o.status.success(), "{args:?}");
        assert!(
            text(&o.stderr).contains(why),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    let writer = b.writer_builder().create().unwrap();
    let o = d.run(&["board", "set", "demo/state", "gear", "3"]);
    assert!(
        text(&o.stderr).contains("has a writer already"),
        "{}",
        text(&o.stderr)
    );
    drop(writer);
    let o = d.run(&["notify", "demo/state"]);
    assert!(
        text(&o.stderr).contains("hako board get"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn board_watch_prints_each_change() {
    let d = Domain::new("board-watch");
    d.make_root();
    let node = node(&d);
    let b = board(&node);
    let watch = d.spawn(&["board", "watch", "demo/state", "gear", "--count", "2"]);
    // Until its reader is there (it reads the value first, then waits).
    d.until("the watcher's reader", || {
        let v = d.json(&["inspect", "demo/state", "--json"]);
        v["subscribers"].as_array().is_some_and(|a| a.len() == 1)
    });
    let writer = b.writer_builder().create().unwrap();
    let mut gear = writer.entry::<u8>("gear").unwrap();
    gear.update(3).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    gear.update(4).unwrap();
    let o = wait(watch);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "gear  version 0  u8  2", "{out}");
    assert_eq!(
        lines.last().copied(),
        Some("gear  version 2  u8  4"),
        "{out}"
    );
}
