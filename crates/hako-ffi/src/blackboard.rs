//! Blackboards: keyed entries of shared state, one writer, many readers.
//! Entries are bytes described by a `hako_payload_type` (never a slice),
//! as a C struct is: read by copy (`_get`) or in place (`_hold` /
//! `_release`), written by copy (`_update`) or in place (`_begin` /
//! `_commit`).

use std::ffi::{c_char, c_void};
use std::time::Duration;

use hako::{BlackboardService, RawReaderEntry, RawWriterEntry, Reader, Writer};

use crate::error::{guard, hako_status, Failure, HAKO_ERROR_BUFFER_TOO_SMALL};
use std::sync::atomic::Ordering::Relaxed;

use crate::handle::{get, get_mut, give, put, take, take_port, text};
use crate::node::{hako_node, hako_open_mode, hako_wait_strategy, HAKO_FOREVER};
use crate::pubsub::{details, hako_payload_type};

/// One entry of a blackboard to create (or to find on open): its key, its
/// value's type (not a slice) and its default (`value.size` bytes; used on
/// create, may be NULL on open).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hako_board_entry {
    /// The key (1 to 128 bytes, NUL-terminated).
    pub key: *const c_char,
    /// The value's type.
    pub value: hako_payload_type,
    /// The default value's bytes.
    pub default_value: *const c_void,
}

/// Settings of a blackboard. Zero means: the configured default on create
/// (`max_readers`: the default `max_subscribers`), anything on open.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hako_board_options {
    /// Readers the board admits (each entry keeps this many buffers plus
    /// two), at most 254.
    pub max_readers: u32,
    /// Nodes that may hold it open at once.
    pub max_nodes: u32,
}

/// A blackboard service. Owning handle; any thread.
pub struct hako_board {
    board: BlackboardService,
}

/// A blackboard's writer. Owning handle; any thread.
pub struct hako_board_writer {
    writer: Writer,
}

/// A blackboard's reader. Owning handle; any thread.
pub struct hako_board_reader {
    pub(crate) reader: Reader,
    /// Waitsets it is attached to.
    pub(crate) attached: std::sync::atomic::AtomicUsize,
}

/// One entry of a writer. Owning handle; one thread at a time.
pub struct hako_board_writer_entry {
    entry: RawWriterEntry,
}

/// One entry of a reader. Owning handle; one thread at a time.
pub struct hako_board_reader_entry {
    entry: RawReaderEntry,
}

/// Opens or creates (`mode`) the blackboard `name` with `count` entries
/// (`entries` may be NULL when `count` is 0, to open one whatever its
/// entries). `options` may be NULL.
///
/// # Safety
/// `node` is a node handle; `name` is NUL-terminated; `entries` holds
/// `count` valid entries; `options` is NULL or valid; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_open(
    node: *const hako_node,
    name: *const c_char,
    entries: *const hako_board_entry,
    count: usize,
    options: *const hako_board_options,
    mode: hako_open_mode,
    out: *mut *mut hako_board,
) -> hako_status {
    guard(|| {
        // SAFETY: a node handle (the caller's promise).
        let node = unsafe { get(node, "the node") }?;
        // SAFETY: NUL-terminated (the caller's promise).
        let name = unsafe { text(name, "the service name") }?;
        // SAFETY: NULL or valid.
        let o = unsafe { options.as_ref() }.copied().unwrap_or_default();
        let mut b = node.node.service_builder(&name.try_into()?).blackboard();
        if count > 0 && entries.is_null() {
            return Err(Failure::null("the entries"));
        }
        for i in 0..count {
            // SAFETY: i < count entries (the caller's promise).
            let e = unsafe { &*entries.add(i) };
            // SAFETY: NUL-terminated (the caller's promise).
            let key = unsafe { text(e.key, "an entry's key") }?;
            // SAFETY: the type's name is NUL-terminated.
            let t = unsafe { details(&e.value, "an entry's type name") }?;
            let default = if e.default_value.is_null() {
                if mode != hako_open_mode::HAKO_OPEN {
                    return Err(Failure::null("an entry's default value"));
                }
                vec![0; e.value.size as usize]
            } else {
                // SAFETY: value.size readable bytes (the caller's promise).
                unsafe {
                    std::slice::from_raw_parts(e.default_value.cast::<u8>(), e.value.size as usize)
                }
                .to_vec()
            };
            b = b.entry_described(key, t, &default);
        }
        if o.max_readers != 0 {
            b = b.max_readers(o.max_readers);
        }
        if o.max_nodes != 0 {
            b = b.max_nodes(o.max_nodes);
        }
        let board = match mode {
            hako_open_mode::HAKO_OPEN_OR_CREATE => b.open_or_create(),
            hako_open_mode::HAKO_CREATE => b.create(),
            hako_open_mode::HAKO_OPEN => b.open(),
        }?;
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, hako_board { board }) }
    })
}

