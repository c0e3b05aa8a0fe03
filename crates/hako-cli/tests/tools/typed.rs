//! `hako pub` and `hako sub` on services whose payload is not `[u8]`: this
//! test process owns the services (a Rust program with its own types), the
//! commands run as a user runs them.

use std::io::Write;
use std::process::{Output, Stdio};
use std::time::Instant;

use hako::{Node, NodeBuilder, PubSubService, ShmSafe, Subscriber};
use serde_json::Value;

use super::{text, wait, Domain, WATCHDOG};

/// A struct as a program would publish it.
#[derive(Debug, Clone, Copy, PartialEq, Default, ShmSafe)]
#[hako(type_name = "demo::Reading")]
#[repr(C)]
struct Reading {
    id: u32,
    value: f32,
}

/// This process's node in the domain of `d`.
fn node(d: &Domain) -> Node {
    NodeBuilder::new()
        .name("typed-owner")
        .unwrap()
        .config(&hako::Config::default().with_root(&d.0))
        .signal_handling(false)
        .create()
        .unwrap()
}

fn service<T: hako::Payload + ?Sized>(node: &Node, name: &str) -> PubSubService<T> {
    node.service_builder(&name.try_into().unwrap())
        .publish_subscribe::<T>()
        .create()
        .unwrap()
}

