//! A publish/subscribe service of any payload type, seen as bytes: how
//! `hako pub` and `hako sub` open it, check a message against its type,
//! and copy payloads in and out.
//!
//! The service's static description says which type it carries; the
//! service is opened as `[u8]` with that type given at run time
//! (`PubSubBuilder::payload_type`, the door the language bindings use), so
//! the library's type check passes and every port sees a sample as
//! `len` elements of the type's size. A `[u8]` service is opened as what
//! it is.

use hako::{
    Node, Pattern, Payload, PayloadDescription, PubSubService, Publisher, Sample, ServiceName,
    TypeDetails,
};

use super::open::{open_error, CreateArg};
use crate::common::{CliError, DomainArgs};

/// A payload type as a service records it.
#[derive(Debug, Clone)]
pub(super) struct PayloadType {
    /// The type's name (`u64`, `my_crate::Frame`, `[f32]`).
    pub name: String,
    /// Bytes of one value (of one element, for a slice).
    pub size: usize,
    /// Alignment in bytes.
    pub align: u64,
    /// Whether a payload is a slice of such elements.
    pub slice: bool,
}

impl PayloadType {
    pub fn of(d: &PayloadDescription) -> Result<Self, CliError> {
        let size = usize::try_from(d.size).map_err(|_| {
            CliError::failure(format!(
                "the service's payload type {} has a size of {} bytes, more than this \
                 machine can address",
                d.type_name, d.size
            ))
        })?;
        Ok(Self {
            name: d.type_name.clone(),
            size,
            align: d.align,
            slice: d.slice,
        })
    }

    /// Whether the payload is `[u8]`, which the commands treat as text.
    pub fn is_bytes(&self) -> bool {
        let bytes = <[u8] as Payload>::details();
        self.name == bytes.type_name
            && self.slice
            && self.size as u64 == bytes.size
            && self.align == bytes.align
    }

    /// The type for messages: `u64 (8 B, align 8)`, or for a slice
    /// `[f32] (elements of 4 B, align 4)`.
    pub fn describe(&self) -> String {
        if self.slice {
            format!(
                "{} (elements of {} B, align {})",
                self.name, self.size, self.align
            )
        } else {
            format!("{} ({} B, align {})", self.name, self.size, self.align)
        }
    }

    /// The head of a sample's hex dump: the type, with the element count
    /// of a slice (`[f32] (3 x 4 B, align 4)`).
    pub fn heading(&self, len: usize) -> String {
        if self.slice {
            format!(
                "{} ({len} x {} B, align {})",
                self.name, self.size, self.align
            )
        } else {
            self.describe()
        }
    }

    /// How many elements a message of `n` bytes holds (1 for a type that
    /// is not a slice); a message that does not fit the type is a usage
    /// error naming the type and the sizes.
    pub fn elements(&self, service: &str, n: usize) -> Result<usize, CliError> {
        if self.slice {
            if self.size == 0 {
                return Err(CliError::usage(format!(
                    "service {service:?} carries {}: a slice of zero-sized elements \
                     cannot be sent from bytes",
                    self.describe()
                )));
            }
            if n % self.size != 0 {
                return Err(CliError::usage(format!(
                    "service {service:?} carries {}: a message must be a multiple of \
                     {} bytes, and this one has {n}",
                    self.describe(),
                    self.size
                )));
            }
            Ok(n / self.size)
        } else if n != self.size {
            Err(CliError::usage(format!(
                "service {service:?} carries {}: a message must be exactly {} bytes, \
                 and this one has {n}",
                self.describe(),
                self.size
            )))
        } else {
            Ok(1)
        }
    }

