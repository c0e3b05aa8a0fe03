//! Listeners: wait for events, learn which ids fired and how often.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::counters::counters;
use super::settings::{EventId, EventPortCreateError, EventQos};
use crate::domain::nodefile::{new_id, node_alive_in};
use crate::domain::service::files::fifo_file;
use crate::domain::service::error::io_err;
use crate::domain::service::inner::{NewPort, ServiceInner};
use crate::domain::service::tables::PortKind;
use crate::os::fifo;
use crate::port::wait::{Adaptive, WaitStrategy, Waiter};

/// Why waiting failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListenerError {
    /// Every notifier that was there during a blocking wait has left or died;
    /// waiting on could only hang.
    #[error("every notifier of service {0:?} is gone; nothing can wake this listener")]
    NotifiersGone(String),
    /// SIGINT or SIGTERM arrived while it waited (see
    /// [`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling)).
    #[error("termination requested (SIGINT or SIGTERM)")]
    TerminationRequest,
}

impl From<crate::port::wait::Terminated> for ListenerError {
    fn from(_: crate::port::wait::Terminated) -> Self {
        Self::TerminationRequest
    }
}

/// Builds a [`Listener`].
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-listener-builder", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node.service_builder(&"Doc/Ready".try_into()?).event().open_or_create()?;
/// // Sleep in the kernel at once: the least CPU while nothing happens.
/// let listener = service
///     .listener_builder()
///     .wait_strategy(hako::WaitStrategy::Park)
///     .create()?;
/// assert!(listener.try_wait().is_empty());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ListenerBuilder {
    pub(super) service: Arc<ServiceInner>,
    pub(super) qos: Arc<EventQos>,
    pub(super) strategy: WaitStrategy,
}

impl ListenerBuilder {
    /// How the blocking waits wait (default: spin, then park).
    pub fn wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Creates the listener: its counters and its wake-up FIFO.
    pub fn create(self) -> Result<Listener, EventPortCreateError> {
        let svc = self.service;
        let q = self.qos;
        let port_id = new_id();
        let fifo_name = fifo_file(port_id);
        let fifo = svc
            .dir
            .make_fifo(&fifo_name, svc.node.access)
            .map_err(io_err("create FIFO", &svc.dir.join(&fifo_name)))?;
        let entry = NewPort {
            kind: PortKind::Subscriber,
            port_id,
            max_len: 0,
            chunk_count: 0,
            limit: q.max_listeners as usize,
        };
        let index = match svc.register(entry, |_| {}, |j| {
            let (summary, counter) = counters(&svc, j);
            // Relaxed (all): published by the Release store of the port id.
            summary.store(0, Ordering::Relaxed);
            for id in 0..=q.event_id_max {
                counter(id).store(0, Ordering::Relaxed);
            }
        }) {
            Ok(Some(i)) => i,
            Ok(None) => {
                let _ = svc.dir.remove_file(&fifo_name);
                return Err(EventPortCreateError::TooMany {
                    service: svc.name.to_string(),
                    kind: "listeners",
                    max: q.max_listeners,
                });
            }
            Err(e) => {
                let _ = svc.dir.remove_file(&fifo_name);
                return Err(e.into());
            }
        };
        Ok(Listener {
            service: svc,
            port_id,
            index,
            fifo,
            fifo_name,
            strategy: self.strategy,
            adaptive: Adaptive::default(),
            saw_notifier: AtomicBool::new(false),
            max_id: q.event_id_max,
        })
    }
}

/// Waits for events. `Send` and `Sync`; also a file descriptor (its wake-up
/// FIFO) that a [`WaitSet`](crate::WaitSet) can wait on.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-listener", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// use std::time::Duration;
/// let service = node.service_builder(&"Doc/Listener".try_into()?).event().open_or_create()?;
/// let listener = service.listener_builder().create()?;
/// let notifier = service.notifier_builder().create()?;
/// assert!(listener.timed_wait(Duration::from_millis(10))?.is_empty()); // timed out
/// notifier.notify_with_id(hako::EventId(5))?;
/// for (id, count) in listener.blocking_wait()? {
///     println!("event {} fired {count} time(s)", id.value());
/// }
/// # Ok(()) }
/// ```
pub struct Listener {
    service: Arc<ServiceInner>,
    port_id: u64,
    index: usize,
    fifo: OwnedFd,
    /// Its name in the service's directory.
    fifo_name: String,
    strategy: WaitStrategy,
    adaptive: Adaptive,
    saw_notifier: AtomicBool,
    max_id: u64,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("service", &self.service.name)
            .field("port_id", &format_args!("{:016x}", self.port_id))
            .finish()
    }
}

