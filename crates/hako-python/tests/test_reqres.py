"""Request/response between Python ports: streams, typed and numpy
payloads, lifetimes and errors."""

import ctypes
import gc
import threading

import numpy as np
import pytest

import hako


def test_stream_of_responses(node):
    svc = node.request_response("R/Stream", bytes, ctypes.c_uint64, response_slice=True)
    server = svc.server(max_slice_len=4)
    client = svc.client(max_slice_len=32)
    assert client.server_count == 1
    pending = client.send_copy(b"count to three")
    request = server.receive(timeout=5)
    assert bytes(request) == b"count to three" and request.expects_response
    assert request.client_id == client.id
    for i in range(3):
        request.respond(np.array([i, i * 10], dtype=np.uint64))
    loan = request.loan(1)
    loan.write(np.array([99], dtype=np.uint64))
    assert loan.send() is None
    request.finish()
    got = [r.numpy().tolist() for r in pending]
    assert got == [[0, 0], [1, 10], [2, 20], [99]]
    assert pending.is_finished
    assert pending.receive() is None


def test_typed_request_value(node):
    svc = node.request_response("R/Typed", ctypes.c_uint32, ctypes.c_uint32)
    server, client = svc.server(), svc.client()
    loan = client.loan()
    v = loan.value
    v.value = 21
    del v
    pending = loan.send()
    with server.receive(timeout=5) as request:
        assert request.value.value == 21
        request.respond(ctypes.c_uint32(42))
    assert pending.blocking_receive().value.value == 42
    assert pending.blocking_receive() is None


def test_numpy_request_zero_copy(node):
    svc = node.request_response("R/Numpy", np.float64, np.float64,
                                request_slice=True, response_slice=True)
    server = svc.server(max_slice_len=1)
    client = svc.client(max_slice_len=1000)
    loan = client.loan_array(1000, np.float64)
    a = loan.numpy()
    a[:] = np.linspace(0, 1, 1000)
    del a
    pending = loan.send()
    request = server.receive(timeout=5)
    total = request.numpy().sum()
    request.respond(np.array([total]))
    request.finish()
    assert pending.blocking_receive().numpy()[0] == pytest.approx(500.0)


def test_errors(node):
    svc = node.request_response("R/Errors", bytes, bytes, max_requests_in_flight=1)
    client = svc.client(max_slice_len=8)
    with pytest.raises(hako.RequestSendError, match="no server"):
        client.send_copy(b"hi")
    server = svc.server(max_slice_len=8)
    p = client.send_copy(b"one")
    with pytest.raises(hako.RequestSendError, match="in flight"):
        client.send_copy(b"two")
    with pytest.raises(RuntimeError, match="pending"):
        client.close()
    r = server.receive(timeout=5)
    with pytest.raises(RuntimeError, match="active request"):
        server.close()
    view = memoryview(r)
    with pytest.raises(BufferError):
        r.finish()
    view.release()
    r.finish()
    assert p.blocking_receive() is None
    p.close()
    del p
    gc.collect()
    client.close()
    server.close()
    with pytest.raises(hako.ServiceError, match="incompatible"):
        node.request_response("R/Errors", ctypes.c_uint8, bytes)
    assert svc.name == "R/Errors"


def test_server_gone_ends_the_stream(node):
    svc = node.request_response("R/Gone", bytes, bytes)
    server = svc.server(max_slice_len=8)
    client = svc.client(max_slice_len=8)
    pending = client.send_copy(b"x")
    request = server.receive(timeout=5)
    request.respond(b"partial")
    # The server leaves without ending the stream by the book: dropping the
    # request ends it; here the whole server goes.
    del request
    gc.collect()
    server.close()
    assert bytes(pending.blocking_receive()) == b"partial"
    assert pending.blocking_receive() is None


def test_client_and_server_in_two_threads(node):
    svc = node.request_response("R/Threads", bytes, bytes)
    server = svc.server(max_slice_len=16)
    client = svc.client(max_slice_len=16)

    def serve():
        for _ in range(100):
            with server.blocking_receive() as r:
                r.respond(bytes(r)[::-1])

    t = threading.Thread(target=serve)
    t.start()
    for i in range(100):
        text = f"message {i}".encode()
        assert [bytes(x) for x in client.send_copy(text)] == [text[::-1]]
    t.join()


def test_a_client_waits_for_a_server_that_comes_later(node):
    svc = node.request_response("R/Later", bytes, bytes)
    client = svc.client(max_slice_len=8)
    assert client.wait_for_server(timeout=0.05) is False
    made = []

    def serve():
        import time
        time.sleep(0.2)
        server = svc.server(max_slice_len=8)
        made.append(server)
        request = server.receive(timeout=5)
        request.respond(bytes(request))
        request.finish()

    t = threading.Thread(target=serve)
    t.start()
    assert client.wait_for_server(timeout=10) is True
    pending = client.send_copy(b"hi")
    assert [bytes(r) for r in pending] == [b"hi"]
    t.join()
