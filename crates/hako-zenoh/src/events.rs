//! A bridged event service: local events out to Zenoh, Zenoh events in to
//! local listeners.
//!
//! As for samples, the bridge takes part only where someone listens: its
//! local listener exists while another domain's bridge subscribes to the
//! service's events (so a notifier counts it, `Notifier::listener_count`,
//! exactly when events cross), and its Zenoh subscriber while this domain
//! has listeners of its own.
//!
//! Events carry no payload and no sender, so the bridge's own listener also
//! counts the events its own notifier raised for events that came in. It
//! keeps a count of those per id, raised *before* each local notify, and
//! takes them off what its listener saw: each one cancels one count, now or
//! at a later wait, so exactly the events raised by local notifiers go
//! out, however the two interleave, and none that came in goes back. The
//! counts are kept only while the listener exists (made and dropped under
//! the same lock as a count and its notify).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hako::{EventId, EventQos, EventService, Listener, Notifier, ServiceName};
use zenoh::qos::CongestionControl;
use zenoh::sample::Locality;
use zenoh::Wait;

use crate::keys::{decode_event, encode_event, DomainId};
use crate::link::{Ctx, LinkError, Refused, Worker, POLL};
use crate::open;

/// Most notifications one incoming message may ask for (a count beyond is
/// cut to this).
const MAX_COUNT: u64 = 1 << 16;

/// How often the outgoing thread looks whether another domain listens,
/// while none does.
const MATCH_POLL: Duration = Duration::from_millis(5);

/// An event service carried both ways.
pub(crate) struct EventLink {
    // Dropped first: the listener goes before its publisher (in `_out`).
    _matching: zenoh::matching::MatchingListener<()>,
    _out: Worker,
    /// The Zenoh subscriber of incoming events: there while this domain
    /// has listeners of its own.
    inbound: Option<zenoh::pubsub::Subscriber<()>>,
    incoming: Incoming,
}

/// Events the bridge's notifier raised that its listener has not yet been
/// seen to count, per id; `None` while the bridge has no listener.
type Own = Arc<Mutex<Option<HashMap<u64, u64>>>>;

/// What the Zenoh subscriber of incoming events is made with.
struct Incoming {
    session: zenoh::Session,
    key: String,
    me: DomainId,
    refused: Refused,
    notifier: Arc<Notifier>,
    own: Own,
    max_id: u64,
    name: String,
}

impl Incoming {
    fn subscribe(&self) -> Result<zenoh::pubsub::Subscriber<()>, LinkError> {
        let (me, refused, max_id) = (self.me, self.refused.clone(), self.max_id);
        let (notifier, own, name) = (self.notifier.clone(), self.own.clone(), self.name.clone());
        self.session
            .declare_subscriber(self.key.clone())
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
            .map_err(LinkError::zenoh)
    }
}

