"""What the asyncio loop turn around each request costs: two echo children over the same pipes, one reading its
requests with blocking ``os.read``, one with ``loop.add_reader`` as the harness does, driven in turns.

Usage: python3 scripts/loop_turn.py [CALLS] [ROUNDS]
Prints, per child and round, the child's CPU per call (its /proc/<pid>/schedstat) and the median round trip
(docs/performance.md, "Hand-written codec on the kit's side").
"""

import json
import os
import statistics
import struct
import subprocess
import sys
import time

BLOCKING = r'''
import os, struct, json
def read(n):
    b = b""
    while len(b) < n:
        c = os.read(3, n - len(b))
        if not c: os._exit(0)
        b += c
    return b
while True:
    (n,) = struct.unpack(">I", read(4))
    msg = json.loads(read(n))
    body = json.dumps({"kind": "reply", "id": msg["id"], "ok": True}).encode()
    os.write(4, struct.pack(">I", len(body)) + body)
'''

LOOP = r'''
import os, struct, json, asyncio
buf = bytearray(65536)
def on_readable():
    n = os.readv(3, [buf])
    if not n: os._exit(0)
    (l,) = struct.unpack_from(">I", buf, 0)
    msg = json.loads(bytes(buf[4:4 + l]))
    body = json.dumps({"kind": "reply", "id": msg["id"], "ok": True}).encode()
    os.write(4, struct.pack(">I", len(body)) + body)
loop = asyncio.new_event_loop()
os.set_blocking(3, False)
loop.add_reader(3, on_readable)
loop.run_forever()
'''


def cpu_ns(pid: int) -> int:
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0])


def run(code: str, calls: int):
    """CPU per call of the child (µs) and the median round trip (µs)."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()

    def fds() -> None:
        os.dup2(req_r, 3)
        os.dup2(rep_w, 4)

    child = subprocess.Popen([sys.executable, "-c", code], pass_fds=(3, 4, req_r, rep_w), preexec_fn=fds)
    os.close(req_r)
    os.close(rep_w)
    body = json.dumps({"kind": "call", "id": 1, "method": "plan", "args": {"config": {"a": "b" * 400}}}).encode()
    frame = struct.pack(">I", len(body)) + body

    def one() -> None:
        os.write(req_w, frame)
        (n,) = struct.unpack(">I", os.read(rep_r, 4))
        os.read(rep_r, n)

    for _ in range(500):
        one()
    start, times = cpu_ns(child.pid), []
    for _ in range(calls):
        t = time.perf_counter_ns()
        one()
        times.append(time.perf_counter_ns() - t)
    used = cpu_ns(child.pid) - start
    os.close(req_w)
    child.wait()
    os.close(rep_r)
    return used / calls / 1000, statistics.median(times) / 1000


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print("load %.1f %.1f %.1f" % os.getloadavg())
    for _ in range(rounds):
        for name, code in (("blocking read", BLOCKING), ("asyncio loop", LOOP)):
            c, w = run(code, calls)
            print("%-13s child CPU %.1f µs/call, round trip %.1f µs" % (name, c, w))


if __name__ == "__main__":
    main()