/// Drops a blackboard handle and sets `*board` to NULL.
///
/// # Safety
/// `board` is NULL or points to NULL or a blackboard handle.
#[no_mangle]
pub unsafe extern "C" fn hako_board_drop(board: *mut *mut hako_board) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(board, "the blackboard") }.map(drop))
}

/// How many readers the board has now (`readers`), and whether it has a
/// writer (`writer`, may be NULL).
///
/// # Safety
/// `board` is a blackboard handle; `readers` is writable; `writer` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_ports(
    board: *const hako_board,
    readers: *mut usize,
    writer: *mut bool,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let b = unsafe { get(board, "the blackboard") }?;
        if readers.is_null() {
            return Err(Failure::null("the readers pointer"));
        }
        // SAFETY: writable; NULL or writable.
        unsafe {
            put(readers, b.board.reader_count());
            put(writer, b.board.has_writer());
        }
        Ok(())
    })
}

/// Creates the writer (`HAKO_ERROR_TOO_MANY` while another one lives).
///
/// # Safety
/// `board` is a blackboard handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_writer_create(
    board: *const hako_board,
    out: *mut *mut hako_board_writer,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let b = unsafe { get(board, "the blackboard") }?;
        let writer = b.board.writer_builder().create()?;
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, hako_board_writer { writer }) }
    })
}

/// Drops a writer and sets `*writer` to NULL (its entries keep it
/// registered until they are dropped too).
///
/// # Safety
/// `writer` is NULL or points to NULL or a writer handle.
#[no_mangle]
pub unsafe extern "C" fn hako_board_writer_drop(
    writer: *mut *mut hako_board_writer,
) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(writer, "the writer") }.map(drop))
}

/// Creates a reader that waits as `wait` says.
///
/// # Safety
/// `board` is a blackboard handle; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_create(
    board: *const hako_board,
    wait: hako_wait_strategy,
    out: *mut *mut hako_board_reader,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let b = unsafe { get(board, "the blackboard") }?;
        let reader = b
            .board
            .reader_builder()
            .wait_strategy(wait.into())
            .create()?;
        // SAFETY: writable (the caller's promise).
        unsafe {
            give(
                out,
                hako_board_reader {
                    reader,
                    attached: Default::default(),
                },
            )
        }
    })
}

/// Drops a reader and sets `*reader` to NULL (its entries keep it
/// registered until they are dropped too); `HAKO_ERROR_MISUSE` while a
/// waitset holds it.
///
/// # Safety
/// `reader` is NULL or points to NULL or a reader handle.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_drop(
    reader: *mut *mut hako_board_reader,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise, passed on.
        unsafe { take_port(reader, "the reader", |r| r.attached.load(Relaxed)) }.map(drop)
    })
}

/// The writer's entry `key`, holding values of `value`
/// (`HAKO_ERROR_INCOMPATIBLE` for another type, `HAKO_ERROR_NOT_FOUND` for
/// no such key, `HAKO_ERROR_MISUSE` if a handle on it exists).
///
/// # Safety
/// `writer` is a writer handle; `key` is NUL-terminated; `value` is valid;
/// `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_writer_entry_open(
    writer: *const hako_board_writer,
    key: *const c_char,
    value: *const hako_payload_type,
    out: *mut *mut hako_board_writer_entry,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let w = unsafe { get(writer, "the writer") }?;
        // SAFETY: NUL-terminated.
        let key = unsafe { text(key, "the key") }?;
        // SAFETY: valid (the caller's promise).
        let t = unsafe { details(get(value, "the value type")?, "the type name") }?;
        let entry = w.writer.entry_described(key, t)?;
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, hako_board_writer_entry { entry }) }
    })
}

