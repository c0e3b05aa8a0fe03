//! A bridged publish/subscribe service: local samples out to Zenoh, Zenoh
//! samples in to local subscribers.
//!
//! * Out: a local subscriber of the bridge's takes every sample and puts
//!   its bytes on the service's key expression; a thread of its own waits
//!   for samples. Samples of the bridge's own publisher (those that came
//!   in) are not sent back out.
//! * In: a Zenoh subscriber (remote origins only) publishes each sample
//!   locally through a publisher of the bridge's. A sample that does not fit
//!   the payload type is dropped (and logged); a slice longer than the
//!   publisher holds makes a publisher with room for it.
//!
//! Neither side waits for the other: the Zenoh publisher drops what a
//! congested network cannot take, and the local publisher, under a
//! backpressure policy, discards a sample a full subscriber cannot take
//! (counted in its overflow, which `hako monitor` shows).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use hako::{
    BackpressureStrategy, PayloadDescription, PubSubQos, PubSubService, Publisher, ServiceName,
    Subscriber,
};
use zenoh::qos::CongestionControl;
use zenoh::sample::Locality;
use zenoh::Wait;

use crate::link::{Ctx, LinkError, POLL};
use crate::open;
use crate::payload::{copy_in, copy_out, Shape};

/// Bytes of room a slice publisher of the bridge starts with.
const FIRST_SLICE_BYTES: usize = 4096;

/// A publish/subscribe service carried both ways.
pub(crate) struct PubSubLink {
    stop: Arc<AtomicBool>,
    out: Option<JoinHandle<()>>,
    _inbound: zenoh::pubsub::Subscriber<()>,
}

impl Drop for PubSubLink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.out.take() {
            let _ = t.join();
        }
    }
}

/// The bridge's publisher of incoming samples, replaced by a roomier one
/// when a slice does not fit.
struct Inbound {
    service: PubSubService<[u8]>,
    publisher: Publisher<[u8]>,
    shape: Shape,
    /// The publisher's id, read by the outgoing side to skip its samples.
    own: Arc<AtomicU64>,
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

    /// Publishes `bytes` locally.
    fn send(&mut self, bytes: &[u8]) {
        let Some(elements) = self.shape.elements(bytes.len()) else {
            tracing::warn!(
                service = %self.name,
                bytes = bytes.len(),
                "dropped an incoming sample that does not fit the payload type"
            );
            return;
        };
        if elements > self.publisher.max_slice_len() {
            match Self::publisher(&self.service, self.shape, elements.next_power_of_two()) {
                Ok(p) => {
                    self.own.store(p.id(), Ordering::Relaxed);
                    self.publisher = p;
                }
                Err(e) => {
                    tracing::warn!(service = %self.name, "cannot make a larger publisher: {e}");
                    return;
                }
            }
        }
        match self.publisher.loan_slice_uninit(elements) {
            Ok(mut loan) => {
                // SAFETY: the loan holds `elements` elements of the
                // service's element size, `bytes.len()` bytes (checked by
                // `elements` above); `bytes` is Zenoh's buffer, not shared
                // memory of this loan.
                unsafe { copy_in(loan.as_mut_ptr(), bytes) };
                // SAFETY: every byte of every element was written above.
                unsafe { loan.assume_init() }.send();
            }
            Err(e) => tracing::warn!(service = %self.name, "dropped an incoming sample: {e}"),
        }
    }
}

impl PubSubLink {
    /// Bridges service `name` (made from `payload` and `qos` if `create`
    /// and it does not exist).
    pub(crate) fn start(
        ctx: &Ctx,
        name: &ServiceName,
        payload: &PayloadDescription,
        qos: &PubSubQos,
        create: bool,
    ) -> Result<Self, LinkError> {
        let service = open::pubsub(&ctx.node, name, payload, qos, create)?;
        let shape = Shape::of(payload).ok_or(LinkError::Unsupported("payload too large"))?;
        let first = if shape.slice {
            (FIRST_SLICE_BYTES / shape.size.max(1)).max(1)
        } else {
            1
        };
        let publisher = Inbound::publisher(&service, shape, first).map_err(LinkError::port)?;
        let own = Arc::new(AtomicU64::new(publisher.id()));
        let subscriber = service
            .subscriber_builder()
            .create()
            .map_err(LinkError::port)?;
        let key = ctx.keys.pubsub(name.as_str());
        let zpub = ctx
            .session
            .declare_publisher(key.clone())
            .allowed_destination(Locality::Remote)
            .congestion_control(CongestionControl::Drop)
            .wait()
            .map_err(LinkError::zenoh)?;
        let inbound = Mutex::new(Inbound {
            service,
            publisher,
            shape,
            own: own.clone(),
            name: name.as_str().to_owned(),
        });
        let me = ctx.domain;
        let zsub = ctx
            .session
            .declare_subscriber(key)
            .allowed_origin(Locality::Remote)
            .callback(move |sample| {
                if crate::link::from_domain(sample.attachment(), me) {
                    return;
                }
                let bytes = sample.payload().to_bytes();
                if let Ok(mut inbound) = inbound.lock() {
                    inbound.send(&bytes);
                }
            })
            .wait()
            .map_err(LinkError::zenoh)?;
        let stop = Arc::new(AtomicBool::new(false));
        let out = {
            let stop = stop.clone();
            let attachment = me.attachment();
            let name = name.as_str().to_owned();
            std::thread::Builder::new()
                .name(format!("out {name}"))
                .spawn(move || out_loop(&subscriber, &zpub, shape, &own, &stop, attachment, &name))
                .map_err(|e| LinkError::Thread(e.to_string()))?
        };
        Ok(Self {
            stop,
            out: Some(out),
            _inbound: zsub,
        })
    }
}

/// Takes local samples and puts them on Zenoh until `stop`.
fn out_loop(
    sub: &Subscriber<[u8]>,
    zpub: &zenoh::pubsub::Publisher<'static>,
    shape: Shape,
    own: &AtomicU64,
    stop: &AtomicBool,
    attachment: [u8; 8],
    name: &str,
) {
    while !stop.load(Ordering::Relaxed) {
        match sub.receive_timeout(POLL) {
            Ok(Some(sample)) => {
                if sample.publisher_id() == own.load(Ordering::Relaxed) {
                    continue;
                }
                // SAFETY: a received sample holds `len` elements of the
                // service's element size at `as_ptr` (the library checked
                // the length against the publisher's chunk) while it lives.
                let bytes = unsafe { copy_out(sample.as_ptr(), sample.len(), shape) };
                drop(sample);
                if let Err(e) = zpub.put(bytes).attachment(attachment.to_vec()).wait() {
                    tracing::warn!(service = name, "cannot put a sample on Zenoh: {e}");
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(service = name, "local receive failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}
