"""A tiny Go-side stand-in for the tests: spawns the harness over real pipes and speaks protocol.md."""

from __future__ import annotations

import json
import os
import secrets
import select
import struct
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.join(os.path.dirname(HERE), "python")
ENTRY = os.path.join(SDK, "astrabox", "_harness", "__main__.py")
FIXTURES = os.path.join(HERE, "fixtures")
SRC = os.path.join(FIXTURES, "src")

_LAUNCH = """
import os, sys
a, b = os.dup(int(sys.argv[1])), os.dup(int(sys.argv[2]))
os.dup2(a, 3)
os.dup2(b, 4)
for fd in {a, b, int(sys.argv[1]), int(sys.argv[2])} - {3, 4}:
    os.close(fd)
os.execv(sys.executable, [sys.executable, "-B", sys.argv[3]])
"""

# Guards against hangs only; nothing asserts on time.
WAIT = 30.0


class Drain(threading.Thread):
    """Reads one pipe to the end, always, like the Go side does."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.data = bytearray()
        self.lock = threading.Lock()

    def run(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self.lock:
                self.data.extend(chunk)
        os.close(self.fd)

    def text(self) -> bytes:
        with self.lock:
            return bytes(self.data)


class Harness:
    """One harness process."""

    def __init__(self, env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None) -> None:
        self.cookie = "cookie-" + secrets.token_hex(8)
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        full_env = dict(os.environ)
        for key in list(full_env):
            if key.startswith("PYTHON") or key.startswith("ASTRABOX_"):
                del full_env[key]
        full_env.update(
            {
                "ASTRABOX_HARNESS_COOKIE": self.cookie,
                "ASTRABOX_HARNESS_PROTOCOL": "1",
                "ASTRABOX_REPLICA": "r1",
                "ASTRABOX_REPLICA_TOKEN": secrets.token_hex(8),
                "ASTRABOX_LIMIT_AS": "0",
                "ASTRABOX_LIMIT_NOFILE": "0",
                "MALLOC_ARENA_MAX": "2",
                "PYTHONDONTWRITEBYTECODE": "1",
            }
        )
        full_env.update(env or {})

        # Go's ExtraFiles puts the protocol pipes on descriptors 3 and 4; a tiny launcher does the same
        # here (preexec_fn is unsafe with the drain threads running).
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _LAUNCH, str(req_r), str(rep_w), ENTRY],
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            cwd=cwd or FIXTURES,
            env=full_env,
            pass_fds=(req_r, rep_w),
            start_new_session=True,
        )
        for fd in (req_r, rep_w, out_w, err_w):
            os.close(fd)
        self.stdout = Drain(out_r)
        self.stderr = Drain(err_r)
        self.stdout.start()
        self.stderr.start()
        self.backgrounds: List[Dict[str, Any]] = []
        self.sandbox_requests: List[Dict[str, Any]] = []
        self.next_id = 0

    # -- framing ------------------------------------------------------------------------------------------

    def send(self, msg: Dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        os.write(self.req_w, struct.pack(">I", len(body)) + body)

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray()
        deadline = time.monotonic() + WAIT
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no message from the harness; stderr: %r" % self.stderr.text()[-2000:])
            ready, _, _ = select.select([self.rep_r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.rep_r, n - len(buf))
            if not chunk:
                raise EOFError("harness closed its reply pipe; stderr: %r" % self.stderr.text()[-2000:])
            buf.extend(chunk)
        return bytes(buf)

    def recv(self) -> Dict[str, Any]:
        (n,) = struct.unpack(">I", self._read_exact(4))
        return json.loads(self._read_exact(n).decode())

    def hello(self) -> Dict[str, Any]:
        msg = self.recv()
        assert msg["kind"] == "hello", msg
        return msg

    def call(self, method: str, args: Dict[str, Any], sandbox=None, on_sent=None, timeout_s: float = 10.0) -> Dict[str, Any]:
        """Send a call and return its reply; background messages are kept, sandbox requests answered. The kinds
        of the messages of this call, in the order they came, are left in ``last_kinds``."""
        self.next_id += 1
        call_id = self.next_id
        self.last_kinds: List[str] = []
        self.send({"kind": "call", "id": call_id, "method": method, "args": args, "timeout_s": timeout_s})
        if on_sent is not None:
            on_sent(call_id)
        while True:
            msg = self.recv()
            self.last_kinds.append(msg["kind"])
            if msg["kind"] == "background":
                self.backgrounds.append(msg)
            elif msg["kind"] == "sandbox":
                self.sandbox_requests.append(msg)
                assert sandbox is not None, "unexpected sandbox request %r" % msg
                self.send(dict(sandbox(msg), kind="sandbox_reply", id=msg["id"]))
            elif msg["kind"] == "returned":
                assert msg["id"] == call_id, msg  # the callback's own code ended; its reply follows
            elif msg["kind"] == "reply":
                assert msg["id"] == call_id, msg
                return msg
            else:
                raise AssertionError("unexpected message %r" % msg)

    def wait_background(self, predicate) -> Dict[str, Any]:
        for msg in self.backgrounds:
            if predicate(msg):
                return msg
        while True:
            msg = self.recv()
            assert msg["kind"] == "background", msg
            self.backgrounds.append(msg)
            if predicate(msg):
                return msg

    def load(self, target: str, **extra: Any) -> Dict[str, Any]:
        args = {"target": target, "paths": [SRC], "project_root": FIXTURES, "force_debug_logging": True}
        args.update(extra)
        return self.call("load", args)

    def close(self) -> None:
        try:
            self.send({"kind": "shutdown"})
        except OSError:
            pass
        try:
            self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        try:
            os.killpg(self.proc.pid, 9)
        except OSError:
            pass
        for fd in (self.req_w, self.rep_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.stdout.join(WAIT)
        self.stderr.join(WAIT)

    def __enter__(self) -> "Harness":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
