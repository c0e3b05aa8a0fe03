//! A bridged publish/subscribe service: local samples out to Zenoh, Zenoh
//! samples in to local subscribers.
//!
//! * Out: a local subscriber of the bridge's takes every sample and puts
//!   its bytes on the service's key expression, straight from shared
//!   memory (Zenoh reads the sample, which goes back to its publisher when
//!   Zenoh lets go of it); a thread of its own waits for samples. The
//!   subscriber leaves out the bridge's own publisher
//!   (`SubscriberBuilder::skip_own_node`): what came in is neither sent
//!   back out nor wakes it.
//! * In: a Zenoh subscriber (remote origins only) publishes each sample
//!   locally through a publisher of the bridge's, copying Zenoh's pieces of
//!   it straight into the loan. A sample that does not fit the payload type
//!   is dropped (and logged); a slice longer than the publisher holds makes
//!   a publisher with room for it.
//!
//! A slow network never blocks local programs, and what it costs is
//! counted where `hako monitor` shows it:
//!
//! * Out, the Zenoh publisher waits for the network (congestion control
//!   `Block`); meanwhile the bridge's local subscriber falls behind and the
//!   service's publishers drop its oldest samples, counted as their
//!   overflow towards it. On a backpressure service too: the subscriber is
//!   lossy (`SubscriberBuilder::lossy`), so publishers never wait for it,
//!   while the service's other subscribers keep their backpressure. (Zenoh's
//!   own `Drop` would lose samples where nothing counts them.)
//! * In, the bridge's local publisher discards a sample a full local
//!   subscriber cannot take under a backpressure policy (counted in its
//!   overflow) rather than wait; under drop-oldest the subscriber loses its
//!   oldest, counted likewise.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hako::{
    BackpressureStrategy, PayloadDescription, PubSubQos, PubSubService, Publisher, ServiceName,
    Subscriber,
};
use zenoh::qos::CongestionControl;
use zenoh::sample::Locality;
use zenoh::Wait;

use crate::link::{Ctx, LinkError, Room, Shared, Worker, POLL};
use crate::open;
use crate::payload::{copy_in, Shape};

/// Bytes of room a slice publisher of the bridge starts with.
const FIRST_SLICE_BYTES: usize = 4096;

/// How often the outgoing thread looks whether another domain subscribes,
/// while none does.
const MATCH_POLL: Duration = Duration::from_millis(5);

/// A publish/subscribe service carried both ways.
pub(crate) struct PubSubLink {
    // Dropped first: the listener goes before its publisher (in `_out`).
    _matching: zenoh::matching::MatchingListener<()>,
    _out: Worker,
    /// The Zenoh subscriber of incoming samples: there while this domain
    /// has subscribers of its own (so that other domains' bridges take
    /// samples only while someone here reads them).
    inbound: Option<zenoh::pubsub::Subscriber<()>>,
    incoming: Incoming,
}

/// What the Zenoh subscriber of incoming samples is made with.
struct Incoming {
    session: zenoh::Session,
    key: String,
    me: crate::keys::DomainId,
    refused: crate::link::Refused,
    publisher: Arc<Mutex<Inbound>>,
    name: String,
}

impl Incoming {
    fn subscribe(&self) -> Result<zenoh::pubsub::Subscriber<()>, LinkError> {
        let (me, refused) = (self.me, self.refused.clone());
        let inbound = self.publisher.clone();
        self.session
            .declare_subscriber(self.key.clone())
            .allowed_origin(Locality::Remote)
            .callback(move |sample| {
                if crate::link::from_domain(sample.attachment(), me)
                    || crate::link::refused(sample.attachment(), &refused)
                {
                    return;
                }
                let payload = sample.payload();
                if let Ok(mut inbound) = inbound.lock() {
                    inbound.send(payload.len(), payload.slices());
                }
            })
            .wait()
            .map_err(LinkError::zenoh)
    }
}

/// The bridge's publisher of incoming samples, replaced by a roomier one
/// when a slice does not fit.
struct Inbound {
    service: PubSubService<[u8]>,
    publisher: Publisher<[u8]>,
    shape: Shape,
    room: Arc<Room>,
    /// A length the bridge could not make a publisher for.
    failed: usize,
    name: String,
}

impl Inbound {
    fn publisher(
        service: &PubSubService<[u8]>,
        shape: Shape,
        elements: usize,
    ) -> Result<Publisher<[u8]>, hako::PublisherCreateError> {
        service
            .publisher_builder()
            .max_slice_len(elements.max(1))
            .backpressure(BackpressureStrategy::Discard)
            .create()
            .inspect(|_| {
                tracing::debug!(elements, size = shape.size, "bridge publisher made");
            })
    }

