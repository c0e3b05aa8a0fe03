//! Receives `Transmission`s. Start `publisher` in another terminal, in either
//! order.
//!
//! ```text
//! cargo run --example subscriber [COUNT]
//! ```

use std::time::Duration;

use hako::NodeBuilder;
use hako_examples::transmission_service;

fn main() -> Result<(), hako_examples::Report> {
    let count: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(u64::MAX);
    let node = NodeBuilder::new().name("subscriber")?.create()?;
    let service = transmission_service(&node)?;
    let subscriber = service.subscriber_builder().create()?;

    let mut received = 0;
    while received < count {
        // `receive` never blocks; the sample is a view into shared memory.
        while let Some(sample) = subscriber.receive()? {
            let end = sample.note.iter().position(|&b| b == 0).unwrap_or(32);
            println!(
                "received #{} {:.1} °C {:?}",
                sample.seq,
                sample.temperature,
                String::from_utf8_lossy(&sample.note[..end])
            );
            received += 1;
        }
        // Sleeps 10 ms; Ctrl-C ends the wait (and the loop) early, so the
        // program returns and its ports and node remove their files.
        if node.wait(Duration::from_millis(10)).is_err() {
            println!("stopping: termination requested");
            break;
        }
    }
    Ok(())
}
