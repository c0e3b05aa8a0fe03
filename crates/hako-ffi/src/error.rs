//! Status codes, the calling thread's last error message, and the guard
//! that keeps every panic on the Rust side of the boundary.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a call of the C API did: `HAKO_OK` (0) or why it failed.
/// `hako_last_error_message` says more about the last failure on the
/// calling thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum hako_status {
    /// Success.
    HAKO_OK = 0,
    /// A required pointer argument was NULL (or an owning handle was
    /// dropped or consumed already: those calls set it to NULL).
    HAKO_ERROR_NULL_ARGUMENT = 1,
    /// An argument is out of range or malformed: a name, a setting, a
    /// string that is not UTF-8.
    HAKO_ERROR_INVALID_ARGUMENT = 2,
    /// The service to open does not exist.
    HAKO_ERROR_NOT_FOUND = 3,
    /// The service to create exists already.
    HAKO_ERROR_EXISTS = 4,
    /// The service exists with another payload type, pattern or settings.
    HAKO_ERROR_INCOMPATIBLE = 5,
    /// The service admits no more ports or nodes of that kind.
    HAKO_ERROR_TOO_MANY = 6,
    /// No chunk to loan: every one is in use, or the port's loan limit is
    /// reached.
    HAKO_ERROR_OUT_OF_MEMORY = 7,
    /// Every peer the wait saw has left or died, and nothing is queued.
    HAKO_ERROR_PEER_GONE = 8,
    /// A peer wrote something that cannot be (its connection is dropped).
    HAKO_ERROR_CORRUPTED = 9,
    /// The operating system refused (files, memory maps, permissions).
    HAKO_ERROR_IO = 10,
    /// The call does not fit the objects given: a sample of another port,
    /// a slice longer than the port allows, more held samples than allowed.
    HAKO_ERROR_MISUSE = 11,
    /// The caller's buffer cannot hold the result.
    HAKO_ERROR_BUFFER_TOO_SMALL = 12,
    /// A bug in hako: a panic, caught at the boundary.
    HAKO_ERROR_INTERNAL = 13,
    /// SIGINT or SIGTERM arrived while a blocking call waited (the node
    /// handles signals, the default): stop. A second signal ends the
    /// process.
    HAKO_ERROR_TERMINATED = 14,
    /// Nothing came within the timeout of a wait that needs something
    /// (`hako_client_wait_for_server`).
    HAKO_ERROR_TIMED_OUT = 15,
}

pub(crate) use hako_status::*;

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// An error on its way to C: the code and its message.
pub(crate) struct Failure {
    pub(crate) status: hako_status,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: hako_status, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn null(what: &str) -> Self {
        Self::new(
            HAKO_ERROR_NULL_ARGUMENT,
            format!("{what} is NULL (or was dropped or consumed already)"),
        )
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(HAKO_ERROR_INVALID_ARGUMENT, message)
    }
}

/// Records `message` as the calling thread's last error.
fn set_last(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
}

/// Runs `f`, turning its error or panic into a status and the thread's
/// last message. Every exported function's body runs in it.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Failure>) -> hako_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => HAKO_OK,
        Ok(Err(e)) => {
            set_last(&e.message);
            e.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            set_last(&format!(
                "internal error in hako (please report it): {what}"
            ));
            HAKO_ERROR_INTERNAL
        }
    }
}

/// A short, static description of `status`.
#[no_mangle]
pub extern "C" fn hako_error_string(status: hako_status) -> *const c_char {
    let s: &'static [u8] = match status {
        HAKO_OK => b"success\0",
        HAKO_ERROR_NULL_ARGUMENT => b"a required pointer is NULL\0",
        HAKO_ERROR_INVALID_ARGUMENT => b"an argument is invalid\0",
        HAKO_ERROR_NOT_FOUND => b"the service does not exist\0",
        HAKO_ERROR_EXISTS => b"the service exists already\0",
        HAKO_ERROR_INCOMPATIBLE => b"the service exists with other types or settings\0",
        HAKO_ERROR_TOO_MANY => b"the service admits no more of these\0",
        HAKO_ERROR_OUT_OF_MEMORY => b"no chunk to loan\0",
        HAKO_ERROR_PEER_GONE => b"the peers are gone\0",
        HAKO_ERROR_CORRUPTED => b"a peer wrote corrupted data\0",
        HAKO_ERROR_IO => b"the operating system refused\0",
        HAKO_ERROR_MISUSE => b"the call does not fit its arguments\0",
        HAKO_ERROR_BUFFER_TOO_SMALL => b"the buffer is too small\0",
        HAKO_ERROR_INTERNAL => b"internal error\0",
        HAKO_ERROR_TERMINATED => b"termination requested (SIGINT or SIGTERM)\0",
        HAKO_ERROR_TIMED_OUT => b"nothing came within the timeout\0",
    };
    s.as_ptr().cast()
}

/// The message of the last failed call on the calling thread (an empty
/// string if none failed). Valid until the next failing call on this
/// thread.
#[no_mangle]
pub extern "C" fn hako_last_error_message() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

/// Maps hako's errors to a status and a message.
pub(crate) trait ToFailure {
    fn status(&self) -> hako_status;
}