    /// Publishes the `n` bytes of `pieces` locally as one sample.
    fn send<'a>(&mut self, n: usize, pieces: impl Iterator<Item = &'a [u8]>) {
        let Some(elements) = self.shape.elements(n) else {
            tracing::warn!(
                service = %self.name,
                bytes = n,
                "dropped an incoming sample that does not fit the payload type"
            );
            return;
        };
        // Room for this sample, and for the longest another domain said
        // its publishers send (made now, not at a later sample's turn).
        let wanted = elements.max(self.room.writers());
        if self.shape.slice && wanted > self.publisher.max_slice_len() && wanted != self.failed {
            let len = wanted.checked_next_power_of_two().unwrap_or(wanted);
            match Self::publisher(&self.service, self.shape, len) {
                Ok(p) => self.publisher = p,
                Err(e) => {
                    tracing::warn!(service = %self.name, elements = len, "cannot make a larger publisher: {e}");
                    self.failed = wanted;
                }
            }
        }
        if elements > self.publisher.max_slice_len() {
            tracing::warn!(service = %self.name, elements, "dropped an incoming sample longer than the bridge's publisher holds");
            return;
        }
        match self.publisher.loan_slice_uninit(elements) {
            Ok(mut loan) => {
                let dst = loan.as_mut_ptr();
                let mut at = 0;
                for piece in pieces {
                    if at + piece.len() > n {
                        break;
                    }
                    // SAFETY: the loan holds `elements` elements of the
                    // service's element size, `n` bytes (checked by
                    // `elements` above), and the pieces, Zenoh's buffers,
                    // hold `n` bytes in all; `at + piece.len() <= n`.
                    unsafe { copy_in(dst.add(at), piece) };
                    at += piece.len();
                }
                if at != n {
                    tracing::warn!(service = %self.name, "dropped an incoming sample shorter than it said");
                    return;
                }
                // SAFETY: every byte of every element was written above.
                unsafe { loan.assume_init() }.send();
            }
            Err(e) => tracing::warn!(service = %self.name, "dropped an incoming sample: {e}"),
        }
    }
}

/// A received sample as the bytes Zenoh sends, read in place: Zenoh holds
/// it (and the sample its chunk) until it has written them out.
struct Outgoing {
    sample: hako::Sample<[u8]>,
    bytes: usize,
}

impl AsRef<[u8]> for Outgoing {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: a received sample holds `len` elements of the service's
        // element size at `as_ptr` (the library checked the length against
        // the publisher's chunk), `bytes` of them, readable and unwritten
        // while the sample lives, which is as long as `self`.
        unsafe { std::slice::from_raw_parts(self.sample.as_ptr(), self.bytes) }
    }
}

impl PubSubLink {
    /// Bridges service `name` (made from `payload` and `qos` if `create`
    /// and it does not exist); with `spin`, the outgoing thread polls;
    /// `readers`: this domain has subscribers (see
    /// [`readers_here`](Self::readers_here)).
    pub(crate) fn start(
        ctx: &Ctx,
        name: &ServiceName,
        payload: &PayloadDescription,
        qos: &PubSubQos,
        create: bool,
        shared: &Shared,
        (spin, readers): (bool, bool),
    ) -> Result<Self, LinkError> {
        let service = open::pubsub(&ctx.node, name, payload, qos, create)?;
        let shape = Shape::of(payload).ok_or(LinkError::Unsupported("payload too large"))?;
        let first = if shape.slice {
            (FIRST_SLICE_BYTES / shape.size.max(1))
                .max(shared.room.writers())
                .max(1)
        } else {
            1
        };
        let publisher = Inbound::publisher(&service, shape, first).map_err(LinkError::port)?;
        let key = ctx.keys.pubsub(name.as_str());
        let zpub = ctx
            .session
            .declare_publisher(key.clone())
            .allowed_destination(Locality::Remote)
            .congestion_control(CongestionControl::Block)
            .wait()
            .map_err(LinkError::zenoh)?;
        // Whether another domain's bridge subscribes: only then does this
        // one take local samples (see `out_loop`).
        let matching = Arc::new(AtomicBool::new(false));
        let listener = {
            let matching = matching.clone();
            zpub.matching_listener()
                .callback(move |status| matching.store(status.matching(), Ordering::Relaxed))
                .wait()
                .map_err(LinkError::zenoh)?
        };
        let incoming = Incoming {
            session: ctx.session.clone(),
            key,
            me: ctx.domain,
            refused: shared.refused.clone(),
            publisher: Arc::new(Mutex::new(Inbound {
                service: service.clone(),
                publisher,
                shape,
                room: shared.room.clone(),
                failed: 0,
                name: name.as_str().to_owned(),
            })),
            name: name.as_str().to_owned(),
        };
        let me = ctx.domain;
        let out = Out {
            service,
            zpub,
            matching,
            shape,
            attachment: me.attachment(),
            spin,
            name: name.as_str().to_owned(),
        };
        let out = Worker::spawn(format!("out {}", out.name), move |stop| out.run(stop))?;
        let mut link = Self {
            _matching: listener,
            _out: out,
            inbound: None,
            incoming,
        };
        link.readers_here(readers)?;
        Ok(link)
    }

