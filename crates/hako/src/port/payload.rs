//! Payload types: what may be placed in shared memory.

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::domain::service::error::ServiceError;

/// Marker for types that may live in shared memory and be read in place by
/// another process.
///
/// # Safety
/// Implement it (or better, derive it with `#[derive(ShmSafe)]`) only for
/// types that
/// * have a fixed layout (`#[repr(C)]` or `#[repr(transparent)]`, or a
///   primitive), so both processes agree on it,
/// * hold no pointers or references (an address means nothing in another
///   process) and no file descriptors or other process-local handles,
/// * need no `Drop` (the memory is reclaimed without running destructors),
/// * are valid for every bit pattern their publisher may write, or say
///   which ones are not: a type with invalid bit patterns (`bool`, `char`,
///   and structs and arrays holding them) sets
///   [`CHECKED`](ShmSafe::CHECKED) and [`is_valid`](ShmSafe::is_valid),
///   and every sample of it is checked when received (a bad one is an
///   error, [`ReceiveError::InvalidPayload`](crate::ReceiveError::InvalidPayload),
///   never a value). Types without invalid bit patterns pay nothing.
///
/// The type's name ([`type_name`](ShmSafe::type_name)) is part of a
/// service's compatibility check, with its size and alignment: two
/// processes whose payload types are named differently cannot share a
/// service, even when size and alignment agree. The derive names a struct
/// by its full path (`my_crate::telemetry::Frame`) with its generic
/// arguments (`my_crate::Slot<u32>`); primitives by their Rust names
/// (`u32`), arrays by their element type and length (`[u16; 4]`), slices
/// by their element type (`[u8]`). A C or Python program names the same
/// type with the same string (its bindings take it as an argument).
pub unsafe trait ShmSafe: Send + Sync + 'static {
    /// The base of the type's name: for a struct, its full path without
    /// generic arguments (or what `#[hako(type_name = "...")]` says).
    const TYPE_NAME: &'static str;

    /// The full name used in the service's compatibility check: the base
    /// name with generic arguments and element types.
    fn type_name() -> String {
        Self::TYPE_NAME.to_owned()
    }

    /// Whether some bit patterns of the type's size are not values of it
    /// (`bool`, `char`, and types holding them): their samples are checked
    /// with [`is_valid`](ShmSafe::is_valid) when received. The derive sets
    /// it when a field's type does.
    const CHECKED: bool = false;

    /// Whether the bytes at `p` are a value of the type (asked only when
    /// [`CHECKED`](ShmSafe::CHECKED)). The derive checks each field whose
    /// type is `CHECKED`.
    ///
    /// # Safety
    /// `p` points to `size_of::<Self>()` readable bytes, not necessarily
    /// aligned for `Self`.
    unsafe fn is_valid(p: *const u8) -> bool {
        let _ = p;
        true
    }
}

// SAFETY: one byte, no pointers, no Drop; the bit patterns other than 0
// and 1 are not bools, and is_valid says so (checked on receive).
unsafe impl ShmSafe for bool {
    const TYPE_NAME: &'static str = "bool";
    const CHECKED: bool = true;
    unsafe fn is_valid(p: *const u8) -> bool {
        // SAFETY: one readable byte (the caller's promise).
        unsafe { p.read() <= 1 }
    }
}

// SAFETY: four bytes, no pointers, no Drop; values that are not Unicode
// scalar values are not chars, and is_valid says so (checked on receive).
unsafe impl ShmSafe for char {
    const TYPE_NAME: &'static str = "char";
    const CHECKED: bool = true;
    unsafe fn is_valid(p: *const u8) -> bool {
        // SAFETY: four readable bytes (the caller's promise); read as an
        // integer, which every bit pattern is.
        let v = unsafe { p.cast::<u32>().read_unaligned() };
        char::from_u32(v).is_some()
    }
}

macro_rules! shm_safe_primitives {
    ($($t:ty),*) => {$(
        // SAFETY: primitives have a fixed layout, no pointers, no Drop, and
        // every bit pattern of their size is a valid value.
        unsafe impl ShmSafe for $t {
            const TYPE_NAME: &'static str = stringify!($t);
        }
    )*};
}
shm_safe_primitives!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY: an array of ShmSafe elements is laid out contiguously, holds no
// pointers and needs no Drop.
unsafe impl<T: ShmSafe, const N: usize> ShmSafe for [T; N] {
    const TYPE_NAME: &'static str = "array";
    fn type_name() -> String {
        format!("[{}; {N}]", T::type_name())
    }
    const CHECKED: bool = T::CHECKED;
    unsafe fn is_valid(p: *const u8) -> bool {
        // SAFETY: element i lies inside the array's bytes (the caller's
        // promise covers all N).
        (0..N).all(|i| unsafe { T::is_valid(p.add(i * std::mem::size_of::<T>())) })
    }
}

// SAFETY: zero-sized, no data at all.
unsafe impl<T: Send + Sync + 'static> ShmSafe for PhantomData<T> {
    const TYPE_NAME: &'static str = "PhantomData";
    fn type_name() -> String {
        format!("PhantomData<{}>", std::any::type_name::<T>())
    }
}

// SAFETY: zero-sized, no data at all.
unsafe impl ShmSafe for () {
    const TYPE_NAME: &'static str = "()";
}

/// Size, alignment and name of a payload, as recorded in the service's
/// static description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDetails {
    /// The payload type's name ([`ShmSafe::TYPE_NAME`]; `[name]` for slices).
    pub type_name: String,
    /// Size of one element in bytes.
    pub size: u64,
    /// Alignment in bytes.
    pub align: u64,
    /// Whether the payload is a slice of elements.
    pub slice: bool,
}