impl<E: ToFailure + std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::new(e.status(), e.to_string())
    }
}

impl ToFailure for hako::ServiceError {
    fn status(&self) -> hako_status {
        use hako::ServiceError as E;
        match self {
            E::AlreadyExists(_) => HAKO_ERROR_EXISTS,
            E::DoesNotExist(_) => HAKO_ERROR_NOT_FOUND,
            E::IncompatibleType { .. }
            | E::IncompatibleQos { .. }
            | E::IncompatiblePattern { .. }
            | E::VersionMismatch { .. } => HAKO_ERROR_INCOMPATIBLE,
            E::Corrupted { .. } => HAKO_ERROR_CORRUPTED,
            E::TooManyNodes { .. } => HAKO_ERROR_TOO_MANY,
            E::InvalidSetting { .. } | E::HistoryExceedsBuffer { .. } | E::InvalidEntry { .. } => {
                HAKO_ERROR_INVALID_ARGUMENT
            }
            E::NoSuchEntry { .. } => HAKO_ERROR_NOT_FOUND,
            E::Io { .. } => HAKO_ERROR_IO,
            _ => HAKO_ERROR_IO,
        }
    }
}

impl ToFailure for hako::NodeCreateError {
    fn status(&self) -> hako_status {
        match self {
            hako::NodeCreateError::Config(_) => HAKO_ERROR_INVALID_ARGUMENT,
            _ => HAKO_ERROR_IO,
        }
    }
}

impl ToFailure for hako::NameError {
    fn status(&self) -> hako_status {
        HAKO_ERROR_INVALID_ARGUMENT
    }
}

impl ToFailure for hako::PublisherCreateError {
    fn status(&self) -> hako_status {
        use hako::PublisherCreateError as E;
        match self {
            E::TooManyPublishers { .. } => HAKO_ERROR_TOO_MANY,
            E::InvalidSetting { .. } => HAKO_ERROR_INVALID_ARGUMENT,
            _ => HAKO_ERROR_IO,
        }
    }
}

impl ToFailure for hako::SubscriberCreateError {
    fn status(&self) -> hako_status {
        use hako::SubscriberCreateError as E;
        match self {
            E::TooManySubscribers { .. } => HAKO_ERROR_TOO_MANY,
            E::Service(e) => e.status(),
            _ => HAKO_ERROR_IO,
        }
    }
}

impl ToFailure for hako::LoanError {
    fn status(&self) -> hako_status {
        use hako::LoanError as E;
        match self {
            E::ExceedsMaxLoans(_) | E::OutOfMemory(_) => HAKO_ERROR_OUT_OF_MEMORY,
            E::SliceTooLong { .. } => HAKO_ERROR_MISUSE,
            _ => HAKO_ERROR_MISUSE,
        }
    }
}

impl ToFailure for hako::ReceiveError {
    fn status(&self) -> hako_status {
        use hako::ReceiveError as E;
        match self {
            E::PublishersGone(_) => HAKO_ERROR_PEER_GONE,
            E::TerminationRequest => HAKO_ERROR_TERMINATED,
            E::ExceedsMaxBorrowed(_) => HAKO_ERROR_MISUSE,
            E::CorruptedPublisher { .. } => HAKO_ERROR_CORRUPTED,
            _ => HAKO_ERROR_CORRUPTED,
        }
    }
}

impl ToFailure for hako::EventPortCreateError {
    fn status(&self) -> hako_status {
        use hako::EventPortCreateError as E;
        match self {
            E::TooMany { .. } => HAKO_ERROR_TOO_MANY,
            E::EventIdOutOfRange { .. } => HAKO_ERROR_INVALID_ARGUMENT,
            E::Service(e) => e.status(),
            _ => HAKO_ERROR_IO,
        }
    }
}

impl ToFailure for hako::NotifyError {
    fn status(&self) -> hako_status {
        HAKO_ERROR_INVALID_ARGUMENT
    }
}

impl ToFailure for hako::ListenerError {
    fn status(&self) -> hako_status {
        match self {
            hako::ListenerError::TerminationRequest => HAKO_ERROR_TERMINATED,
            _ => HAKO_ERROR_PEER_GONE,
        }
    }
}

impl ToFailure for std::io::Error {
    fn status(&self) -> hako_status {
        HAKO_ERROR_IO
    }
}

impl ToFailure for hako::BlackboardError {
    fn status(&self) -> hako_status {
        use hako::BlackboardError as E;
        match self {
            E::WriterExists { .. } | E::TooManyReaders { .. } => HAKO_ERROR_TOO_MANY,
            E::EntryInUse { .. } | E::LoanHeld { .. } | E::NoLoan { .. } => HAKO_ERROR_MISUSE,
            E::Corrupted { .. } | E::InvalidValue { .. } => HAKO_ERROR_CORRUPTED,
            E::WrongSize { .. } => HAKO_ERROR_BUFFER_TOO_SMALL,
            E::TerminationRequest => HAKO_ERROR_TERMINATED,
            E::Service(e) => e.status(),
            _ => HAKO_ERROR_INTERNAL,
        }
    }
}
