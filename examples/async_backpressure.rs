//! A publisher under backpressure, awaited instead of blocked: its
//! subscriber (a task here; it could be in another process) takes one
//! sample a millisecond from a queue of four, so the publisher often finds
//! the queue full. `ready().await` waits for room without holding its
//! thread, while a third task ticks; nothing is dropped.
//!
//! ```text
//! cargo run --example async_backpressure
//! ```

use std::time::Duration;

use hako::aio::{AsyncPublisher, AsyncSubscriber};
use hako::{BackpressureStrategy, NodeBuilder, OverflowPolicy};

/// Errors a task hands back to `main`.
type Error = Box<dyn std::error::Error + Send + Sync>;

const COUNT: u64 = 50;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), hako_examples::Report> {
    let node = NodeBuilder::new().name("async_backpressure")?.create()?;
    let service = node
        .service_builder(&"Examples/AsyncBackpressure".try_into()?)
        .publish_subscribe::<u64>()
        .overflow_policy(OverflowPolicy::Backpressure)
        .subscriber_max_buffer_size(4)
        .open_or_create()?;
    let publisher = service
        .publisher_builder()
        .backpressure(BackpressureStrategy::Block)
        .create()?;
    let mut subscriber = AsyncSubscriber::new(service.subscriber_builder().create()?)?;

    // One thread for all three tasks: a publisher that blocked its thread
    // would stop the other two.
    let reading = tokio::spawn(async move {
        for expected in 0..COUNT {
            let sample = subscriber.receive().await?;
            assert_eq!(*sample, expected, "nothing is lost or reordered");
            tokio::time::sleep(Duration::from_millis(1)).await; // a slow reader
        }
        Ok::<_, Error>(())
    });
    let ticking = tokio::spawn(async {
        let mut ticks = 0u64;
        loop {
            tokio::time::sleep(Duration::from_millis(10)).await;
            ticks += 1;
            println!("tick {ticks}: the thread is free while the publisher waits");
        }
    });

    let mut publisher = AsyncPublisher::new(publisher);
    let mut waits = 0;
    for n in 0..COUNT {
        if !publisher.get_ref().has_room() {
            waits += 1;
        }
        // Cancel-safe: waits for room and takes nothing; the send after it
        // from this task does not wait.
        publisher.ready().await;
        publisher.get_ref().send_copy(n)?;
    }
    reading.await??;
    ticking.abort();
    println!("sent {COUNT} samples; found the subscriber's queue full {waits} times");
    Ok(())
}
