"""Where a forked harness's start goes, phase by phase, without Go: CPU (from /proc/self/schedstat, in
nanoseconds) and minor page faults of each step ``runner.main`` takes before its hello, in a child forked from
an interpreter prepared as the fork server prepares itself (``zygote.preload``, ``gc.freeze``). The first line
is the bare fork (the child's share of ``os.fork``: the interpreter's at-fork work and the copy-on-write
faults of touching anything), and the last compares it with a fork by libc's ``fork`` (no at-fork work).

    python3 scripts/fork_phases.py internal/harness/python [N]

docs/performance.md records what it printed. Linux only.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys


def cpu_ms() -> float:
    with open("/proc/self/schedstat") as fh:
        return int(fh.read().split()[0]) / 1e6


def faults() -> int:
    with open("/proc/self/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[7])


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    import asyncio

    import astrabox
    from astrabox._harness import egress, runner, zygote
    from astrabox._harness.observe import CURRENT_CALL, Observer

    zygote.preload()
    gc.collect()
    gc.freeze()
    sdk = os.path.dirname(os.path.abspath(astrabox.__file__))
    totals: dict = {}
    for _ in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            marks = [("fork (child's share)", cpu_ms(), faults())]

            def mark(name: str) -> None:
                marks.append((name, cpu_ms(), faults()))

            try:
                runner.apply_limits()
                mark("apply_limits")
                runner.become_host()
                mark("become_host")
                obs = Observer(sdk)
                mark("Observer()")
                obs.install()
                mark("observer.install")
                egress.install(CURRENT_CALL, obs.units.tag)
                mark("egress.install")
                obs.install_trust(egress.declared)
                mark("install_trust")
                loop = asyncio.new_event_loop()
                asyncio.set_event_loop(loop)
                mark("event loop")
            except Exception as exc:  # noqa: BLE001 - a measurement script: say what broke and go on
                mark("error: %r" % exc)
            lines, prev = [], (0.0, 0)
            for name, c, f in marks:
                lines.append("%s|%f|%d" % (name, c - prev[0], f - prev[1]))
                prev = (c, f)
            os.write(w, "\n".join(lines).encode())
            os._exit(0)
        os.close(w)
        data = b""
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        for line in data.decode().split("\n"):
            name, c, f = line.split("|")
            t = totals.setdefault(name, [0.0, 0])
            t[0] += float(c)
            t[1] += int(f)
    for name, (c, f) in totals.items():
        print("%-22s %7.2f ms CPU %7.1f faults" % (name, c / n, f / n))
    libc = ctypes.CDLL(None)
    for how, fork in (("os.fork", os.fork), ("libc fork", libc.fork)):
        c_sum, f_sum = 0.0, 0
        for _ in range(n):
            r, w = os.pipe()
            pid = fork()
            if pid == 0:
                os.write(w, ("%f %d" % (cpu_ms(), faults())).encode())
                os._exit(0)
            os.close(w)
            c, f = os.read(r, 100).decode().split()
            os.close(r)
            os.waitpid(pid, 0)
            c_sum += float(c)
            f_sum += int(f)
        print("bare %-17s %7.2f ms CPU %7.1f faults" % (how + ":", c_sum / n, f_sum / n))


if __name__ == "__main__":
    main()
