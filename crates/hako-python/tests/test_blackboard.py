"""Blackboards from Python: entries described by ctypes and numpy types,
read by copy and in place (numpy views), written by copy and in place,
versions and waits, shared with another Python process; misuse refused."""

import ctypes
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import hako
from conftest import Mixed, mixed_of, same

# The C API's Rust peer (scripts/python builds it): its blackboard modes
# read and write the entry "mixed" of "ffi/board", version v holding
# mixed_of(v).
RUST_PEER = Path(__file__).resolve().parents[3] / "target/release/examples/rust_peer"


class Pose(ctypes.Structure):
    _hako_type_name_ = "demo::Pose"
    _fields_ = [("x", ctypes.c_double), ("y", ctypes.c_double), ("id", ctypes.c_uint32)]


Grid = ctypes.c_float * 1024


def board(node, name="py/board"):
    return node.blackboard(name, {
        "pose": (Pose, Pose(1.0, 2.0, 3)),
        "mode": (ctypes.c_uint32, 7),
        "grid": (Grid, [0.5] * 1024),
        "gain": (np.float64, 1.25),
    }, max_readers=2)


def test_defaults_updates_and_versions(node):
    b = board(node)
    assert [e[0] for e in b.entries] == ["pose", "mode", "grid", "gain"]
    r = b.reader()
    mode = r.entry("mode", ctypes.c_uint32)
    pose = r.entry("pose", Pose)
    gain = r.entry("gain", np.float64)
    assert mode.get_with_version() == (7, 0)
    p = pose.get()
    assert (p.x, p.y, p.id) == (1.0, 2.0, 3)
    assert gain.get() == 1.25
    w = b.writer()
    wmode = w.entry("mode", ctypes.c_uint32)
    assert wmode.update(8) == 1
    assert mode.changed
    assert mode.get_with_version() == (8, 1)
    assert not mode.changed
    assert w.entry("pose", Pose).update(Pose(5.0, 6.0, 9)) == 1
    assert pose.get().id == 9
    assert w.entry("gain", np.float64).update(2.5) == 1
    assert gain.get() == 2.5


def test_arrays_in_place_both_ways(node):
    b = board(node)
    w = b.writer().entry("grid", Grid)
    r = b.reader().entry("grid", Grid)
    with w.loan() as loan:            # a copy of the latest, to change
        a = loan.numpy()
        assert a.shape == (1024,) and a.dtype == np.float32 and a[0] == 0.5
        a[10] = 3.0
        del a                          # views go before the publish
    assert r.version == 1
    with r.read() as held:
        view = held.numpy()
        assert held.version == 1
        assert not view.flags.writeable
        assert view[10] == 3.0 and view[11] == 0.5
        # The writer goes on meanwhile; the held value does not change.
        for k in range(10):
            with w.loan(latest=False) as loan:
                loan.numpy()[:] = k
        assert view[10] == 3.0
        with pytest.raises(BufferError):
            held.release()             # a view still lives
        del view
    assert r.get()[0] == 9.0
    loan = w.loan()
    loan.abandon()
    assert r.version == 11


def test_a_reader_sleeps_until_a_writer_in_another_process_updates(node, root, spawn):
    b = board(node)
    mode = b.reader(wait="park").entry("mode", ctypes.c_uint32)
    assert mode.wait(timeout=0.02) is None
    child = spawn.python("""
import ctypes, time, hako
from test_blackboard import board
node = hako.Node("py-board-writer", root=root)
b = board(node)
e = b.writer().entry("mode", ctypes.c_uint32)
print("ready", flush=True)
time.sleep(0.05)
for v in range(1, 6):
    e.update(100 + v)
print("done", flush=True)
while b.reader_count > 0:
    time.sleep(0.001)
""", root)
    assert child.line() == "ready"
    got = []
    while not got or got[-1][1] < 5:
        v = mode.wait(timeout=10)
        assert v is not None, "no change came"
        got.append(mode.get_with_version())
    assert got[-1] == (105, 5)
    assert all(value == 100 + version for value, version in got)
    del mode
    assert child.line() == "done"


def test_misuse_is_refused(node):
    b = board(node)
    w = b.writer()
    with pytest.raises(hako.PortCreateError):
        b.writer()
    with pytest.raises(hako.ServiceError):
        w.entry("mode", ctypes.c_uint64)
    with pytest.raises(hako.ServiceError):
        w.entry("speed", ctypes.c_uint32)
    e = w.entry("mode", ctypes.c_uint32)
    with pytest.raises(ValueError):
        w.entry("mode", ctypes.c_uint32)   # one handle per entry
    loan = e.loan()
    with pytest.raises(ValueError):
        e.loan()                           # one loan at a time
    loan.publish()
    with pytest.raises(ValueError):
        loan.publish()
    with pytest.raises(hako.ServiceError):
        node.blackboard("py/empty", {})
    with pytest.raises(TypeError):
        node.blackboard("py/bad", {"x": (ctypes.c_char_p, None)})


def mixed_board(node):
    return node.blackboard("ffi/board", {"mixed": (Mixed, mixed_of(0))}, max_readers=2)


@pytest.mark.parametrize("python_writes", [False, True])
def test_a_rust_process_on_the_same_board(node, root, python_writes):
    assert RUST_PEER.exists(), f"{RUST_PEER} is missing: run ./scripts/python --build-only"
    b = mixed_board(node)
    count = 2000
    if python_writes:
        peer = subprocess.Popen([str(RUST_PEER), "board-read", root, str(count)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        w = b.writer().entry("mixed", Mixed)
        deadline = time.monotonic() + 10
        while b.reader_count < 1:
            assert time.monotonic() < deadline, "the Rust reader never came"
            time.sleep(0.001)
        for v in range(1, count + 1):
            assert w.update(mixed_of(v)) == v
        out, err = peer.communicate(timeout=60)
        assert peer.returncode == 0, err
        assert f"RESULT board-read={count}" in out
    else:
        r = b.reader(wait="park").entry("mixed", Mixed)
        peer = subprocess.Popen([str(RUST_PEER), "board-write", root, str(count)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        last = 0
        while last < count:
            assert r.wait(timeout=10) is not None, f"no change after version {last}"
            value, last = r.get_with_version()
            assert same(value, mixed_of(last)), f"version {last} is wrong"
        del r
        out, err = peer.communicate(timeout=60)
        assert peer.returncode == 0, err


def test_a_waitset_wakes_for_an_entry_a_rust_process_updates(node, root):
    # The reader is attached to a waitset; its entry watched, every wake
    # means the entry changed since it was read, until a Rust writer in
    # another process reached the last version.
    assert RUST_PEER.exists(), f"{RUST_PEER} is missing: run ./scripts/python --build-only"
    b = mixed_board(node)
    reader = b.reader(wait="park")
    r = reader.entry("mixed", Mixed)
    ws = hako.WaitSet()
    rid = ws.attach(reader)
    assert ws.wait(timeout=0.02) == [], "nothing watched, nothing changed"
    r.watch()
    count = 2000
    peer = subprocess.Popen([str(RUST_PEER), "board-write", root, str(count)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    last, wakes = 0, 0
    while last < count:
        if not r.changed:
            assert ws.wait(timeout=10) == [("ready", rid)], f"no wake after version {last}"
            wakes += 1
        value, last = r.get_with_version()
        assert same(value, mixed_of(last)), f"version {last} is wrong"
    assert wakes > 0
    r.unwatch()
    ws.close()
    del r, reader   # the writer waits for its readers to leave
    out, err = peer.communicate(timeout=60)
    assert peer.returncode == 0, err
    assert f"RESULT board-wrote={count}" in out
