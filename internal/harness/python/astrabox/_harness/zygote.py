"""The fork server: an interpreter that has imported the harness and forks ready harness processes on request.

Starting a replica the ordinary way costs an interpreter start, ``site`` and the harness's imports (well over
a hundred milliseconds of CPU); a fork of this process costs a few. Go talks to it over a Unix
``SOCK_SEQPACKET`` socket on descriptor 3:

- Go sends ``{"kind": "spawn", "env": {...}, "dir": "..."}`` with four descriptors attached (``SCM_RIGHTS``):
  the request pipe's read end, the reply pipe's write end, and the write ends of the stdout and stderr pipes.
- The server forks the harness itself (``_child``): it leads its own session (no controlling terminal), is a
  child subreaper, dies with the server, refuses every signal to the server (``_guard``), puts the four
  descriptors at 3, 4, 1 and 2 (``/dev/null`` at 0), closes everything else, takes ``env`` as its whole
  environment and ``dir`` as its working directory, and runs the harness exactly as a freshly started one would
  (``runner.main``): the hello, the limits, the observer and the provider load all happen in it.
- The server answers ``{"kind": "spawned", "pid": H}`` (or ``{"kind": "error", "message": ...}``), and when
  it reaps the harness ``{"kind": "exit", "pid": H, "status": W}`` with the raw wait status (only the parent
  can reap a child, and Go needs the status to say how a replica died). Then it kills every child of its own
  that is not a live harness, and all below (the harness's descendants, wherever they went, were re-parented
  to the harness and, once it ended, to the server), and says ``{"kind": "gone", "pid": H, "drained": D}``:
  ``drained`` true means the server has no child left but live harnesses, so that nothing of the replica is
  left anywhere and Go needs no pass over /proc (see ``_drain``).

The server never imports a provider, never starts a thread and installs no audit hook, so a fork copies nothing
but the interpreter, the harness's modules and what ``preload`` prepared for every harness alike: the
observer's class and function wrappers, quiet in the server (``prepare_observer``), the start's and load's
code and the standard library's after-fork hooks, warm from rehearsals (``rehearse``, ``rehearse_after_fork``),
and where the token's placeholder lies in the environment block (``prepare_stamp``). End of input (Go went away), a failed send and SIGTERM (the parent-death
signal Go gives it: the kit died) end the server after it has killed every replica's tree (``_end_all``).

Ten times a second the server looks at the kit: a kit stopped by a signal it did not give itself (a provider's
``SIGSTOP``; see ``stopped_by_someone_else``) is continued and Go is told ``{"kind": "kit-stopped"}``.
"""

from __future__ import annotations

import _signal
import fcntl
import json
import os
import select
import signal
import socket
import sys
from typing import Any, Dict, List, Set

MAX_MESSAGE = 1 << 20


def _tell(sock: socket.socket, msg: Dict[str, Any]) -> bool:
    """Send one message to Go; False when Go is gone."""
    try:
        sock.send(json.dumps(msg, separators=(",", ":")).encode("utf-8"))
        return True
    except OSError:
        return False


def _send(sock: socket.socket, msg: Dict[str, Any]) -> None:
    """Send one message to Go from the fork server, which ends when Go is gone, and takes every replica's tree
    along (see _end_all)."""
    if not _tell(sock, msg):
        _end_all()


#: The pids of the harnesses the server forked and has not reaped yet: its only legitimate children. Any
#: other child is a stray: a descendant of a harness that ended, re-parented here (the server is a subreaper).
HARNESSES: Set[int] = set()

#: Set when a drain gave up (a stray kept coming back past its bound): the next round tries again.
_PENDING = [False]

#: How long one drain may take before the server reports the tree not gone and leaves the rest to Go's sweep.
DRAIN_BOUND = 2.0


