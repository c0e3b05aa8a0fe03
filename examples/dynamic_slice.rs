//! Dynamic slices: each message is a `[u8]` of a different length, up to a
//! maximum set when the publisher is created. The program publishes and starts
//! a copy of itself as the subscriber (a second process).
//!
//! ```text
//! cargo run --example dynamic_slice
//! ```

use std::process::Command;
use std::time::Duration;

use hako::{NodeBuilder, OverflowPolicy};

const SERVICE: &str = "Examples/DynamicSlice";
const MESSAGES: usize = 8;

fn main() -> Result<(), hako_examples::Report> {
    let node = NodeBuilder::new().create()?;
    let service = node
        .service_builder(&SERVICE.try_into()?)
        .publish_subscribe::<[u8]>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(MESSAGES as u32)
        .open_or_create()?;

    if std::env::args().nth(1).as_deref() == Some("subscriber") {
        let subscriber = service.subscriber_builder().create()?;
        let mut got = 0;
        while got < MESSAGES {
            match subscriber.receive()? {
                Some(bytes) => {
                    let sum: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
                    println!("subscriber: {} bytes, sum {sum}", bytes.len());
                    got += 1;
                }
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        return Ok(());
    }

    let publisher = service
        .publisher_builder()
        .max_slice_len(1 << 20)
        .create()?;
    let mut child = Command::new(std::env::current_exe()?)
        .arg("subscriber")
        .spawn()?;
    while publisher.subscriber_count() == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    for i in 0..MESSAGES {
        let len = 1000 << i; // 1 kB .. 128 kB
        let sample = publisher
            .loan_slice_uninit(len)?
            .write_from_fn(|k| (k % 251) as u8);
        sample.send();
        println!("publisher: sent {len} bytes");
    }
    child.wait()?;
    Ok(())
}
