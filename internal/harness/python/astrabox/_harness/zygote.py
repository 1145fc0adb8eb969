"""The fork server: an interpreter that has imported the harness and forks ready harness processes on request.

Starting a replica the ordinary way costs an interpreter start, ``site`` and the harness's imports (well over
a hundred milliseconds of CPU); a fork of this process costs a few. Go talks to it over a Unix
``SOCK_SEQPACKET`` socket on descriptor 3:

- Go sends ``{"kind": "spawn", "env": {...}, "dir": "..."}`` with four descriptors attached (``SCM_RIGHTS``):
  the request pipe's read end, the reply pipe's write end, and the write ends of the stdout and stderr pipes.
- The server forks a *supervisor* (``_supervise``): a child subreaper in a session of its own, which forks the
  harness. The harness leads its own session (no controlling terminal), dies with its supervisor, puts the
  four descriptors at 3, 4, 1 and 2 (``/dev/null`` at 0), closes everything else, takes ``env`` as its whole
  environment and ``dir`` as its working directory, and runs the harness exactly as a freshly started one
  would (``runner.main``): the hello, the limits, the observer and the provider load all happen in it.
- The supervisor answers ``{"kind": "spawned", "pid": H, "supervisor": S}`` (or ``{"kind": "error",
  "message": ...}``) and later ``{"kind": "exit", "pid": H, "status": W}`` with the raw wait status when the
  harness ends: only the parent can reap a child, and Go needs the status to say how a replica died. Then it
  kills everything left below it (every descendant of the harness, wherever it went: they are re-parented to
  the supervisor) and exits; the server reports ``{"kind": "exit", "pid": S, ...}``, after which nothing of
  the replica is left. It exits with status 0 only once it has reaped its last child (a subreaper without a
  child has no descendant), so that Go needs no pass over /proc to know the tree is gone; killed, or with its
  drain failed, it leaves that to Go's sweep.

The server never imports a provider, never starts a thread and installs no hook, so a fork copies nothing but
the interpreter and the harness's modules. End of input (Go went away) ends the server; it also dies with the
kit (Go gives it a parent-death signal) and takes every supervisor along (theirs is tied to the server).

Ten times a second the server looks at the kit: a kit stopped by a signal it did not give itself (a provider's
``SIGSTOP``; see ``stopped_by_someone_else``) is continued and Go is told ``{"kind": "kit-stopped"}``.
"""

from __future__ import annotations

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
    """Send one message to Go from the fork server, which ends when Go is gone (its supervisors then get their
    parent-death signal and end their trees)."""
    if not _tell(sock, msg):
        os._exit(0)


#: The pids of the supervisors the server forked and has not reaped yet: its only legitimate children.
SUPERVISORS: Set[int] = set()


def _reap(sock: socket.socket) -> None:
    """Reap every child that ended and report it. A supervisor that did not end cleanly (it was killed) left
    the descendants of its harness to the server, a subreaper: kill them."""
    strays = False
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == 0:
            break
        if pid in SUPERVISORS:
            SUPERVISORS.discard(pid)
            strays = strays or not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
        _send(sock, {"kind": "exit", "pid": pid, "status": status})
    if strays:
        _kill_strays(sock)


def _kill_strays(sock: socket.socket) -> None:
    """Kill every child of the server that is not a supervisor, and everything below it, until none is left
    (bounded: a stray cannot be re-parented here faster than it is killed for long)."""
    import time

    me = os.getpid()
    for _ in range(500):
        children = _children_of().get(me, [])
        strays = [pid for pid in children if pid not in SUPERVISORS]
        if not strays:
            return
        for pid in strays:
            _kill_below(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except (ChildProcessError, InterruptedError):
                break
            if pid == 0:
                break
            if pid in SUPERVISORS:
                SUPERVISORS.discard(pid)
                _send(sock, {"kind": "exit", "pid": pid, "status": status})
        time.sleep(0.002)


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


PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    """prctl(option, value) through ctypes; False where it is not available (not Linux, no ctypes)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError, ImportError):
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


def _below(root: int) -> List[int]:
    """Every live descendant of ``root``."""
    children = _children_of()
    out: List[int] = []
    stack = [root]
    while stack:
        for c in children.get(stack.pop(), ()):
            if c not in out:
                out.append(c)
                stack.append(c)
    return out


def _kill_below(root: int) -> None:
    for pid in _below(root):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _drain() -> None:
    """Kill everything below this process and reap until it has no child left (it is a subreaper: orphans of
    killed processes become its children).

    A subreaper without a child has no descendant at all: a process whose parent ends is re-parented to its
    nearest living subreaper ancestor before that parent can be reaped, and an ended child stays a child
    until it is reaped. So /proc is read only while some child is left, and a harness that left nothing
    behind costs no scan.
    """
    import time

    me = os.getpid()
    while True:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                break
        _kill_below(me)
        time.sleep(0.002)


def _supervise(runner: Any, sock: socket.socket, wake: List[int], fds: List[int], env: Dict[str, str], cwd: str,
               server: int) -> None:
    """In the forked child: become the supervisor of one harness. Never returns.

    The supervisor is a child subreaper in a session of its own: every descendant of the harness that loses its
    parent becomes its child, whatever it did to its group, session or environment. It forks the harness,
    reports its pid and, once reaped, its wait status; then it kills everything left below it, reaps until it
    has no child, and exits, which the fork server reports. It dies with the fork server (SIGTERM, handled
    like the harness's end). The provider's parent is this supervisor: neither the fork server nor the kit.
    """
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wake:
            os.close(fd)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        signal.signal(signal.SIGTERM, lambda *_: _kill_below(os.getpid()))
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _die_with(server, signal.SIGTERM)
        try:
            pid = os.fork()
        except OSError as exc:
            _tell(sock, {"kind": "error", "message": "fork failed: %s" % exc.strerror, "errno": exc.errno or 0})
            os._exit(0)
        if pid == 0:
            _child(runner, sock, fds, env, cwd, os.getppid())
        for fd in fds:
            os.close(fd)
        # Go may be gone at any point from here (the kit killed: the harness then ends on its closed pipes,
        # possibly before this process's parent-death signal arrives), so no failed report may skip the drain:
        # the harness's orphans are this process's children, and nobody else would end them.
        _tell(sock, {"kind": "spawned", "pid": pid, "supervisor": os.getpid()})
        while True:
            try:
                got, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if got == pid:
                _tell(sock, {"kind": "exit", "pid": pid, "status": status})
                break
    except BaseException:  # noqa: B036 - the supervisor must never return into the server loop
        pass
    try:
        _drain()
    except BaseException:  # noqa: B036
        os._exit(1)  # Go then sweeps /proc for what may be left
    os._exit(0)  # nothing is left below it: Go need not look


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


def _child(runner: Any, sock: socket.socket, fds: List[int], env: Dict[str, str], cwd: str, parent: int) -> None:
    """In the supervisor's child: become a harness process like one Go started itself. Never returns."""
    try:
        os.setsid()  # its own session and group, with no controlling terminal
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _die_with(parent, signal.SIGKILL)
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
    me, kit = os.getpid(), os.getppid()
    # Descendants of a harness whose supervisor was killed come here, and are killed (_reap).
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
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
            os._exit(0)
        if not data:
            os._exit(0)  # Go closed the socket
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
            _supervise(runner, sock, [wake_r, wake_w], fds, env, cwd, me)
        SUPERVISORS.add(pid)
        for fd in fds:
            os.close(fd)
        # The supervisor answers the request itself ("spawned", with the harness's pid) once it has forked it.
