use hako::{Config, NodeBuilder, OverflowPolicy};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(2)
        .map(|a| a.parse().unwrap())
        .unwrap_or(2_000_000);
    let root = std::path::PathBuf::from(format!("/dev/shm/hako-lat-{}", std::process::id()));
    let cfg = Config::default().with_root(&root);
    {
        let node = NodeBuilder::new().config(&cfg).create()?;
        let svc = node
            .service_builder(&"lat".try_into()?)
            .publish_subscribe::<[u8]>()
            .subscriber_max_buffer_size(2)
            .subscriber_max_borrowed_samples(1)
            .history_size(0)
            .max_subscribers(1)
            .max_publishers(1)
            .overflow_policy(OverflowPolicy::Backpressure)
            .create()?;
        let publisher = svc
            .publisher_builder()
            .max_slice_len(64)
            .max_loaned_samples(1)
            .create()?;
        let subscriber = svc.subscriber_builder().create()?;
        let pauses: u32 = std::env::args()
            .nth(1)
            .map(|a| a.parse().unwrap())
            .unwrap_or(4);
        let mut one = |i: u64| -> Result<(), Box<dyn std::error::Error>> {
            let mut s = publisher.loan_slice_uninit(64)?;
            s.payload_mut()[0].write(i as u8);
            s.payload_mut()[63].write(i as u8);
            let s = unsafe { s.assume_init() };
            s.send();
            let r = subscriber.receive()?.ok_or("no sample")?;
            if r[0] != i as u8 || r[63] != i as u8 {
                return Err("bad".into());
            }
            Ok(())
        };
        for round in 0..3 {
            let t0 = Instant::now();
            for i in 0..n {
                for _ in 0..pauses {
                    std::hint::spin_loop();
                }
                one(i)?;
            }
            let with = t0.elapsed().as_nanos() as f64 / n as f64;
            let t0 = Instant::now();
            for _ in 0..n {
                for _ in 0..pauses {
                    std::hint::spin_loop();
                }
                std::hint::black_box(());
            }
            let without = t0.elapsed().as_nanos() as f64 / n as f64;
            println!(
                "round {round}: {with:.1} - {without:.1} = {:.1} ns per message",
                with - without
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}
