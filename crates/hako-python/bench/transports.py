"""The transports pybench.py measures between two Python processes, each
with the same small interface.

An endpoint is made in each process from picklable ``shared`` state (made
by ``setup`` in the parent) and its ``side`` ("a" or "b"). Its methods:

* ``send(seq, size)``: a fresh message of ``size`` bytes whose first and
  last bytes are ``seq & 0xFF``, by the transport's best path for a
  message the sender builds (zero-copy transports loan shared memory and
  write only those two bytes; the others send a prepared array);
* ``send_array(array)``: a message the user already holds (a numpy
  array), copied in if the transport is zero-copy;
* ``recv()``: waits for the next message, returns ``(first, last, size)``
  and lets it go;
* ``ready()``: whether the peer is connected; ``close()``.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import time

import numpy as np

ONE = [bytes([i]) for i in range(256)]


class Hako:
    """hako's Python package: two publish/subscribe services, zero-copy
    loans, blocking receives (spin, then park; the GIL released)."""

    name = "hako"

    @staticmethod
    def setup(ctx, max_size):
        import tempfile

        return {"root": tempfile.mkdtemp(prefix="hako-pybench.", dir="/dev/shm"),
                "max": max_size}

    def __init__(self, shared, side):
        import hako

        self.node = hako.Node(f"pybench-{side}", root=shared["root"])
        out, back = ("Bench/AtoB", "Bench/BtoA") if side == "a" else ("Bench/BtoA", "Bench/AtoB")
        svc = lambda n: self.node.publish_subscribe(n, overflow="backpressure", buffer_size=4)
        self.pub = svc(out).publisher(max_slice_len=shared["max"])
        self.sub = svc(back).subscriber()

    def ready(self):
        return self.pub.subscriber_count > 0

    def send(self, seq, size):
        loan = self.pub.loan(size)
        b = ONE[seq & 0xFF]
        loan.write(b, 0)
        loan.write(b, size - 1)
        loan.send()

    def send_array(self, array):
        self.pub.send_copy(array)

    def recv(self):
        s = self.sub.receive(None)
        m = memoryview(s)
        r = (m[0], m[-1], len(m))
        m.release()
        return r

    def close(self):
        self.pub.close()
        self.sub.close()

    @staticmethod
    def cleanup(shared):
        import shutil

        shutil.rmtree(shared["root"], ignore_errors=True)


class Iceoryx2:
    """iceoryx2's Python package (0.10): slices of u8, its zero-copy path
    (a loaned slice written through a numpy view), busy-polled receives
    (its receive never blocks)."""

    name = "iceoryx2"

    @staticmethod
    def setup(ctx, max_size):
        return {"tag": f"pybench{os.getpid()}", "max": max_size}

    def __init__(self, shared, side):
        import iceoryx2 as iox

        iox.set_log_level(iox.LogLevel.Warn)
        self.iox = iox
        self.node = iox.NodeBuilder.new().create(iox.ServiceType.Ipc)
        tag = shared["tag"]
        out, back = (f"{tag}/ab", f"{tag}/ba") if side == "a" else (f"{tag}/ba", f"{tag}/ab")

        def svc(n):
            return (self.node.service_builder(iox.ServiceName.new(n))
                    .publish_subscribe(iox.Slice[ctypes.c_uint8])
                    .subscriber_max_buffer_size(4).enable_safe_overflow(False)
                    .open_or_create())

        self.out, self.back = svc(out), svc(back)
        self.pub = (self.out.publisher_builder().initial_max_slice_len(shared["max"])
                    .backpressure_strategy(iox.BackpressureStrategy.RetryUntilDelivered)
                    .create())
        # The subscriber comes once the peer's publisher is there: iceoryx2
        # 0.10 does not apply backpressure to a publisher that came after
        # the subscriber without safe overflow (its issue 1697), and a
        # one-way run then loses arrays.
        self.sub = None

    def ready(self):
        if self.sub is None:
            if self.back.dynamic_config.number_of_publishers == 0:
                return False
            self.sub = self.back.subscriber_builder().create()
        self.pub.update_connections()
        return self.out.dynamic_config.number_of_subscribers > 0

    def send(self, seq, size):
        loan = self.pub.loan_slice_uninit(size)
        view = np.frombuffer(loan.payload().as_memory_view(), dtype=np.uint8)
        view[0] = view[-1] = seq & 0xFF
        del view
        loan.assume_init().send()

    def send_array(self, array):
        loan = self.pub.loan_slice_uninit(array.nbytes)
        np.frombuffer(loan.payload().as_memory_view(), dtype=np.uint8)[:] = array
        loan.assume_init().send()

    def recv(self):
        spins = 0
        give_up = time.monotonic() + 60
        while True:
            s = self.sub.receive()
            if s is not None:
                break
            spins += 1
            if spins % 65536 == 0 and time.monotonic() > give_up:
                raise TimeoutError("iceoryx2: nothing came for 60 s")
        m = s.payload().as_memory_view().cast("B")
        r = (m[0], m[-1], len(m))
        del m
        s.delete()
        return r

    def close(self):
        self.pub.delete()
        if self.sub is not None:
            self.sub.delete()

    @staticmethod
    def cleanup(shared):
        pass


class HakoNumpy(Hako):
    """hako, written and read through numpy views (``Loan.numpy()``,
    ``Sample.numpy()``): the zero-copy way the docs teach."""

    name = "hako-numpy"

    def send(self, seq, size):
        loan = self.pub.loan(size)
        view = loan.numpy()
        view[0] = view[-1] = seq & 0xFF
        del view
        loan.send()

    def recv(self):
        s = self.sub.receive(None)
        view = s.numpy()
        r = (int(view[0]), int(view[-1]), view.size)
        del view
        s.release()
        return r


class Iceoryx2Numpy(Iceoryx2):
    """iceoryx2, read through a numpy view too (its send writes through
    one already)."""

    name = "iceoryx2-numpy"

    def recv(self):
        spins = 0
        give_up = time.monotonic() + 60
        while True:
            s = self.sub.receive()
            if s is not None:
                break
            spins += 1
            if spins % 65536 == 0 and time.monotonic() > give_up:
                raise TimeoutError("iceoryx2: nothing came for 60 s")
        view = np.frombuffer(s.payload().as_memory_view(), dtype=np.uint8)
        r = (int(view[0]), int(view[-1]), view.size)
        del view
        s.delete()
        return r


class Copying:
    """Shared by the transports that copy: a ring of prepared arrays per
    size (a transport that sends without copying may still read an array
    after `send` returned, so an array is reused only after RING sends)."""

    RING = 8

    def __init__(self):
        self.arrays = {}

    def array(self, seq, size):
        ring = self.arrays.get(size)
        if ring is None:
            ring = self.arrays[size] = [np.zeros(size, dtype=np.uint8) for _ in range(self.RING)]
        a = ring[seq % self.RING]
        self.reuse(seq % self.RING, size)
        a[0] = a[-1] = seq & 0xFF
        return a

    def reuse(self, slot, size):
        """Waits until the array in `slot` may be written again."""

    def send(self, seq, size):
        self.send_array(self.array(seq, size))

    def ready(self):
        return True

    def close(self):
        pass

    @staticmethod
    def cleanup(shared):
        pass


class Pipe(Copying):
    """multiprocessing.Pipe: send_bytes / recv_bytes over a socket pair."""

    name = "mp-pipe"

    @staticmethod
    def setup(ctx, max_size):
        return ctx.Pipe()

    def __init__(self, shared, side):
        super().__init__()
        self.conn = shared[0] if side == "a" else shared[1]

    def send_array(self, array):
        self.conn.send_bytes(array)

    def recv(self):
        if not self.conn.poll(60):
            raise TimeoutError("mp-pipe: nothing came for 60 s")
        b = self.conn.recv_bytes()
        return (b[0], b[-1], len(b))


class Queue(Copying):
    """multiprocessing.Queue: the array pickled through a pipe by a feeder
    thread."""

    name = "mp-queue"

    @staticmethod
    def setup(ctx, max_size):
        return (ctx.Queue(), ctx.Queue())

    def __init__(self, shared, side):
        super().__init__()
        self.out, self.back = shared if side == "a" else shared[::-1]

    def send_array(self, array):
        # put() only hands the array to a feeder thread, which pickles it
        # later: a copy keeps the caller free to change its array.
        self.out.put(array.copy())

    def recv(self):
        a = self.back.get(timeout=60)
        return (int(a[0]), int(a[-1]), len(a))


class Zmq(Copying):
    """pyzmq PAIR sockets over ipc://, sending without a Python-side copy
    (copy=False) and receiving frames."""

    name = "pyzmq"

    @staticmethod
    def setup(ctx, max_size):
        return f"ipc:///tmp/hako-pybench-{os.getpid()}-{time.monotonic_ns()}.ipc"

    def __init__(self, shared, side):
        import zmq

        super().__init__()
        self.trackers = {}
        self.zctx = zmq.Context()
        self.sock = self.zctx.socket(zmq.PAIR)
        self.sock.setsockopt(zmq.SNDHWM, 4)
        self.sock.setsockopt(zmq.RCVHWM, 4)
        self.sock.setsockopt(zmq.RCVTIMEO, 60_000)
        if side == "a":
            self.sock.bind(shared)
        else:
            self.sock.connect(shared)

    def send_array(self, array):
        # Without a copy; zmq reads the array later, from its I/O thread.
        self.trackers[(len(array), id(array))] = self.sock.send(array, copy=False, track=True)

    def reuse(self, slot, size):
        ring = self.arrays[size]
        t = self.trackers.pop((size, id(ring[slot])), None)
        if t is not None:
            t.wait()

    def recv(self):
        f = self.sock.recv(copy=False)
        m = f.buffer
        return (m[0], m[-1], len(m))

    def close(self):
        self.sock.close(linger=0)
        self.zctx.term()

    @staticmethod
    def cleanup(shared):
        try:
            os.unlink(shared[len("ipc://"):])
        except FileNotFoundError:
            pass


ALL = {t.name: t for t in (Hako, HakoNumpy, Iceoryx2, Iceoryx2Numpy, Pipe, Queue, Zmq)}


def available(name):
    """Whether the transport's package is importable here."""
    module = {"iceoryx2": "iceoryx2", "iceoryx2-numpy": "iceoryx2", "pyzmq": "zmq"}.get(name)
    if module is None:
        return True
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def context():
    return multiprocessing.get_context("spawn")
