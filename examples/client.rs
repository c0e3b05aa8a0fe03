//! Sends `AddRequest`s to the `server` example, one at a time, and prints
//! each sum. Exits 0 once every answer was right.
//!
//! ```text
//! cargo run --example client [COUNT]
//! ```

use hako::NodeBuilder;
use hako_examples::{AddRequest, AddResponse, ADD_SERVICE, IN_FLIGHT};

fn main() -> Result<(), hako_examples::Report> {
    let count: u64 = hako_examples::arg_or(5)?;
    let node = NodeBuilder::new().name("client")?.create()?;
    let service = node
        .service_builder(&ADD_SERVICE.try_into()?)
        .request_response::<AddRequest, AddResponse>()
        .max_requests_in_flight(IN_FLIGHT)
        .open_or_create()?;
    let client = service.client_builder().create()?;
    // A client may start first: it sleeps until a server comes.
    client.wait_for_server(std::time::Duration::from_secs(10))?;

    for i in 0..count {
        // Loan a request in our shared pool, write it in place, send it.
        let request = client
            .loan_uninit()?
            .write_payload(AddRequest { a: i, b: 100 });
        let pending = request.send()?;
        // The response is read where the server wrote it.
        let response = pending
            .blocking_receive()?
            .ok_or("the server ended the stream without an answer")?;
        println!("{i} + 100 = {}", response.sum);
        if response.sum != i + 100 {
            return Err(format!("wrong sum {} for {i} + 100", response.sum).into());
        }
    }
    Ok(())
}
