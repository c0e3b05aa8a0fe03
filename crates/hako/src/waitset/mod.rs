//! The waitset: one thread waits on many sources at once.
//!
//! Attach listeners, subscribers, any file descriptor, periodic intervals and
//! deadlines ("tell me if this source stays silent for longer than d"), then
//! call [`WaitSet::wait_and_process`]: it sleeps in `epoll` until something
//! happens and calls your function once per event. It also returns when
//! SIGINT or SIGTERM arrives, so a program ends its loop cleanly.
//!
//! ```no_run
//! // Not run as a doc test: it loops until Ctrl-C.
//! use std::time::Duration;
//! use hako::{NodeBuilder, WaitSet, WaitEvent, WaitOutcome};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let node = NodeBuilder::new().create()?;
//! let events = node.service_builder(&"door/bell".try_into()?).event().open_or_create()?;
//! let listener = events.listener_builder().create()?;
//!
//! let mut ws = WaitSet::new()?;
//! let bell = ws.attach_listener(&listener)?;
//! let tick = ws.attach_interval(Duration::from_secs(1));
//! loop {
//!     let outcome = ws.wait_and_process(|event| match event {
//!         WaitEvent::Ready(id) if id == bell => println!("{:?}", listener.try_wait()),
//!         WaitEvent::Tick(id) if id == tick => println!("tick"),
//!         _ => {}
//!     })?;
//!     if outcome == WaitOutcome::TerminationRequest {
//!         break;
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! A port is armed before each sleep: it records in its wake block that a
//! waitset waits on its FIFO, so senders write one byte there (and only
//! then); see [`crate::core::park`]. How each pattern's port arms is in
//! `ports.rs`.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::epoll;

use crate::blackboard::reader::Reader;
use crate::event::listener::Listener;
use crate::os::signal;
use crate::port::payload::Payload;
use crate::pubsub::subscriber::Subscriber;
use crate::reqres::client::Client;
use crate::reqres::server::Server;
use ports::Port;

mod ports;

/// Identifies an attachment of a [`WaitSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttachmentId(usize);

impl AttachmentId {
    /// Its position among the waitset's attachments: 0 for the first
    /// attached, 1 for the next, and so on.
    pub fn index(self) -> usize {
        self.0
    }

    /// The id of the attachment at position `index` (see
    /// [`index`](Self::index)): for bindings that name attachments by
    /// number.
    pub fn from_index(index: usize) -> Self {
        Self(index)
    }
}

/// What happened, passed to the function given to
/// [`WaitSet::wait_and_process`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEvent {
    /// A listener has events, a subscriber has samples, or a file
    /// descriptor is readable.
    Ready(AttachmentId),
    /// An interval elapsed.
    Tick(AttachmentId),
    /// The source a deadline watches stayed silent for the whole deadline;
    /// the id is the deadline's.
    DeadlineMissed(AttachmentId),
}

/// How a call of [`WaitSet::wait_and_process`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// This many events were processed.
    Processed(usize),
    /// The timeout passed with nothing to process.
    TimedOut,
    /// SIGINT or SIGTERM arrived: the program should stop.
    TerminationRequest,
}

/// Why a waitset operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WaitSetError {
    /// epoll or the signal handlers could not be set up.
    #[error("waitset system call failed: {0}")]
    Io(#[from] std::io::Error),
    /// The attachment a deadline should watch does not exist or is a timer.
    #[error("attachment {0:?} cannot carry a deadline (only listeners, subscribers and descriptors can)")]
    NotWatchable(AttachmentId),
    /// A period or deadline of zero.
    #[error("an interval or deadline of zero would fire without end")]
    ZeroDuration,
}

impl From<rustix::io::Errno> for WaitSetError {
    fn from(e: rustix::io::Errno) -> Self {
        Self::Io(e.into())
    }
}


enum Source<'a> {
    Port(&'a dyn Port),
    Fd,
    Interval {
        period: Duration,
        next: Instant,
    },
    Deadline {
        of: usize,
        period: Duration,
        next: Instant,
    },
}

const SIGNAL_TOKEN: u64 = u64::MAX;

