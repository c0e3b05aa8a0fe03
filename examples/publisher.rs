//! Publishes a `Transmission` every 100 ms. Start `subscriber` in another
//! terminal, in either order.
//!
//! ```text
//! cargo run --example publisher [COUNT]
//! ```

use std::time::Duration;

use hako::NodeBuilder;
use hako_examples::{transmission_service, Transmission};

fn main() -> Result<(), hako_examples::Report> {
    let count: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(u64::MAX);
    let node = NodeBuilder::new().name("publisher")?.create()?;
    let service = transmission_service(&node)?;
    let publisher = service.publisher_builder().create()?;

    for seq in 0..count {
        let mut note = [0u8; 32];
        let text = format!("hello #{seq}");
        note[..text.len()].copy_from_slice(text.as_bytes());
        // Loan a chunk of shared memory, write the message in place, send it.
        let sample = publisher.loan_uninit()?.write_payload(Transmission {
            seq,
            temperature: 20.0 + (seq % 10) as f64 * 0.5,
            note,
        });
        let receivers = sample.send();
        println!("sent #{seq} to {receivers} subscriber(s)");
        // Ctrl-C ends the wait early: leave the loop, drop the ports cleanly.
        if node.wait(Duration::from_millis(100)).is_err() {
            println!("stopping: termination requested");
            break;
        }
    }
    Ok(())
}
