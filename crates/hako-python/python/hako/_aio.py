"""asyncio waits: a port's wake-up descriptor registered with the running
loop (``loop.add_reader``), around the arm / re-check / sleep / disarm
protocol of hako's ports.

Taking what is there costs no system call; only when nothing is there
does the task arm the port (senders then write a byte to its descriptor
after each send), register the descriptor, and sleep. A sender that dies
cannot write: every ``LIVENESS_TICK`` seconds the task also wakes to ask
whether its peers are alive, as hako's blocking waits do.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

from . import _hako

#: How often a waiting task asks whether its peers are still alive.
LIVENESS_TICK = 0.1


async def _wait(port: Any, take: Callable[[], Any],
                gone: Optional[Callable[[], bool]] = None) -> Any:
    """Awaits ``take()`` returning something other than None. ``gone()``
    is asked after each quiet tick; when it says True the wait ends with
    PeersGoneError."""
    got = take()
    if got is not None:
        return got
    loop = asyncio.get_running_loop()
    fd = port.fileno()
    while True:
        if not port.arm_wakeup():
            woken = loop.create_future()

            def wake(f: asyncio.Future = woken) -> None:
                if not f.done():
                    f.set_result(None)

            loop.add_reader(fd, wake)
            try:
                await asyncio.wait_for(woken, LIVENESS_TICK)
            except asyncio.TimeoutError:
                pass
            finally:
                loop.remove_reader(fd)
        port.disarm_wakeup()
        got = take()
        if got is not None:
            return got
        if gone is not None and gone():
            raise _hako.PeersGoneError("every peer the wait depended on is gone and nothing is queued")


async def receive(port: Any) -> Any:
    """``await subscriber.receive_async()`` / ``await server.receive_async()``."""
    if isinstance(port, _hako.Subscriber) and port.end_when_publishers_gone:
        saw = [port.publisher_count > 0]

        def gone() -> bool:
            if port.publishers_alive():
                saw[0] = True
                return False
            return saw[0] and not port.has_samples()

        return await _wait(port, port.receive, gone)
    # A subscriber made to wait on across publisher restarts, or a server.
    return await _wait(port, port.receive)


async def receive_response(pending: Any) -> Any:
    """``await pending.receive_async()``: the next response, None at the end
    of the stream."""
    client = pending.client
    end = object()

    def take() -> Any:
        r = pending.receive()
        if r is None and pending.is_finished:
            return end
        return r

    def gone() -> bool:
        if not pending.server_there():
            # One last look, which raises PeersGoneError if nothing came.
            pending.receive(0.001)
        return False

    got = await _wait(client, take, gone)
    return None if got is end else got


async def wait_events(listener: Any) -> Any:
    """``await listener.wait_async()``: the events that fired."""
    saw = [True]

    def take() -> Any:
        return listener.wait() or None

    def gone() -> bool:
        if listener.notifiers_alive():
            saw[0] = True
            return False
        return saw[0] and not listener.has_events()

    return await _wait(listener, take, gone)
