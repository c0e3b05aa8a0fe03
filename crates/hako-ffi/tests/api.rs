//! The C API called as C calls it (through the Rust rlib of the same
//! functions): a C-described payload shares a service with a Rust type,
//! misuse is reported instead of crashing, and listeners hand out events
//! in pieces. The cross-process and cross-language tests are C and C++
//! programs (tests/c, run by scripts/c).

use std::ffi::CStr;
use std::ptr::{null, null_mut};

use hako::{Config, NodeBuilder, ShmSafe};
use hako_c::*;

mod common;
use common::{last, node, ok, Root};

/// A struct with fields of every size, as C lays it out.
#[derive(Debug, Clone, Copy, PartialEq, Default, ShmSafe)]
#[hako(type_name = "hako_tests::Mixed")]
#[repr(C)]
struct Mixed {
    a: u8,
    b: u16,
    c: u32,
    d: u64,
    e: f32,
    f: f64,
}

/// A zeroed loan struct, as C code would declare one.
fn new_loan() -> hako_sample_mut {
    hako_sample_mut {
        data: null_mut(),
        size: 0,
        len: 0,
        _private: [0; 8],
    }
}

/// A zeroed sample struct.
fn new_sample() -> hako_sample {
    hako_sample {
        data: null(),
        size: 0,
        len: 0,
        publisher_id: 0,
        _private: [0; 8],
    }
}

fn mixed_type() -> hako_payload_type {
    hako_payload_type {
        type_name: c"hako_tests::Mixed".as_ptr(),
        size: std::mem::size_of::<Mixed>() as u64,
        align: std::mem::align_of::<Mixed>() as u64,
        slice: false,
    }
}

#[test]
fn a_payload_described_in_c_shares_a_service_with_the_rust_type() {
    let root = Root::new("mixed");
    let mut n = node(&root);
    let mut svc = null_mut();
    ok!(hako_pubsub_service_open(
        n,
        c"ffi/mixed".as_ptr(),
        &mixed_type(),
        null(),
        hako_open_mode::HAKO_CREATE,
        &mut svc
    ));
    // The Rust side opens it with the real type.
    let rust_node = NodeBuilder::new()
        .config(&Config::default().with_root(&root.0))
        .create()
        .unwrap();
    let rust_svc = rust_node
        .service_builder(&"ffi/mixed".try_into().unwrap())
        .publish_subscribe::<Mixed>()
        .open()
        .unwrap();
    let rust_sub = rust_svc.subscriber_builder().create().unwrap();
    let rust_pub = rust_svc.publisher_builder().create().unwrap();

    // C to Rust, through a loan written in place.
    let mut publisher = null_mut();
    ok!(hako_publisher_create(svc, null(), &mut publisher));
    let mut subscriber = null_mut();
    ok!(hako_subscriber_create(svc, null(), &mut subscriber));
    let want = Mixed {
        a: 1,
        b: 2,
        c: 3,
        d: 4,
        e: 5.5,
        f: 6.25,
    };
    let mut loan = new_loan();
    ok!(hako_publisher_loan(publisher, 1, &mut loan));
    let (data, size) = (loan.data, loan.size);
    assert_eq!(size, std::mem::size_of::<Mixed>());
    assert_eq!(data as usize % std::mem::align_of::<Mixed>(), 0);
    // SAFETY: `size` bytes, aligned for Mixed.
    unsafe { data.cast::<Mixed>().write(want) };
    let mut reached = 0;
    ok!(hako_publisher_send(publisher, &mut loan, &mut reached));
    assert!(loan.data.is_null(), "a sent sample is marked consumed");
    // SAFETY: a consumed sample.
    let again = unsafe { hako_publisher_send(publisher, &mut loan, null_mut()) };
    assert_eq!(again, hako_status::HAKO_ERROR_NULL_ARGUMENT, "sent twice");
    assert_eq!(reached, 2, "the Rust and the C subscriber");
    assert_eq!(*rust_sub.receive().unwrap().unwrap(), want);

    // Rust to C.
    let back = Mixed { a: 9, ..want };
    rust_pub.send_copy(back).unwrap();
    // The C subscriber gets both (from two publishers: in either order).
    let mut got = new_sample();
    let mut both = Vec::new();
    for _ in 0..2 {
        ok!(hako_subscriber_receive(subscriber, 1_000_000, &mut got));
        assert_eq!(got.size, std::mem::size_of::<Mixed>());
        // SAFETY: a live sample of `size` bytes, aligned for Mixed.
        both.push(unsafe { *got.data.cast::<Mixed>() });
        // Receiving into a struct that holds a sample would leak it.
        let mut other = new_sample();
        // SAFETY: a copy of a live sample (used only to be refused).
        let s = unsafe {
            std::ptr::copy_nonoverlapping(&got, &mut other, 1);
            hako_subscriber_receive(subscriber, 0, &mut other)
        };
        assert_eq!(s, hako_status::HAKO_ERROR_MISUSE);
        ok!(hako_sample_drop(&mut got));
    }
    both.sort_by_key(|m| m.a);
    assert_eq!(both, [want, back]);
    // Nothing more: NULL at once.
    ok!(hako_subscriber_receive(subscriber, 0, &mut got));
    assert!(got.data.is_null());

    // A C program that names the type differently is refused.
    let mut other = null_mut();
    let wrong = hako_payload_type {
        type_name: c"Mixed".as_ptr(),
        ..mixed_type()
    };
    // SAFETY: valid arguments.
    let s = unsafe {
        hako_pubsub_service_open(
            n,
            c"ffi/mixed".as_ptr(),
            &wrong,
            null(),
            hako_open_mode::HAKO_OPEN,
            &mut other,
        )
    };
    assert_eq!(s, hako_status::HAKO_ERROR_INCOMPATIBLE);
    assert!(last().contains("Mixed"), "{}", last());

    ok!(hako_subscriber_drop(&mut subscriber));
    ok!(hako_publisher_drop(&mut publisher));
    ok!(hako_pubsub_service_drop(&mut svc));
    ok!(hako_node_drop(&mut n));
}

