//! The blackboard's C API called as C calls it: a board created with
//! entries described in C and their defaults, shared with a Rust writer
//! and reader of the same types; copies and in-place reads and writes;
//! versions and waiting; misuse reported, not crashing.

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use hako::{Config, NodeBuilder, ShmSafe};
use hako_c::*;

mod common;
use common::{last, node, ok, Root};

/// A C struct and the Rust type it is.
#[derive(Debug, Clone, Copy, PartialEq, ShmSafe)]
#[hako(type_name = "demo::Pose")]
#[repr(C)]
struct Pose {
    x: f64,
    y: f64,
    id: u32,
}

fn pose_type() -> hako_payload_type {
    hako_payload_type {
        type_name: c"demo::Pose".as_ptr(),
        size: std::mem::size_of::<Pose>() as u64,
        align: std::mem::align_of::<Pose>() as u64,
        slice: false,
    }
}

fn u64_type() -> hako_payload_type {
    hako_payload_type {
        type_name: c"u64".as_ptr(),
        size: 8,
        align: 8,
        slice: false,
    }
}

#[test]
fn a_board_made_in_c_is_written_and_read_from_both_sides() {
    let root = Root::new("board");
    let n = node(&root);
    let home = Pose {
        x: 1.0,
        y: 2.0,
        id: 7,
    };
    let zero = 0u64;
    let entries = [
        hako_board_entry {
            key: c"pose".as_ptr(),
            value: pose_type(),
            default_value: (&raw const home).cast(),
        },
        hako_board_entry {
            key: c"count".as_ptr(),
            value: u64_type(),
            default_value: (&raw const zero).cast(),
        },
    ];
    let mut board = null_mut();
    let opts = hako_board_options {
        max_readers: 2,
        max_nodes: 0,
    };
    ok!(hako_board_open(
        n,
        c"c/board".as_ptr(),
        entries.as_ptr(),
        2,
        &opts,
        hako_open_mode::HAKO_CREATE,
        &mut board
    ));
    let mut writer = null_mut();
    ok!(hako_board_writer_create(board, &mut writer));
    let mut reader = null_mut();
    ok!(hako_board_reader_create(
        board,
        hako_wait_strategy::HAKO_WAIT_PARK,
        &mut reader
    ));
    let mut wpose = null_mut();
    ok!(hako_board_writer_entry_open(
        writer,
        c"pose".as_ptr(),
        &pose_type(),
        &mut wpose
    ));
    let mut rpose = null_mut();
    ok!(hako_board_reader_entry_open(
        reader,
        c"pose".as_ptr(),
        &pose_type(),
        &mut rpose
    ));

    // The default, by copy.
    let mut got = Pose {
        x: 0.0,
        y: 0.0,
        id: 0,
    };
    let mut version = 99;
    ok!(hako_board_reader_entry_get(
        rpose,
        (&raw mut got).cast(),
        std::mem::size_of::<Pose>(),
        &mut version
    ));
    assert_eq!((got, version), (home, 0));

    // An update by copy, read in place.
    let p1 = Pose {
        x: 3.0,
        y: 4.0,
        id: 8,
    };
    ok!(hako_board_writer_entry_update(
        wpose,
        (&raw const p1).cast(),
        std::mem::size_of::<Pose>(),
        &mut version
    ));
    assert_eq!(version, 1);
    let mut changed = false;
    ok!(hako_board_reader_entry_version(
        rpose,
        &mut version,
        &mut changed
    ));
    assert_eq!((version, changed), (1, true));
    let mut data: *const c_void = null();
    ok!(hako_board_reader_entry_hold(rpose, &mut data, &mut version));
    // SAFETY: the held value, a Pose.
    assert_eq!((unsafe { *data.cast::<Pose>() }, version), (p1, 1));
    ok!(hako_board_reader_entry_release(rpose));

    // A write in place, begun, committed; another abandoned.
    let mut buf: *mut c_void = null_mut();
    ok!(hako_board_writer_entry_begin(wpose, false, &mut buf));
    // SAFETY: the loaned buffer, a Pose's size and alignment.
    unsafe {
        buf.cast::<Pose>().write(Pose {
            x: 5.0,
            y: 6.0,
            id: 9,
        })
    };
    // SAFETY: a live entry handle; a loan begun twice is refused.
    let s = unsafe { hako_board_writer_entry_begin(wpose, false, &mut buf) };
    assert_eq!(s, hako_status::HAKO_ERROR_MISUSE, "a second loan");
    ok!(hako_board_writer_entry_commit(wpose, &mut version));
    assert_eq!(version, 2);
    ok!(hako_board_writer_entry_begin(wpose, false, &mut buf));
    ok!(hako_board_writer_entry_abandon(wpose));
    // SAFETY: a live entry handle with no loan: the commit is refused.
    let s = unsafe { hako_board_writer_entry_commit(wpose, null_mut()) };
    assert_eq!(s, hako_status::HAKO_ERROR_MISUSE, "a commit without a loan");

    // A Rust program's view of the same board.
    let rust = NodeBuilder::new()
        .config(&Config::default().with_root(&root.0))
        .create()
        .unwrap();
    let rb = rust
        .service_builder(&"c/board".try_into().unwrap())
        .blackboard()
        .entry::<Pose>("pose", home)
        .open()
        .unwrap();
    let rr = rb.reader_builder().create().unwrap();
    assert_eq!(
        rr.entry::<Pose>("pose")
            .unwrap()
            .get_with_version()
            .unwrap(),
        (
            Pose {
                x: 5.0,
                y: 6.0,
                id: 9
            },
            2
        )
    );

    // Waiting: a timeout gives version 0; a Rust writer's update wakes it.
    ok!(hako_board_reader_entry_get(
        rpose,
        (&raw mut got).cast(),
        std::mem::size_of::<Pose>(),
        &mut version
    ));
    ok!(hako_board_reader_entry_wait(rpose, 1000, &mut version));
    assert_eq!(version, 0);
    ok!(hako_board_writer_entry_drop(&mut wpose));
    ok!(hako_board_writer_drop(&mut writer));
    let worker = std::thread::spawn(move || {
        let w = rb.writer_builder().create().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        w.entry::<Pose>("pose").unwrap().update(home).unwrap();
    });
    ok!(hako_board_reader_entry_wait(
        rpose,
        HAKO_FOREVER,
        &mut version
    ));
    assert_eq!(version, 3);
    worker.join().unwrap();

    // Misuse and mismatch are reported.
    let mut other = null_mut();
    // SAFETY: a live reader; the pose entry is not a u64.
    let s =
        unsafe { hako_board_reader_entry_open(reader, c"pose".as_ptr(), &u64_type(), &mut other) };
    assert_eq!(s, hako_status::HAKO_ERROR_INCOMPATIBLE, "{}", last());
    // SAFETY: a live reader; no entry "speed".
    let s =
        unsafe { hako_board_reader_entry_open(reader, c"speed".as_ptr(), &u64_type(), &mut other) };
    assert_eq!(s, hako_status::HAKO_ERROR_NOT_FOUND, "{}", last());
    // SAFETY: a live reader; the entry has a handle already.
    let s =
        unsafe { hako_board_reader_entry_open(reader, c"pose".as_ptr(), &pose_type(), &mut other) };
    assert_eq!(
        s,
        hako_status::HAKO_ERROR_MISUSE,
        "a second handle: {}",
        last()
    );
    // SAFETY: a live entry handle; the buffer is too small on purpose.
    let s = unsafe { hako_board_reader_entry_get(rpose, (&raw mut got).cast(), 3, &mut version) };
    assert_eq!(s, hako_status::HAKO_ERROR_BUFFER_TOO_SMALL);
    let mut w2 = null_mut();
    ok!(hako_board_writer_create(board, &mut w2));
    let mut w3 = null_mut();
    // SAFETY: a live board; a third writer is refused.
    let s = unsafe { hako_board_writer_create(board, &mut w3) };
    assert_eq!(
        s,
        hako_status::HAKO_ERROR_TOO_MANY,
        "a second writer: {}",
        last()
    );
    let mut missing = null_mut();
    // SAFETY: a live node; the board does not exist.
    let s = unsafe {
        hako_board_open(
            n,
            c"c/board2".as_ptr(),
            entries.as_ptr(),
            2,
            null(),
            hako_open_mode::HAKO_OPEN,
            &mut missing,
        )
    };
    assert_eq!(s, hako_status::HAKO_ERROR_NOT_FOUND);

    ok!(hako_board_reader_entry_drop(&mut rpose));
    // SAFETY: the handle was dropped: a null slot is refused.
    assert_eq!(
        unsafe { hako_board_reader_entry_drop(&mut rpose) },
        hako_status::HAKO_ERROR_NULL_ARGUMENT
    );
    ok!(hako_board_writer_drop(&mut w2));
    ok!(hako_board_reader_drop(&mut reader));
    ok!(hako_board_drop(&mut board));
    let mut n = n;
    ok!(hako_node_drop(&mut n));
}

