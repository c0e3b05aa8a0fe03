"""Between Python processes: crashes, Ctrl-C, and asyncio."""

import asyncio
import gc
import signal
import time

import numpy as np
import pytest

import hako


def test_python_to_python_numpy_frames(node, root, spawn):
    svc = node.publish_subscribe("P/Frames", overflow="backpressure")
    sub = svc.subscriber()
    child = spawn.python("""
        import hako, numpy as np, time
        node = hako.Node("camera", root=root)
        pub = node.publish_subscribe("P/Frames", overflow="backpressure").publisher(
            max_slice_len=120 * 160 * 3)
        while pub.subscriber_count == 0:
            time.sleep(0.001)
        for i in range(50):
            loan = pub.loan_array((120, 160, 3), np.uint8)
            frame = loan.numpy()
            frame[:] = i
            del frame
            loan.send()
        print("DONE", flush=True)
        while pub.subscriber_count:
            time.sleep(0.001)
    """, root)
    for i in range(50):
        s = sub.receive(timeout=20)
        frame = s.numpy(np.uint8, (120, 160, 3))
        assert frame[0, 0, 0] == i and frame[-1, -1, -1] == i
    del s, frame
    sub.close()
    child.finish()


def test_a_killed_python_subscribers_chunks_are_reclaimed(node, root, spawn):
    svc = node.publish_subscribe("P/Crash", max_borrowed=4, buffer_size=4)
    pub = svc.publisher(max_slice_len=1024)
    child = spawn.python("""
        import hako, time
        node = hako.Node("victim", root=root)
        sub = node.publish_subscribe("P/Crash", buffer_size=4).subscriber()
        print("READY", flush=True)
        held = [sub.receive(timeout=20) for _ in range(4)]
        assert all(held)
        views = [s.numpy() for s in held]
        print("HOLDING", flush=True)
        time.sleep(600)
    """, root)
    assert child.line() == "READY"
    while pub.subscriber_count == 0:
        pub.update_connections()
        time.sleep(0.001)
    for i in range(4):
        pub.send_copy(bytes([i]) * 1024)
    assert child.line() == "HOLDING", child.proc.stderr.read() if child.proc.poll() else ""
    assert pub.free_chunks < pub.pool_size
    child.proc.send_signal(signal.SIGKILL)
    child.proc.wait()
    reclaimed = node.reclaim_dead_nodes()
    assert reclaimed["dead_nodes"] == 1 and reclaimed["ports"] >= 1
    pub.update_connections()
    assert pub.subscriber_count == 0
    assert pub.free_chunks == pub.pool_size


def test_a_killed_server_ends_the_stream_with_an_error(node, root, spawn):
    svc = node.request_response("P/Server", bytes, bytes)
    client = svc.client(max_slice_len=8)
    child = spawn.python("""
        import hako, time
        node = hako.Node("server", root=root)
        server = node.request_response("P/Server", bytes, bytes).server(max_slice_len=8)
        print("READY", flush=True)
        r = server.receive(timeout=20)
        r.respond(b"first")
        print("ANSWERED", flush=True)
        time.sleep(600)
    """, root)
    assert child.line() == "READY"
    pending = client.send_copy(b"hi")
    assert child.line() == "ANSWERED"
    assert bytes(pending.receive(timeout=20)) == b"first"
    child.proc.kill()
    child.proc.wait()
    with pytest.raises(hako.PeersGoneError):
        pending.receive(timeout=None)


def test_ctrl_c_interrupts_a_blocking_receive(node, root, spawn):
    node.publish_subscribe("P/Quiet")
    child = spawn.python("""
        import hako
        node = hako.Node("sleeper", root=root)
        sub = node.publish_subscribe("P/Quiet").subscriber()
        print("WAITING", flush=True)
        try:
            sub.receive(timeout=None)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
    """, root)
    assert child.line() == "WAITING"
    time.sleep(0.2)
    child.proc.send_signal(signal.SIGINT)
    assert child.line() == "INTERRUPTED"
    child.finish()


