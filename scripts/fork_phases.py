"""Where a forked harness's start goes, phase by phase, without Go: CPU (``time.process_time_ns``, in
nanoseconds, opening no file) and minor page faults (``getrusage``, which opens no file and so fires no audit event into the
observer being measured) of each step ``runner.main`` takes before its hello, and of the steps of ``load`` when
a provider is given, in a child forked from an interpreter prepared as the fork server prepares itself
(``zygote.preload``: imports, the prepared observer, the rehearsal; ``gc.freeze``). The first line is the bare
fork (the child's share of ``os.fork``: the interpreter's at-fork work and the copy-on-write faults of touching
anything), the next compare it with a fork by libc's ``fork`` (no at-fork work), and the last three say
what one page fault costs the machine (a first touch, a copy-on-write write in a forked child, and the same
copies made by one ``madvise(MADV_POPULATE_WRITE)``). With ``FORK_PHASES_PREFAULT=text`` (or ``all``) each child
first populates the page tables of its file-backed code mappings (or of every read-only file mapping) with
one ``madvise(MADV_POPULATE_READ)`` each, as a phase of its own: Linux does not copy those entries at a fork.

    python3 scripts/fork_phases.py internal/harness/python [N [PROJECT_DIR MODULE:CLASS]]

docs/performance.md records what it printed. Linux only.
"""

from __future__ import annotations

import ctypes
import gc
import os
import resource
import sys
import time


def cpu_ms() -> float:
    return time.process_time_ns() / 1e6


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    project = os.path.abspath(sys.argv[3]) if len(sys.argv) > 4 else ""
    target = sys.argv[4] if len(sys.argv) > 4 else ""
    os.environ.setdefault("ASTRABOX_HARNESS_COOKIE", "fork-phases")
    import asyncio

    import astrabox
    from astrabox._harness import egress, loader, runner, wire, zygote
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
                prefault = os.environ.get("FORK_PHASES_PREFAULT", "")
                if prefault:
                    populate_file_mappings(prefault == "text")
                    mark("prefault (%s)" % prefault)
                runner.apply_limits()
                mark("apply_limits")
                runner.become_host()
                mark("become_host")
                obs = getattr(Observer, "for_process", Observer)(sdk)  # a tree before the prepared observer: a new one
                mark("Observer.for_process")
                obs.install()
                mark("observer.install")
                egress.install(CURRENT_CALL, obs.units.tag)
                mark("egress.install")
                obs.install_trust(egress.declared)
                mark("install_trust")
                loop = asyncio.new_event_loop()
                asyncio.set_event_loop(loop)
                mark("event loop")
                with obs.quiet():
                    runner.Runner("fork-phases", wire.Writer(-1), obs)
                mark("Runner()")
                if project:
                    loaded = loader.load({"target": target, "paths": [project]}, obs)
                    mark("load")
                    wire.encode_frame({"kind": "reply", "id": 1, "ok": True,
                                       "value": runner.safe_encode_value(loaded.value, "load")})
                    mark("the load's reply")
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
    fault_cost(libc)


#: MADV_POPULATE_READ (Linux 5.14+): fault a range in readable, in one system call.
MADV_POPULATE_READ = 22


def populate_file_mappings(code_only: bool) -> None:
    """Populate the page tables of this process's read-only file mappings (only the executable ones when
    code_only), one madvise each."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with open("/proc/self/maps") as fh:
        maps = fh.read().splitlines()
    for line in maps:
        parts = line.split()
        if len(parts) < 6 or not parts[5].startswith("/") or "w" in parts[1]:
            continue
        if code_only and "x" not in parts[1]:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        libc.madvise(lo, hi - lo, MADV_POPULATE_READ)


#: MADV_POPULATE_WRITE (Linux 5.14+): fault a range in writable, copy-on-write included, in one system call.
MADV_POPULATE_WRITE = 23


def fault_cost(libc: ctypes.CDLL, pages: int = 5000) -> None:
    """What one page fault costs this machine: a first touch of fresh memory, a copy-on-write write in a
    forked child, and the same copies made by one ``madvise(MADV_POPULATE_WRITE)`` instead of a fault each.
    A forked replica's CPU is mostly its page faults (docs/performance.md), so this is its unit."""
    import mmap

    size = pages * 4096
    region = mmap.mmap(-1, size)
    c0, f0 = cpu_ms(), faults()
    for i in range(pages):
        region[i * 4096] = 1
    c1, f1 = cpu_ms(), faults()
    print("first touch            %7.2f us CPU a fault (%d faults)" % ((c1 - c0) * 1000 / max(f1 - f0, 1), f1 - f0))
    addr = ctypes.addressof((ctypes.c_char * size).from_buffer(region))
    for how in ("copy-on-write", "populate-write"):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            c0, f0 = cpu_ms(), faults()
            if how == "populate-write" and libc.madvise(ctypes.c_void_p(addr), ctypes.c_size_t(size),
                                                        MADV_POPULATE_WRITE) != 0:
                os.write(w, b"unsupported")
                os._exit(0)
            for i in range(pages):
                region[i * 4096] = 2
            os.write(w, ("%f %d" % ((cpu_ms() - c0) * 1000 / pages, faults() - f0)).encode())
            os._exit(0)
        os.close(w)
        got = os.read(r, 100).decode().split()
        os.close(r)
        os.waitpid(pid, 0)
        if len(got) == 2:
            print("%-22s %7.2f us CPU a page (%s faults)" % (how, float(got[0]), got[1]))
        else:
            print("%-22s not supported here" % how)


if __name__ == "__main__":
    main()
