//! An async task under tokio that waits on a subscriber, a listener and a
//! timer at once: `Transmission`s from `publisher`, events from `notifier`
//! (start them in other terminals, in any order), and a line when nothing
//! came for a second. No thread per port, no polling: the task sleeps in
//! tokio's reactor until a sender wakes it.
//!
//! ```text
//! cargo run --example async_subscriber [COUNT]
//! ```

use std::time::Duration;

use futures::StreamExt;
use hako::aio::{AsyncListener, AsyncSubscriber};
use hako::NodeBuilder;
use hako_examples::{transmission_service, EVENT_ID_MAX, EVENT_SERVICE};

#[tokio::main]
async fn main() -> Result<(), hako_examples::Report> {
    let count: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(u64::MAX);
    let node = NodeBuilder::new().name("async_subscriber")?.create()?;
    let topic = transmission_service(&node)?; // as the publisher and subscriber examples
    let bell = node
        .service_builder(&EVENT_SERVICE.try_into()?)
        .event()
        .event_id_max(EVENT_ID_MAX)
        .open_or_create()?;
    // Made inside the runtime: they register with its reactor.
    let mut samples = AsyncSubscriber::new(topic.subscriber_builder().create()?)?;
    let mut events = AsyncListener::new(bell.listener_builder().create()?)?;

    // A spawned task on the multi-threaded runtime: the ports are Send.
    let task = tokio::spawn(async move {
        let mut received = 0;
        while received < count {
            tokio::select! {
                // Every branch is cancel-safe: whichever loses takes nothing.
                sample = samples.receive() => {
                    let sample = sample?;
                    println!("received #{} {:.1} °C", sample.seq, sample.temperature);
                    received += 1;
                }
                Some(fired) = events.next() => {
                    for (id, n) in fired? {
                        println!("event {} (x{n})", id.value());
                    }
                }
                _ = tokio::time::sleep(Duration::from_secs(1)) => println!("nothing for a second"),
            }
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    task.await??;
    Ok(())
}
