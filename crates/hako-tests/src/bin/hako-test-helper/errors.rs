//! How a role fails: an `ERROR <Kind>: ...` or `VERIFY FAILED: ...` line on
//! stdout, then an exit with the code from [`hako_tests::exit`] once
//! everything on the way up was dropped (see `main`).

use hako::{
    EventPortCreateError, ListenerError, LoanError, NotifyError, ReceiveError, ServiceError,
    WaitSetError,
};
use hako_tests::exit;

/// Unwinding payload of an intended exit: `main` exits with this code once
/// everything on the way up has been dropped.
pub struct Exit(pub i32);

/// Prints an `ERROR` line and exits with `code` (after unwinding).
pub fn die(code: i32, kind: &str, msg: impl std::fmt::Display) -> ! {
    println!("ERROR {kind}: {msg}");
    std::panic::panic_any(Exit(code));
}

pub fn die_verify(msg: impl std::fmt::Display) -> ! {
    println!("VERIFY FAILED: {msg}");
    eprintln!("VERIFY FAILED: {msg}");
    std::panic::panic_any(Exit(exit::VERIFY));
}

pub fn die_service(e: ServiceError) -> ! {
    let (code, kind) = match &e {
        ServiceError::IncompatibleType { field, .. } => (
            exit::INCOMPATIBLE_TYPE,
            format!("IncompatibleType field={field}"),
        ),
        ServiceError::IncompatibleQos { field, .. } => (
            exit::INCOMPATIBLE_QOS,
            format!("IncompatibleQos field={field}"),
        ),
        ServiceError::Corrupted { .. } => (exit::CORRUPTED, "Corrupted".into()),
        ServiceError::DoesNotExist(_) => (exit::DOES_NOT_EXIST, "DoesNotExist".into()),
        ServiceError::AlreadyExists(_) => (exit::ALREADY_EXISTS, "AlreadyExists".into()),
        ServiceError::IncompatiblePattern { .. } => {
            (exit::INCOMPATIBLE_PATTERN, "IncompatiblePattern".into())
        }
        other => (exit::OTHER_SERVICE, format!("ServiceError({other:?})")),
    };
    die(code, &kind, e)
}

pub fn die_loan(e: LoanError) -> ! {
    match e {
        LoanError::ExceedsMaxLoans(_) => die(exit::EXCEEDS_MAX_LOANS, "ExceedsMaxLoans", e),
        LoanError::OutOfMemory(_) => die(exit::OUT_OF_MEMORY, "OutOfMemory", e),
        other => die(exit::FAILURE, "LoanError", other),
    }
}

pub fn die_receive(e: ReceiveError) -> ! {
    match e {
        ReceiveError::ExceedsMaxBorrowed(_) => {
            die(exit::EXCEEDS_MAX_BORROWED, "ExceedsMaxBorrowed", e)
        }
        ReceiveError::CorruptedPublisher { .. } => {
            die(exit::CORRUPTED_PUBLISHER, "CorruptedPublisher", e)
        }
        ReceiveError::PublishersGone(_) => die(exit::PUBLISHERS_GONE, "PublishersGone", e),
        other => die(exit::FAILURE, "ReceiveError", other),
    }
}

pub fn die_event_port(e: EventPortCreateError) -> ! {
    match e {
        EventPortCreateError::TooMany { .. } => die(exit::TOO_MANY_PORTS, "TooMany", e),
        EventPortCreateError::EventIdOutOfRange { .. } => die(
            exit::DEFAULT_EVENT_ID_OUT_OF_RANGE,
            "EventPortCreateError::EventIdOutOfRange",
            e,
        ),
        EventPortCreateError::Service(s) => die_service(s),
        other => die(exit::FAILURE, "EventPortCreateError", other),
    }
}

pub fn die_notify(e: NotifyError) -> ! {
    match e {
        NotifyError::EventIdOutOfRange { .. } => die(
            exit::EVENT_ID_OUT_OF_RANGE,
            "NotifyError::EventIdOutOfRange",
            e,
        ),
        other => die(exit::FAILURE, "NotifyError", other),
    }
}

pub fn die_listener(e: ListenerError) -> ! {
    match e {
        ListenerError::NotifiersGone(_) => die(exit::NOTIFIERS_GONE, "NotifiersGone", e),
        other => die(exit::FAILURE, "ListenerError", other),
    }
}

pub fn die_waitset(e: WaitSetError) -> ! {
    die(exit::FAILURE, "WaitSetError", e)
}
