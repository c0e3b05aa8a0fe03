//! Sends one request `n` to the `server` example's `Examples/Counter` and
//! prints the stream of responses `0..n` it answers with. Exits 0 once the
//! stream ended complete.
//!
//! ```text
//! cargo run --example stream_client [N]
//! ```

use hako::NodeBuilder;
use hako_examples::{COUNT_SERVICE, IN_FLIGHT};

fn main() -> Result<(), hako_examples::Report> {
    let n: u64 = hako_examples::arg_or(10)?;
    let node = NodeBuilder::new().name("stream-client")?.create()?;
    let service = node
        .service_builder(&COUNT_SERVICE.try_into()?)
        .request_response::<u64, u64>()
        .max_requests_in_flight(IN_FLIGHT)
        .max_response_buffer(64)
        .open_or_create()?;
    let client = service.client_builder().create()?;
    // A client may start first: it sleeps until a server comes.
    client.wait_for_server(std::time::Duration::from_secs(10))?;

    let pending = client.send_copy(n)?;
    let mut next = 0;
    // Ok(None): the server dropped its active request, the stream is over.
    while let Some(response) = pending.blocking_receive()? {
        println!("response {}", *response);
        if *response != next {
            return Err(format!("response {} where {next} was due", *response).into());
        }
        next += 1;
    }
    if next != n {
        return Err(format!("the stream ended after {next} of {n} responses").into());
    }
    println!("the stream ended after {n} responses");
    Ok(())
}
