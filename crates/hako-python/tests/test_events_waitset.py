"""Events and the waitset."""

import os

import pytest

import hako


def test_events(node):
    svc = node.event("E/Basic")
    notifier = svc.notifier(default_event_id=7)
    listener = svc.listener()
    assert listener.wait() == []
    assert notifier.notify() == 1
    notifier.notify(3)
    notifier.notify(3)
    assert sorted(listener.wait(timeout=1)) == [(3, 2), (7, 1)]
    assert listener.wait(timeout=0.05) == []
    assert listener.has_events() is False


def test_waitset_ports_intervals_deadlines_and_fds(node):
    frames = node.publish_subscribe("W/Frames")
    pub, sub = frames.publisher(), frames.subscriber()
    events = node.event("W/Events")
    notifier, listener = events.notifier(), events.listener()
    ws = hako.WaitSet()
    s = ws.attach(sub)
    l_id = ws.attach(listener)
    r, w = os.pipe()
    f = ws.attach(r)
    d = ws.attach_deadline(s, 0.05)
    assert len(ws) == 4
    assert ws.wait(0.01) == []
    assert ("deadline_missed", d) in ws.wait(1.0)
    pub.send_copy(b"x")
    assert ws.wait(1.0) == [("ready", s)]
    sub.receive()
    notifier.notify()
    assert ws.wait(1.0) == [("ready", l_id)]
    listener.wait()
    os.write(w, b"!")
    assert ("ready", f) in ws.wait(1.0)
    with pytest.raises(RuntimeError, match="waitset"):
        sub.close()
    ws.close()
    sub.close()
    tick = hako.WaitSet()
    t = tick.attach_interval(0.01)
    assert tick.wait(1.0) == [("tick", t)]
    with pytest.raises(ValueError, match="positive"):
        tick.attach_interval(0)
    with pytest.raises(hako.WaitSetError):
        tick.attach_deadline(t, 1.0)
    with pytest.raises(TypeError):
        tick.attach("not a port")
    os.close(r)
    os.close(w)


def test_node_wait(node):
    assert node.wait(0.01) is True
    assert node.name == "pytest" and node.root.startswith("/dev/shm/")


def test_a_waitset_waiting_in_one_thread_refuses_another(node):
    import threading

    listener = node.event("W/Threads").listener()
    ws = hako.WaitSet()
    ws.attach_interval(10.0)
    started = threading.Event()
    result = []

    def waiter():
        started.set()
        result.append(ws.wait(0.5))

    t = threading.Thread(target=waiter)
    t.start()
    started.wait()
    import time

    time.sleep(0.1)
    with pytest.raises(RuntimeError, match="waiting in another thread"):
        ws.attach(listener)
    t.join()
    assert result == [[]]
    ws.attach(listener)
    ws.close()
    listener.close()
