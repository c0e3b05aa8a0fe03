//! Notifies an event every 500 ms, cycling through the ids 0..=7, until
//! Ctrl-C (or COUNT notifications). Start `listener` in another terminal;
//! a notification reaches the listeners that exist when it is sent.
//!
//! ```text
//! cargo run --example notifier [COUNT]
//! ```

use std::time::Duration;

use hako::{EventId, NodeBuilder};
use hako_examples::{EVENT_ID_MAX, EVENT_SERVICE};

const CYCLE: Duration = Duration::from_millis(500);

fn main() -> Result<(), hako_examples::Report> {
    let count: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(u64::MAX);
    let node = NodeBuilder::new().name("notifier")?.create()?;
    let service = node
        .service_builder(&EVENT_SERVICE.try_into()?)
        .event()
        .event_id_max(EVENT_ID_MAX)
        .open_or_create()?;
    let notifier = service.notifier_builder().create()?;

    let mut sent = 0;
    // `node.wait` sleeps for one cycle; it fails once Ctrl-C (SIGINT) or
    // SIGTERM arrives, which ends the loop and drops the ports cleanly.
    while sent < count && node.wait(CYCLE).is_ok() {
        let id = EventId(sent % (EVENT_ID_MAX + 1));
        let listeners = notifier.notify_with_id(id)?;
        println!("notified id {} to {listeners} listener(s)", id.value());
        sent += 1;
    }
    Ok(())
}
