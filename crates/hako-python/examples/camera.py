"""A camera-like frame stream between two processes, zero-copy with numpy.

    python camera.py publish [FRAMES]     # writes 480x640 RGB frames
    python camera.py subscribe [FRAMES]   # reads them, checks and counts

Start either first. The publisher writes each frame straight into shared
memory (``loan_array`` + ``numpy()``); the subscriber reads it in place
(``Sample.numpy``): no frame is ever copied or pickled. The publisher ends
when it has sent its frames (those still queued stay readable); the
subscriber ends when it has its frames, or when the camera went away.
"""

import sys
import time

import numpy as np

import hako

SHAPE = (480, 640, 3)
SERVICE = "Examples/Camera"


def publish(frames: int) -> None:
    node = hako.Node("camera")
    # Backpressure: a slow viewer slows the camera down instead of losing
    # frames (drop_oldest, the default, would keep only the newest).
    stream = node.publish_subscribe(SERVICE, overflow="backpressure", buffer_size=4)
    publisher = stream.publisher(max_slice_len=int(np.prod(SHAPE)))
    print("waiting for a subscriber...", flush=True)
    while publisher.subscriber_count == 0:
        time.sleep(0.01)
    for i in range(frames):
        loan = publisher.loan_array(SHAPE, np.uint8)
        frame = loan.numpy()        # a writable view of the shared chunk
        frame[:] = i % 256          # "capture" straight into shared memory
        frame[0, 0] = (i >> 8) & 0xFF, i & 0xFF, 0
        del frame                   # views go before the send
        loan.send()
    # Leaving is fine: frames still queued stay readable, and the
    # subscriber learns that the camera went away once it has read them.
    print(f"published {frames} frames", flush=True)


def subscribe(frames: int) -> None:
    node = hako.Node("viewer")
    stream = node.publish_subscribe(SERVICE, overflow="backpressure", buffer_size=4)
    # The camera is started once for this run: if it goes, stop.
    subscriber = stream.subscriber(end_when_publishers_gone=True)
    started = None
    received = 0
    for i in range(frames):
        try:
            sample = subscriber.receive(timeout=30)
        except hako.PeersGoneError:
            print(f"the camera went away after {received} frames", flush=True)
            break
        if sample is None:
            sys.exit("no frame for 30 s: is `camera.py publish` running?")
        received += 1
        started = started or time.perf_counter()
        frame = sample.numpy(np.uint8, SHAPE)   # read-only, zero-copy
        number = int(frame[0, 0, 0]) << 8 | int(frame[0, 0, 1])
        if number != i or frame[-1, -1, -1] != i % 256:
            sys.exit(f"frame {i} is wrong")
        del frame, sample                       # the chunk goes back
    seconds = time.perf_counter() - (started or time.perf_counter())
    print(f"received {received} frames of {np.prod(SHAPE)} bytes"
          f" ({received / max(seconds, 1e-9):.0f} frames/s)", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    if mode == "publish":
        publish(count)
    elif mode == "subscribe":
        subscribe(count)
    else:
        sys.exit(__doc__)
