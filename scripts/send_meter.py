"""Times what per-send attribution costs a provider's write on a loopback connection (docs/performance.md).

Usage: python3 scripts/send_meter.py HARNESS_PYTHON_DIR   (internal/harness/python)
Prints a no-op call's time (on a loaded machine every figure grows with it), the meter's own work per send,
and, in nanoseconds per call, the best of nine batch means of each: ``sendall`` of a 200-byte request on a
plain socket and on a metered one (the same connection before and after metering; each call is a different
call's run, the costliest case, and the same call's, the usual one), and ``transport.write`` on an asyncio
stream, plain and metered. Untagged sockets are never metered, so they pay nothing.
"""

import asyncio
import atexit
import subprocess
import contextvars
import os
import socket
import sys
import threading
import time


SINK = """
import socket, sys, threading
srv = socket.create_server(("127.0.0.1", 0))
print(srv.getsockname()[1], flush=True)
def drain(c):
    while c.recv(1 << 20):
        pass
while True:
    conn, _ = srv.accept()
    threading.Thread(target=drain, args=(conn,), daemon=True).start()
"""


def sink() -> int:
    """A process that reads and drops whatever it is sent (in its own process: no GIL shared with us)."""
    proc = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE)
    atexit.register(proc.kill)
    return int(proc.stdout.readline())


def batches(fn, n=20000, k=9):
    """The best of k batch means of n calls, in ns (the best filters out a loaded machine's preemptions)."""
    out = []
    for _ in range(k):
        t = time.perf_counter_ns()
        for _ in range(n):
            fn()
        out.append((time.perf_counter_ns() - t) / n)
    return min(out)


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    from astrabox._harness import connections, sends
    from astrabox._harness.routing import CURRENT_CALL

    sends.install()
    runs = []
    sends.emit = runs.append
    port = sink()
    data = b"x" * 200
    plain_sock = socket.create_connection(("127.0.0.1", port))
    sock = socket.create_connection(("127.0.0.1", port))
    seq = connections.tag(socket.socket(), ("127.0.0.1", port))[0]
    sends.meter_socket(sock, seq)
    ctxs = []
    for call in (1, 2):
        c = contextvars.copy_context()
        c.run(CURRENT_CALL.set, call)
        ctxs.append(c)
    flip = [0]

    def alternate(s: socket.socket) -> None:
        flip[0] ^= 1
        ctxs[flip[0]].run(s.sendall, data)

    # Interleaved, so that a change of load hits both sides alike.
    best = {"plain": [], "same": [], "plain_ctx": [], "switching": []}
    for _ in range(9):
        best["plain"].append(batches(lambda: plain_sock.sendall(data), k=1))
        best["same"].append(batches(lambda: sock.sendall(data), k=1))
        best["plain_ctx"].append(batches(lambda: alternate(plain_sock), k=1))
        best["switching"].append(batches(lambda: alternate(sock), k=1))
    plain, same, plain_ctx, switching = (min(best[k]) for k in ("plain", "same", "plain_ctx", "switching"))

    async def streams():
        r1, w1 = await asyncio.open_connection("127.0.0.1", port)
        raw = socket.socket()
        raw.setblocking(False)
        seq = connections.tag(raw, ("127.0.0.1", port))[0]
        sends.meter_socket(raw, seq)
        await asyncio.get_running_loop().sock_connect(raw, ("127.0.0.1", port))
        r2, w2 = await asyncio.open_connection(sock=raw)
        res = {w1: [], w2: []}
        for _ in range(9):
            for w in (w1, w2):
                def one(w=w):
                    w.write(data)
                res[w].append(batches(one, n=2000, k=1))
                await w.drain()
        return min(res[w1]), min(res[w2])

    aplain, ametered = asyncio.run(streams())
    noop = batches(lambda: None, n=200000)
    meter = sends._get(sock)
    counted = batches(lambda: meter.count(200), n=200000)
    print("a no-op Python call (the machine's yardstick): %5.0f ns" % noop)
    print("the meter's own work per send, same call (Meter.count): %5.0f ns (%.1f no-op calls)" % (counted, counted / noop))
    print("sendall, plain socket:            %7.0f ns" % plain)
    print("sendall, metered, same call:      %7.0f ns (+%.0f)" % (same, same - plain))
    print("sendall in alternating contexts, plain: %7.0f ns" % plain_ctx)
    print("sendall in alternating contexts, metered (a run per send): %7.0f ns (+%.0f)" % (switching, switching - plain_ctx))
    print("transport.write, plain stream:    %7.0f ns" % aplain)
    print("transport.write, metered stream:  %7.0f ns (+%.0f)" % (ametered, ametered - aplain))


if __name__ == "__main__":
    main()
