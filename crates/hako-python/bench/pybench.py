"""hako's Python package against other ways Python processes exchange
arrays: iceoryx2's Python package (its zero-copy path), multiprocessing's
Queue and Pipe, and pyzmq over ipc://. Two measurements, each between two
Python processes (the second started with multiprocessing's "spawn"):

* round trip: a message of SIZE bytes there and back (ping-pong), first
  and last byte written by the sender and read by the receiver; the
  median of three batches, each long enough to take about 0.3 s;
* arrays per second, one way: a producer sends arrays of SIZE bytes as
  fast as the transport takes them (backpressure, nothing dropped); the
  consumer touches the first and last byte of each. ``hako-copy`` is
  hako when the user already holds the array: copied into a loan
  (``Publisher.send_copy``, which splits a copy of 4 MiB or more across
  threads). ``memcpy`` is no transport: one thread copying the array
  into another in one process, what a copy costs by itself.

``hako-numpy`` and ``iceoryx2-numpy`` write and read each message through
a numpy view on both sides (round trips only).

Goals, as ratios within this run: the 64 B round trip at most 0.5x
iceoryx2's, with plain buffers and with numpy views on both sides; 16 MiB
arrays per second at least 3x iceoryx2's; and hako-copy at least 5x
pyzmq's at 16 MiB.

    python pybench.py [--quick] [--transports hako,iceoryx2,...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

import transports as tr

KIB, MIB = 1024, 1024 * 1024
RT_SIZES = [64, 4 * KIB, 64 * KIB, MIB, 16 * MIB]
RATE_SIZES = [MIB, 16 * MIB]
STOP = 1  # a message of one byte ends the peer's loop


def wait_ready(end, what):
    deadline = time.monotonic() + 30
    while not end.ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: the peer did not connect")
        time.sleep(0.001)


def echo(name, shared):
    """The far side of the round trip: sends back what it gets."""
    end = tr.ALL[name](shared, "b")
    wait_ready(end, name)
    while True:
        first, _, size = end.recv()
        if size == STOP:
            break
        end.send(first, size)
    end.close()


def produce(name, shared, size, count, copy):
    """The producer of the one-way rate: `count` arrays, then the stop,
    then waits for the consumer's ack."""
    end = tr.ALL[name](shared, "b")
    wait_ready(end, name)
    array = np.zeros(size, dtype=np.uint8)
    for seq in range(count):
        if copy:
            array[0] = array[-1] = seq & 0xFF
            end.send_array(array)
        else:
            end.send(seq, size)
    end.send(0, STOP)
    end.recv()
    end.close()


def round_trips(name, sizes, quick):
    T = tr.ALL[name]
    ctx = tr.context()
    shared = T.setup(ctx, max(sizes))
    try:
        end = T(shared, "a")
        peer = ctx.Process(target=echo, args=(name, shared))
        peer.start()
        wait_ready(end, name)
        out = {}
        for size in sizes:
            def batch(n):
                t = time.perf_counter()
                for seq in range(n):
                    end.send(seq, size)
                    first, last, got = end.recv()
                    if first != seq & 0xFF or last != first or got != size:
                        raise RuntimeError(f"{name}: a wrong echo at {size} B")
                return (time.perf_counter() - t) / n

            batch(20)
            per = batch(10)
            n = int(min(20000, max(5, (0.1 if quick else 0.3) / per)))
            out[size] = statistics.median(batch(n) for _ in range(3)) * 1e6
        end.send(0, STOP)
        peer.join(60)
        end.close()
        return out
    finally:
        T.cleanup(shared)


