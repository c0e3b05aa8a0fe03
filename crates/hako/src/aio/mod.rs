//! Ports awaitable under tokio (the `tokio` feature).
//!
//! [`AsyncSubscriber`] and [`AsyncListener`] wrap a
//! [`Subscriber`](crate::Subscriber) or a [`Listener`](crate::Listener):
//! `receive().await` / `wait().await` for the next sample or events, and a
//! [`futures_core::Stream`] of them; [`AsyncServer`] wraps a
//! [`Server`](crate::Server): `receive().await` for the next request;
//! [`AsyncClient`] a [`Client`](crate::Client): the responses of each
//! request in flight awaited, or as a stream; [`AsyncWatcher`] a
//! [`Watcher`](crate::Watcher): a domain's changes awaited; [`AsyncReader`]
//! a blackboard [`Reader`](crate::Reader): its watched entries' changes.
//! Sending stays synchronous where it never waits; where it may (a
//! publisher, client or server under `Block` backpressure, whose
//! receiver's queue is full) `ready().await` waits for room:
//! [`AsyncPublisher`], [`AsyncClient::ready`], [`AsyncServer::ready`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # struct Rm(std::path::PathBuf);
//! # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
//! # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-aio", std::process::id())));
//! # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
//! use hako::aio::AsyncSubscriber;
//! let service = node
//!     .service_builder(&"My/Topic".try_into()?)
//!     .publish_subscribe::<u64>()
//!     .subscriber_max_buffer_size(4)
//!     .open_or_create()?;
//! let mut subscriber = AsyncSubscriber::new(service.subscriber_builder().create()?)?;
//! let task = tokio::spawn(async move {
//!     let mut total = 0;
//!     for _ in 0..3 {
//!         total += *subscriber.receive().await?;
//!     }
//!     Ok::<_, hako::aio::AsyncError<hako::ReceiveError>>(total)
//! });
//! let publisher = service.publisher_builder().create()?;
//! for n in 1..=3 {
//!     publisher.send_copy(n)?;
//! }
//! assert_eq!(task.await??, 6);
//! # Ok(()) }
//! ```
//!
//! **How it waits.** A task that finds nothing first spins as its port's
//! [`WaitStrategy`](crate::WaitStrategy) says (set on the port's builder):
//! `BusySpin` never sleeps: it looks for up to 50 µs within one poll, then
//! lets the runtime run its other tasks and asks to be polled again at
//! once (the lowest latency, the worker thread always busy);
//! `SpinThenPark` (the default) looks for the port's adaptive budget, as
//! its blocking wait does (at most 100 µs, shrinking while messages come
//! slowly); `Park` not at all. Then it registers its interest in the
//! port's wake block in shared memory (a count, a fence, a second look)
//! and sleeps in tokio's reactor on the port's FIFO; a sender that sees
//! the registration after its send writes one byte to the FIFO. While the
//! reader keeps up, nothing is registered and no system call is made on
//! either side; a burst of sends to a sleeping task costs a write each
//! until it wakes, and its wake-up one read. A peer that dies cannot
//! write: while a task waits, a tokio timer wakes it every 100 ms (a
//! busy-spinning task looks at the clock instead) to ask whether its peers
//! are still there, and a wait whose peers all went ends as the blocking
//! calls do (`NotifiersGone`; `PublishersGone` for a subscriber built
//! to end then, while the others wait on for a restarted publisher).
//!
//! **Runtime.** Make the async ports inside a tokio runtime with its I/O
//! and time drivers (`#[tokio::main]` and `Runtime::new` enable both); they
//! stay registered with that runtime. They are `Send`, and so are the
//! futures and streams they return: move them into spawned tasks of a
//! multi-threaded runtime freely. A runtime shut down while tasks wait
//! leaves the ports usable: `into_inner` gives the port back, with nothing
//! registered. A wait polled after its runtime's driver is gone fails with
//! [`AsyncError::Runtime`].
//!
//! **Cancellation.** Every future here is cancel-safe: dropped at any
//! point (a `select!` that took another branch, a timeout), it has taken
//! nothing, and the next call gets what it would have.
//!
//! **Other runtimes.** A port's wake-up descriptor is public (`AsFd` on
//! [`Subscriber`](crate::Subscriber), [`Listener`](crate::Listener), [`Server`](crate::Server) and
//! [`Client`](crate::Client)), and so is the registration that makes
//! senders write to it (`arm_wakeup` / `disarm_wakeup` on each). To wait
//! for a port in another event loop (async-io, mio, an epoll loop):
//! register the descriptor for reading once (edge-triggered is fine), then
//! for each wait: take what is there without blocking; if nothing,
//! `arm_wakeup()` (true means something came meanwhile: take it, and
//! `disarm_wakeup()`), else sleep until the descriptor is readable, then
//! `disarm_wakeup()` (it drains the descriptor) and take again. Armed, a
//! port costs every send a system call, so disarm once awake; a peer that
//! dies cannot write, so wake now and then to ask (the ports' blocking
//! calls and this module look every 100 ms).

mod board;
mod client;
mod error;
mod listener;
mod readiness;
mod room;
mod server;
mod subscriber;
mod watch;

pub use board::{AsyncReader, Changed};
pub use client::{AsyncClient, ReceiveResponse, Responses};
pub use error::AsyncError;
pub use listener::{AsyncListener, Events, Wait};
pub use room::{AsyncPublisher, Ready};
pub use server::{AsyncServer, ReceiveRequest};
pub use subscriber::{AsyncSubscriber, Receive};
pub use watch::AsyncWatcher;