impl EventLink {
    /// Bridges event service `name` (made with `qos` if `create` and it
    /// does not exist); with `spin`, the outgoing thread polls; `readers`:
    /// this domain has listeners (see [`readers_here`](Self::readers_here)).
    pub(crate) fn start(
        ctx: &Ctx,
        name: &ServiceName,
        qos: &EventQos,
        create: bool,
        refused: &Refused,
        (spin, readers): (bool, bool),
    ) -> Result<Self, LinkError> {
        let service = open::event(&ctx.node, name, qos, create)?;
        let notifier = service
            .notifier_builder()
            .create()
            .map_err(LinkError::port)?;
        let own: Own = Arc::default();
        let key = ctx.keys.event(name.as_str());
        let zpub = ctx
            .session
            .declare_publisher(key.clone())
            .allowed_destination(Locality::Remote)
            .congestion_control(CongestionControl::Block)
            .wait()
            .map_err(LinkError::zenoh)?;
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
            refused: refused.clone(),
            notifier: Arc::new(notifier),
            own: own.clone(),
            max_id: qos.event_id_max,
            name: name.as_str().to_owned(),
        };
        let out = Out {
            service,
            zpub,
            matching,
            own,
            attachment: ctx.domain.attachment(),
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

    /// Follows whether this domain has listeners of its own: events of
    /// other domains come in only while it does.
    pub(crate) fn readers_here(&mut self, readers: bool) -> Result<(), LinkError> {
        match (&self.inbound, readers) {
            (None, true) => self.inbound = Some(self.incoming.subscribe()?),
            (Some(_), false) => self.inbound = None,
            _ => {}
        }
        Ok(())
    }
}

/// Raises event `id` `count` times locally, counting each as the bridge's
/// own (while it has a listener to see it) before it lands.
fn raise(notifier: &Notifier, own: &Own, id: u64, count: u64, name: &str) {
    for _ in 0..count {
        // The count and the notify under one lock, which the listener is
        // made and dropped under: a count is kept exactly for the events
        // the bridge's listener sees.
        let Ok(mut o) = own.lock() else {
            return;
        };
        if let Some(o) = o.as_mut() {
            *o.entry(id).or_default() += 1;
        }
        if let Err(e) = notifier.notify_with_id(EventId(id)) {
            tracing::warn!(service = name, id, "cannot raise an incoming event: {e}");
            if let Some(n) = o.as_mut().and_then(|o| o.get_mut(&id)) {
                *n = n.saturating_sub(1);
            }
            return;
        }
    }
}

/// The outgoing side: local events to Zenoh.
struct Out {
    service: EventService,
    zpub: zenoh::pubsub::Publisher<'static>,
    /// Another domain's bridge subscribes (Zenoh's matching status).
    matching: Arc<AtomicBool>,
    own: Own,
    attachment: [u8; 8],
    /// Poll instead of sleeping (`--low-latency`).
    spin: bool,
    name: String,
}

impl Out {
    /// Waits for local events and puts those not raised by the bridge
    /// itself on Zenoh, until `stop`, through a listener that exists only
    /// while another domain listens.
    fn run(&self, stop: &AtomicBool) {
        let mut listener: Option<Listener> = None;
        let mut said = crate::link::Said::default();
        while !stop.load(Ordering::Relaxed) {
            // Relaxed: a flag; events taken just after it fell still go.
            let matching = self.matching.load(Ordering::Relaxed);
            match (&listener, matching) {
                (None, false) => std::thread::sleep(MATCH_POLL),
                (None, true) => match self.listener() {
                    Ok(l) => {
                        said.clear();
                        listener = Some(l);
                    }
                    Err(e) => {
                        said.warn(&self.name, format!("cannot listen locally: {e}"));
                        std::thread::sleep(Duration::from_millis(500));
                    }
                },
                (Some(_), false) => {
                    if let Ok(mut o) = self.own.lock() {
                        listener = None;
                        *o = None;
                    }
                }
                (Some(l), true) => self.forward(l),
            }
        }
    }

    /// The bridge's local listener, made with its count of own events.
    fn listener(&self) -> Result<Listener, String> {
        let mut o = self.own.lock().map_err(|_| "a poisoned lock".to_owned())?;
        let l = self
            .service
            .listener_builder()
            .create()
            .map_err(|e| e.to_string())?;
        *o = Some(HashMap::new());
        Ok(l)
    }

    /// Waits a while for local events and puts them on Zenoh.
    fn forward(&self, listener: &Listener) {
        let name = &self.name;
        let waited = if self.spin {
            Ok(
                crate::link::poll(|| Some(listener.try_wait()).filter(|e| !e.is_empty()))
                    .unwrap_or_default(),
            )
        } else {
            listener.timed_wait(POLL)
        };
        let events = match waited {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(service = %name, "local wait failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
        };
        for (EventId(id), n) in events {
            let cancelled = match self.own.lock() {
                Ok(mut o) => match o.as_mut().and_then(|o| o.get_mut(&id)) {
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
            if let Err(e) = self
                .zpub
                .put(msg)
                .attachment(self.attachment.to_vec())
                .wait()
            {
                tracing::warn!(service = %name, "cannot put an event on Zenoh: {e}");
            }
        }
    }
}