#[test]
fn a_waitset_wakes_for_a_watched_entry_and_keeps_its_reader() {
    let root = Root::new("board-ws");
    let n = node(&root);
    let zero = 0u64;
    let entries = [hako_board_entry {
        key: c"count".as_ptr(),
        value: u64_type(),
        default_value: (&raw const zero).cast(),
    }];
    let mut board = null_mut();
    ok!(hako_board_open(
        n,
        c"c/board-ws".as_ptr(),
        entries.as_ptr(),
        1,
        null(),
        hako_open_mode::HAKO_CREATE,
        &mut board
    ));
    let (mut writer, mut reader) = (null_mut(), null_mut());
    ok!(hako_board_writer_create(board, &mut writer));
    ok!(hako_board_reader_create(
        board,
        hako_wait_strategy::HAKO_WAIT_PARK,
        &mut reader
    ));
    let (mut w, mut r) = (null_mut(), null_mut());
    ok!(hako_board_writer_entry_open(
        writer,
        c"count".as_ptr(),
        &u64_type(),
        &mut w
    ));
    ok!(hako_board_reader_entry_open(
        reader,
        c"count".as_ptr(),
        &u64_type(),
        &mut r
    ));
    let mut ws = null_mut();
    ok!(hako_waitset_create_without_signal_handling(&mut ws));
    let mut id = usize::MAX;
    ok!(hako_waitset_attach_board_reader(ws, reader, &mut id));
    let wait = |ws, timeout_us| {
        let mut events = [hako_wait_event {
            kind: hako_wait_event_kind::HAKO_EVENT_TICK,
            id: usize::MAX,
        }; 4];
        let (mut count, mut how) = (0, hako_wait_outcome::HAKO_WAIT_EVENTS);
        ok!(hako_waitset_wait(
            ws,
            timeout_us,
            events.as_mut_ptr(),
            4,
            &mut count,
            &mut how
        ));
        events[..count].to_vec()
    };
    // Nothing watched: an update does not make the reader ready.
    let mut version = 0;
    ok!(hako_board_writer_entry_update(
        w,
        (&raw const zero).cast(),
        8,
        &mut version
    ));
    assert!(wait(ws, 20_000).is_empty());
    // Watched: ready at once (changed since last read), until read.
    ok!(hako_board_reader_entry_watch(r, true));
    let got = wait(ws, 1_000_000);
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].kind, got[0].id),
        (hako_wait_event_kind::HAKO_EVENT_READY, id)
    );
    let mut value = 0u64;
    ok!(hako_board_reader_entry_get(
        r,
        (&raw mut value).cast(),
        8,
        &mut version
    ));
    assert!(wait(ws, 20_000).is_empty(), "read: no longer ready");
    // An update from another thread wakes a wait in progress.
    let writer_entry = w as usize;
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let seven = 7u64;
        let mut v = 0;
        // SAFETY: the entry handle lives until the thread is joined.
        unsafe {
            hako_board_writer_entry_update(
                writer_entry as *mut hako_board_writer_entry,
                (&raw const seven).cast(),
                8,
                &mut v,
            )
        }
    });
    let got = wait(ws, 10_000_000);
    assert_eq!(t.join().unwrap(), hako_status::HAKO_OK);
    assert_eq!(got.len(), 1, "woken by the update");
    ok!(hako_board_reader_entry_get(
        r,
        (&raw mut value).cast(),
        8,
        &mut version
    ));
    assert_eq!((value, version), (7, 2));
    // No longer watched: not woken.
    ok!(hako_board_reader_entry_watch(r, false));
    ok!(hako_board_writer_entry_update(
        w,
        (&raw const zero).cast(),
        8,
        &mut version
    ));
    assert!(wait(ws, 20_000).is_empty());
    // The waitset holds the reader: its drop is refused until the waitset goes.
    // SAFETY: a live reader, attached: its drop is refused.
    assert_eq!(
        unsafe { hako_board_reader_drop(&mut reader) },
        hako_status::HAKO_ERROR_MISUSE
    );
    assert!(!reader.is_null());
    ok!(hako_waitset_drop(&mut ws));
    ok!(hako_board_reader_entry_drop(&mut r));
    ok!(hako_board_writer_entry_drop(&mut w));
    ok!(hako_board_reader_drop(&mut reader));
    ok!(hako_board_writer_drop(&mut writer));
    ok!(hako_board_drop(&mut board));
    let mut n = n;
    ok!(hako_node_drop(&mut n));
}