mod sealed {
    pub trait Sealed {}
    impl<T: super::ShmSafe> Sealed for T {}
    impl<T: super::ShmSafe> Sealed for [T] {}
}

/// A payload a service can carry: a [`ShmSafe`] type `T`, or a slice `[T]`
/// whose maximum length is set when the publisher is created.
///
/// Implemented by hako for exactly those two shapes; not implementable
/// outside the crate.
pub trait Payload: sealed::Sealed + Send + Sync + 'static {
    /// Name, size and alignment of the payload (of one element for slices).
    fn details() -> TypeDetails;

    /// Builds a pointer to a payload of `len` elements at `ptr`.
    #[doc(hidden)]
    fn make_ptr(ptr: *mut u8, len: usize) -> *mut Self;

    /// Whether received payloads must be checked ([`ShmSafe::CHECKED`] of
    /// the type or element).
    #[doc(hidden)]
    const CHECKED: bool;

    /// Whether the payload at `v` is valid (every element, for slices).
    ///
    /// # Safety
    /// `v` points to a readable payload of its length.
    #[doc(hidden)]
    unsafe fn is_valid(v: *const Self) -> bool;
}

impl<T: ShmSafe> Payload for T {
    fn details() -> TypeDetails {
        TypeDetails {
            type_name: T::type_name(),
            size: std::mem::size_of::<T>() as u64,
            align: std::mem::align_of::<T>() as u64,
            slice: false,
        }
    }

    fn make_ptr(ptr: *mut u8, _len: usize) -> *mut Self {
        ptr.cast()
    }

    const CHECKED: bool = T::CHECKED;

    unsafe fn is_valid(v: *const Self) -> bool {
        // SAFETY: the caller's promise.
        unsafe { T::is_valid(v.cast()) }
    }
}

impl<T: ShmSafe> Payload for [T] {
    fn details() -> TypeDetails {
        TypeDetails {
            type_name: format!("[{}]", T::type_name()),
            size: std::mem::size_of::<T>() as u64,
            align: std::mem::align_of::<T>() as u64,
            slice: true,
        }
    }

    fn make_ptr(ptr: *mut u8, len: usize) -> *mut Self {
        std::ptr::slice_from_raw_parts_mut(ptr.cast::<T>(), len)
    }

    const CHECKED: bool = T::CHECKED;

    unsafe fn is_valid(v: *const Self) -> bool {
        let first = v.cast::<u8>();
        // SAFETY: element i lies inside the slice (the caller's promise).
        (0..v.len()).all(|i| unsafe { T::is_valid(first.add(i * std::mem::size_of::<T>())) })
    }
}

/// A payload type as a service records it in its static description, for
/// every process to check its own type against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PayloadDescription {
    /// Payload type name.
    pub type_name: String,
    /// Size of one payload element.
    pub size: u64,
    /// Payload alignment.
    pub align: u64,
    /// Whether the payload is a slice.
    pub slice: bool,
}

impl From<TypeDetails> for PayloadDescription {
    fn from(t: TypeDetails) -> Self {
        Self {
            type_name: t.type_name,
            size: t.size,
            align: t.align,
            slice: t.slice,
        }
    }
}

/// The names of a payload's fields in [`ServiceError::IncompatibleType`]:
/// type name, slice, size, alignment.
pub(crate) const PAYLOAD_FIELDS: [&str; 4] = ["type_name", "slice", "size", "align"];

/// Checks this process's payload type `t` against the one a service
/// records; the error names the first field that differs (as `fields`
/// spell them).
pub(crate) fn check_payload(
    service: &str,
    fields: [&'static str; 4],
    t: TypeDetails,
    recorded: &PayloadDescription,
) -> Result<(), ServiceError> {
    let ty = |field, requested: String, actual: String| ServiceError::IncompatibleType {
        service: service.into(),
        field,
        requested,
        actual,
    };
    if t.type_name != recorded.type_name {
        return Err(ty(fields[0], t.type_name, recorded.type_name.clone()));
    }
    // Same name, another layout: each side's value with its type's name.
    let named = |value: String, name: &str| format!("{value} (type {name})");
    let pair = |field, mine: String, theirs: String| {
        Err(ty(
            field,
            named(mine, &t.type_name),
            named(theirs, &recorded.type_name),
        ))
    };
    if t.slice != recorded.slice {
        return pair(fields[1], t.slice.to_string(), recorded.slice.to_string());
    }
    if t.size != recorded.size {
        return pair(fields[2], t.size.to_string(), recorded.size.to_string());
    }
    if t.align != recorded.align {
        return pair(fields[3], t.align.to_string(), recorded.align.to_string());
    }
    Ok(())
}

/// Checks a payload described at run time (see
/// [`PubSubBuilder::payload_type`](crate::PubSubBuilder::payload_type)).
pub(crate) fn check_described(t: &TypeDetails) -> Result<(), ServiceError> {
    let bad = |field, value, rule| Err(ServiceError::InvalidSetting { field, value, rule });
    if t.size == 0 {
        return bad("payload size", 0, "at least 1");
    }
    if !t.align.is_power_of_two() {
        return bad("payload alignment", t.align, "a power of two");
    }
    if t.size % t.align != 0 {
        return bad("payload size", t.size, "a multiple of the alignment");
    }
    if t.type_name.is_empty() {
        return bad("payload type name", 0, "not empty");
    }
    Ok(())
}