    /// Follows whether this domain has subscribers of its own: samples of
    /// other domains come in only while it does.
    pub(crate) fn readers_here(&mut self, readers: bool) -> Result<(), LinkError> {
        match (&self.inbound, readers) {
            (None, true) => {
                self.inbound = Some(self.incoming.subscribe()?);
                tracing::debug!(service = %self.incoming.name, "subscribers here: taking samples of other domains");
            }
            (Some(_), false) => {
                self.inbound = None;
                tracing::debug!(service = %self.incoming.name, "no subscriber here: no longer taking samples of other domains");
            }
            _ => {}
        }
        Ok(())
    }
}

/// The outgoing side: local samples to Zenoh.
struct Out {
    service: PubSubService<[u8]>,
    zpub: zenoh::pubsub::Publisher<'static>,
    /// Another domain's bridge subscribes (Zenoh's matching status).
    matching: Arc<AtomicBool>,
    shape: Shape,
    attachment: [u8; 8],
    /// Poll instead of sleeping (`--low-latency`).
    spin: bool,
    name: String,
}

impl Out {
    /// Takes local samples and puts them on Zenoh until `stop`, through a
    /// local subscriber that exists only while another domain subscribes:
    /// so a publisher counts it (`Publisher::subscriber_count`) exactly
    /// when its samples cross, and a sample sent once it is counted
    /// reaches the other domains.
    fn run(&self, stop: &AtomicBool) {
        let mut sub: Option<Subscriber<[u8]>> = None;
        let mut said = crate::link::Said::default();
        while !stop.load(Ordering::Relaxed) {
            // Relaxed: a flag; a sample taken just after it fell is still
            // put (Zenoh drops it if nobody subscribes any more).
            let matching = self.matching.load(Ordering::Relaxed);
            match (&sub, matching) {
                (None, false) => std::thread::sleep(MATCH_POLL),
                (None, true) => match self.subscriber() {
                    Ok(s) => {
                        tracing::debug!(service = %self.name, "another domain subscribes: taking samples");
                        said.clear();
                        sub = Some(s);
                    }
                    Err(e) => {
                        said.warn(&self.name, format!("cannot subscribe locally: {e}"));
                        std::thread::sleep(Duration::from_millis(500));
                    }
                },
                (Some(_), false) => {
                    tracing::debug!(service = %self.name, "no other domain subscribes: no longer taking samples");
                    sub = None;
                }
                (Some(s), true) => self.forward(s),
            }
        }
    }

    /// The bridge's local subscriber. Lossy: the service's publishers never
    /// wait for it, whatever the network does (see the module doc).
    fn subscriber(&self) -> Result<Subscriber<[u8]>, hako::SubscriberCreateError> {
        self.service
            .subscriber_builder()
            .skip_own_node(true)
            .lossy(true)
            .create()
    }

    /// Waits a while for a local sample and puts it on Zenoh.
    fn forward(&self, sub: &Subscriber<[u8]>) {
        let name = &self.name;
        let taken = if self.spin {
            crate::link::poll(|| sub.receive().transpose()).transpose()
        } else {
            sub.receive_timeout(POLL)
        };
        match taken {
            Ok(Some(sample)) => {
                let bytes = sample.len() * self.shape.size;
                let out = bytes::Bytes::from_owner(Outgoing { sample, bytes });
                let put = self.zpub.put(out).attachment(self.attachment.to_vec());
                if let Err(e) = put.wait() {
                    tracing::warn!(service = %name, "cannot put a sample on Zenoh: {e}");
                }
            }
            Ok(None) => {}
            // Zenoh still holds as many samples as the bridge may: they go
            // back as it writes them out.
            Err(hako::ReceiveError::ExceedsMaxBorrowed(_)) => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => {
                tracing::warn!(service = %name, "local receive failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}