/// By default a receive waits on when the publishers go (a restart may
/// follow); with `end_when_publishers_gone` it ends with
/// `HAKO_ERROR_PEER_GONE`.
#[test]
fn a_receive_ends_on_publishers_gone_only_when_asked() {
    let root = Root::new("gone");
    let mut n = node(&root);
    let mut svc = null_mut();
    ok!(hako_pubsub_service_open(
        n,
        c"ffi/gone".as_ptr(),
        &mixed_type(),
        null(),
        hako_open_mode::HAKO_CREATE,
        &mut svc
    ));
    let mut waits_on = null_mut();
    ok!(hako_subscriber_create(svc, null(), &mut waits_on));
    let end = hako_subscriber_options {
        wait: hako_wait_strategy::HAKO_WAIT_PARK,
        end_when_publishers_gone: true,
        lossy: false,
    };
    let mut ends = null_mut();
    ok!(hako_subscriber_create(svc, &end, &mut ends));
    let rust_node = NodeBuilder::new()
        .config(&Config::default().with_root(&root.0))
        .create()
        .unwrap();
    let rust_svc = rust_node
        .service_builder(&"ffi/gone".try_into().unwrap())
        .publish_subscribe::<Mixed>()
        .open()
        .unwrap();
    let mut got = new_sample();
    for sub in [ends, waits_on] {
        // A publisher that leaves 200 ms into the wait.
        let publisher = rust_svc.publisher_builder().create().unwrap();
        let leaver = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(publisher);
        });
        // SAFETY: valid arguments.
        let s = unsafe { hako_subscriber_receive(sub, 1_000_000, &mut got) };
        leaver.join().unwrap();
        if sub == ends {
            assert_eq!(s, hako_status::HAKO_ERROR_PEER_GONE, "{}", last());
        } else {
            // Waited its whole timeout, then reported that nothing came.
            assert_eq!(s, hako_status::HAKO_OK, "{}", last());
            assert!(got.data.is_null());
        }
    }
    ok!(hako_subscriber_drop(&mut ends));
    ok!(hako_subscriber_drop(&mut waits_on));
    ok!(hako_pubsub_service_drop(&mut svc));
    ok!(hako_node_drop(&mut n));
    drop(rust_svc);
    drop(rust_node);
}

