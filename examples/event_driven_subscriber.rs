//! An event-driven subscriber: it sleeps in `blocking_receive` until a
//! sample arrives, with no polling loop. The program starts its publisher
//! as a child process (a copy of itself), which sends a reading every 200 ms.
//!
//! ```text
//! cargo run --example event_driven_subscriber
//! ```

use std::process::Command;
use std::time::Duration;

use hako::{NodeBuilder, ShmSafe, WaitStrategy};

#[derive(Debug, Clone, Copy, ShmSafe)]
#[repr(C)]
struct Reading {
    seq: u64,
    celsius: f64,
}

const SERVICE: &str = "Examples/EventDriven";
const MESSAGES: u64 = 10;

fn main() -> Result<(), hako_examples::Report> {
    let node = NodeBuilder::new().create()?;
    let service = node
        .service_builder(&SERVICE.try_into()?)
        .publish_subscribe::<Reading>()
        .open_or_create()?;

    if std::env::args().nth(1).as_deref() == Some("publisher") {
        let publisher = service.publisher_builder().create()?;
        for seq in 0..MESSAGES {
            // Sleeps 200 ms; Ctrl-C ends the loop.
            if node.wait(Duration::from_millis(200)).is_err() {
                break;
            }
            let celsius = 20.0 + seq as f64 * 0.25;
            publisher.send_copy(Reading { seq, celsius })?;
        }
        return Ok(());
    }

    // Park: sleep in the kernel at once (the least CPU); the publisher's
    // send wakes us.
    let subscriber = service
        .subscriber_builder()
        .wait_strategy(WaitStrategy::Park)
        // This program's publisher is its own child, started once: if it
        // dies, the readings will not come, so stop rather than wait for a
        // restart (the default, false, waits on).
        .end_when_publishers_gone(true)
        .create()?;
    // The subscriber exists before the publisher starts, so nothing is missed.
    let mut child = Command::new(std::env::current_exe()?)
        .arg("publisher")
        .spawn()?;
    for _ in 0..MESSAGES {
        // Returns `ReceiveError::PublishersGone` instead of hanging if the
        // publisher dies while we wait (end_when_publishers_gone above).
        let reading = subscriber.blocking_receive()?;
        println!("reading #{}: {:.2} °C", reading.seq, reading.celsius);
    }
    child.wait()?;
    Ok(())
}
