//! Received samples: the payload in shared memory, where the publisher
//! wrote it (or, for payloads that travel in the queue slot, where the
//! subscriber took them from it).

use std::marker::PhantomData;
use std::ops::Deref;

use crate::port::payload::Payload;
use crate::port::receiver::sample::RawSample;

/// A received sample: dereferences to the payload in shared memory, where the
/// publisher wrote it; a payload of up to 48 bytes that travelled in the
/// queue slot (see [`PublisherBuilder::inline_payloads`](crate::PublisherBuilder::inline_payloads))
/// is read where the subscriber put it when it took the slot, in its own
/// memory. Dropping it hands the chunk back to the publisher.
///
/// `Send` and `Sync`. Dropping one on the thread that receives is cheapest
/// (plain stores); on another thread it costs an atomic increment. Do not
/// drop samples in a signal handler: that is not async-signal-safe.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # struct Rm(std::path::PathBuf);
/// # impl Drop for Rm { fn drop(&mut self) { let _ = std::fs::remove_dir_all(&self.0); } }
/// # let root = Rm(std::env::temp_dir().join(format!("hako-doc-{}-sample", std::process::id())));
/// # let node = hako::NodeBuilder::new().config(&hako::Config::default().with_root(&root.0)).create()?;
/// let service = node
///     .service_builder(&"Doc/Sample".try_into()?)
///     .publish_subscribe::<[u32; 4]>()
///     .open_or_create()?;
/// let subscriber = service.subscriber_builder().create()?;
/// let publisher = service.publisher_builder().create()?;
/// publisher.send_copy([1, 2, 3, 4])?;
/// if let Some(sample) = subscriber.receive()? {
///     assert_eq!(sample[2], 3); // 16 bytes: read where the queue slot brought them
///     assert_eq!(sample.publisher_id(), publisher.id());
/// } // dropped: the chunk goes back to the publisher
/// # Ok(()) }
/// ```
pub struct Sample<T: Payload + ?Sized> {
    raw: RawSample,
    _t: PhantomData<fn() -> Box<T>>,
}

impl<T: Payload + ?Sized> Sample<T> {
    #[inline]
    pub(crate) fn new(raw: RawSample) -> Self {
        Self {
            raw,
            _t: PhantomData,
        }
    }

    /// The id of the publisher that sent it.
    pub fn publisher_id(&self) -> u64 {
        self.raw.sender_id()
    }
}

impl<T: crate::port::payload::ShmSafe> Sample<[T]> {
    /// The first element, for code that reads through raw pointers
    /// (language bindings): [`len`](Self::len) elements of the service's
    /// element size lie there (see
    /// [`PubSubBuilder::payload_type`](crate::PubSubBuilder::payload_type)),
    /// until the sample drops.
    pub fn as_ptr(&self) -> *const T {
        self.raw.payload().cast()
    }

    /// Elements of the payload.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether the payload has no elements.
    pub fn is_empty(&self) -> bool {
        self.raw.len() == 0
    }
}

impl<T: Payload + ?Sized> Deref for Sample<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the raw sample's payload holds `len` elements of the
        // service's payload type, validated at receive, mapped and left
        // alone by the publisher while the sample lives (see
        // RawSample::payload); T is that type (checked when the service was
        // opened) and ShmSafe, so any bytes a misbehaving publisher might
        // write are still a valid T.
        unsafe { &*T::make_ptr(self.raw.payload().cast_mut(), self.raw.len()) }
    }
}

impl<T: Payload + ?Sized + std::fmt::Debug> std::fmt::Debug for Sample<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Sample").field(&&**self).finish()
    }
}
