//! Restricting what a bridge exposes with Zenoh's access control, as
//! docs/bridge.md shows it: the configuration of the guide lets in what
//! comes over loopback; one that names a Zenoh id lets in that peer only.

mod common;
use std::time::{Duration, Instant};

use common::*;

/// The access-control configuration docs/bridge.md shows (its json5 block
/// under "What a bridge exposes").
fn guide_config() -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bridge.md"))
        .unwrap();
    let start = doc
        .find("```json5\n")
        .expect("the guide shows a json5 block")
        + 9;
    let end = start + doc[start..].find("```").unwrap();
    // Indented in a list item.
    doc[start..end]
        .lines()
        .map(|l| l.strip_prefix("  ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn pubsub(node: &hako::Node) -> hako::PubSubService<u64> {
    node.service_builder(&"t/acl".try_into().unwrap())
        .publish_subscribe::<u64>()
        .subscriber_max_buffer_size(512)
        .open_or_create()
        .unwrap()
}

#[test]
fn access_control_refuses_what_it_does_not_allow() {
    let dir = std::env::temp_dir().join(format!("hako-acl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The guide's configuration speaks of the default prefix.
    let p = "hako";
    let (a, b, c) = (
        Domain::new("acl", "a"),
        Domain::new("acl", "b"),
        Domain::new("acl", "c"),
    );
    let (pa, pb, pc) = (free_port(), free_port(), free_port());
    // The guide's configuration: over loopback, everything under hako/**.
    let guide = write(&dir, "guide.json5", &guide_config());
    let ba = bridge(&a, p, pa, &[], &["--zenoh-config", &guide]);
    let publisher = pubsub(&a.node).publisher_builder().create().unwrap();
    let sub_b = pubsub(&b.node).subscriber_builder().create().unwrap();
    let bb = bridge(&b, p, pb, &[pa], &[]);
    exactly_once(&stream(&publisher, &sub_b, 20));
    drop((ba, bb));
    // One Zenoh id let in: B's; C, on the same loopback, gets nothing.
    let b_id = "b1d0b1d0";
    let allow_b = guide_config().replace(r#"interfaces: ["lo"]"#, &format!(r#"zids: ["{b_id}"]"#));
    assert!(
        allow_b.contains(b_id),
        "the guide's subject is no longer interfaces: [\"lo\"]"
    );
    let allow_b = write(&dir, "allow-b.json5", &allow_b);
    let b_conf = write(&dir, "b.json5", &format!(r#"{{ id: "{b_id}" }}"#));
    let (pa, pb) = (free_port(), free_port());
    let _ba = bridge(&a, p, pa, &[], &["--zenoh-config", &allow_b]);
    let _bb = bridge(&b, p, pb, &[pa], &["--zenoh-config", &b_conf]);
    let sub_c = pubsub(&c.node).subscriber_builder().create().unwrap();
    let _bc = bridge(&c, p, pc, &[pa], &[]);
    while sub_b.receive().unwrap().is_some() {}
    exactly_once(&stream(&publisher, &sub_b, 20));
    // Long enough for C's bridge to have linked, were it let in.
    let until = Instant::now() + Duration::from_secs(2);
    let mut seq = 1000;
    while Instant::now() < until {
        publisher.send_copy(seq).unwrap();
        seq += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        sub_c.receive().unwrap().is_none(),
        "C got a sample through the access control"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
