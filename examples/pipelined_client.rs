//! Keeps 16 `AddRequest`s in flight to the `server` example and checks
//! every answer: each response reaches the request it answers. Exits 0 once
//! all were right.
//!
//! ```text
//! cargo run --example pipelined_client [COUNT]
//! ```

use std::collections::VecDeque;

use hako::NodeBuilder;
use hako_examples::{AddRequest, AddResponse, ADD_SERVICE, IN_FLIGHT};

fn main() -> Result<(), hako_examples::Report> {
    let count: u64 = hako_examples::arg_or(1000)?;
    let node = NodeBuilder::new().name("pipelined-client")?.create()?;
    let service = node
        .service_builder(&ADD_SERVICE.try_into()?)
        .request_response::<AddRequest, AddResponse>()
        .max_requests_in_flight(IN_FLIGHT)
        .open_or_create()?;
    let client = service.client_builder().create()?;
    // A client may start first: it sleeps until a server comes.
    client.wait_for_server(std::time::Duration::from_secs(10))?;

    let start = std::time::Instant::now();
    let mut in_flight = VecDeque::new();
    let (mut sent, mut answered) = (0u64, 0u64);
    while answered < count {
        // Fill the pipeline, then take the oldest answer.
        while sent < count && in_flight.len() < IN_FLIGHT as usize {
            let pending = client.send_copy(AddRequest { a: sent, b: sent })?;
            in_flight.push_back((sent, pending));
            sent += 1;
        }
        let (i, pending) = in_flight.pop_front().ok_or("nothing in flight")?;
        let response = pending.blocking_receive()?.ok_or("no answer")?;
        if response.sum != 2 * i {
            return Err(format!("request {i} got the sum {}", response.sum).into());
        }
        answered += 1;
    }
    let per = start.elapsed().as_nanos() as f64 / count as f64;
    println!("{count} requests answered right, 16 in flight, {per:.0} ns per request");
    Ok(())
}