/// A lossy subscriber made through the C API: a Rust publisher that waits
/// under backpressure never waits for it, and it keeps the newest.
#[test]
fn a_lossy_subscriber_never_holds_a_publisher_back() {
    let root = Root::new("lossy");
    let rust_node = NodeBuilder::new()
        .config(&Config::default().with_root(&root.0))
        .create()
        .unwrap();
    let rust_svc = rust_node
        .service_builder(&"ffi/lossy".try_into().unwrap())
        .publish_subscribe::<Mixed>()
        .overflow_policy(hako::OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(2)
        .create()
        .unwrap();
    let mut n = node(&root);
    let mut svc = null_mut();
    ok!(hako_pubsub_service_open(
        n,
        c"ffi/lossy".as_ptr(),
        &mixed_type(),
        null(),
        hako_open_mode::HAKO_OPEN,
        &mut svc
    ));
    let options = hako_subscriber_options {
        wait: hako_wait_strategy::HAKO_WAIT_PARK,
        end_when_publishers_gone: false,
        lossy: true,
    };
    let mut sub = null_mut();
    ok!(hako_subscriber_create(svc, &options, &mut sub));
    let publisher = rust_svc.publisher_builder().create().unwrap();
    for d in 0..10 {
        let m = Mixed {
            d,
            ..Mixed::default()
        };
        assert_eq!(publisher.send_copy(m).unwrap(), 1);
    }
    let mut got = new_sample();
    for want in [8, 9] {
        ok!(hako_subscriber_receive(sub, 0, &mut got));
        // SAFETY: a received sample of the service's type.
        assert_eq!(unsafe { &*got.data.cast::<Mixed>() }.d, want);
        ok!(hako_sample_drop(&mut got));
    }
    ok!(hako_subscriber_receive(sub, 0, &mut got));
    assert!(got.data.is_null());
    ok!(hako_subscriber_drop(&mut sub));
    ok!(hako_pubsub_service_drop(&mut svc));
    ok!(hako_node_drop(&mut n));
}

#[test]
fn misuse_is_reported_not_crashed() {
    let root = Root::new("misuse");
    let mut n = node(&root);
    let mut svc = null_mut();
    let bytes = hako_payload_bytes();
    let opts = hako_publisher_options {
        max_slice_len: 64,
        max_loans: 2,
        backpressure: hako_backpressure::HAKO_BACKPRESSURE_BLOCK,
        retries: 0,
    };
    ok!(hako_pubsub_service_open(
        n,
        c"ffi/bytes".as_ptr(),
        &bytes,
        null(),
        hako_open_mode::HAKO_OPEN_OR_CREATE,
        &mut svc
    ));
    let (mut p1, mut p2) = (null_mut(), null_mut());
    ok!(hako_publisher_create(svc, &opts, &mut p1));
    ok!(hako_publisher_create(svc, &opts, &mut p2));
    let mut loan = new_loan();
    ok!(hako_publisher_loan(p1, 8, &mut loan));
    // SAFETY: (all calls below) live handles or NULL, valid pointers.
    unsafe {
        // Another publisher's sample.
        assert_eq!(
            hako_publisher_send(p2, &mut loan, null_mut()),
            hako_status::HAKO_ERROR_MISUSE
        );
        assert!(!loan.data.is_null(), "a refused sample stays the caller's");
        // Longer than the publisher allows.
        let mut big = new_loan();
        assert_eq!(
            hako_publisher_loan(p1, 65, &mut big),
            hako_status::HAKO_ERROR_MISUSE
        );
        assert!(last().contains("max_slice_len"), "{}", last());
        // Double drop.
        assert_eq!(hako_sample_mut_drop(&mut loan), hako_status::HAKO_OK);
        assert_eq!(
            hako_sample_mut_drop(&mut loan),
            hako_status::HAKO_ERROR_NULL_ARGUMENT
        );
        // NULL everywhere.
        assert_eq!(
            hako_publisher_send(p1, null_mut(), null_mut()),
            hako_status::HAKO_ERROR_NULL_ARGUMENT
        );
        assert_eq!(
            hako_node_create(null(), null_mut()),
            hako_status::HAKO_ERROR_NULL_ARGUMENT
        );
        assert_eq!(
            hako_sample_drop(null_mut()),
            hako_status::HAKO_ERROR_NULL_ARGUMENT
        );
        // A size that is no whole number of elements is fine for bytes;
        // 0 bytes is not.
        assert_eq!(
            hako_publisher_send_copy(p1, c"x".as_ptr().cast(), 0, null_mut()),
            hako_status::HAKO_ERROR_INVALID_ARGUMENT
        );
        // Bad names and non-UTF-8 strings.
        let mut bad = null_mut();
        assert_eq!(
            hako_pubsub_service_open(
                n,
                c"".as_ptr(),
                &bytes,
                null(),
                hako_open_mode::HAKO_OPEN_OR_CREATE,
                &mut bad
            ),
            hako_status::HAKO_ERROR_INVALID_ARGUMENT
        );
        let latin1 = [b'f', 0xe9, 0];
        assert_eq!(
            hako_pubsub_service_open(
                n,
                latin1.as_ptr().cast(),
                &bytes,
                null(),
                hako_open_mode::HAKO_OPEN_OR_CREATE,
                &mut bad
            ),
            hako_status::HAKO_ERROR_INVALID_ARGUMENT
        );
        assert!(last().contains("UTF-8"), "{}", last());
        // A payload that cannot be.
        let zero = hako_payload_type {
            type_name: c"Empty".as_ptr(),
            size: 0,
            align: 1,
            slice: false,
        };
        assert_eq!(
            hako_pubsub_service_open(
                n,
                c"ffi/zero".as_ptr(),
                &zero,
                null(),
                hako_open_mode::HAKO_CREATE,
                &mut bad
            ),
            hako_status::HAKO_ERROR_INVALID_ARGUMENT
        );
        // Every status has a description.
        for s in [hako_status::HAKO_OK, hako_status::HAKO_ERROR_INTERNAL] {
            assert!(!CStr::from_ptr(hako_error_string(s)).to_bytes().is_empty());
        }
    }
    ok!(hako_publisher_drop(&mut p1));
    ok!(hako_publisher_drop(&mut p2));
    ok!(hako_pubsub_service_drop(&mut svc));
    ok!(hako_node_drop(&mut n));
}

#[test]
fn a_listener_hands_out_events_in_pieces_and_loses_none() {
    let root = Root::new("events");
    let mut n = node(&root);
    let mut svc = null_mut();
    let opts = hako_event_options {
        event_id_max: 7,
        ..Default::default()
    };
    ok!(hako_event_service_open(
        n,
        c"ffi/bell".as_ptr(),
        &opts,
        hako_open_mode::HAKO_OPEN_OR_CREATE,
        &mut svc
    ));
    let (mut notifier, mut listener) = (null_mut(), null_mut());
    ok!(hako_notifier_create(svc, &mut notifier));
    ok!(hako_listener_create(
        svc,
        hako_wait_strategy::HAKO_WAIT_PARK,
        &mut listener
    ));
    for id in [1, 2, 2, 5] {
        ok!(hako_notifier_notify(notifier, id, null_mut()));
    }
    // SAFETY: a live notifier.
    let s = unsafe { hako_notifier_notify(notifier, 8, null_mut()) };
    assert_eq!(s, hako_status::HAKO_ERROR_INVALID_ARGUMENT);
    let mut seen = Vec::new();
    let mut one = [hako_event::default(); 1];
    let mut count = 0;
    while seen.len() < 3 {
        ok!(hako_listener_wait(
            listener,
            100_000,
            one.as_mut_ptr(),
            1,
            &mut count
        ));
        assert_eq!(count, 1);
        seen.push((one[0].id, one[0].count));
    }
    seen.sort();
    assert_eq!(seen, [(1, 1), (2, 2), (5, 1)]);
    // Nothing more: a timeout gives none.
    ok!(hako_listener_wait(
        listener,
        1_000,
        one.as_mut_ptr(),
        1,
        &mut count
    ));
    assert_eq!(count, 0);
    ok!(hako_listener_drop(&mut listener));
    ok!(hako_notifier_drop(&mut notifier));
    ok!(hako_event_service_drop(&mut svc));
    ok!(hako_node_drop(&mut n));
    let mut reclaimed = 99;
    let r = root.c();
    ok!(hako_reclaim_dead_nodes(r.as_ptr(), &mut reclaimed));
    assert_eq!(reclaimed, 0);
}

/// Set in the child process of [`a_node_can_leave_sigint_alone`]: `on` or
/// `off`, its node's signal handling.
const SIGNAL_CHILD: &str = "HAKO_FFI_SIGNAL_CHILD";

/// The child of [`a_node_can_leave_sigint_alone`] (does nothing in a
/// normal run): a subscriber waiting in a receive until SIGINT.
#[test]
fn signal_child() {
    let Ok(mode) = std::env::var(SIGNAL_CHILD) else {
        return;
    };
    let root = Root::new(&format!("signal-{mode}"));
    let c = root.c();
    let opts = hako_node_options {
        name: null(),
        root: c.as_ptr(),
        no_signal_handling: mode == "off",
    };
    let mut n = null_mut();
    ok!(hako_node_create(&opts, &mut n));
    let mut svc = null_mut();
    ok!(hako_pubsub_service_open(
        n,
        c"ffi/signal".as_ptr(),
        &mixed_type(),
        null(),
        hako_open_mode::HAKO_OPEN_OR_CREATE,
        &mut svc
    ));
    let mut sub = null_mut();
    ok!(hako_subscriber_create(svc, null(), &mut sub));
    let mut got = new_sample();
    // A first wait that sleeps installs the handlers (when the node has
    // them); only then may the parent send the signal.
    ok!(hako_subscriber_receive(sub, 1_000, &mut got));
    println!("READY");
    // SAFETY: valid arguments.
    let s = unsafe { hako_subscriber_receive(sub, 60_000_000, &mut got) };
    println!("STATUS {s:?}");
    ok!(hako_subscriber_drop(&mut sub));
    ok!(hako_pubsub_service_drop(&mut svc));
    ok!(hako_node_drop(&mut n));
}

/// `no_signal_handling` leaves SIGINT its default effect (the process
/// ends); by default a waiting receive returns `HAKO_ERROR_TERMINATED`.
#[test]
fn a_node_can_leave_sigint_alone() {
    use std::io::BufRead;
    for mode in ["on", "off"] {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "signal_child", "--nocapture", "--test-threads=1"])
            .env(SIGNAL_CHILD, mode)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut seen = String::new();
        let mut line = String::new();
        while !line.contains("READY") {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "no READY: {seen}");
            seen.push_str(&line);
        }
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        if mode == "on" {
            assert!(status.success(), "{status}: {rest}");
            assert!(rest.contains("STATUS HAKO_ERROR_TERMINATED"), "{rest}");
        } else {
            assert_eq!(status.signal(), Some(2), "{status}: {rest}");
            // Killed before its Root could go.
            let left = std::env::temp_dir().join(format!("hako-ffi-signal-off-{}", child.id()));
            let _ = std::fs::remove_dir_all(left);
        }
    }
}