def _reap(sock: socket.socket) -> None:
    """Reap every child that ended. A harness's exit is reported with its raw wait status at once; then every
    stray is killed (_drain) and each ended harness is reported ``gone``, with ``drained`` true when the
    server has no child left but live harnesses: nothing of an ended replica is then left anywhere (see
    _drain)."""
    ended: List[int] = []
    _collect(sock, ended)
    if not ended and not _PENDING[0]:
        return
    drained = _drain(sock, ended)
    _PENDING[0] = not drained
    for pid in ended:
        _send(sock, {"kind": "gone", "pid": pid, "drained": drained})


def _collect(sock: socket.socket, ended: List[int]) -> None:
    """Reap what has ended without waiting; report each harness's exit and note it in ``ended``."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return
        if pid in HARNESSES:
            HARNESSES.discard(pid)
            ended.append(pid)
            _send(sock, {"kind": "exit", "pid": pid, "status": status})


def _children(pid: int) -> List[int]:
    """The children of ``pid`` from the kernel's per-thread children files; a pass over /proc without them."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return []
    out: List[int] = []
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid), "rb") as fh:
                out.extend(int(c) for c in fh.read().split())
        except FileNotFoundError:
            if pid == os.getpid():  # no children files in this kernel
                return _children_of().get(pid, [])
        except (OSError, ValueError):
            pass
    return out


def _kill_tree(root: int) -> None:
    """SIGKILL everything below ``root``, then ``root``."""
    seen: List[int] = []
    stack = [root]
    while stack:
        for c in _children(stack.pop()):
            if c not in seen:
                seen.append(c)
                stack.append(c)
    for pid in seen + [root]:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _drain(sock: socket.socket, ended: List[int]) -> bool:
    """Kill every child of the server that is not a live harness, and everything below it, until none is left;
    at most DRAIN_BOUND. True when none is left.

    Every harness is a child subreaper: while it lives, whatever it started stays below it, however it left
    its group, session or environment. When it ends, its children are re-parented to the server (the nearest
    subreaper above) before it can be reaped, and a process killed below them re-parents its own children
    here in turn. So a server whose only children are live harnesses has no descendant of an ended harness
    left anywhere, and the strays of one replica are never those of another (a live harness keeps its own).
    Harnesses that end meanwhile are reported and added to ``ended``.
    """
    import time

    me = os.getpid()
    deadline = time.monotonic() + DRAIN_BOUND
    while True:
        strays = [pid for pid in _children(me) if pid not in HARNESSES]
        if not strays:
            return True
        if time.monotonic() > deadline:
            return False
        for pid in strays:
            _kill_tree(pid)
        time.sleep(0.001)
        _collect(sock, ended)


def _end_all() -> None:
    """End every replica of this server and the server itself: Go is gone (end of input, a failed send, or the
    kit's death, which sends the server SIGTERM). Each harness's tree is killed below it, then whatever was
    re-parented here, until the server has no child (at most DRAIN_BOUND)."""
    import time

    me = os.getpid()
    deadline = time.monotonic() + DRAIN_BOUND
    while time.monotonic() < deadline:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        for pid in _children(me):
            _kill_tree(pid)
        time.sleep(0.001)
    os._exit(0)


TOKEN_VAR = "ASTRABOX_REPLICA_TOKEN"


def stamp_token(token: str) -> bool:
    """Write this replica's token over the placeholder in the process's original environment block.

    Go finds every descendant of a replica, even one that left its process group, by the token in
    ``/proc/<pid>/environ``. That file shows the environment a process was *executed* with, which for a forked
    replica is the server's. The server is started with a placeholder of the token's length; the child
    overwrites it in its own memory, and every process it forks from then on inherits the stamped block
    (processes it executes get ``os.environ``, which holds the token anyway). Linux only; False if the
    placeholder is not found.
    """
    if _STAMP:  # found by the fork server (prepare_stamp): the same address in every child it forks
        return _stamp_at(_STAMP[0], _STAMP[1], token)
    try:
        import ctypes

        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        # Fields 50 and 51 of stat (env_start, env_end); the split starts at field 3.
        env_start = int(fields[50 - 3])
        with open("/proc/self/environ", "rb") as fh:
            block = fh.read()
        needle = (TOKEN_VAR + "=").encode()
        at = block.find(b"\0" + needle)
        at = at + 1 if at >= 0 else (0 if block.startswith(needle) else -1)
        value = token.encode()
        end = block.find(b"\0", at)
        if at < 0 or not value or end - (at + len(needle)) != len(value):
            return False
        ctypes.memmove(env_start + at + len(needle), value, len(value))
        with open("/proc/self/environ", "rb") as fh:
            return value in fh.read()
    except (OSError, ValueError, IndexError, ImportError):
        return False


