"""An asyncio subscriber: awaits samples on the event loop next to other
tasks (here a heartbeat), with no thread and no busy loop.

    python asyncio_subscriber.py [SAMPLES]

It starts a publisher thread of its own, so it runs alone; any other
process that publishes 8-byte slices on the service "Examples/Ticks"
(another Python program, or `hako pub --hex Examples/Ticks ...`) is
awaited the same way.
"""

import asyncio
import sys
import threading
import time

import hako

SERVICE = "Examples/Ticks"


def publish(node: "hako.Node", count: int) -> None:
    publisher = node.publish_subscribe(SERVICE).publisher(max_slice_len=8)
    while publisher.subscriber_count == 0:
        time.sleep(0.001)
    for i in range(count):
        time.sleep(0.005)
        publisher.send_copy(i.to_bytes(8, "little"))


async def main(count: int) -> None:
    node = hako.Node("asyncio-example")
    subscriber = node.publish_subscribe(SERVICE).subscriber()
    threading.Thread(target=publish, args=(node, count), daemon=True).start()
    beats = 0

    async def heartbeat():
        nonlocal beats
        while True:
            await asyncio.sleep(0.01)
            beats += 1

    beat = asyncio.create_task(heartbeat())
    for _ in range(count):
        sample = await subscriber.receive_async()   # the loop runs meanwhile
        value = int.from_bytes(bytes(sample), "little")
    beat.cancel()
    print(f"received {count} samples (last {value}); the heartbeat ran {beats} times meanwhile")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
