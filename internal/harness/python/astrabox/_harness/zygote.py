"""The fork server: an interpreter that has imported the harness and forks ready harness processes on request.

Starting a replica the ordinary way costs an interpreter start, ``site`` and the harness's imports (well over
a hundred milliseconds of CPU); a fork of this process costs a few. Go talks to it over a Unix
``SOCK_SEQPACKET`` socket on descriptor 3:

- Go sends ``{"kind": "spawn", "env": {...}, "dir": "..."}`` with four descriptors attached (``SCM_RIGHTS``):
  the request pipe's read end, the reply pipe's write end, and the write ends of the stdout and stderr pipes.
- The server forks. The child becomes its own process group, puts the four descriptors at 3, 4, 1 and 2
  (``/dev/null`` at 0), closes everything else, takes ``env`` as its whole environment and ``dir`` as its
  working directory, and runs the harness exactly as a freshly started one would (``runner.main``): the hello,
  the limits, the observer and the provider load all happen in the child.
- The server answers ``{"kind": "spawned", "pid": N}`` (or ``{"kind": "error", "message": ...}``) and later
  ``{"kind": "exit", "pid": N, "status": S}`` with the raw wait status when a child ends: only the parent can
  reap a child, and Go needs the status to say how a replica died.

The server never imports a provider, never starts a thread and installs no hook, so a fork copies nothing but
the interpreter and the harness's modules. End of input (Go went away) ends the server.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import socket
import sys
from typing import Any, Dict, List

MAX_MESSAGE = 1 << 20


def _send(sock: socket.socket, msg: Dict[str, Any]) -> None:
    try:
        sock.send(json.dumps(msg, separators=(",", ":")).encode("utf-8"))
    except OSError:
        os._exit(0)  # Go is gone: children are Go's to kill, nothing to report to


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return
        _send(sock, {"kind": "exit", "pid": pid, "status": status})


def _child(runner: Any, sock: socket.socket, wake: List[int], fds: List[int], env: Dict[str, str], cwd: str) -> None:
    """In the forked child: become a harness process like one Go started itself. Never returns."""
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.close()
        for fd in wake:
            os.close(fd)
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
        os.environ.clear()
        os.environ.update(env)
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
    "base64", "concurrent.futures", "dataclasses", "email.message", "email.parser", "hashlib", "hmac",
    "http.client", "json", "logging", "pathlib", "socket", "ssl", "subprocess", "tempfile", "urllib.error",
    "urllib.parse", "urllib.request", "uuid",
)


def preload() -> None:
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an interpreter built without a module simply lacks it
            pass


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
    _send(sock, {"kind": "ready", "pid": os.getpid()})
    while True:
        try:
            ready, _, _ = select.select([sock, wake_r], [], [])
        except InterruptedError:
            ready = []
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
            _send(sock, {"kind": "error", "message": "fork failed: %s" % exc.strerror})
            continue
        if pid == 0:
            _child(runner, sock, [wake_r, wake_w], fds, env, cwd)
        for fd in fds:
            os.close(fd)
        _send(sock, {"kind": "spawned", "pid": pid})