#: Where the token's placeholder value lies in this process's original environment block, and its length:
#: found once by the fork server (``prepare_stamp``), so that each harness it forks stamps its token with one
#: copy into memory instead of reading ``/proc/self/stat`` and ``/proc/self/environ`` again.
_STAMP: List[int] = []


def prepare_stamp() -> None:
    """In the fork server, before its first fork: find the placeholder's address once for every child (a
    forked child has the server's address space, so the block is at the same address in each)."""
    try:
        import ctypes

        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        env_start = int(fields[50 - 3])
        with open("/proc/self/environ", "rb") as fh:
            block = fh.read()
        needle = (TOKEN_VAR + "=").encode()
        at = block.find(b"\0" + needle)
        at = at + 1 if at >= 0 else (0 if block.startswith(needle) else -1)
        end = block.find(b"\0", at)
        if at < 0 or end < 0:
            return
        addr, size = env_start + at + len(needle), end - (at + len(needle))
        # What lies there is the placeholder as /proc/self/environ shows it, or the address is not used.
        if size > 0 and ctypes.string_at(addr, size) == block[at + len(needle):end]:
            _STAMP[:] = [addr, size]
    except (OSError, ValueError, IndexError, ImportError):
        pass


def _stamp_at(addr: int, size: int, token: str) -> bool:
    """Write ``token`` over the placeholder of ``size`` bytes at ``addr`` (see prepare_stamp); False when
    their lengths differ."""
    value = token.encode()
    if not value or len(value) != size:
        return False
    try:
        import ctypes

        ctypes.memmove(addr, value, size)
        return ctypes.string_at(addr, size) == value
    except (ImportError, ValueError, TypeError):
        return False


PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2

#: The C library, opened once in the server (each ``CDLL(None)`` is a ``dlopen``), shared by every fork.
_LIBC: List[Any] = []


def _libc() -> Any:
    if not _LIBC:
        import ctypes

        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _prctl(option: int, value: int, arg3: Any = 0) -> bool:
    """prctl(option, value, arg3) through ctypes; False where it is not available (not Linux, no ctypes)."""
    try:
        import ctypes

        return _libc().prctl(option, ctypes.c_ulong(value), arg3, 0, 0) == 0
    except (OSError, AttributeError, ImportError, TypeError):
        return False


def _die_with(parent: int, sig: int) -> None:
    """Have ``sig`` sent to this process when ``parent`` dies: the parent-death signal, else a watchdog thread
    that polls the parent pid. If the parent is already gone, act at once."""
    if not _prctl(PR_SET_PDEATHSIG, sig):
        import threading
        import time

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.2)
            os.kill(os.getpid(), sig)

        threading.Thread(target=watch, name="astrabox-pdeath", daemon=True).start()
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


