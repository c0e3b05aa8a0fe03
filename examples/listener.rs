//! Waits for the events of `notifier` (start it in another terminal, in
//! either order) and prints them. A waitset sleeps until an event arrives,
//! and says so when none came for 2 s (a deadline). Ctrl-C ends it cleanly:
//! the waitset returns `WaitOutcome::TerminationRequest`.
//!
//! ```text
//! cargo run --example listener [COUNT]
//! ```

use std::time::Duration;

use hako::{NodeBuilder, WaitEvent, WaitOutcome, WaitSet};
use hako_examples::{EVENT_ID_MAX, EVENT_SERVICE};

fn main() -> Result<(), hako_examples::Report> {
    let count: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(u64::MAX);
    let node = NodeBuilder::new().name("listener")?.create()?;
    let service = node
        .service_builder(&EVENT_SERVICE.try_into()?)
        .event()
        .event_id_max(EVENT_ID_MAX)
        .open_or_create()?;
    let listener = service.listener_builder().create()?;

    let mut waitset = WaitSet::new()?;
    let events = waitset.attach_listener(&listener)?;
    let quiet = waitset.attach_deadline(events, Duration::from_secs(2))?;

    let mut received = 0;
    while received < count {
        let outcome = waitset.wait_and_process(|event| match event {
            WaitEvent::Ready(id) if id == events => {
                // Each id that fired since the last call, with how often.
                for (id, n) in listener.try_wait() {
                    println!("event {} (x{n})", id.value());
                    received += n;
                }
            }
            WaitEvent::DeadlineMissed(id) if id == quiet => {
                println!("no event for 2 s; is `notifier` running?");
            }
            _ => {}
        })?;
        if outcome == WaitOutcome::TerminationRequest {
            println!("stopping after {received} event(s)");
            break;
        }
    }
    Ok(())
}
