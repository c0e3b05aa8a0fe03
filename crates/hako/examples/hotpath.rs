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

use hako::{Config, NodeBuilder, OverflowPolicy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let policy = match std::env::args().nth(2).as_deref() {
        None | Some("drop_oldest") => OverflowPolicy::DropOldest,
        Some("backpressure") => OverflowPolicy::Backpressure,
        Some(other) => {
            return Err(format!("unknown policy {other:?} (drop_oldest or backpressure)").into())
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
            .max_subscribers(1)
            .max_publishers(1)
            .overflow_policy(policy)
            .open_or_create()?;
        let publisher = svc.publisher_builder().max_slice_len(64).create()?;
        let subscriber = svc.subscriber_builder().create()?;
        let t0 = std::time::Instant::now();
        let mut sum = 0u64;
        for i in 0..n {
            let mut s = publisher.loan_slice_uninit(64)?;
            s.payload_mut()[0].write(i as u8);
            // SAFETY: u8 has no padding; unwritten bytes hold earlier payloads.
            let s = unsafe { s.assume_init() };
            s.send();
            let r = subscriber.receive()?.ok_or("no sample")?;
            sum += u64::from(r[0]);
        }
        let per = t0.elapsed().as_nanos() as f64 / n as f64;
        println!("{per:.1} ns per message (checksum {sum})");
    }
    let _ = std::fs::remove_dir(&root);
    Ok(())
}