def _children_of() -> Dict[int, List[int]]:
    """The live children of every process, from the parent links in /proc."""
    children: Dict[int, List[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return children
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    return children


# The guard: a harness's parent is the fork server, whose death would end every replica it forked (their
# parent-death signal). So no process of a replica may signal it. Two layers: an audit hook in the harness turns
# ``os.kill``/``os.killpg`` aimed at it into a PermissionError that names the breach, and a seccomp filter, which
# every descendant inherits across fork and exec, refuses the system calls themselves (whatever makes them: a
# ``kill`` command, ctypes). ``kill(-1, ...)`` (every process the user may signal) is refused too.

#: System call numbers by audit architecture: kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo and
#: pidfd_open take a pid first; pidfd_send_signal (refused with ENOSYS, as on a kernel without it) could reach
#: the server through a descriptor of its /proc directory, which no filter can tell apart.
_SIGNAL_CALLS = {
    0xC000003E: ((62, 200, 234, 129, 297, 434), 424),  # x86_64
    0xC00000B7: ((129, 130, 131, 138, 240, 434), 424),  # aarch64
}
_X32_BIT = 0x40000000


def _seccomp_program(server: int) -> Any:
    """The classic BPF program of the guard for this machine's architecture (None when unknown)."""
    import ctypes
    import platform
    import struct

    arch = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}.get(platform.machine())
    if arch is None:
        return None
    pid_calls, pidfd_signal = _SIGNAL_CALLS[arch]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    prog = []  # (code, jt, jf, k); jumps are filled in relative to the labels below

    def op(code: int, k: int, jt: Any = 0, jf: Any = 0) -> None:
        prog.append([code, jt, jf, k])

    op(ld, 4)  # arch
    op(jeq, arch, 0, "allow")
    op(ld, 0)  # nr
    if arch == 0xC000003E:
        op(jge, _X32_BIT, "deny", 0)  # the x32 numbers of the same calls
    for nr in pid_calls:
        op(jeq, nr, "check", 0)
    op(jeq, pidfd_signal, "enosys", 0)
    labels = {"allow": len(prog)}
    op(ret, allow)
    labels["check"] = len(prog)
    op(ld, 16)  # the low word of the first argument: a pid_t
    for target in (server, (-server) & 0xFFFFFFFF, 0xFFFFFFFF):
        op(jeq, target, "deny", 0)
    op(ret, allow)
    labels["deny"] = len(prog)
    op(ret, eperm)
    labels["enosys"] = len(prog)
    op(ret, enosys)
    raw = b""
    for i, (code, jt, jf, k) in enumerate(prog):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        raw += struct.pack("=HBBI", code, jt, jf, k)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(raw, len(raw))
    return (SockFprog(len(prog), ctypes.cast(buf, ctypes.c_void_p)), buf)


#: The guard's program, built once by the server for its own pid (see serve).
_PROGRAM: List[Any] = []

#: What the audit hook and the troubleshooting entry say when a provider signals the fork server.
GUARD_MESSAGE = ("astrabox refused os.%s(%d, %d): pid %d is the fork server, the parent of every replica of "
                 "this run; a provider must not signal the processes of the platform")


def _guard(server: int) -> bool:
    """In a harness: refuse every signal to the fork server (see above). True when the seccomp filter is on."""

    def hook(event: str, args: Any) -> None:
        if event in ("os.kill", "os.killpg") and len(args) >= 2 and isinstance(args[0], int):
            pid = args[0]
            if abs(pid) == server or pid == -1:
                raise PermissionError(GUARD_MESSAGE % (event[3:], pid, args[1], server))

    sys.addaudithook(hook)
    if not _PROGRAM or _PROGRAM[0] is None:
        return False
    import ctypes

    return _prctl(PR_SET_NO_NEW_PRIVS, 1) and _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                                                   ctypes.byref(_PROGRAM[0][0]))


def _limit_procs(value: str) -> None:
    """Set RLIMIT_NPROC (soft and hard) to ``value``, the kit's limit less a reserve, so that a provider that
    forks without end leaves the kit room to end it. Nothing when empty or not applicable."""
    try:
        import resource

        n = int(value)
        if n > 0:
            resource.setrlimit(resource.RLIMIT_NPROC, (n, n))
    except (ValueError, OSError, ImportError, AttributeError):
        pass