/// Drops a writer's entry (a loan it holds is given back unpublished) and
/// sets `*entry` to NULL.
///
/// # Safety
/// `entry` is NULL or points to NULL or a writer entry handle.
#[no_mangle]
pub unsafe extern "C" fn hako_board_writer_entry_drop(
    entry: *mut *mut hako_board_writer_entry,
) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(entry, "the writer's entry") }.map(drop))
}

/// Publishes `size` bytes at `value` (exactly the entry's size) as the
/// entry's next version; `version` (may be NULL) gets it.
///
/// # Safety
/// `entry` is a writer entry handle; `value` holds `size` readable bytes;
/// `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_writer_entry_update(
    entry: *mut hako_board_writer_entry,
    value: *const c_void,
    size: usize,
    version: *mut u64,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let e = unsafe { get_mut(entry, "the writer's entry") }?;
        if value.is_null() {
            return Err(Failure::null("the value"));
        }
        // SAFETY: size readable bytes (the caller's promise).
        let bytes = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), size) };
        let v = e.entry.update_bytes(bytes)?;
        // SAFETY: NULL or writable.
        unsafe { put(version, v) };
        Ok(())
    })
}

/// Lends a buffer to write the next version in place: `*data` gets its
/// first byte (the entry's size, writable until `_commit` or `_abandon`);
/// its bytes are a copy of the current value with `latest`, else an older
/// version's. One loan at a time.
///
/// # Safety
/// `entry` is a writer entry handle; `data` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_writer_entry_begin(
    entry: *mut hako_board_writer_entry,
    latest: bool,
    data: *mut *mut c_void,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let e = unsafe { get_mut(entry, "the writer's entry") }?;
        if data.is_null() {
            return Err(Failure::null("the data pointer"));
        }
        let p = e.entry.begin(latest)?;
        // SAFETY: writable (checked not NULL; the caller's promise).
        unsafe { data.write(p.cast()) };
        Ok(())
    })
}

/// Publishes the loan of `_begin`; `version` (may be NULL) gets its
/// version.
///
/// # Safety
/// `entry` is a writer entry handle; `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_writer_entry_commit(
    entry: *mut hako_board_writer_entry,
    version: *mut u64,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let e = unsafe { get_mut(entry, "the writer's entry") }?;
        let v = e.entry.commit()?;
        // SAFETY: NULL or writable.
        unsafe { put(version, v) };
        Ok(())
    })
}

/// Gives back the loan of `_begin` unpublished (nothing if none is held).
///
/// # Safety
/// `entry` is a writer entry handle.
#[no_mangle]
pub unsafe extern "C" fn hako_board_writer_entry_abandon(
    entry: *mut hako_board_writer_entry,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        unsafe { get_mut(entry, "the writer's entry") }?
            .entry
            .abandon();
        Ok(())
    })
}

/// The reader's entry `key`, holding values of `value` (errors as for the
/// writer's).
///
/// # Safety
/// `reader` is a reader handle; `key` is NUL-terminated; `value` is valid;
/// `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_entry_open(
    reader: *const hako_board_reader,
    key: *const c_char,
    value: *const hako_payload_type,
    out: *mut *mut hako_board_reader_entry,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let r = unsafe { get(reader, "the reader") }?;
        // SAFETY: NUL-terminated.
        let key = unsafe { text(key, "the key") }?;
        // SAFETY: valid (the caller's promise).
        let t = unsafe { details(get(value, "the value type")?, "the type name") }?;
        let entry = r.reader.entry_described(key, t)?;
        // SAFETY: writable (the caller's promise).
        unsafe { give(out, hako_board_reader_entry { entry }) }
    })
}

/// Drops a reader's entry (a value it holds is released) and sets `*entry`
/// to NULL.
///
/// # Safety
/// `entry` is NULL or points to NULL or a reader entry handle.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_entry_drop(
    entry: *mut *mut hako_board_reader_entry,
) -> hako_status {
    // SAFETY: the caller's promise, passed on.
    guard(|| unsafe { take(entry, "the reader's entry") }.map(drop))
}

