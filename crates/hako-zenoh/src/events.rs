//! A bridged event service: local events out to Zenoh, Zenoh events in to
//! local listeners.
//!
//! Events carry no payload and no sender, so the bridge's own listener also
//! counts the events its own notifier raised for events that came in. It
//! keeps a count of those per id, raised *before* each local notify, and
//! takes them off what its listener saw: each one cancels one count, now or
//! at a later wait, so exactly the events raised by local notifiers go
//! out, however the two interleave, and none that came in goes back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hako::{EventId, EventQos, Listener, Notifier, ServiceName, WaitStrategy};
use zenoh::qos::CongestionControl;
use zenoh::sample::Locality;
use zenoh::Wait;

use crate::keys::{decode_event, encode_event};
use crate::link::{Ctx, LinkError, Refused, Worker, POLL};
use crate::open;

/// Most notifications one incoming message may ask for (a count beyond is
/// cut to this).
const MAX_COUNT: u64 = 1 << 16;

/// An event service carried both ways.
pub(crate) struct EventLink {
    _out: Worker,
    _inbound: zenoh::pubsub::Subscriber<()>,
}

/// Events the bridge's notifier raised that its listener has not yet
/// been seen to count, per id.
type Own = Arc<Mutex<HashMap<u64, u64>>>;

impl EventLink {
    /// Bridges event service `name` (made with `qos` if `create` and it
    /// does not exist); with `spin`, the outgoing thread polls.
    pub(crate) fn start(
        ctx: &Ctx,
        name: &ServiceName,
        qos: &EventQos,
        create: bool,
        refused: &Refused,
        spin: bool,
    ) -> Result<Self, LinkError> {
        let service = open::event(&ctx.node, name, qos, create)?;
        let notifier = service
            .notifier_builder()
            .create()
            .map_err(LinkError::port)?;
        let wait = if spin {
            WaitStrategy::BusySpin
        } else {
            WaitStrategy::default()
        };
        let listener = service
            .listener_builder()
            .wait_strategy(wait)
            .create()
            .map_err(LinkError::port)?;
        let max_id = qos.event_id_max;
        let own: Own = Arc::default();
        let key = ctx.keys.event(name.as_str());
        let zpub = ctx
            .session
            .declare_publisher(key.clone())
            .allowed_destination(Locality::Remote)
            .congestion_control(CongestionControl::Block)
            .wait()
            .map_err(LinkError::zenoh)?;
        let me = ctx.domain;
        let inbound = {
            let own = own.clone();
            let notifier = Mutex::new(notifier);
            let name = name.as_str().to_owned();
            let refused = refused.clone();
            ctx.session
                .declare_subscriber(key)
                .allowed_origin(Locality::Remote)
                .callback(move |sample| {
                    if crate::link::from_domain(sample.attachment(), me)
                        || crate::link::refused(sample.attachment(), &refused)
                    {
                        return;
                    }
                    let Some((id, count)) = decode_event(&sample.payload().to_bytes()) else {
                        tracing::warn!(service = %name, "dropped an incoming event that is not 8 or 16 bytes");
                        return;
                    };
                    if id > max_id {
                        tracing::warn!(service = %name, id, "dropped an incoming event beyond the service's highest id");
                        return;
                    }
                    raise(&notifier, &own, id, count.min(MAX_COUNT), &name);
                })
                .wait()
                .map_err(LinkError::zenoh)?
        };
        let attachment = me.attachment();
        let label = name.as_str().to_owned();
        let out = Worker::spawn(format!("out {label}"), move |stop| {
            out_loop(&listener, &zpub, &own, stop, attachment, &label)
        })?;
        // The service stays open through the ports.
        drop(service);
        Ok(Self {
            _out: out,
            _inbound: inbound,
        })
    }
}

/// Raises event `id` `count` times locally, counting each as the bridge's
/// own before it lands.
fn raise(notifier: &Mutex<Notifier>, own: &Own, id: u64, count: u64, name: &str) {
    let Ok(notifier) = notifier.lock() else {
        return;
    };
    for _ in 0..count {
        if let Ok(mut o) = own.lock() {
            *o.entry(id).or_default() += 1;
        }
        if let Err(e) = notifier.notify_with_id(EventId(id)) {
            tracing::warn!(service = name, id, "cannot raise an incoming event: {e}");
            if let Ok(mut o) = own.lock() {
                if let Some(n) = o.get_mut(&id) {
                    *n = n.saturating_sub(1);
                }
            }
            return;
        }
    }
}

/// Waits for local events and puts those not raised by the bridge itself
/// on Zenoh, until `stop`.
fn out_loop(
    listener: &Listener,
    zpub: &zenoh::pubsub::Publisher<'static>,
    own: &Own,
    stop: &AtomicBool,
    attachment: [u8; 8],
    name: &str,
) {
    while !stop.load(Ordering::Relaxed) {
        let events = match listener.timed_wait(POLL) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(service = name, "local wait failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        for (EventId(id), n) in events {
            let cancelled = match own.lock() {
                Ok(mut o) => match o.get_mut(&id) {
                    Some(k) => {
                        let c = (*k).min(n);
                        *k -= c;
                        c
                    }
                    None => 0,
                },
                Err(_) => 0,
            };
            let local = n - cancelled;
            if local == 0 {
                continue;
            }
            let msg = encode_event(id, local).to_vec();
            if let Err(e) = zpub.put(msg).attachment(attachment.to_vec()).wait() {
                tracing::warn!(service = name, "cannot put an event on Zenoh: {e}");
            }
        }
    }
}