def _take_environ(env: Dict[str, str]) -> None:
    """Make ``env`` the whole environment (``os.environ`` and the C environment alike), touching only what
    differs from the server's: most of a replica's environment is the kit's, which the server already has, and
    each ``putenv`` or ``unsetenv`` costs."""
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _child(runner: Any, sock: socket.socket, wake: List[int], fds: List[int], env: Dict[str, str], cwd: str,
           server: int) -> None:
    """In the server's child: become a harness process like one Go started itself. Never returns.

    It leads a session of its own, is a child subreaper (whatever it starts stays below it, see _drain), dies
    with the server, and refuses every signal to the server (_guard)."""
    try:
        os.setsid()  # its own session and group, with no controlling terminal
        signal.set_wakeup_fd(-1)
        for fd in wake:
            os.close(fd)
        # The C functions behind signal.signal: the module's wrapper only converts to and from its enums, and
        # running that enum code in each child costs it a few dozen copy-on-write page faults.
        for sig in (_signal.SIGCHLD, _signal.SIGTERM):
            _signal.signal(sig, _signal.SIG_DFL)
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _die_with(server, signal.SIGKILL)
        _guard(server)
        sock.close()
        # Move the received descriptors above the targets before putting them in place, so that no source
        # is overwritten by an earlier dup2.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds]
        for fd in fds:
            os.close(fd)
        req, rep, out, err = high
        null = fcntl.fcntl(os.open(os.devnull, os.O_RDONLY), fcntl.F_DUPFD_CLOEXEC, 10)
        for src, dst in ((null, 0), (out, 1), (err, 2), (req, 3), (rep, 4)):
            os.dup2(src, dst, inheritable=dst <= 2)
        os.closerange(5, 65536)
        os.chdir(cwd)
        _limit_procs(env.pop("ASTRABOX_LIMIT_NPROC", ""))
        _take_environ(env)
        stamp_token(env.get(TOKEN_VAR, ""))
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        runner.main()
    except BaseException as exc:  # noqa: B036 - the child must never return into the server loop
        try:
            os.write(2, ("astrabox harness: the fork server could not start a harness: %r\n" % (exc,)).encode())
        except OSError:
            pass
    os._exit(70)


#: Standard library modules providers commonly import (HTTP clients above all), imported once here so that a
#: forked child's ``load`` imports only the provider's own code. Importing them has no effect a provider could
#: observe: no hook is installed yet, and modules with per-process state (``random``, ``tempfile``, OpenSSL)
#: renew it after a fork.
PRELOAD = (
    "base64", "concurrent.futures", "ctypes", "dataclasses", "email.message", "email.parser", "hashlib", "hmac",
    "http.client", "json", "logging", "pathlib", "socket", "ssl", "subprocess", "tempfile", "urllib.error",
    "urllib.parse", "urllib.request", "uuid",
    # The harness's own: every harness imports ``resource`` to set its limits (host.apply_limits), and an
    # extension module imported after the fork costs its loading and relocation again in every child (about
    # 190 page faults each, a tenth of a forked replica's, docs/performance.md).
    "resource",
)


def preload() -> None:
    """Import PRELOAD and compute what every harness computes the same way whatever its environment (the
    standard library's directories, where the SDK's base class defines each callback), so that no forked
    child pays for either."""
    import importlib

    from astrabox._harness import loader, sources

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an interpreter built without a module simply lacks it
            pass
    sources.stdlib_dirs()
    loader.base_locations()
    # Every load calls importlib.invalidate_caches() before it imports the provider; on CPython 3.13 its first
    # call imports importlib.metadata, importlib.resources and zipfile (48 ms and 700 page faults in each
    # forked child, docs/performance.md). A harness started as its own interpreter has them imported by then
    # too, so a provider finds the same modules either way.
    importlib.invalidate_caches()
    prepare_observer()
    rehearse()
    try:
        rehearse_after_fork()
    except Exception:  # noqa: BLE001 - a rehearsal that fails only leaves its code cold
        pass
    prepare_stamp()