/// Copies the latest value into `out` (`size`: exactly the entry's size;
/// `HAKO_ERROR_BUFFER_TOO_SMALL` otherwise); `version` (may be NULL) gets
/// its version. Never torn.
///
/// # Safety
/// `entry` is a reader entry handle; `out` is writable for `size` bytes;
/// `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_entry_get(
    entry: *mut hako_board_reader_entry,
    out: *mut c_void,
    size: usize,
    version: *mut u64,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let e = unsafe { get_mut(entry, "the reader's entry") }?;
        if out.is_null() {
            return Err(Failure::null("the output buffer"));
        }
        if size != e.entry.size() {
            return Err(Failure::new(
                HAKO_ERROR_BUFFER_TOO_SMALL,
                format!(
                    "entry {:?} holds {} bytes, and {size} were given",
                    e.entry.key(),
                    e.entry.size()
                ),
            ));
        }
        // SAFETY: size writable bytes (the caller's promise).
        let buf = unsafe { std::slice::from_raw_parts_mut(out.cast::<u8>(), size) };
        let v = e.entry.get_bytes(buf)?;
        // SAFETY: NULL or writable.
        unsafe { put(version, v) };
        Ok(())
    })
}

/// The latest value in place, without a copy: `*data` gets its first byte
/// (the entry's size, readable until `_release`, another `_hold` or the
/// entry's drop; the writer writes elsewhere meanwhile); `version` (may be
/// NULL) its version.
///
/// # Safety
/// `entry` is a reader entry handle; `data` is writable; `version` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_entry_hold(
    entry: *mut hako_board_reader_entry,
    data: *mut *const c_void,
    version: *mut u64,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let e = unsafe { get_mut(entry, "the reader's entry") }?;
        if data.is_null() {
            return Err(Failure::null("the data pointer"));
        }
        let (p, v) = e.entry.hold()?;
        // SAFETY: writable (checked not NULL; the caller's promise).
        unsafe { data.write(p.cast()) };
        // SAFETY: NULL or writable.
        unsafe { put(version, v) };
        Ok(())
    })
}

/// Ends the hold of `_hold` (nothing if none is held).
///
/// # Safety
/// `entry` is a reader entry handle.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_entry_release(
    entry: *mut hako_board_reader_entry,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        unsafe { get_mut(entry, "the reader's entry") }?
            .entry
            .release();
        Ok(())
    })
}

/// With `on`, asks the writer to wake this reader when the entry changes:
/// a waitset the reader is attached to (`hako_waitset_attach_board_reader`)
/// then reports it ready, until the entry is read (its version then is
/// the one seen) or this is called with `on` false. Without any entry
/// watched, an attached reader is never ready.
///
/// # Safety
/// `entry` is a reader entry handle.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_entry_watch(
    entry: *const hako_board_reader_entry,
    on: bool,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promise.
        let e = unsafe { get(entry, "the reader's entry") }?;
        if on {
            e.entry.watch();
        } else {
            e.entry.unwatch();
        }
        Ok(())
    })
}

/// The entry's version now (its updates so far), and whether it changed
/// since this handle last read it (`changed` may be NULL).
///
/// # Safety
/// `entry` is a reader entry handle; `version` is writable; `changed` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_entry_version(
    entry: *const hako_board_reader_entry,
    version: *mut u64,
    changed: *mut bool,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let e = unsafe { get(entry, "the reader's entry") }?;
        if version.is_null() {
            return Err(Failure::null("the version pointer"));
        }
        let v = e.entry.version()?;
        let c = e.entry.changed()?;
        // SAFETY: writable; NULL or writable.
        unsafe {
            put(version, v);
            put(changed, c);
        }
        Ok(())
    })
}

/// Waits until the entry changes from the version this handle last read:
/// at once (`timeout_us` 0), up to `timeout_us` microseconds, or until it
/// does (`HAKO_FOREVER`); sleeps until the writer's publish wakes it (no
/// polling). `*version` gets the new version, or 0 on a timeout
/// (`HAKO_ERROR_TIMED_OUT` is not used: check the version).
///
/// # Safety
/// `entry` is a reader entry handle; `version` is writable.
#[no_mangle]
pub unsafe extern "C" fn hako_board_reader_entry_wait(
    entry: *const hako_board_reader_entry,
    timeout_us: u64,
    version: *mut u64,
) -> hako_status {
    guard(|| {
        // SAFETY: the caller's promises.
        let e = unsafe { get(entry, "the reader's entry") }?;
        if version.is_null() {
            return Err(Failure::null("the version pointer"));
        }
        let timeout = (timeout_us != HAKO_FOREVER).then(|| Duration::from_micros(timeout_us));
        let v = e.entry.wait_for_change(timeout)?;
        // SAFETY: writable.
        unsafe { put(version, v.unwrap_or(0)) };
        Ok(())
    })
}
