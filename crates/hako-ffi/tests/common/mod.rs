//! What the C API tests share: a private domain root, the thread's last
//! error message, a call that must succeed, and a node of the root.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};

use hako_c::*;

/// A domain root of one test, removed when dropped.
pub struct Root(pub std::path::PathBuf);

impl Root {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("hako-ffi-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        Self(p)
    }

    /// The root as C takes it.
    pub fn c(&self) -> CString {
        CString::new(self.0.to_str().unwrap()).unwrap()
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The calling thread's last error message.
pub fn last() -> String {
    // SAFETY: a NUL-terminated string owned by this thread.
    unsafe { CStr::from_ptr(hako_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// Runs a C API call and checks it succeeded.
macro_rules! ok {
    ($e:expr) => {{
        // SAFETY: the arguments are live handles and valid pointers.
        let s = unsafe { $e };
        assert_eq!(
            s,
            hako_status::HAKO_OK,
            "{}: {}",
            stringify!($e),
            $crate::common::last()
        );
    }};
}
pub(crate) use ok;

/// A node of `root`.
pub fn node(root: &Root) -> *mut hako_node {
    let root = root.c();
    let opts = hako_node_options {
        name: null(),
        root: root.as_ptr(),
        no_signal_handling: false,
    };
    let mut n = null_mut();
    ok!(hako_node_create(&opts, &mut n));
    n
}