    /// Raw bytes (`--binary`) cut into messages: one message for a slice,
    /// else as many of the type's size as there are; the whole must fit.
    pub fn split<'a>(&self, service: &str, data: &'a [u8]) -> Result<Vec<&'a [u8]>, CliError> {
        if self.slice {
            self.elements(service, data.len())?;
            return Ok(vec![data]);
        }
        if self.size == 0 {
            return Err(CliError::usage(format!(
                "service {service:?} carries {}: a zero-sized type cannot be cut from \
                 stdin; send it with --hex \"\"",
                self.describe()
            )));
        }
        if data.len() % self.size != 0 {
            return Err(CliError::usage(format!(
                "service {service:?} carries {}: stdin holds {} bytes, which is not a \
                 whole number of {}-byte messages",
                self.describe(),
                data.len(),
                self.size
            )));
        }
        Ok(data.chunks(self.size).collect())
    }
}

/// A publish/subscribe service opened as bytes, with its payload type.
pub(super) struct BytesService {
    /// The service; its ports see payloads as bytes.
    pub service: PubSubService<[u8]>,
    /// The type it carries.
    pub ty: PayloadType,
}

/// Opens the publish/subscribe service `name` whatever its payload type;
/// with `create`, a missing one is made as a `[u8]` service, and a service
/// of another type is refused (the tool cannot make up a type).
pub(super) fn open(
    domain: &DomainArgs,
    node: &Node,
    name: &ServiceName,
    create: CreateArg,
) -> Result<BytesService, CliError> {
    let cfg = domain.config()?;
    // A missing service, a service of another pattern or one whose
    // description cannot be read is opened as `[u8]`: the library then
    // says what is wrong (or opens it, if it was made meanwhile).
    let recorded = match hako::inspect::service(&cfg, name) {
        Ok(info) => match info.description.pattern {
            Pattern::PublishSubscribe { payload, .. } => Some(payload),
            _ => None,
        },
        Err(_) => None,
    };
    // The recorded type, when it is not `[u8]`.
    let typed = match recorded {
        Some(p) => {
            let ty = PayloadType::of(&p)?;
            (!ty.is_bytes()).then_some((p, ty))
        }
        None => None,
    };
    let builder = node.service_builder(name).publish_subscribe::<[u8]>();
    let service = match typed {
        Some((_, ty)) if create.create => {
            return Err(CliError::usage(format!(
                "service {:?} carries {}; --create makes only [u8] services (the \
                 tool cannot make up another type): leave it out to use this one",
                name.as_str(),
                ty.describe()
            )));
        }
        Some((p, _)) => builder
            .payload_type(TypeDetails {
                type_name: p.type_name,
                size: p.size,
                align: p.align,
                slice: p.slice,
            })
            .open(),
        None if create.create => builder.open_or_create(),
        None => builder.open(),
    }
    .map_err(|e| open_error(name, e))?;
    let ty = PayloadType::of(service.payload())?;
    Ok(BytesService { service, ty })
}

/// Opens (or, with `create`, makes) the publish/subscribe service `name`
/// carrying `ty`, a type known from elsewhere (a recording): ports see its
/// payloads as bytes. A service that carries another type is refused by
/// the library.
pub(super) fn open_typed(
    node: &Node,
    name: &ServiceName,
    ty: &PayloadType,
    create: bool,
) -> Result<BytesService, CliError> {
    let builder = node
        .service_builder(name)
        .publish_subscribe::<[u8]>()
        .payload_type(TypeDetails {
            type_name: ty.name.clone(),
            size: ty.size as u64,
            align: ty.align,
            slice: ty.slice,
        });
    let service = if create {
        builder.open_or_create()
    } else {
        builder.open()
    }
    .map_err(|e| open_error(name, e))?;
    let ty = PayloadType::of(service.payload())?;
    Ok(BytesService { service, ty })
}

/// The samples the publishers of service `name` dropped for its
/// subscriber `id` (their overflow towards it), as its port counters say.
pub(super) fn dropped_for(cfg: &hako::Config, name: &ServiceName, id: u64) -> Option<u64> {
    let info = hako::inspect::service(cfg, name).ok()?;
    info.subscribers
        .iter()
        .find(|p| p.id == id)
        .and_then(|p| match p.counters {
            hako::inspect::PortCounters::Subscriber { dropped, .. } => Some(dropped),
            _ => None,
        })
}