def prepare_observer() -> None:
    """Build the observer of every harness this server forks, with its process-independent sources installed
    (``Observer.prepare``: class and function wrappers, no audit hook), and keep it quiet here: the server's
    own work is never observed, and a forked harness finds it ready (``Observer.for_process``), turns it on and
    installs the rest (the audit hook, the call header, egress, trust). Each harness gets its own copy with the
    fork, empty: nothing is ever recorded in the server."""
    import astrabox
    from astrabox._harness import observe

    if observe.PREPARED:
        return
    observer = observe.Observer(os.path.dirname(os.path.abspath(astrabox.__file__)))
    observer.set_quiet(True)
    observer.prepare()
    observe.PREPARED.append(observer)


#: How many times the fork server rehearses a harness's start and load before it forks its first harness.
#: CPython 3.11+ quickens a function's bytecode after several calls (eight in 3.11) and specialises its
#: instructions as they run, writing into the code object each time: code run only in a forked child writes
#: into pages it shares with the server, and each such write costs a copy-on-write fault. Ten rehearsals leave
#: the start's and the load's code quickened and specialised in the server, once for every child.
REHEARSALS = 10


def rehearse(times: int = REHEARSALS) -> None:
    """Run, in the fork server, the parts of a harness's start and load that are the same in every replica,
    and throw away what they made, so that a forked child finds their code warm (quickened, specialised), their
    lazy imports done and their caches filled instead of doing that work itself, in pages it would copy.

    Nothing here can be seen by a provider or by the harness of a replica: no hook is installed (the observer
    is built, never installed), the event loop is closed and never set, the descriptors opened are closed, the
    rehearsal provider class is a subclass of the SDK's base that is deleted and collected before the fork
    (``RuntimePreparationProvider.__subclasses__()`` does not list it), and ``linecache`` is put back as it
    was. A provider's own code is never run here: a replica still imports its provider after the fork, so a
    provider that caches ``os.getpid()``, the time or a random value at import sees its own replica's.
    """
    import asyncio
    import linecache

    import astrabox
    from astrabox import seams
    from astrabox._harness import loader, observe, runner, wire

    sdk = os.path.dirname(os.path.abspath(astrabox.__file__))
    lines = dict(linecache.cache)
    fds = _open_fds()
    try:
        for _ in range(times):
            obs = observe.Observer(sdk)
            with obs.quiet():
                obs.set_roots([], [sdk])
                loop = asyncio.new_event_loop()
                loop.close()
                try:
                    runner.Runner("rehearsal", wire.Writer(-1), obs)
                except Exception:  # noqa: BLE001 - a rehearsal that fails only leaves its code cold
                    pass

                class Rehearsal(seams.RuntimePreparationProvider):
                    name = "rehearsal"

                value = loader.describe(sys.modules[__name__], Rehearsal, Rehearsal(),
                                        loader._location(Rehearsal), [sdk])
                wire.encode_frame({"kind": "reply", "id": 1, "ok": True,
                                   "value": runner.safe_encode_value(value, "load")})
                del Rehearsal
    except Exception:  # noqa: BLE001 - a rehearsal that fails only leaves its code cold
        pass
    finally:
        for fd in _open_fds() - fds:
            try:
                os.close(fd)
            except OSError:
                pass
        linecache.cache.clear()
        linecache.cache.update(lines)
    import gc

    gc.collect()


def rehearse_after_fork(times: int = REHEARSALS) -> None:
    """Run, in the fork server, the standard library's after-fork hooks that every forked child runs first
    (``threading``'s and ``logging``'s, registered with ``os.register_at_fork``), so that their code is warm
    in the server instead of being quickened in each child's copy of its pages (about 40 page faults and 2 ms a
    child, docs/performance.md). In a process with one thread they change nothing: ``threading``'s renews the
    locks of the only thread and keeps it as the main thread, ``logging``'s renews the locks of handlers that
    no thread holds. So they run only while the server has no other thread."""
    import logging
    import threading

    after_threading = getattr(threading, "_after_fork", None)
    after_logging = getattr(logging, "_after_at_fork_child_reinit_locks", None)
    for _ in range(times):
        if threading.active_count() != 1 or any(t is not threading.main_thread()
                                                 for t in list(getattr(threading, "_dangling", ()))):
            return
        if after_threading is not None:
            after_threading()
        lock = getattr(logging, "_lock", None)
        if after_logging is None or lock is None:
            continue
        lock.acquire()  # held across a fork by logging's own before-fork hook, which the child's hook releases
        try:
            after_logging()
        finally:
            try:
                lock.release()  # up to 3.12 the hook released it; from 3.13 it renews it unlocked
            except RuntimeError:
                pass


