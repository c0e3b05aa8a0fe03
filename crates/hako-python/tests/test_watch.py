"""Discovery from Python: a Watcher sees another process join with a
subscriber, die of SIGKILL and be reclaimed; its fileno() works with
select and a WaitSet."""

from __future__ import annotations

import select
import time

import hako


def until(w: hako.Watcher, seen: list, want, what: str, timeout: float = 30.0):
    end = time.monotonic() + timeout
    while not want(seen):
        assert time.monotonic() < end, f"never: {what}; saw {seen}"
        readable, _, _ = select.select([w], [], [], 0.5)
        seen.extend(w.changes(timeout=0))


def test_a_watcher_sees_another_process_join_die_and_be_reclaimed(root, node, spawn):
    w = hako.Watcher(root)
    child = spawn.python(
        """
        import hako, time
        n = hako.Node("watched", root=root)
        s = n.publish_subscribe("watch/me").subscriber()
        print("ready", flush=True)
        time.sleep(600)
        """,
        root,
    )
    assert child.line() == "ready"
    seen: list = []
    until(w, seen, lambda s: any(c["change"] == "port_added" and c["service"] == "watch/me"
                                 and c["role"] == "subscriber" for c in s), "the subscriber")
    created = [c for c in seen if c["change"] == "service_created"]
    assert created and created[0]["service"] == "watch/me"
    assert created[0]["pattern"] == "publish_subscribe"
    joined = [c for c in seen if c["change"] == "node_joined" and c["name"] == "watched"]
    assert joined and joined[0]["pid"] == child.proc.pid and len(joined[0]["node"]) == 16

    child.kill()
    seen.clear()
    until(w, seen, lambda s: any(c["change"] == "node_died" for c in s)
          and any(c["change"] == "port_died" for c in s), "the death")
    node.reclaim_dead_nodes()
    until(w, seen, lambda s: any(c["change"] == "node_reclaimed" for c in s)
          and any(c["change"] == "service_removed" and c["service"] == "watch/me" for c in s),
          "the reclaim")
    # Nothing more happens: a wait times out empty.
    assert w.changes(timeout=0.1) == []


def test_a_watcher_on_a_waitset_and_as_an_iterator(root, node):
    w = hako.Watcher(root)
    ws = hako.WaitSet()
    ws.attach(w)
    events = node.event("watch/bell")
    fired = ws.wait(timeout=5.0)
    assert fired, "the waitset did not wake for the watcher"
    change = next(iter(w))
    assert change == {"change": "service_created", "service": "watch/bell", "pattern": "event"}
    del events
