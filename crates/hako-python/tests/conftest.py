"""Shared fixtures of the Python package's tests: a fresh domain root per
test, the Rust peer, and Python child processes."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import hako

REPO = Path(__file__).resolve().parents[3]
PEER = Path(os.environ.get("HAKO_PY_PEER", REPO / "target/release/examples/py_peer"))


class Mixed(ctypes.Structure):
    """`Mixed` of examples/py_peer.rs: fields of every size, padding between."""

    _hako_type_name_ = "hako_tests::Mixed"
    _fields_ = [
        ("a", ctypes.c_uint8),
        ("b", ctypes.c_uint16),
        ("c", ctypes.c_uint32),
        ("d", ctypes.c_uint64),
        ("e", ctypes.c_float),
        ("f", ctypes.c_double),
    ]


def mixed_of(seq: int) -> Mixed:
    """`mixed_of` of examples/py_peer.rs."""
    return Mixed(
        a=(seq * 7) & 0xFF,
        b=(seq * 31) & 0xFFFF,
        c=(seq * 1_000_003) & 0xFFFF_FFFF,
        d=(seq * 0x9E37_79B9_7F4A_7C15) & 0xFFFF_FFFF_FFFF_FFFF,
        e=seq * 0.5,
        f=seq * 0.25,
    )


def same(x: Mixed, y: Mixed) -> bool:
    return all(getattr(x, f) == getattr(y, f) for f, _ in Mixed._fields_)


@pytest.fixture
def root():
    """A fresh domain root in /dev/shm, removed after the test."""
    d = tempfile.mkdtemp(prefix="hako-pytest.", dir="/dev/shm")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def node(root):
    n = hako.Node("pytest", root=root)
    yield n


class Child:
    """A process started by a test, killed if still running at the end."""

    def __init__(self, args, env=None):
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)

    def line(self) -> str:
        """The next line of its output (the child flushes each)."""
        return self.proc.stdout.readline().strip()

    def finish(self, timeout: float = 60) -> str:
        out, err = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, f"exit {self.proc.returncode}: {out}\n{err}"
        return out

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


@pytest.fixture
def spawn():
    """spawn.peer(mode, root, count) runs the Rust peer; spawn.python(code,
    root) runs Python code (with `root` defined) in a child interpreter."""
    children = []

    class Spawn:
        @staticmethod
        def peer(mode: str, root: str, count: int) -> Child:
            if not PEER.exists():
                pytest.fail(f"{PEER} is missing: build it with "
                            "cargo build --release -p hako-python --example py_peer")
            c = Child([str(PEER), mode, root, str(count)])
            children.append(c)
            return c

        @staticmethod
        def python(code: str, root: str) -> Child:
            prelude = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\nroot = {root!r}\n"
            c = Child([sys.executable, "-u", "-c", prelude + textwrap.dedent(code)])
            children.append(c)
            return c

    yield Spawn
    for c in children:
        c.kill()
