//! hako's errors as Python exception classes.
//!
//! Every class derives from `hako.HakoError`; each Rust error type has its
//! own class of the same name, and the "peer gone" outcomes of the waits
//! (publishers, servers or notifiers gone) share `hako.PeersGoneError`, a
//! subclass of `ReceiveError`, so `except hako.PeersGoneError` catches the
//! end of a stream whatever the pattern. The message is the Rust error's
//! `Display` text.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    hako,
    HakoError,
    PyException,
    "Base class of every hako error."
);
create_exception!(
    hako,
    ConfigError,
    HakoError,
    "The configuration file or environment is invalid."
);
create_exception!(
    hako,
    NodeCreateError,
    HakoError,
    "A node could not be created (its domain root is unusable)."
);
create_exception!(
    hako,
    InvalidNameError,
    HakoError,
    "A node or service name breaks the naming rules."
);
create_exception!(hako, ServiceError, HakoError, "A service could not be created or opened (exists, missing, incompatible type or settings, corrupted).");
create_exception!(
    hako,
    PortCreateError,
    HakoError,
    "A port (publisher, subscriber, client, server, notifier, listener) could not be created."
);
create_exception!(
    hako,
    LoanError,
    HakoError,
    "No chunk could be loaned: too many loans, or the pool is exhausted."
);
create_exception!(
    hako,
    SendError,
    HakoError,
    "A sample, request, response or event could not be sent."
);
create_exception!(
    hako,
    RequestSendError,
    SendError,
    "A request could not be sent (no server, too many in flight, not delivered)."
);
create_exception!(
    hako,
    ResponseSendError,
    SendError,
    "A response could not be sent (the client is gone or asked for none)."
);
create_exception!(hako, ReceiveError, HakoError, "A receive failed.");
create_exception!(
    hako,
    PeersGoneError,
    ReceiveError,
    "Every publisher, server or notifier the wait depended on is gone."
);
create_exception!(
    hako,
    CorruptedError,
    ReceiveError,
    "A peer sent corrupted data; its connection or message was dropped."
);
create_exception!(
    hako,
    WaitSetError,
    HakoError,
    "A waitset could not be set up or used."
);
create_exception!(
    hako,
    TerminationRequest,
    HakoError,
    "SIGTERM (or SIGINT) arrived while a waitset or node waited."
);

/// Registers the classes in the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("HakoError", py.get_type::<HakoError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("NodeCreateError", py.get_type::<NodeCreateError>())?;
    m.add("InvalidNameError", py.get_type::<InvalidNameError>())?;
    m.add("ServiceError", py.get_type::<ServiceError>())?;
    m.add("PortCreateError", py.get_type::<PortCreateError>())?;
    m.add("LoanError", py.get_type::<LoanError>())?;
    m.add("SendError", py.get_type::<SendError>())?;
    m.add("RequestSendError", py.get_type::<RequestSendError>())?;
    m.add("ResponseSendError", py.get_type::<ResponseSendError>())?;
    m.add("ReceiveError", py.get_type::<ReceiveError>())?;
    m.add("PeersGoneError", py.get_type::<PeersGoneError>())?;
    m.add("CorruptedError", py.get_type::<CorruptedError>())?;
    m.add("WaitSetError", py.get_type::<WaitSetError>())?;
    m.add("TerminationRequest", py.get_type::<TerminationRequest>())?;
    Ok(())
}

/// A Rust error of hako, turned into its Python class.
pub trait ToPy {
    /// The exception.
    fn to_py(self) -> PyErr;
}

/// A Rust error's message in the words of a Python user: the keywords
/// this package's functions take where the Rust library names its own
/// settings and types.
pub fn python_words(text: &str) -> String {
    const WORDS: [(&str, &str); 8] = [
        ("subscriber_max_buffer_size", "buffer_size"),
        ("subscriber_max_borrowed_samples", "max_borrowed"),
        ("max_loaned_samples", "max_loans"),
        ("max_loaned_requests", "max_loans"),
        ("max_loaned_responses", "max_loans"),
        (
            "drop a PendingResponse, or finish or drop a Ticket, first",
            "close a PendingResponse first",
        ),
        ("#[hako(type_name = \"...\")]", "_hako_type_name_"),
        (
            "(one function in a library every program uses)",
            "(one function every program imports)",
        ),
    ];
    WORDS
        .iter()
        .fold(text.to_owned(), |t, (rust, python)| t.replace(rust, python))
}