def test_a_publisher_that_dies_ends_a_blocking_receive(node, root, spawn):
    svc = node.publish_subscribe("P/Dies")
    sub = svc.subscriber(end_when_publishers_gone=True)
    child = spawn.python("""
        import hako, time
        node = hako.Node("doomed", root=root)
        pub = node.publish_subscribe("P/Dies").publisher()
        print("READY", flush=True)
        time.sleep(600)
    """, root)
    assert child.line() == "READY"
    while sub.publisher_count == 0:
        time.sleep(0.001)
    child.proc.kill()
    child.proc.wait()
    with pytest.raises(hako.PeersGoneError):
        sub.receive(timeout=None)


def test_a_blocking_receive_outlives_a_publisher_restart(node, root, spawn):
    sub = node.publish_subscribe("P/Restart").subscriber()
    assert not sub.end_when_publishers_gone
    code = """
        import hako, time
        time.sleep(DELAY)
        node = hako.Node("restarting", root=root)
        pub = node.publish_subscribe("P/Restart").publisher(max_slice_len=16)
        while pub.subscriber_count == 0:
            time.sleep(0.001)
        pub.send_copy(MESSAGE)
        print("SENT", flush=True)
        time.sleep(600)
    """
    first = spawn.python(code.replace("DELAY", "0").replace("MESSAGE", "b'one'"), root)
    assert first.line() == "SENT"
    assert bytes(sub.receive(timeout=None)) == b"one"
    first.proc.kill()
    first.proc.wait()
    # The second publisher starts 0.3 s into the wait: several of its
    # liveness checks find no publisher, and the wait goes on.
    second = spawn.python(code.replace("DELAY", "0.3").replace("MESSAGE", "b'two'"), root)
    assert bytes(sub.receive(timeout=None)) == b"two"
    assert second.line() == "SENT"
    assert sub.take_publisher_changes() == (2, 1)
    second.proc.kill()
    second.proc.wait()


def test_asyncio_subscriber_leaves_the_loop_free(node, root, spawn):
    svc = node.publish_subscribe("P/Async", overflow="backpressure")
    sub = svc.subscriber()
    child = spawn.python("""
        import hako, time
        node = hako.Node("async-source", root=root)
        pub = node.publish_subscribe("P/Async", overflow="backpressure").publisher(
            max_slice_len=8)
        while pub.subscriber_count == 0:
            time.sleep(0.001)
        for i in range(20):
            time.sleep(0.01)
            pub.send_copy(i.to_bytes(8, "little"))
        while pub.subscriber_count:
            time.sleep(0.001)
    """, root)

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        t = asyncio.create_task(ticker())
        got = []
        for _ in range(20):
            s = await sub.receive_async()
            got.append(int.from_bytes(bytes(s), "little"))
        t.cancel()
        return got, ticks

    got, ticks = asyncio.run(main())
    assert got == list(range(20))
    assert ticks > 20  # the loop ran its other task while waiting
    gc.collect()
    sub.close()
    child.finish()


def test_asyncio_requests_responses_and_events(node):
    rr = node.request_response("P/AsyncRR", bytes, bytes)
    server = rr.server(max_slice_len=16)
    client = rr.client(max_slice_len=16)
    ev = node.event("P/AsyncEv")
    notifier, listener = ev.notifier(), ev.listener()

    async def serve():
        r = await server.receive_async()
        await asyncio.sleep(0.01)
        r.respond(b"one")
        await asyncio.sleep(0.01)
        r.respond(b"two")
        r.finish()
        notifier.notify(5)

    async def ask():
        pending = client.send_copy(b"q")
        got = []
        while (r := await pending.receive_async()) is not None:
            got.append(bytes(r))
        return got, await listener.wait_async()

    async def main():
        s = asyncio.create_task(serve())
        result = await ask()
        await s
        return result

    assert asyncio.run(main()) == ([b"one", b"two"], [(5, 1)])


def test_asyncio_publisher_gone(node, root, spawn):
    sub = node.publish_subscribe("P/AsyncGone").subscriber(end_when_publishers_gone=True)
    child = spawn.python("""
        import hako, time
        node = hako.Node("doomed", root=root)
        pub = node.publish_subscribe("P/AsyncGone").publisher()
        print("READY", flush=True)
        time.sleep(600)
    """, root)
    assert child.line() == "READY"
    while sub.publisher_count == 0:
        time.sleep(0.001)

    async def main():
        waiter = asyncio.create_task(sub.receive_async())
        await asyncio.sleep(0.05)
        child.proc.kill()
        with pytest.raises(hako.PeersGoneError):
            await waiter

    asyncio.run(main())
    gc.collect()