/// Waits on many sources in one thread: listeners, subscribers, file
/// descriptors, intervals and deadlines, with `epoll`. See the crate docs.
///
/// The lifetime `'a` ties the waitset to the ports and descriptors attached
/// to it.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-waitset", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// use std::time::Duration;
/// use hako::{WaitEvent, WaitSet};
/// let topic = node
///     .service_builder(&"Doc/Data".try_into()?)
///     .publish_subscribe::<u64>()
///     .open_or_create()?;
/// let bell = node.service_builder(&"Doc/Bell".try_into()?).event().open_or_create()?;
/// let subscriber = topic.subscriber_builder().create()?;
/// let listener = bell.listener_builder().create()?;
/// let mut waitset = WaitSet::new()?;
/// let data = waitset.attach_subscriber(&subscriber)?;
/// let ring = waitset.attach_listener(&listener)?;
///
/// let publisher = topic.publisher_builder().create()?; // usually in other processes
/// let notifier = bell.notifier_builder().create()?;
/// publisher.send_copy(5)?;
/// notifier.notify()?;
///
/// let handle = |event: WaitEvent| match event {
///     WaitEvent::Ready(id) if id == data => {
///         while let Ok(Some(sample)) = subscriber.receive() {
///             println!("sample {}", *sample);
///         }
///     }
///     WaitEvent::Ready(id) if id == ring => println!("events {:?}", listener.try_wait()),
///     _ => {}
/// };
/// waitset.wait_and_process_timeout(handle, Duration::from_secs(1))?;
/// # Ok(()) }
/// ```
pub struct WaitSet<'a> {
    epoll: OwnedFd,
    sources: Vec<Source<'a>>,
    events: Vec<epoll::Event>,
    /// Whether SIGINT/SIGTERM end its waits (see [`WaitSet::new`]).
    signals: bool,
}

impl std::fmt::Debug for WaitSet<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitSet")
            .field("attachments", &self.sources.len())
            .finish()
    }
}

