//! `hako record` and `hako replay` across processes: a run of two services
//! (bytes and a `u64`) recorded, read back with the MCAP crate's reader
//! (every sample, its time and publisher, the types, the loss counts),
//! replayed into subscribers and compared byte for byte; and a
//! backpressure service recorded with `--no-loss`, nothing lost.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hako::{Node, NodeBuilder, OverflowPolicy, Publisher, Subscriber};

use super::{text, wait, Domain, WATCHDOG};

fn node(d: &Domain) -> Node {
    NodeBuilder::new()
        .name("record-test")
        .unwrap()
        .config(&hako::Config::default().with_root(&d.0))
        .signal_handling(false)
        .create()
        .unwrap()
}

fn connected<T: hako::Payload + ?Sized>(p: &Publisher<T>, n: usize) {
    let start = Instant::now();
    loop {
        p.update_connections();
        if p.subscriber_count() >= n {
            return;
        }
        assert!(start.elapsed() < WATCHDOG, "no subscriber came");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn next<T: hako::Payload + ?Sized>(s: &Subscriber<T>) -> hako::Sample<T> {
    let start = Instant::now();
    loop {
        if let Some(x) = s.receive_timeout(Duration::from_millis(50)).unwrap() {
            return x;
        }
        assert!(start.elapsed() < WATCHDOG, "no sample came");
    }
}

/// The file's messages per topic: (bytes, log time, publisher), in order;
/// the schema (name, encoding) per topic; its `hako` metadata.
type Read = (
    BTreeMap<String, Vec<(Vec<u8>, u64, String)>>,
    BTreeMap<String, (String, String)>,
    BTreeMap<String, String>,
);

fn read(path: &std::path::Path) -> Read {
    let buf = std::fs::read(path).unwrap();
    let (mut topics, mut schemas) = (BTreeMap::new(), BTreeMap::new());
    for m in mcap::MessageStream::new(&buf).unwrap() {
        let m = m.unwrap();
        let topic = m.channel.topic.clone();
        let schema = m.channel.schema.as_ref().unwrap();
        schemas.insert(
            topic.clone(),
            (schema.name.clone(), schema.encoding.clone()),
        );
        topics.entry(topic).or_insert_with(Vec::new).push((
            m.data.to_vec(),
            m.log_time,
            m.channel.metadata["publisher"].clone(),
        ));
    }
    let mut meta = BTreeMap::new();
    for r in mcap::read::LinearReader::new(&buf).unwrap() {
        if let mcap::records::Record::Metadata(m) = r.unwrap() {
            if m.name == "hako" {
                meta = m.metadata;
            }
        }
    }
    (topics, schemas, meta)
}

#[test]
fn a_recording_reads_back_and_replays_byte_for_byte() {
    const N: u64 = 40;
    let d = Domain::new("record");
    let file = std::env::temp_dir().join(format!("hako-record-{}.mcap", std::process::id()));
    let node = node(&d);
    let bytes = node
        .service_builder(&"demo/bytes".try_into().unwrap())
        .publish_subscribe::<[u8]>()
        .create()
        .unwrap();
    let values = node
        .service_builder(&"demo/value".try_into().unwrap())
        .publish_subscribe::<u64>()
        .create()
        .unwrap();
    let pb = bytes
        .publisher_builder()
        .max_slice_len(64)
        .create()
        .unwrap();
    let pv = values.publisher_builder().create().unwrap();
    let rec = d.spawn(&[
        "record",
        "demo/bytes",
        "demo/value",
        "-o",
        file.to_str().unwrap(),
        "--count",
        &(2 * N).to_string(),
    ]);
    connected(&pb, 1);
    connected(&pv, 1);
    let msg = |i: u64| format!("message {i}").into_bytes();
    for i in 0..N {
        pb.send_slice_copy(&msg(i)).unwrap();
        pv.send_copy(i * 3).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let o = wait(rec);
    assert!(o.status.success(), "{}", text(&o.stderr));

    let (topics, schemas, meta) = read(&file);
    let got = &topics["demo/bytes"];
    assert_eq!(got.len() as u64, N);
    for (i, (data, _, publisher)) in got.iter().enumerate() {
        assert_eq!(data, &msg(i as u64));
        assert_eq!(publisher, &format!("{:016x}", pb.id()));
    }
    let vals = &topics["demo/value"];
    assert_eq!(vals.len() as u64, N);
    for (i, (data, _, publisher)) in vals.iter().enumerate() {
        assert_eq!(data, &(i as u64 * 3).to_ne_bytes());
        assert_eq!(publisher, &format!("{:016x}", pv.id()));
    }
    // Receive times, in order and spread over the run.
    assert!(got.windows(2).all(|w| w[0].1 <= w[1].1));
    let span = got.last().unwrap().1 - got[0].1;
    assert!(
        span >= Duration::from_millis(2 * (N - 1)).as_nanos() as u64 / 2,
        "{span} ns"
    );
    assert_eq!(
        schemas["demo/value"],
        ("u64".to_owned(), "hako-type".to_owned())
    );
    assert_eq!(meta["demo/bytes.received"], N.to_string());
    assert_eq!(meta["demo/bytes.missed"], "0");

    // Replayed into subscribers of both services: the same bytes, in order,
    // spread as they were recorded.
    let sb = bytes.subscriber_builder().create().unwrap();
    let sv = values.subscriber_builder().create().unwrap();
    let play = d.spawn(&["replay", file.to_str().unwrap(), "--wait-subscribers", "1"]);
    // Both in turn, as they were sent (the queues hold two samples).
    let first = next(&sb);
    let started = Instant::now();
    assert_eq!(&*first, msg(0).as_slice());
    assert_eq!(*next(&sv), 0);
    for i in 1..N {
        assert_eq!(&*next(&sb), msg(i).as_slice());
        assert_eq!(*next(&sv), i * 3);
    }
    let took = started.elapsed();
    assert!(
        took.as_nanos() as u64 >= span / 2,
        "{took:?} for a span of {span} ns"
    );
    let o = wait(play);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains(&format!("replayed {} sample(s)", 2 * N)));

    // Only one service, twice as fast.
    let play = d.run(&[
        "replay",
        file.to_str().unwrap(),
        "--service",
        "demo/value",
        "--rate",
        "2",
    ]);
    assert!(play.status.success(), "{}", text(&play.stderr));
    assert!(text(&play.stderr).contains(&format!("replayed {N} sample(s)")));
    // Again and again until stopped (what the last replay left queued
    // goes first).
    while sv.receive().unwrap().is_some() {}
    let play = d.spawn(&[
        "replay",
        file.to_str().unwrap(),
        "--service",
        "demo/value",
        "--rate",
        "10",
        "--loop",
    ]);
    for i in 0..N + 5 {
        assert_eq!(*next(&sv), (i % N) * 3);
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(play.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    assert!(wait(play).status.success());
    let o = d.run(&["replay", file.to_str().unwrap(), "--service", "demo/none"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn no_loss_records_every_sample_of_a_backpressure_service() {
    const N: u64 = 5_000;
    let d = Domain::new("record-no-loss");
    let file = std::env::temp_dir().join(format!("hako-no-loss-{}.mcap", std::process::id()));
    let node = node(&d);
    let service = node
        .service_builder(&"demo/all".try_into().unwrap())
        .publish_subscribe::<u64>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(4)
        .create()
        .unwrap();
    let p = service.publisher_builder().create().unwrap();
    let rec = d.spawn(&[
        "record",
        "demo/all",
        "--no-loss",
        "-o",
        file.to_str().unwrap(),
        "--count",
        &N.to_string(),
    ]);
    connected(&p, 1);
    // As fast as it can: the recorder holds it back instead of losing.
    for i in 0..N {
        p.send_copy(i).unwrap();
    }
    let o = wait(rec);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let (topics, _, meta) = read(&file);
    let got: Vec<u64> = topics["demo/all"]
        .iter()
        .map(|(d, _, _)| u64::from_ne_bytes(d.as_slice().try_into().unwrap()))
        .collect();
    assert_eq!(got, (0..N).collect::<Vec<_>>());
    assert_eq!(meta["demo/all.missed"], "0");
    std::fs::remove_file(&file).unwrap();
}
