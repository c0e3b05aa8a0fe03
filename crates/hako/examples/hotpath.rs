//! The publish/subscribe hot path in one thread: loan, write, send, receive,
//! drop, N times. For instruction counts, run under callgrind:
//!
//! ```text
//! cargo build --release -p hako --example hotpath
//! valgrind --tool=callgrind target/release/examples/hotpath 100000
//! valgrind --tool=callgrind target/release/examples/hotpath 100000 backpressure
//! ```
//!
//! With `backpressure` the service uses `OverflowPolicy::Backpressure`
//! (whose subscriber takes a sample with a plain store), else drop-oldest.
//! With `empty`, a drop-oldest subscriber whose publisher sends nothing
//! receives N times: the cost of one turn of a busy-poll loop. With
//! `inline`, as `backpressure` with 48-byte messages, which travel in the
//! queue slot (the others, 64 bytes, in the pool). With `inline4` and
//! `backpressure4`, as `inline` and `backpressure` with four subscribers,
//! each receiving every message: what an extra subscriber costs.

use hako::{Config, NodeBuilder, OverflowPolicy, Publisher, Subscriber};

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let mode = std::env::args().nth(2);
    let (policy, empty, size, subscribers) = match mode.as_deref() {
        None | Some("drop_oldest") => (OverflowPolicy::DropOldest, false, 64, 1),
        Some("backpressure") => (OverflowPolicy::Backpressure, false, 64, 1),
        Some("empty") => (OverflowPolicy::DropOldest, true, 64, 1),
        Some("inline") => (OverflowPolicy::Backpressure, false, 48, 1),
        Some("backpressure4") => (OverflowPolicy::Backpressure, false, 64, 4),
        Some("inline4") => (OverflowPolicy::Backpressure, false, 48, 4),
        Some(other) => {
            return Err(format!(
                "unknown mode {other:?} (drop_oldest, backpressure, empty, inline, \
                 backpressure4 or inline4)"
            )
            .into())
        }
    };
    let root = std::path::PathBuf::from(format!("/dev/shm/hako-hotpath-{}", std::process::id()));
    let cfg = Config::default().with_root(&root);
    {
        let node = NodeBuilder::new().config(&cfg).create()?;
        let svc = node
            .service_builder(&"hotpath".try_into()?)
            .publish_subscribe::<[u8]>()
            .subscriber_max_buffer_size(16)
            .max_subscribers(subscribers)
            .max_publishers(1)
            .overflow_policy(policy)
            .open_or_create()?;
        let publisher = svc.publisher_builder().max_slice_len(size).create()?;
        let subscriber = svc.subscriber_builder().create()?;
        let others = (1..subscribers)
            .map(|_| svc.subscriber_builder().create())
            .collect::<Result<Vec<_>, _>>()?;
        let t0 = std::time::Instant::now();
        let sum = if empty {
            empty_polls(&publisher, &subscriber, n)?
        } else {
            exchange(&publisher, &subscriber, &others, n, size)?
        };
        let per = t0.elapsed().as_nanos() as f64 / n as f64;
        println!("{per:.1} ns per message (checksum {sum})");
    }
    let _ = std::fs::remove_dir(&root);
    Ok(())
}

/// Loan, write, send, receive, drop, `n` times; the library's hot paths
/// are inlined here.
#[inline(never)]
fn exchange(
    publisher: &Publisher<[u8]>,
    subscriber: &Subscriber<[u8]>,
    others: &[Subscriber<[u8]>],
    n: u64,
    size: usize,
) -> Result<u64, Error> {
    let mut sum = 0u64;
    for i in 0..n {
        let mut s = publisher.loan_slice_uninit(size)?;
        s.payload_mut()[0].write(i as u8);
        // SAFETY: u8 has no padding; unwritten bytes hold earlier payloads.
        let s = unsafe { s.assume_init() };
        s.send();
        let r = subscriber.receive()?.ok_or("no sample")?;
        sum += u64::from(r[0]);
        for o in others {
            let r = o.receive()?.ok_or("no sample")?;
            sum += u64::from(r[0]);
        }
    }
    Ok(sum)
}

/// `n` receives that find nothing, once the subscriber is connected (at the
/// publisher's first send, so one sample goes first).
#[inline(never)]
fn empty_polls(
    publisher: &Publisher<[u8]>,
    subscriber: &Subscriber<[u8]>,
    n: u64,
) -> Result<u64, Error> {
    publisher.loan_slice(64)?.send();
    subscriber.receive()?.ok_or("no sample")?;
    let mut sum = 0u64;
    for _ in 0..n {
        if subscriber.receive()?.is_some() {
            return Err("a sample nobody sent".into());
        }
        sum += 1;
    }
    Ok(sum)
}