/// The bytes of a received sample, where they lie: its `len` elements of
/// the type's size.
pub(super) fn as_bytes<'s>(sample: &'s Sample<[u8]>, ty: &PayloadType) -> &'s [u8] {
    // The library checked at receive that `len` elements fit the
    // publisher's chunk, so the product does not overflow.
    let n = sample.len() * ty.size;
    // SAFETY: `n` bytes lie at `as_ptr` while the sample lives (the
    // returned slice borrows it): `len` elements of the size the service
    // records (`ty`, read from the service this sample's subscriber
    // opened; see `PubSubBuilder::payload_type`). The publisher does not
    // write a sent sample's chunk while a subscriber holds it.
    unsafe { std::slice::from_raw_parts(sample.as_ptr().cast::<u8>(), n) }
}

/// The bytes of a received sample: its `len` elements of the type's size.
pub(super) fn bytes_of(sample: &Sample<[u8]>, ty: &PayloadType) -> Vec<u8> {
    // The library checked at receive that `len` elements fit the
    // publisher's chunk, so the product does not overflow.
    let n = sample.len() * ty.size;
    let mut out = Vec::with_capacity(n);
    // SAFETY: `n` bytes lie at `as_ptr` while the sample lives: `len`
    // elements of the size the service records (`ty`, read from the
    // service this sample's subscriber opened; see
    // `PubSubBuilder::payload_type`). `out` has room for `n` bytes and is
    // this process's own memory, so the two do not overlap; after the
    // copy all `n` bytes of `out` are initialised.
    unsafe {
        std::ptr::copy_nonoverlapping(sample.as_ptr(), out.as_mut_ptr(), n);
        out.set_len(n);
    }
    out
}

/// Sends `msg` (checked by [`PayloadType::elements`]: a whole number of
/// elements) as one sample; returns how many subscribers got it.
pub(super) fn send(
    publisher: &Publisher<[u8]>,
    ty: &PayloadType,
    service: &str,
    msg: &[u8],
) -> Result<usize, CliError> {
    let elements = ty.elements(service, msg.len())?;
    let mut loan = publisher
        .loan_slice_uninit(elements)
        .map_err(|e| CliError::failure(e.to_string()))?;
    // SAFETY: the loan holds `elements` elements of the service's element
    // size `ty.size` at `as_mut_ptr`, which is `msg.len()` bytes (checked
    // by `elements` just above); `msg` is this process's own memory, not
    // the loaned chunk.
    unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), loan.as_mut_ptr(), msg.len()) };
    // SAFETY: every byte of every element was written just above.
    Ok(unsafe { loan.assume_init() }.send())
}

/// `bytes` as hex, two digits a byte, `sep` between bytes.
pub(super) fn hex(bytes: &[u8], sep: &str) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(sep)
}

/// The bytes a hex message spells (`"0a000000"`, `"0a 00 00 00"`: white
/// space between digits is ignored).
pub(super) fn parse_hex(s: &str) -> Result<Vec<u8>, CliError> {
    let digits: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some(c) = digits.iter().find(|c| !c.is_ascii_hexdigit()) {
        return Err(CliError::usage(format!(
            "hex message {s:?}: {c:?} is not a hex digit"
        )));
    }
    if digits.len() % 2 != 0 {
        return Err(CliError::usage(format!(
            "hex message {s:?} has an odd number of digits ({}); two make a byte",
            digits.len()
        )));
    }
    Ok(digits
        .chunks(2)
        .map(|p| {
            let digit = |c: char| c.to_digit(16).unwrap_or(0) as u8;
            digit(p[0]) << 4 | digit(p[1])
        })
        .collect())
}
