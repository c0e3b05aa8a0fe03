"""Python <-> Rust across processes: typed and slice services both ways,
request/response both ways (examples/py_peer.rs is the Rust side)."""

import numpy as np
import pytest

import hako
from conftest import Mixed, mixed_of, same

COUNT = 200


def typed_service(node):
    return node.publish_subscribe("py/typed", Mixed, overflow="backpressure", buffer_size=8)


def floats_service(node):
    return node.publish_subscribe("py/floats", np.float32, slice=True,
                                  overflow="backpressure", buffer_size=4)


def wait_for(what, ready):
    import time

    deadline = time.monotonic() + 20
    while not ready():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.001)


def test_python_publishes_typed_to_rust(node, root, spawn):
    pub = typed_service(node).publisher()
    peer = spawn.peer("typed-sub", root, COUNT)
    assert peer.line() == "READY"
    wait_for("the Rust subscriber", lambda: pub.subscriber_count > 0)
    for seq in range(COUNT):
        if seq % 2:
            pub.send_copy(mixed_of(seq))
        else:
            loan = pub.loan()
            v = loan.value
            for f, _ in Mixed._fields_:
                setattr(v, f, getattr(mixed_of(seq), f))
            del v
            loan.send()
    assert f"RESULT received={COUNT}" in peer.finish()


def test_rust_publishes_typed_to_python(node, root, spawn):
    sub = typed_service(node).subscriber()
    peer = spawn.peer("typed-pub", root, COUNT)
    for seq in range(COUNT):
        s = sub.receive(timeout=20)
        assert s is not None, f"sample {seq} did not come"
        assert same(s.value, mixed_of(seq))
    del s  # a subscriber stays registered while a sample of it lives
    sub.close()
    assert f"RESULT sent={COUNT}" in peer.finish()


def test_python_writes_a_loaned_array_that_rust_reads(node, root, spawn):
    pub = floats_service(node).publisher(max_slice_len=1024)
    peer = spawn.peer("floats-sub", root, COUNT)
    assert peer.line() == "READY"
    wait_for("the Rust subscriber", lambda: pub.subscriber_count > 0)
    for seq in range(COUNT):
        loan = pub.loan(1024)
        a = loan.numpy()
        a[:] = np.arange(1024, dtype=np.float32) + seq * 1000
        del a
        loan.send()
    assert f"RESULT received={COUNT}" in peer.finish()


def test_rust_slices_arrive_as_numpy(node, root, spawn):
    sub = floats_service(node).subscriber()
    peer = spawn.peer("floats-pub", root, COUNT)
    for seq in range(COUNT):
        s = sub.receive(timeout=20)
        assert s is not None
        a = s.numpy()
        assert a.dtype == np.float32 and a.shape == (1024,)
        assert np.array_equal(a, np.arange(1024, dtype=np.float32) + seq * 1000)
    del s, a
    sub.close()
    assert f"RESULT sent={COUNT}" in peer.finish()


def reqres(node):
    return node.request_response("py/rr", bytes, np.uint64, response_slice=True,
                                 max_response_buffer=4)


def answers(request: bytes, seq: int):
    return [len(request), sum(request), seq]


def test_python_client_rust_server(node, root, spawn):
    client = reqres(node).client(max_slice_len=64)
    peer = spawn.peer("serve", root, COUNT)
    assert peer.line() == "READY"
    wait_for("the Rust server", lambda: client.server_count > 0)
    for seq in range(COUNT):
        text = f"from python {seq}".encode()
        got = [int(r.numpy()[0]) for r in client.send_copy(text)]
        assert got == answers(text, seq)
    assert f"RESULT served={COUNT}" in peer.finish()


def test_rust_client_python_server(node, root, spawn):
    server = reqres(node).server(max_slice_len=1)
    peer = spawn.peer("ask", root, COUNT)
    for seq in range(COUNT):
        request = server.receive(timeout=20)
        assert request is not None
        for a in answers(bytes(request), seq):
            request.respond(np.array([a], dtype=np.uint64))
        request.finish()
    assert f"RESULT asked={COUNT}" in peer.finish()


def test_a_rust_type_mismatch_is_named(node, root, spawn):
    # Same name and size as Mixed, another type name: refused.
    import ctypes

    class Other(ctypes.Structure):
        _hako_type_name_ = "hako_tests::Other"
        _fields_ = Mixed._fields_

    first = typed_service(node)
    with pytest.raises(hako.ServiceError, match="hako_tests::Mixed there, hako_tests::Other here"):
        node.publish_subscribe("py/typed", Other)
    assert first.type_name == "hako_tests::Mixed"
