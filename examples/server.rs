//! Serves two request/response services until Ctrl-C (or `COUNT` requests):
//! `Examples/Adder` answers each `AddRequest` with its sum, and
//! `Examples/Counter` answers a request `n` with the stream `0..n`. Start
//! `client`, `stream_client` or `pipelined_client` in another terminal, in
//! either order.
//!
//! ```text
//! cargo run --example server [COUNT]
//! ```

use std::time::Duration;

use hako::NodeBuilder;
use hako_examples::{AddRequest, AddResponse, ADD_SERVICE, COUNT_SERVICE, IN_FLIGHT};

fn main() -> Result<(), hako_examples::Report> {
    let count: u64 = hako_examples::arg_or(u64::MAX)?;
    let node = NodeBuilder::new().name("server")?.create()?;
    let adder = node
        .service_builder(&ADD_SERVICE.try_into()?)
        .request_response::<AddRequest, AddResponse>()
        .max_requests_in_flight(IN_FLIGHT)
        .open_or_create()?
        .server_builder()
        .create()?;
    let counter = node
        .service_builder(&COUNT_SERVICE.try_into()?)
        .request_response::<u64, u64>()
        .max_requests_in_flight(IN_FLIGHT)
        .max_response_buffer(64)
        .open_or_create()?
        .server_builder()
        .create()?;

    let mut served = 0;
    // Ctrl-C ends node.wait() (here only a look: it does not sleep).
    while served < count && node.wait(Duration::ZERO).is_ok() {
        // Wait a while for an addition (spinning, then asleep), then serve
        // everything that came, on both services.
        let mut next = adder.receive_timeout(Duration::from_millis(1))?;
        while let Some(request) = next {
            // A request is a view into the client's shared memory; so is a
            // response into ours once sent. One answer: `send_last_copy`
            // sends it and ends the stream in the same message (sending it
            // and dropping the request would make two).
            let sum = request.a + request.b;
            request.send_last_copy(AddResponse { sum })?;
            served += 1;
            next = adder.receive()?;
        }
        while let Some(request) = counter.receive()? {
            for i in 0..*request {
                let response = request.loan_uninit()?.write_payload(i);
                response.send()?;
            }
            served += 1;
            // Dropping the request ends its response stream.
        }
    }
    println!("served {served} requests");
    Ok(())
}
