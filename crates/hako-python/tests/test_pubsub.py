"""Publish/subscribe in one process: bytes, typed payloads, numpy, the
buffer protocol's lifetimes, and the errors."""

import ctypes
import gc
import io

import numpy as np
import pytest

import hako
from conftest import Mixed, mixed_of, same


def test_bytes_round_trip(node):
    svc = node.publish_subscribe("T/Bytes")
    pub = svc.publisher(max_slice_len=64)
    sub = svc.subscriber()
    assert sub.receive() is None
    assert pub.send_copy(b"hello") == 1
    s = sub.receive()
    assert bytes(s) == b"hello" and len(s) == 5 and s.elements == 5
    assert s.origin == pub.id
    assert s.value == b"hello" and s.tobytes() == b"hello"


def test_loan_write_and_send(node):
    svc = node.publish_subscribe("T/Loan")
    pub = svc.publisher(max_slice_len=16)
    sub = svc.subscriber()
    loan = pub.loan(8)
    assert len(loan) == 8
    loan.write(b"abcd")
    loan.write(b"efgh", offset=4)
    with pytest.raises(ValueError, match="do not fit"):
        loan.write(b"x", offset=8)
    assert loan.send() == 1
    with pytest.raises(ValueError, match="sent or released already"):
        loan.send()
    assert bytes(sub.receive()) == b"abcdefgh"


def test_readinto_a_loan(node):
    svc = node.publish_subscribe("T/Readinto")
    pub = svc.publisher(max_slice_len=1000)
    sub = svc.subscriber()
    data = bytes(range(256)) * 3
    loan = pub.loan(len(data))
    assert io.BytesIO(data).readinto(loan) == len(data)
    loan.send()
    assert bytes(sub.receive()) == data


def test_typed_ctypes_payload(node):
    svc = node.publish_subscribe("T/Typed", Mixed)
    assert svc.type_name == "hako_tests::Mixed"
    pub, sub = svc.publisher(), svc.subscriber()
    loan = pub.loan()
    v = loan.value
    for f, _ in Mixed._fields_:
        setattr(v, f, getattr(mixed_of(5), f))
    del v
    loan.send()
    pub.send_copy(mixed_of(6))
    assert same(sub.receive().value, mixed_of(5))
    assert same(sub.receive().value, mixed_of(6))
    with pytest.raises(ValueError, match="one value"):
        pub.loan(2)
    with pytest.raises(ValueError, match="3 bytes are not a whole number of 32-byte elements"):
        pub.send_copy(b"abc")
    with pytest.raises(ValueError, match="one 32-byte value, not 64 bytes"):
        pub.send_copy(bytes(64))


def test_type_names():
    d = hako.describe_type
    assert d(None, None) == ("[u8]", 1, 1, True)
    assert d(ctypes.c_uint32, None) == ("u32", 4, 4, False)
    assert d(ctypes.c_double, True) == ("[f64]", 8, 8, True)
    assert d(ctypes.c_float * 4, None) == ("[f32; 4]", 16, 4, False)
    assert d(np.int16, True) == ("[i16]", 2, 2, True)
    assert d(Mixed, None) == ("hako_tests::Mixed", 32, 8, False)

    class NoName(ctypes.Structure):
        _fields_ = [("x", ctypes.c_int32)]

    assert d(NoName, None)[0] == "test_pubsub::test_type_names.<locals>.NoName"

    class Pointer(ctypes.Structure):
        _fields_ = [("p", ctypes.c_void_p)]

    with pytest.raises(TypeError, match="pointer"):
        d(Pointer, None)
    with pytest.raises(TypeError, match="not a payload type"):
        d(object(), None)


def test_incompatible_services_are_refused(node):
    # A service lives while a process holds it: keep the first one.
    first = node.publish_subscribe("T/Kind", ctypes.c_uint64)
    with pytest.raises(hako.ServiceError, match="type_name is u64 there, f64 here"):
        node.publish_subscribe("T/Kind", ctypes.c_double)
    qos = node.publish_subscribe("T/Qos", history_size=2)
    with pytest.raises(hako.ServiceError):
        node.publish_subscribe("T/Qos", history_size=5, mode="open")
    with pytest.raises(hako.ServiceError):
        node.publish_subscribe("T/Missing", mode="open")
    with pytest.raises(hako.ServiceError):
        node.publish_subscribe("T/Kind", ctypes.c_uint64, mode="create")
    with pytest.raises(hako.InvalidNameError):
        node.publish_subscribe("")
    with pytest.raises(ValueError, match="mode is"):
        node.publish_subscribe("T/Kind", mode="sometimes")
    with pytest.raises(ValueError, match="overflow is"):
        node.publish_subscribe("T/Other", overflow="never")
    with pytest.raises(ValueError, match="wait is"):
        node.publish_subscribe("T/Kind2").subscriber(wait="nap")
    assert first.name == "T/Kind" and qos.name == "T/Qos"


def test_numpy_zero_copy_both_ways(node, root):
    svc = node.publish_subscribe("T/Numpy")
    pub = svc.publisher(max_slice_len=64 * 64 * 4)
    sub = svc.subscriber()
    loan = pub.loan_array((64, 64), np.float32)
    a = loan.numpy()
    assert a.shape == (64, 64) and a.dtype == np.float32 and a.flags.writeable
    a[:] = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    written_at = a.ctypes.data
    assert inside_a_mapping_of(written_at, root)
    del a
    loan.send()
    s = sub.receive()
    b = s.numpy(np.float32, (64, 64))
    assert not b.flags.writeable
    assert inside_a_mapping_of(b.ctypes.data, root)
    assert b[10, 3] == 10 * 64 + 3
    with pytest.raises(ValueError):
        b[0, 0] = 1