impl Listener {
    /// The listener's unique port id.
    pub fn id(&self) -> u64 {
        self.port_id
    }

    /// Whether events are waiting (without taking them).
    pub fn has_events(&self) -> bool {
        self.pending()
    }

    fn pending(&self) -> bool {
        let (summary, _) = counters(&self.service, self.index);
        // Relaxed: a hint; take() does the synchronising swap.
        summary.load(Ordering::Relaxed) != 0
    }

    fn take(&self) -> Vec<(EventId, u64)> {
        let (summary, counter) = counters(&self.service, self.index);
        if summary.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        // ORDERING: Acquire; pairs with the notifiers' Release fetch_or: the
        // counter increments before it are visible.
        let groups = summary.swap(0, Ordering::Acquire);
        let mut out = Vec::new();
        let mut g = groups;
        while g != 0 {
            let group = u64::from(g.trailing_zeros());
            g &= g - 1;
            for id in group * 64..((group + 1) * 64).min(self.max_id + 1) {
                let c = counter(id);
                // Relaxed (both): ordered after the Acquire swap above; a count
                // that arrives later sets the summary bit again.
                if c.load(Ordering::Relaxed) != 0 {
                    let n = c.swap(0, Ordering::Relaxed);
                    if n != 0 {
                        out.push((EventId(id), n));
                    }
                }
            }
        }
        out
    }

    /// The events that fired since the last wait, with how often; empty if
    /// none. Never blocks.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-try-wait", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node.service_builder(&"Doc/TryWait".try_into()?).event().open_or_create()?;
    /// let listener = service.listener_builder().create()?;
    /// let notifier = service.notifier_builder().create()?;
    /// assert!(listener.try_wait().is_empty());
    /// notifier.notify()?;
    /// notifier.notify()?;
    /// assert_eq!(listener.try_wait(), vec![(hako::EventId(0), 2)]); // one id, counted
    /// assert!(listener.try_wait().is_empty()); // taken
    /// # Ok(()) }
    /// ```
    pub fn try_wait(&self) -> Vec<(EventId, u64)> {
        self.take()
    }