impl<'a> WaitSet<'a> {
    /// An empty waitset. Installs the SIGINT/SIGTERM handlers (once per
    /// process): the first signal ends every wait with
    /// [`WaitOutcome::TerminationRequest`]; a second one, while the first is
    /// unhandled, ends the process at once (exit status 130).
    pub fn new() -> Result<Self, WaitSetError> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        epoll::add(
            &epoll,
            signal::fd()?,
            epoll::EventData::new_u64(SIGNAL_TOKEN),
            epoll::EventFlags::IN,
        )?;
        Ok(Self {
            epoll,
            sources: Vec::new(),
            events: Vec::with_capacity(16),
            signals: true,
        })
    }

    /// An empty waitset that leaves SIGINT and SIGTERM alone: it installs
    /// no handler and never reports a termination request, for programs
    /// that handle signals themselves (their nodes built with
    /// [`signal_handling(false)`](crate::NodeBuilder::signal_handling); a
    /// self-pipe of their own can be attached with
    /// [`attach_fd`](Self::attach_fd)).
    ///
    /// ```
    /// let mut waitset = hako::WaitSet::without_signal_handling()?;
    /// let tick = waitset.attach_interval(std::time::Duration::from_millis(1));
    /// waitset.wait_and_process(|event| assert_eq!(event, hako::WaitEvent::Tick(tick)))?;
    /// # Ok::<(), hako::WaitSetError>(())
    /// ```
    pub fn without_signal_handling() -> Result<Self, WaitSetError> {
        Ok(Self {
            epoll: epoll::create(epoll::CreateFlags::CLOEXEC)?,
            sources: Vec::new(),
            events: Vec::with_capacity(16),
            signals: false,
        })
    }

    fn add_fd(
        &mut self,
        fd: BorrowedFd<'_>,
        source: Source<'a>,
    ) -> Result<AttachmentId, WaitSetError> {
        let id = self.sources.len();
        epoll::add(
            &self.epoll,
            fd,
            epoll::EventData::new_u64(id as u64),
            epoll::EventFlags::IN,
        )?;
        self.sources.push(source);
        Ok(AttachmentId(id))
    }

    /// Wakes when the listener has events.
    pub fn attach_listener(
        &mut self,
        listener: &'a Listener,
    ) -> Result<AttachmentId, WaitSetError> {
        self.add_fd(listener.as_fd(), Source::Port(listener))
    }

    /// Wakes when an entry the reader [`watch`](crate::ReaderEntry::watch)es
    /// changed since its handle last read it.
    pub fn attach_reader(&mut self, reader: &'a Reader) -> Result<AttachmentId, WaitSetError> {
        self.add_fd(reader.as_fd(), Source::Port(reader))
    }

    /// Wakes when the subscriber has samples.
    pub fn attach_subscriber<T: Payload + ?Sized>(
        &mut self,
        subscriber: &'a Subscriber<T>,
    ) -> Result<AttachmentId, WaitSetError> {
        self.add_fd(subscriber.as_fd(), Source::Port(subscriber))
    }

    /// Wakes when the server has requests.
    pub fn attach_server<Req: Payload + ?Sized, Resp: Payload + ?Sized>(
        &mut self,
        server: &'a Server<Req, Resp>,
    ) -> Result<AttachmentId, WaitSetError> {
        self.add_fd(server.as_fd(), Source::Port(server))
    }

    /// Wakes when responses to the client's pending requests arrived
    /// (take them with each [`PendingResponse::receive`](crate::PendingResponse::receive)).
    pub fn attach_client<Req: Payload + ?Sized, Resp: Payload + ?Sized>(
        &mut self,
        client: &'a Client<Req, Resp>,
    ) -> Result<AttachmentId, WaitSetError> {
        self.add_fd(client.as_fd(), Source::Port(client))
    }

    /// Wakes when `fd` is readable. Read from it in your function, or it
    /// stays ready.
    pub fn attach_fd(&mut self, fd: BorrowedFd<'a>) -> Result<AttachmentId, WaitSetError> {
        self.add_fd(fd, Source::Fd)
    }

    /// Fires [`WaitEvent::Tick`] every `period`.
    pub fn attach_interval(&mut self, period: Duration) -> AttachmentId {
        let id = self.sources.len();
        self.sources.push(Source::Interval {
            period,
            next: Instant::now() + period,
        });
        AttachmentId(id)
    }

    /// Fires [`WaitEvent::DeadlineMissed`] whenever `source` (a listener,
    /// subscriber or descriptor attachment) stays silent for `deadline`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-deadline", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// use std::time::Duration;
    /// use hako::{WaitEvent, WaitSet};
    /// let service = node.service_builder(&"Doc/Heartbeat".try_into()?).event().open_or_create()?;
    /// let listener = service.listener_builder().create()?;
    /// let mut waitset = WaitSet::new()?;
    /// let heartbeat = waitset.attach_listener(&listener)?;
    /// let silence = waitset.attach_deadline(heartbeat, Duration::from_millis(20))?;
    /// waitset.wait_and_process(|event| {
    ///     if event == WaitEvent::DeadlineMissed(silence) {
    ///         println!("no heartbeat for 20 ms");
    ///     }
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn attach_deadline(
        &mut self,
        source: AttachmentId,
        deadline: Duration,
    ) -> Result<AttachmentId, WaitSetError> {
        if deadline.is_zero() {
            return Err(WaitSetError::ZeroDuration);
        }
        match self.sources.get(source.0) {
            Some(Source::Port(_) | Source::Fd) => {}
            _ => return Err(WaitSetError::NotWatchable(source)),
        }
        let id = self.sources.len();
        self.sources.push(Source::Deadline {
            of: source.0,
            period: deadline,
            next: Instant::now() + deadline,
        });
        Ok(AttachmentId(id))
    }

    /// Number of attachments.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    /// Whether nothing is attached.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Sleeps until at least one event happens (or termination is
    /// requested), then calls `f` once per event.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-wait-and-process", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// use hako::{WaitEvent, WaitOutcome, WaitSet};
    /// let service = node
    ///     .service_builder(&"Doc/Jobs".try_into()?)
    ///     .request_response::<u64, u64>()
    ///     .open_or_create()?;
    /// let server = service.server_builder().create()?;
    /// let client = service.client_builder().create()?;
    /// let mut waitset = WaitSet::new()?;
    /// let jobs = waitset.attach_server(&server)?;
    /// let pending = client.send_copy(6)?;
    /// let outcome = waitset.wait_and_process(|event| {
    ///     if event == WaitEvent::Ready(jobs) {
    ///         while let Ok(Some(request)) = server.receive() {
    ///             let _ = request.send_copy(*request * 7);
    ///         }
    ///     }
    /// })?;
    /// assert_eq!(outcome, WaitOutcome::Processed(1));
    /// assert_eq!(pending.blocking_receive()?.map(|r| *r), Some(42));
    /// # Ok(()) }
    /// ```
    pub fn wait_and_process(
        &mut self,
        f: impl FnMut(WaitEvent),
    ) -> Result<WaitOutcome, WaitSetError> {
        self.run(f, None)
    }

    /// As [`wait_and_process`](Self::wait_and_process), but returns
    /// [`WaitOutcome::TimedOut`] after `timeout` with nothing to process.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-wait-timeout", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// use std::time::Duration;
    /// use hako::{WaitOutcome, WaitSet};
    /// let service = node.service_builder(&"Doc/Quiet".try_into()?).event().open_or_create()?;
    /// let listener = service.listener_builder().create()?;
    /// let mut waitset = WaitSet::new()?;
    /// waitset.attach_listener(&listener)?;
    /// match waitset.wait_and_process_timeout(|_| {}, Duration::from_millis(10))? {
    ///     WaitOutcome::TimedOut => println!("nothing within 10 ms"),
    ///     WaitOutcome::TerminationRequest => println!("Ctrl-C"),
    ///     WaitOutcome::Processed(n) => println!("{n} event(s)"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn wait_and_process_timeout(
        &mut self,
        f: impl FnMut(WaitEvent),
        timeout: Duration,
    ) -> Result<WaitOutcome, WaitSetError> {
        self.run(f, Some(Instant::now() + timeout))
    }

    fn next_timer(&self) -> Option<Instant> {
        self.sources
            .iter()
            .filter_map(|s| match s {
                Source::Interval { next, .. } | Source::Deadline { next, .. } => Some(*next),
                _ => None,
            })
            .min()
    }

    fn run(
        &mut self,
        mut f: impl FnMut(WaitEvent),
        until: Option<Instant>,
    ) -> Result<WaitOutcome, WaitSetError> {
        loop {
            if self.signals && signal::requested() {
                return Ok(WaitOutcome::TerminationRequest);
            }
            let mut armed_ready = false;
            for s in &self.sources {
                if let Source::Port(p) = s {
                    armed_ready |= p.arm();
                }
            }
            let now = Instant::now();
            // A sleeper whose barrier failed may miss a wake-up: not for
            // long (see core::sync::sleepers_degraded).
            let degraded = crate::core::sync::sleepers_degraded()
                .then(|| now + crate::core::park::DEGRADED_SLICE);
            let wake_at = [self.next_timer(), until, degraded].into_iter().flatten().min();
            let mut readable = vec![false; self.sources.len()];
            let sleep = !armed_ready && wake_at.is_none_or(|w| w > now);
            let timeout = if sleep {
                wake_at.map(|w| w.saturating_duration_since(now))
            } else {
                Some(Duration::ZERO)
            };
            self.events.clear();
            let ts = timeout.map(|d| rustix::time::Timespec {
                tv_sec: d.as_secs() as i64,
                tv_nsec: i64::from(d.subsec_nanos()),
            });
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut self.events),
                ts.as_ref(),
            ) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    self.disarm_all();
                    return Err(WaitSetError::Io(e.into()));
                }
            }
            for ev in &self.events {
                let token = ev.data.u64();
                if let Some(r) = readable.get_mut(token as usize) {
                    *r = true;
                }
            }
            self.disarm_all();
            if self.signals && signal::requested() {
                return Ok(WaitOutcome::TerminationRequest);
            }

            let now = Instant::now();
            let mut fired: Vec<WaitEvent> = Vec::new();
            let mut active = vec![false; self.sources.len()];
            for (i, s) in self.sources.iter().enumerate() {
                let ready = match s {
                    Source::Port(p) => p.ready(),
                    Source::Fd => readable[i],
                    _ => false,
                };
                if ready {
                    active[i] = true;
                    fired.push(WaitEvent::Ready(AttachmentId(i)));
                }
            }
            for (i, s) in self.sources.iter_mut().enumerate() {
                match s {
                    Source::Interval { period, next } if *next <= now => {
                        fired.push(WaitEvent::Tick(AttachmentId(i)));
                        while *next <= now {
                            *next += *period;
                        }
                    }
                    Source::Deadline { of, period, next } => {
                        if active[*of] {
                            *next = now + *period;
                        } else if *next <= now {
                            fired.push(WaitEvent::DeadlineMissed(AttachmentId(i)));
                            *next = now + *period;
                        }
                    }
                    _ => {}
                }
            }
            if !fired.is_empty() {
                let n = fired.len();
                for e in fired {
                    f(e);
                }
                return Ok(WaitOutcome::Processed(n));
            }
            if until.is_some_and(|u| now >= u) {
                return Ok(WaitOutcome::TimedOut);
            }
        }
    }

    fn disarm_all(&self) {
        for s in &self.sources {
            if let Source::Port(p) = s {
                p.disarm();
            }
        }
    }
}