def test_an_array_larger_than_memory_is_refused(node):
    # numpy's prod wraps 2**32 * 2**32 around to 0: that must not loan an
    # empty array.
    pub = node.publish_subscribe("T/Huge").publisher(max_slice_len=64)
    for shape in [(2**32, 2**32), (2**62, 4), (-1, 8)]:
        with pytest.raises(ValueError, match="shape"):
            pub.loan_array(shape, np.uint8)
    with pytest.raises(ValueError, match="shape"):
        pub.loan_array((2**31, 2**31), np.float64)
    assert pub.loan_array((8, 8), np.uint8).numpy().shape == (8, 8)


def inside_a_mapping_of(address: int, root: str) -> bool:
    """Whether `address` lies in a mapping of a file under `root`."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and parts[5].startswith(root):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                if lo <= address < hi:
                    return True
    return False


def test_a_view_keeps_the_sample_alive(node):
    svc = node.publish_subscribe("T/Lifetime", max_borrowed=1)
    pub = svc.publisher(max_slice_len=8)
    sub = svc.subscriber()
    pub.send_copy(b"12345678")
    s = sub.receive()
    view = s.numpy()
    with pytest.raises(BufferError, match="view"):
        s.release()
    del s
    gc.collect()
    # The array still reads the chunk; the subscriber still holds it.
    assert bytes(view) == b"12345678"
    pub.send_copy(b"abcdefgh")
    with pytest.raises(hako.ReceiveError, match="holds as many samples"):
        sub.receive()
    del view
    gc.collect()
    assert bytes(sub.receive()) == b"abcdefgh"


def test_a_loan_with_a_view_is_not_sent(node):
    svc = node.publish_subscribe("T/LoanView")
    pub = svc.publisher(max_slice_len=8)
    loan = pub.loan(8)
    m = memoryview(loan)
    with pytest.raises(BufferError, match="delete them first"):
        loan.send()
    with pytest.raises(BufferError):
        loan.release()
    m.release()
    loan.release()
    with pytest.raises(ValueError):
        loan.send()


def test_loans_are_limited_and_returned(node):
    svc = node.publish_subscribe("T/Loans")
    pub = svc.publisher(max_loans=2)
    a, b = pub.loan(1), pub.loan(1)
    with pytest.raises(hako.LoanError):
        pub.loan(1)
    del a
    gc.collect()
    with pub.loan(1) as c:
        c.write(b"x")
    b.release()
    pub.loan(1).release()


def test_history_and_timeouts(node):
    svc = node.publish_subscribe("T/History", history_size=2)
    pub = svc.publisher()
    for i in range(3):
        pub.send_copy(bytes([i]))
    sub = svc.subscriber()
    pub.update_connections()
    assert [bytes(sub.receive()) for _ in range(2)] == [b"\x01", b"\x02"]
    assert sub.receive(timeout=0.05) is None
    with pytest.raises(ValueError, match="timeout"):
        sub.receive(timeout=-1)


def test_closed_ports(node):
    svc = node.publish_subscribe("T/Closed")
    with svc.publisher() as pub:
        pass
    with pytest.raises(ValueError, match="closed"):
        pub.send_copy(b"x")
    sub = svc.subscriber()
    sub.close()
    with pytest.raises(ValueError, match="closed"):
        sub.receive()


def test_threads_share_a_subscriber(node):
    import threading

    svc = node.publish_subscribe("T/Threads")
    pub = svc.publisher()
    sub = svc.subscriber()
    got = []
    t = threading.Thread(target=lambda: got.append(bytes(sub.receive(timeout=10))))
    t.start()
    pub.send_copy(b"!")
    t.join()
    assert got == [b"!"]


def test_a_lossy_subscriber_never_holds_a_publisher_back(node):
    svc = node.publish_subscribe("T/Lossy", overflow="backpressure", buffer_size=2)
    forwarder = svc.subscriber(lossy=True)
    pub = svc.publisher(max_slice_len=1)  # backpressure="block"
    for i in range(10):
        assert pub.send_copy(bytes([i])) == 1  # never waits for it
    assert [bytes(forwarder.receive()) for _ in range(2)] == [b"\x08", b"\x09"]
    assert forwarder.receive() is None


def test_version_and_closing_a_node(root):
    assert isinstance(hako.__version__, str) and hako.__version__.count(".") == 2
    with hako.Node("closing", root=root) as node:
        svc = node.publish_subscribe("T/Closing")
        pub = svc.publisher(max_slice_len=8)
        assert "closed" not in repr(node)
    # Closed at the block's end: using it raises, closing again is harmless;
    # what was made through it works on.
    with pytest.raises(ValueError, match="closed"):
        node.publish_subscribe("T/Other")
    assert "closed" in repr(node)
    node.close()
    pub.send_copy(b"12345678")
    pub.close()


def test_errors_name_the_python_keywords(node):
    made = node.publish_subscribe("T/Kw", buffer_size=2)
    with pytest.raises(hako.ServiceError) as e:
        node.publish_subscribe("T/Kw", buffer_size=16)
    assert "buffer_size" in str(e.value) and "subscriber_max_buffer_size" not in str(e.value)
    pub = node.publish_subscribe("T/Kw").publisher(max_slice_len=4, max_loans=1)
    held = pub.loan(1)
    with pytest.raises(hako.LoanError) as e:
        pub.loan(1)
    assert "max_loans" in str(e.value) and "max_loaned_samples" not in str(e.value)
    held.release()
    with pytest.raises(hako.ServiceError, match="buffer_size to at least 3"):
        node.publish_subscribe("T/History", history_size=3)
    del made