/// Waits until `n` subscribers are connected to `p`.
fn subscribers<T: hako::Payload + ?Sized>(p: &hako::Publisher<T>, n: usize) {
    let start = Instant::now();
    loop {
        p.update_connections();
        if p.subscriber_count() >= n {
            return;
        }
        assert!(start.elapsed() < WATCHDOG, "no subscriber came");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The next sample of `s`, under the watchdog.
fn next<T: hako::Payload + ?Sized>(s: &Subscriber<T>) -> hako::Sample<T> {
    let start = Instant::now();
    loop {
        if let Some(x) = s
            .receive_timeout(std::time::Duration::from_millis(50))
            .unwrap()
        {
            return x;
        }
        assert!(start.elapsed() < WATCHDOG, "no sample came");
    }
}

/// `hako` with `args`, `input` on its stdin.
fn run_with_stdin(d: &Domain, args: &[&str], input: &[u8]) -> Output {
    let mut child = d
        .cmd(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    wait(child)
}

fn json_lines(o: &Output) -> Vec<Value> {
    text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn sub_prints_samples_of_any_type_as_a_hex_dump_headed_by_the_type() {
    let d = Domain::new("typed-sub");
    let node = node(&d);
    let words = service::<u64>(&node, "demo/u64");
    let readings = service::<Reading>(&node, "demo/reading");
    let floats = service::<[f32]>(&node, "demo/floats");
    let p_words = words.publisher_builder().create().unwrap();
    let p_readings = readings.publisher_builder().create().unwrap();
    let p_floats = floats
        .publisher_builder()
        .max_slice_len(4)
        .create()
        .unwrap();

    // JSON: one object a sample, the publisher's id as a string.
    let sub = d.spawn(&[
        "sub",
        "demo/u64",
        "--count",
        "2",
        "--json",
        "--timeout",
        "30",
    ]);
    subscribers(&p_words, 1);
    p_words.send_copy(10).unwrap();
    p_words.send_copy(u64::MAX - 1).unwrap();
    let o = wait(sub);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 2, "{}", text(&o.stdout));
    let id = format!("{:016x}", p_words.id());
    for (l, hex) in lines.iter().zip(["0a00000000000000", "feffffffffffffff"]) {
        assert_eq!(l["publisher"], id.as_str(), "{l}");
        assert_eq!(l["type"], "u64", "{l}");
        assert_eq!(
            (l["size"].clone(), l["align"].clone()),
            (8.into(), 8.into())
        );
        assert_eq!(l["slice"], false, "{l}");
        assert_eq!(l["bytes"], 8, "{l}");
        assert_eq!(l["hex"], hex, "{l}");
    }

    // Text: the type's name, size and alignment, then the bytes.
    let sub = d.spawn(&["sub", "demo/reading", "--count", "1", "--timeout", "30"]);
    subscribers(&p_readings, 1);
    p_readings.send_copy(Reading { id: 7, value: 1.5 }).unwrap();
    let o = wait(sub);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "demo::Reading (8 B, align 4): 07 00 00 00 00 00 c0 3f\n"
    );

    // A slice: its length in elements, and all of its bytes.
    let sub = d.spawn(&["sub", "demo/floats", "--count", "2", "--timeout", "30"]);
    subscribers(&p_floats, 1);
    p_floats.send_slice_copy(&[1.0, 2.0]).unwrap();
    p_floats.send_slice_copy(&[]).unwrap();
    let o = wait(sub);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "[f32] (2 x 4 B, align 4): 00 00 80 3f 00 00 00 40\n[f32] (0 x 4 B, align 4):\n"
    );
    let sub = d.spawn(&[
        "sub",
        "demo/floats",
        "--count",
        "1",
        "--json",
        "--timeout",
        "30",
    ]);
    subscribers(&p_floats, 1);
    p_floats.send_slice_copy(&[-2.0]).unwrap();
    let o = wait(sub);
    let l = &json_lines(&o)[0];
    assert_eq!(
        (l["type"].clone(), l["slice"].clone(), l["len"].clone()),
        ("[f32]".into(), true.into(), 1.into()),
        "{l}"
    );
    assert_eq!(
        (l["bytes"].clone(), l["hex"].clone()),
        (4.into(), "000000c0".into())
    );
}

#[test]
fn pub_sends_hex_and_binary_to_services_of_any_type() {
    let d = Domain::new("typed-pub");
    let node = node(&d);
    let words = service::<u64>(&node, "demo/u64");
    let readings = service::<Reading>(&node, "demo/reading");
    let floats = service::<[f32]>(&node, "demo/floats");
    let s_words = words.subscriber_builder().create().unwrap();
    let s_readings = readings.subscriber_builder().create().unwrap();
    let s_floats = floats.subscriber_builder().create().unwrap();

    // Hex, spaces allowed; --json says what went out.
    let o = d.run(&[
        "pub",
        "demo/u64",
        "--hex",
        "0a 00 00 00 00 00 00 00",
        "ff00000000000000",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sent = json_lines(&o);
    assert_eq!(sent.len(), 2);
    assert_eq!(
        (sent[0]["bytes"].clone(), sent[0]["subscribers"].clone()),
        (8.into(), 1.into())
    );
    assert_eq!(*next(&s_words), 10);
    assert_eq!(*next(&s_words), 255);

    // Raw bytes on stdin, cut into values of the type's size.
    let mut input = 1u64.to_le_bytes().to_vec();
    input.extend(2u64.to_le_bytes());
    let o = run_with_stdin(&d, &["pub", "demo/u64", "--binary"], &input);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!((*next(&s_words), *next(&s_words)), (1, 2));

    // Hex lines on stdin, to a struct.
    let o = run_with_stdin(
        &d,
        &["pub", "demo/reading", "--hex"],
        b"07000000 0000c03f\n",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(*next(&s_readings), Reading { id: 7, value: 1.5 });

    // A slice: all of stdin is one message, of as many elements as it holds.
    let input: Vec<u8> = [1.0f32, 2.0, 3.0]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    let o = run_with_stdin(&d, &["pub", "demo/floats", "--binary"], &input);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(&*next(&s_floats), &[1.0, 2.0, 3.0]);
    let o = d.run(&["pub", "demo/floats", "--hex", "0000803f"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(&*next(&s_floats), &[1.0]);
}

#[test]
fn pub_refuses_messages_that_do_not_fit_the_type() {
    let d = Domain::new("typed-misfit");
    let node = node(&d);
    let words = service::<u64>(&node, "demo/u64");
    let _floats = service::<[f32]>(&node, "demo/floats");
    let s_words = words.subscriber_builder().create().unwrap();
    let usage_error = |o: &Output, wanted: &[&str]| {
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        let e = text(&o.stderr);
        for w in wanted {
            assert!(e.contains(w), "{w:?} not in {e}");
        }
    };
    // Too short: the error names the type and both sizes.
    let o = d.run(&["pub", "demo/u64", "--hex", "0a000000"]);
    usage_error(&o, &["u64 (8 B, align 8)", "exactly 8 bytes", "has 4"]);
    // Text on a typed service: the error says how to give bytes.
    let o = d.run(&["pub", "demo/u64", "hello"]);
    usage_error(&o, &["u64", "--hex", "--binary"]);
    // Stdin that is not a whole number of values.
    let o = run_with_stdin(&d, &["pub", "demo/u64", "--binary"], &[0; 12]);
    usage_error(&o, &["u64 (8 B, align 8)", "12 bytes"]);
    // A slice takes a whole number of elements.
    let o = d.run(&["pub", "demo/floats", "--hex", "000000"]);
    usage_error(
        &o,
        &["[f32] (elements of 4 B, align 4)", "multiple of 4", "has 3"],
    );
    // Not hex at all.
    let o = d.run(&["pub", "demo/u64", "--hex", "0a0000000000000g"]);
    usage_error(&o, &["'g'", "hex"]);
    // --binary takes no arguments.
    let o = d.run(&["pub", "demo/u64", "--binary", "00"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    // Nothing was sent by any of them.
    assert!(s_words.receive().unwrap().is_none());
}

#[test]
fn create_is_refused_on_a_service_of_another_type() {
    let d = Domain::new("typed-create");
    let node = node(&d);
    let _words = service::<u64>(&node, "demo/u64");
    for args in [
        &["sub", "demo/u64", "--create", "--timeout", "0.1"][..],
        &["pub", "demo/u64", "--create", "--hex", "0a00000000000000"],
    ] {
        let o = d.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        let e = text(&o.stderr);
        assert!(
            e.contains("u64 (8 B, align 8)") && e.contains("--create") && e.contains("[u8]"),
            "{e}"
        );
    }
    // Without --create, the same commands use the service; a missing typed
    // service is missing as any other.
    let o = d.run(&["sub", "demo/u64", "--timeout", "0.1"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    let o = d.run(&["pub", "demo/none", "--hex", "00"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
}

#[test]
fn a_bytes_service_takes_hex_and_binary_too() {
    let d = Domain::new("typed-bytes");
    let sub = d.spawn(&[
        "sub",
        "demo/raw",
        "--create",
        "--hex",
        "--count",
        "2",
        "--timeout",
        "30",
    ]);
    d.service("demo/raw");
    // All of stdin, newlines and all, is one message.
    let o = run_with_stdin(
        &d,
        &["pub", "demo/raw", "--binary", "--wait-subscribers", "1"],
        b"\x00\x01\xffa\nb\n",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = d.run(&[
        "pub",
        "demo/raw",
        "--hex",
        "68 69",
        "--wait-subscribers",
        "1",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = wait(sub);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "0001ff610a620a\n6869\n");
    // --max-len holds for --binary as for text.
    let o = run_with_stdin(
        &d,
        &["pub", "demo/raw", "--create", "--binary", "--max-len", "4"],
        b"12345",
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--max-len 4"),
        "{}",
        text(&o.stderr)
    );
}

/// `hako call` on a service of typed requests and responses: requests in
/// hex (refused as text, or when they do not fit the type), responses as
/// hex dumps headed by the type. And a command of another pattern is
/// told which commands talk to the service.
#[test]
fn call_talks_to_a_typed_service_in_hex() {
    let d = Domain::new("typed-call");
    let node = node(&d);
    let svc = node
        .service_builder(&"demo/double".try_into().unwrap())
        .request_response::<Reading, u64>()
        .create()
        .unwrap();
    let server = svc.server_builder().create().unwrap();
    let serve = std::thread::spawn(move || {
        let request = server.blocking_receive().unwrap();
        let r = *request;
        request.send_last_copy(u64::from(r.id) * 2).unwrap();
    });
    let o = d.run(&["call", "demo/double", "hello"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("give them in hex (--hex)"),
        "{}",
        text(&o.stderr)
    );
    let o = d.run(&["call", "demo/double", "--hex", "01 02"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("exactly 8 bytes"),
        "{}",
        text(&o.stderr)
    );
    // id 21, value 0.0.
    let o = d.run(&["call", "demo/double", "--hex", "15000000 00000000"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "u64 (8 B, align 8): 2a 00 00 00 00 00 00 00\n"
    );
    serve.join().unwrap();
    let o = d.run(&["pub", "demo/double", "x"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("request/response service: talk to it with `hako call`"),
        "{}",
        text(&o.stderr)
    );
    drop((svc, node));
}
