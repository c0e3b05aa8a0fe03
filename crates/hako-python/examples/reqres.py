"""A request/response pair: a server that answers each request with a
stream of responses, and a client that asks.

    python reqres.py serve [REQUESTS]
    python reqres.py ask [REQUESTS]

The request is a numpy array of float64 (any length up to 1024); the server
answers with three responses: the array's sum, its mean and its maximum.
"""

import sys

import numpy as np

import hako

SERVICE = "Examples/Stats"


def service(node):
    return node.request_response(SERVICE, np.float64, np.float64,
                                 request_slice=True, response_slice=False)


def serve(requests: int) -> None:
    node = hako.Node("stats-server")
    server = service(node).server()
    print("serving", flush=True)
    for _ in range(requests):
        # Waits; Ctrl-C raises KeyboardInterrupt here.
        with server.blocking_receive() as request:   # leaving it ends the stream
            values = request.numpy()                 # the client's memory, read in place
            for answer in (values.sum(), values.mean(), values.max()):
                request.respond(np.float64(answer))
            del values
    print(f"served {requests} requests", flush=True)


def ask(requests: int) -> None:
    node = hako.Node("stats-client")
    client = service(node).client(max_slice_len=1024)
    import time

    while client.server_count == 0:
        time.sleep(0.01)
    rng = np.random.default_rng(1)
    for _ in range(requests):
        data = rng.random(int(rng.integers(1, 1024)))
        loan = client.loan_array(data.shape, np.float64)
        view = loan.numpy()
        view[:] = data              # written once, straight into shared memory
        del view
        pending = loan.send()
        total, mean, top = (float(r.numpy()[0]) for r in pending)
        assert np.isclose(total, data.sum()) and np.isclose(mean, data.mean())
        assert top == data.max()
    print(f"asked {requests} requests, every answer right", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    if mode == "serve":
        serve(count)
    elif mode == "ask":
        ask(count)
    else:
        sys.exit(__doc__)