macro_rules! plain {
    ($($rust:ty => $class:ident),* $(,)?) => {$(
        impl ToPy for $rust {
            fn to_py(self) -> PyErr {
                $class::new_err(python_words(&self.to_string()))
            }
        }
    )*};
}

plain! {
    hako::ConfigError => ConfigError,
    hako::NodeCreateError => NodeCreateError,
    hako::NameError => InvalidNameError,
    hako::ServiceError => ServiceError,
    hako::PublisherCreateError => PortCreateError,
    hako::SubscriberCreateError => PortCreateError,
    hako::EventPortCreateError => PortCreateError,
    hako::ReqResPortCreateError => PortCreateError,
    hako::LoanError => LoanError,
    hako::SendError => SendError,
    hako::NotifyError => SendError,
    hako::WaitSetError => WaitSetError,
}

impl ToPy for hako::RequestSendError {
    fn to_py(self) -> PyErr {
        match self {
            hako::RequestSendError::Loan(e) => e.to_py(),
            e => RequestSendError::new_err(python_words(&e.to_string())),
        }
    }
}

impl ToPy for hako::ResponseSendError {
    fn to_py(self) -> PyErr {
        match self {
            hako::ResponseSendError::Loan(e) => e.to_py(),
            e => ResponseSendError::new_err(python_words(&e.to_string())),
        }
    }
}

impl ToPy for hako::ReceiveError {
    fn to_py(self) -> PyErr {
        let text = python_words(&self.to_string());
        match self {
            hako::ReceiveError::PublishersGone(_) => PeersGoneError::new_err(text),
            hako::ReceiveError::CorruptedPublisher { .. }
            | hako::ReceiveError::CorruptedService(_)
            | hako::ReceiveError::InvalidPayload { .. } => CorruptedError::new_err(text),
            hako::ReceiveError::TerminationRequest => TerminationRequest::new_err(text),
            _ => ReceiveError::new_err(text),
        }
    }
}

impl ToPy for hako::ReqResReceiveError {
    fn to_py(self) -> PyErr {
        let text = python_words(&self.to_string());
        match self {
            hako::ReqResReceiveError::ServerGone
            | hako::ReqResReceiveError::ServersGone(_)
            | hako::ReqResReceiveError::Aborted => PeersGoneError::new_err(text),
            hako::ReqResReceiveError::Corrupted { .. } => CorruptedError::new_err(text),
            hako::ReqResReceiveError::TerminationRequest => TerminationRequest::new_err(text),
            _ => ReceiveError::new_err(text),
        }
    }
}

impl ToPy for hako::BlackboardError {
    fn to_py(self) -> PyErr {
        let text = python_words(&self.to_string());
        match self {
            hako::BlackboardError::Service(e) => e.to_py(),
            hako::BlackboardError::WriterExists { .. }
            | hako::BlackboardError::TooManyReaders { .. } => PortCreateError::new_err(text),
            hako::BlackboardError::Corrupted { .. }
            | hako::BlackboardError::InvalidValue { .. } => CorruptedError::new_err(text),
            hako::BlackboardError::TerminationRequest => TerminationRequest::new_err(text),
            _ => pyo3::exceptions::PyValueError::new_err(text),
        }
    }
}

impl ToPy for hako::ListenerError {
    fn to_py(self) -> PyErr {
        match self {
            hako::ListenerError::TerminationRequest => {
                TerminationRequest::new_err(self.to_string())
            }
            _ => PeersGoneError::new_err(self.to_string()),
        }
    }
}

/// `?` for hako's results: `r.py()?`.
pub trait PyResultExt<T> {
    /// The result with its error as a Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T, E: ToPy> PyResultExt<T> for Result<T, E> {
    fn py(self) -> PyResult<T> {
        self.map_err(ToPy::to_py)
    }
}
