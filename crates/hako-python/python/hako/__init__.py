"""hako: zero-copy inter-process communication over shared memory.

Processes on one machine exchange messages through shared memory: the
writer builds a message in place, only a descriptor crosses to the reader,
nothing is copied whatever the size. This package is hako's Python face,
interoperating with Rust, C and C++ processes on the same services.

A publisher and a subscriber, numpy zero-copy both ways::

    import hako, numpy as np

    node = hako.Node("camera")
    frames = node.publish_subscribe("Camera/Front")          # byte slices
    pub = frames.publisher(max_slice_len=480 * 640 * 3)
    loan = pub.loan_array((480, 640, 3), np.uint8)
    image = loan.numpy()          # a writable view of shared memory
    image[:] = 0
    del image                     # views go before the send
    loan.send()

    sub = frames.subscriber()
    sample = sub.receive(timeout=1.0)       # None after a second
    image = sample.numpy(np.uint8, (480, 640, 3))   # read-only, zero-copy

Request/response, events, blackboards (``node.blackboard``) and the
waitset follow the Rust API; see the
package's README section and the type stubs for every method.
"""

from . import _hako
from ._hako import (
    ActiveRequest,
    Blackboard,
    BoardLoan,
    BoardReader,
    BoardView,
    BoardWriter,
    Client,
    ConfigError,
    CorruptedError,
    EventService,
    HakoError,
    InvalidNameError,
    Listener,
    Loan,
    LoanError,
    Node,
    NodeCreateError,
    Notifier,
    PeersGoneError,
    PendingResponse,
    PortCreateError,
    PubSubService,
    Publisher,
    ReaderEntry,
    ReceiveError,
    ReqResService,
    RequestSendError,
    ResponseSendError,
    Sample,
    SendError,
    Server,
    ServiceError,
    Subscriber,
    TerminationRequest,
    WaitSet,
    WaitSetError,
    Watcher,
    WriterEntry,
    __version__,
)
from ._types import describe as describe_type

__all__ = [
    "ActiveRequest", "Blackboard", "BoardLoan", "BoardReader", "BoardView", "BoardWriter",
    "Client", "ConfigError", "CorruptedError", "EventService",
    "HakoError", "InvalidNameError", "Listener", "Loan", "LoanError", "Node",
    "NodeCreateError", "Notifier", "PeersGoneError", "PendingResponse",
    "PortCreateError", "PubSubService", "Publisher", "ReceiveError",
    "ReqResService", "RequestSendError", "ResponseSendError", "Sample",
    "SendError", "Server", "ServiceError", "Subscriber", "TerminationRequest",
    "ReaderEntry", "WaitSet", "WaitSetError", "Watcher", "WriterEntry", "describe_type",
    "__version__",
]

del _hako