def rate(name, size, copy, quick):
    T = tr.ALL[name]
    ctx = tr.context()
    shared = T.setup(ctx, size)
    zero_copy = name in ("hako", "iceoryx2") and not copy
    count = 4000 if zero_copy else int(min(4000, max(30, 2 * 1024 * MIB / size)))
    if quick:
        count = max(20, count // 8)
    try:
        end = T(shared, "a")
        peer = ctx.Process(target=produce, args=(name, shared, size, count, copy))
        peer.start()
        wait_ready(end, name)
        got = 0
        first_at = None
        while True:
            first, last, n = end.recv()
            if n == STOP:
                break
            if first_at is None:
                first_at = time.perf_counter()
            if first != last or n != size:
                raise RuntimeError(f"{name}: a wrong array")
            got += 1
        seconds = time.perf_counter() - first_at
        end.send(0, STOP)
        peer.join(60)
        end.close()
        if got != count:
            raise RuntimeError(f"{name}: {got} of {count} arrays arrived")
        return (got - 1) / seconds
    finally:
        T.cleanup(shared)


def memcpy_rate(size, quick):
    """Arrays per second one thread copies into rotating arrays, in one
    process (numpy.copyto): what a copy of the array costs by itself."""
    src = np.ones(size, dtype=np.uint8)
    dst = [np.ones(size, dtype=np.uint8) for _ in range(4)]
    count = max(20, int(min(2000, 2 * 1024 * MIB / size)) // (8 if quick else 1))
    t = time.perf_counter()
    for i in range(count):
        np.copyto(dst[i % 4], src)
    return count / (time.perf_counter() - t)


def size_text(n):
    return f"{n // MIB} MiB" if n >= MIB else f"{n // KIB} KiB" if n >= KIB else f"{n} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs, for a smoke test")
    ap.add_argument("--transports", default=",".join(tr.ALL),
                    help="comma-separated, of: " + ", ".join(tr.ALL))
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    names = [n for n in args.transports.split(",") if n]
    for n in names:
        if n not in tr.ALL:
            sys.exit(f"unknown transport {n!r}; known: {', '.join(tr.ALL)}")
    skipped = [n for n in names if not tr.available(n)]
    names = [n for n in names if n not in skipped]
    for n in skipped:
        print(f"skipped {n}: its Python package is not installed "
              "(scripts/bench-python installs it)")

    results = {"round_trip_us": {}, "arrays_per_s": {}}
    print("\nround trip between two Python processes (µs, median of 3 batches)")
    print(f"{'transport':<15}" + "".join(f"{size_text(s):>12}" for s in RT_SIZES))
    for n in names:
        rt = round_trips(n, RT_SIZES, args.quick)
        results["round_trip_us"][n] = {str(k): v for k, v in rt.items()}
        print(f"{n:<15}" + "".join(f"{rt[s]:>12.1f}" for s in RT_SIZES), flush=True)

    print("\narrays per second, one way (first and last byte touched)")
    print(f"{'transport':<15}" + "".join(f"{size_text(s):>12}" for s in RATE_SIZES))
    one_way = [n for n in names if not n.endswith("-numpy")]
    rows = [(n, False) for n in one_way] + ([("hako", True)] if "hako" in names else [])
    for n, copy in rows:
        label = "hako-copy" if copy else n
        r = {s: rate(n, s, copy, args.quick) for s in RATE_SIZES}
        results["arrays_per_s"][label] = {str(k): v for k, v in r.items()}
        print(f"{label:<15}" + "".join(f"{r[s]:>12.0f}" for s in RATE_SIZES), flush=True)

    floor = {s: memcpy_rate(s, args.quick) for s in RATE_SIZES}
    results["memcpy_per_s"] = {str(k): v for k, v in floor.items()}
    print(f"{'memcpy':<15}" + "".join(f"{floor[s]:>12.0f}" for s in RATE_SIZES)
          + "   (one thread copying the array in one process: the cost of a copy)")

    goals = []
    rt, ps = results["round_trip_us"], results["arrays_per_s"]
    big = str(16 * MIB)
    if "hako" in rt and "iceoryx2" in rt:
        x = rt["hako"]["64"] / rt["iceoryx2"]["64"]
        goals.append(("64 B round trip, hako / iceoryx2", x, "<=", 0.5))
        x = ps["hako"][big] / ps["iceoryx2"][big]
        goals.append(("16 MiB arrays/s, hako / iceoryx2", x, ">=", 3.0))
    if "hako-numpy" in rt and "iceoryx2-numpy" in rt:
        x = rt["hako-numpy"]["64"] / rt["iceoryx2-numpy"]["64"]
        goals.append(("64 B round trip through numpy views, hako / iceoryx2", x, "<=", 0.5))
    if "hako-copy" in ps and "pyzmq" in ps:
        x = ps["hako-copy"][big] / ps["pyzmq"][big]
        goals.append(("16 MiB arrays/s, hako-copy / pyzmq", x, ">=", 5.0))
    print("\ngoals")
    if not goals:
        print("  (the goals need hako, iceoryx2 and pyzmq in the run)")
    for what, x, op, bound in goals:
        met = x <= bound if op == "<=" else x >= bound
        print(f"  {what}: {x:.3g}x (goal {op} {bound}x): {'met' if met else 'NOT met'}")
    results["goals"] = [{"what": w, "ratio": x, "goal": f"{op} {b}",
                         "met": (x <= b if op == "<=" else x >= b)} for w, x, op, b in goals]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
