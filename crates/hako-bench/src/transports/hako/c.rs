//! `hako-c`: hako's ping-pong written in C against the C API
//! (`c/pingpong.c`, compiled by the build script; the C API itself is the
//! hako-ffi crate, linked in). The same services and settings as the Rust
//! `hako` transport ([`crate::transports::hako::pubsub`]), busy-polled, so the two
//! compare what the C boundary costs. Ping-pong only.

use std::ffi::{c_char, c_int, CStr, CString};
use std::os::unix::ffi::OsStrExt;

use crate::error::Result;
use crate::transport::{
    poll, tag, Follower, Leader, Pattern, PayloadMode, RowSpec, Transport, Waiting,
};

/// One side of a row, made by `hb_create` (c/pingpong.c).
#[repr(C)]
struct HbSide {
    _opaque: [u8; 0],
}

extern "C" {
    fn hb_create(
        leader: c_int,
        root: *const c_char,
        row: u64,
        size: usize,
        full: c_int,
    ) -> *mut HbSide;
    fn hb_drop(side: *mut HbSide);
    fn hb_connected(side: *mut HbSide) -> c_int;
    fn hb_send(side: *mut HbSide, tag: u8) -> c_int;
    fn hb_receive(side: *mut HbSide, tag: u8) -> c_int;
    fn hb_last_error() -> *const c_char;
}

/// The C API functions c/pingpong.c calls, referenced here so that the
/// linker takes them from the hako-ffi library before it reads the C
/// object that needs them.
#[used]
static C_API: Keep = Keep([
    hako_c::hako_node_create as *const (),
    hako_c::hako_node_drop as *const (),
    hako_c::hako_pubsub_service_open as *const (),
    hako_c::hako_pubsub_service_drop as *const (),
    hako_c::hako_publisher_create as *const (),
    hako_c::hako_publisher_drop as *const (),
    hako_c::hako_publisher_loan as *const (),
    hako_c::hako_publisher_send as *const (),
    hako_c::hako_subscriber_receive as *const (),
    hako_c::hako_sample_drop as *const (),
    hako_c::hako_error_string as *const (),
]);

/// Addresses kept for the linker, never read.
#[expect(dead_code, reason = "only the linker reads it")]
struct Keep([*const (); 11]);

// SAFETY: the addresses of functions, never dereferenced or written: nothing
// is shared but constants.
unsafe impl Sync for Keep {}

/// The C side's last error.
fn c_error(what: &str) -> crate::error::BoxError {
    // SAFETY: a NUL-terminated thread-local buffer of c/pingpong.c.
    let msg = unsafe { CStr::from_ptr(hb_last_error()) };
    format!("hako-c {what}: {}", msg.to_string_lossy()).into()
}

/// A side and its C handle, dropped through `hb_drop`.
pub struct CSide(*mut HbSide);

impl Drop for CSide {
    fn drop(&mut self) {
        // SAFETY: made by hb_create, dropped once.
        unsafe { hb_drop(self.0) };
    }
}

impl CSide {
    fn new(leader: bool, row: &RowSpec) -> Result<Self> {
        if row.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        let root = CString::new(row.root.as_os_str().as_bytes())?;
        let full = c_int::from(row.payload == PayloadMode::Full);
        // SAFETY: a NUL-terminated root; the other arguments are plain.
        let p = unsafe {
            hb_create(
                c_int::from(leader),
                root.as_ptr(),
                row.row_id,
                row.size,
                full,
            )
        };
        if p.is_null() {
            return Err(c_error("setup"));
        }
        Ok(Self(p))
    }

    fn send(&mut self, t: u8) -> Result<()> {
        // SAFETY: a live side, used by this thread alone.
        if unsafe { hb_send(self.0, t) } != 0 {
            return Err(c_error("send"));
        }
        Ok(())
    }

    fn receive(&mut self, t: u8) -> Result<()> {
        // SAFETY: as in send.
        if unsafe { hb_receive(self.0, t) } != 0 {
            return Err(c_error("receive"));
        }
        Ok(())
    }
}

/// hako's ping-pong in C.
#[derive(Debug, Clone, Copy, Default)]
pub struct HakoC;

impl Transport for HakoC {
    type Leader = CSide;
    type Follower = CSide;

    fn name(&self) -> &'static str {
        "hako-c"
    }

    fn waiting(&self) -> Waiting {
        Waiting::BusyPoll
    }

    fn skip_reason(&self, _size: usize, pattern: Pattern) -> Option<String> {
        (pattern != Pattern::PingPong).then(|| "the C ping-pong measures round trips only".into())
    }

    fn leader(&self, row: &RowSpec) -> Result<CSide> {
        CSide::new(true, row)
    }

    fn follower(&self, row: &RowSpec) -> Result<CSide> {
        CSide::new(false, row)
    }
}

impl Leader for CSide {
    fn connect(&mut self) -> Result<()> {
        poll("the C follower to connect", || {
            // SAFETY: a live side.
            match unsafe { hb_connected(self.0) } {
                1 => Ok(Some(())),
                0 => Ok(None),
                _ => Err(c_error("connect")),
            }
        })
    }

    #[inline]
    fn round_trip(&mut self, seq: u64, sent: impl FnOnce()) -> Result<()> {
        let t = tag(seq);
        self.send(t)?;
        sent();
        self.receive(t.wrapping_add(1))
    }
}

impl Follower for CSide {
    #[inline]
    fn serve_one(&mut self, seq: u64) -> Result<()> {
        let t = tag(seq);
        self.receive(t)?;
        self.send(t.wrapping_add(1))
    }
}