def _open_fds() -> Set[int]:
    """The descriptors open in this process (empty without /proc), without the one that listed them."""
    try:
        listed = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return set()
    out: Set[int] = set()
    for fd in listed:
        try:
            fcntl.fcntl(fd, fcntl.F_GETFD)
        except OSError:
            continue  # the listing's own descriptor, closed by now
        out.add(fd)
    return out


#: The name (``/proc/<pid>/comm``) the kit gives itself while it stops for job control (warden.StopName).
STOP_NAME = b"astrabox-tstp"


def stopped_by_someone_else(pid: int) -> bool:
    """Whether ``pid`` is stopped by a signal (state T, not a debugger's trace stop) without the kit's
    job-control name: a SIGSTOP some other process sent, most likely a provider's."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    start, end = data.find(b"("), data.rfind(b")")
    if start < 0 or end < start or end + 2 >= len(data):
        return False
    return data[end + 2 : end + 3] == b"T" and data[start + 1 : end] != STOP_NAME


def _watch_kit(sock: socket.socket, kit: int) -> None:
    """Continue the kit when a process stopped it, and say so (Go fails the run's replicas)."""
    if stopped_by_someone_else(kit):
        try:
            os.kill(kit, signal.SIGCONT)
        except OSError:
            return
        _send(sock, {"kind": "kit-stopped"})


def serve(runner: Any) -> None:
    """Serve spawn requests on descriptor 3 until end of input."""
    preload()
    sock = socket.socket(fileno=3)
    os.set_inheritable(3, False)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    # The kit's death (the server's parent-death signal) and a polite stop end every replica first.
    signal.signal(signal.SIGTERM, lambda *_: _end_all())
    me, kit = os.getpid(), os.getppid()
    # Descendants of a harness that ended come here (every harness is a subreaper too), and are killed (_reap).
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:
        _PROGRAM.append(_seccomp_program(me))
    except Exception:  # noqa: BLE001 - no filter then; the audit hook still guards
        _PROGRAM.append(None)
    import gc
    gc.collect()
    gc.freeze()
    _send(sock, {"kind": "ready", "pid": me})
    while True:
        try:
            ready, _, _ = select.select([sock, wake_r], [], [], 0.1)
        except InterruptedError:
            ready = []
        _watch_kit(sock, kit)
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        _reap(sock)
        if sock not in ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 4)
        except InterruptedError:
            continue
        except OSError:
            _end_all()
        if not data:
            _end_all()  # Go closed the socket
        try:
            msg = json.loads(data.decode("utf-8"))
            env = msg["env"]
            cwd = msg["dir"]
            if len(fds) != 4 or not isinstance(env, dict) or not isinstance(cwd, str):
                raise ValueError("a spawn request needs four descriptors, an env object and a dir")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            for fd in fds:
                os.close(fd)
            _send(sock, {"kind": "error", "message": "bad spawn request: %s" % exc})
            continue
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            _send(sock, {"kind": "error", "message": "fork failed: %s" % exc.strerror, "errno": exc.errno or 0})
            continue
        if pid == 0:
            _child(runner, sock, [wake_r, wake_w], fds, env, cwd, me)
        HARNESSES.add(pid)
        for fd in fds:
            os.close(fd)
        _send(sock, {"kind": "spawned", "pid": pid})