    /// Waits up to `timeout` for events; empty on timeout. A zero timeout
    /// is the same as [`try_wait`](Self::try_wait).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-timed-wait", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// use std::time::Duration;
    /// let service = node.service_builder(&"Doc/TimedWait".try_into()?).event().open_or_create()?;
    /// let listener = service.listener_builder().create()?;
    /// let notifier = service.notifier_builder().create()?;
    /// notifier.notify()?;
    /// match listener.timed_wait(Duration::from_millis(100)) {
    ///     Ok(events) if events.is_empty() => println!("nothing within 100 ms"),
    ///     Ok(events) => println!("{} id(s) fired", events.len()),
    ///     Err(e) => eprintln!("cannot wait: {e}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn timed_wait(&self, timeout: Duration) -> Result<Vec<(EventId, u64)>, ListenerError> {
        self.wait(Some(Instant::now() + timeout))
    }

    /// Waits until events fire. Returns
    /// [`ListenerError::NotifiersGone`] if every notifier seen during the
    /// wait leaves or dies (a listener started before any notifier waits for
    /// one to come), and [`ListenerError::TerminationRequest`] on SIGINT or
    /// SIGTERM (see [`NodeBuilder::signal_handling`](crate::NodeBuilder::signal_handling);
    /// so does [`timed_wait`](Self::timed_wait)).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # struct Rm(std::path::PathBuf);
    /// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
    /// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-blocking-wait", std::process::id())));
    /// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
    /// let service = node.service_builder(&"Doc/BlockingWait".try_into()?).event().open_or_create()?;
    /// let listener = service.listener_builder().create()?;
    /// let notifier = service.notifier_builder().create()?;
    /// let worker = std::thread::spawn(move || notifier.notify_with_id(hako::EventId(9)));
    /// let events = listener.blocking_wait()?; // sleeps until the worker notifies
    /// assert_eq!(events, vec![(hako::EventId(9), 1)]);
    /// worker.join().expect("the worker panicked")?;
    /// # Ok(()) }
    /// ```
    pub fn blocking_wait(&self) -> Result<Vec<(EventId, u64)>, ListenerError> {
        self.wait(None)
    }

    fn wait(&self, deadline: Option<Instant>) -> Result<Vec<(EventId, u64)>, ListenerError> {
        let waiter = Waiter {
            signals: self.service.node.signals,
            strategy: self.strategy,
            adaptive: &self.adaptive,
            block: self.service.wake_block(PortKind::Subscriber, self.index),
        };
        // A cheap look at the table (no system call); liveness is checked
        // only when a sleep times out. Relaxed: used by this thread only.
        self.saw_notifier
            .store(self.notifiers_registered(), Ordering::Relaxed);
        let r = waiter.wait(
            deadline,
            || {
                let ev = self.take();
                Ok(if ev.is_empty() { None } else { Some(ev) })
            },
            || self.pending(),
            || {
                // Relaxed (both): used by this thread only.
                let mut saw = self.saw_notifier.load(Ordering::Relaxed);
                let r = self.notifiers_gone(&mut saw);
                self.saw_notifier.store(saw, Ordering::Relaxed);
                r
            },
        )?;
        Ok(r.unwrap_or_default())
    }

    /// The check of a wait that slept a while: fails with
    /// [`ListenerError::NotifiersGone`] once every notifier seen during the
    /// wait (`saw`, which this keeps) has left or died and nothing is
    /// pending. A system call per notifier (its node's lock).
    pub(crate) fn notifiers_gone(&self, saw: &mut bool) -> Result<(), ListenerError> {
        if self.notifiers_alive() {
            *saw = true;
            Ok(())
        } else if *saw && !self.pending() {
            Err(ListenerError::NotifiersGone(self.service.name.to_string()))
        } else {
            Ok(())
        }
    }

    /// Whether a notifier is in the table (a cheap look, no system call).
    pub(crate) fn notifiers_registered(&self) -> bool {
        let svc = &self.service;
        (0..svc.table_len(PortKind::Publisher)).any(|i| {
            // Relaxed: a hint; notifiers_alive() does the real check.
            svc.port_slot(PortKind::Publisher, i)
                .port_id
                .load(Ordering::Relaxed)
                != 0
        })
    }

    /// Whether a notifier is registered and its process alive (a system
    /// call per notifier); for event loops that wait on the descriptor
    /// themselves (see [`Subscriber::publishers_alive`](crate::Subscriber::publishers_alive)).
    pub fn notifiers_alive(&self) -> bool {
        let svc = &self.service;
        (0..svc.table_len(PortKind::Publisher)).any(|i| {
            let slot = svc.port_slot(PortKind::Publisher, i);
            // ORDERING: Acquire; pairs with the Release store in register().
            slot.port_id.load(Ordering::Acquire) != 0
                // Relaxed: published with the port id.
                && node_alive_in(&svc.node.root, slot.node_id.load(Ordering::Relaxed))
        })
    }

    /// Registers interest before a waitset sleeps; true if events are
    /// already pending.
    /// Registers interest in the wake-up descriptor (`as_fd`): from now on
    /// a sender writes a byte to it after each send, until
    /// [`disarm_wakeup`](Self::disarm_wakeup). Returns true if something is
    /// waiting already (take it rather than sleep). For event loops other
    /// than a [`WaitSet`](crate::WaitSet) and hako's tokio support: register
    /// the descriptor for reading, take what is there, arm, sleep until it
    /// is readable, disarm, take again (the docs of `hako::aio`, with the
    /// `tokio` feature, say it whole).
    pub fn arm_wakeup(&self) -> bool {
        self.arm()
    }

    /// Withdraws the interest registered by
    /// [`arm_wakeup`](Self::arm_wakeup), and empties the descriptor.
    pub fn disarm_wakeup(&self) {
        self.disarm()
    }

    pub(crate) fn arm(&self) -> bool {
        self.service
            .wake_block(PortKind::Subscriber, self.index)
            .register_fd(&crate::os::futex::OsKernel, || self.pending())
    }

    /// The listener's wait strategy and its spin state, for an async wait.
    #[cfg(feature = "tokio")]
    pub(crate) fn spin_policy(&self) -> (WaitStrategy, &Adaptive) {
        (self.strategy, &self.adaptive)
    }

    /// Withdraws the interest taken by [`arm`](Self::arm) and empties the FIFO.
    pub(crate) fn disarm(&self) {
        self.service
            .wake_block(PortKind::Subscriber, self.index)
            .unregister_fd();
        fifo::drain(&self.fifo);
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fifo.as_fd()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.service
            .unregister(PortKind::Subscriber, self.index, self.port_id);
        let _ = self.service.dir.remove_file(&self.fifo_name);
    }
}
