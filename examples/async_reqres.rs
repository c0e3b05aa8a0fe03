//! An async server and an async client under tokio, in one process here
//! (each could be in its own): the server answers every request with a
//! stream of three responses, computed across `.await`s; the client keeps
//! three requests in flight and takes each one's stream.
//!
//! ```text
//! cargo run --example async_reqres
//! ```

use std::time::Duration;

use futures::StreamExt;
use hako::aio::{AsyncClient, AsyncServer};
use hako::NodeBuilder;

/// Errors a task hands back to `main`.
type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), hako_examples::Report> {
    let node = NodeBuilder::new().name("async_reqres")?.create()?;
    let service = node
        .service_builder(&"Examples/AsyncCountdown".try_into()?)
        .request_response::<u64, u64>()
        .max_requests_in_flight(4)
        .open_or_create()?;
    let mut server = AsyncServer::new(service.server_builder().create()?)?;
    let mut client = AsyncClient::new(service.client_builder().create()?)?;

    // Spawned tasks of the multi-threaded runtime: the ports are Send, and
    // so is a request held across an await.
    let serving = tokio::spawn(async move {
        for _ in 0..3 {
            let request = server.receive().await?;
            let n = *request;
            for i in (1..=3).rev() {
                tokio::time::sleep(Duration::from_millis(10)).await; // some work
                request.send_copy(n * 10 + i)?;
            }
            // Dropping the request ends its stream.
        }
        Ok::<_, Error>(())
    });
    let asking = tokio::spawn(async move {
        let tickets: Vec<_> = [1, 2, 3]
            .into_iter()
            .map(|n| Ok((n, client.get_ref().send_copy(n)?.into_ticket())))
            .collect::<Result<_, hako::RequestSendError>>()?;
        for (n, ticket) in tickets {
            let mut responses = client.responses(ticket);
            while let Some(response) = responses.next().await {
                println!("request {n}: {}", *response?);
            }
            println!("request {n}: the stream ended");
        }
        Ok::<_, Error>(())
    });
    asking.await??;
    serving.await??;
    Ok(())
}
