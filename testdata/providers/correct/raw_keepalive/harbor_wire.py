"""Harbor: Streamline's turn grants, with every request on one kept-alive HTTP/1.1 connection per process.

Harbor's platform team counts connections: the provider opens one TCP connection to the deployment's
services when it is constructed (so while the platform loads it; on first use when nothing listens yet) and
writes every request on it by hand,
HTTP/1.1 keep-alive, one request at a time under a lock. A request goes out from a worker thread that the
calling turn awaits; if the platform cancels the turn meanwhile, the turn still lets the exchange end before
it gives up, so nothing is written on the connection after the callback settled. A connection the other end
closed (an answer dropped after the write was applied) is opened again and the request sent once more: the
audit record is created with ``If-Match: 0``, so the second attempt finds it and changes nothing (412).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Callable, Dict, Optional, Tuple

from astrabox.seams import PreparationUserActionRequired, RuntimeFile, RuntimeMaterials
from streamline import StreamlineProvider, TURN_FILE, _base, _grant, consent_path


class ConnectionLost(Exception):
    """The other end closed the connection before its answer was complete."""


class KeptAlive:
    """One HTTP/1.1 connection, requests written by hand and answered in turn."""

    def __init__(self, connect: Optional[Callable[[], socket.socket]] = None, authority: str = "") -> None:
        self.lock = threading.Lock()
        self.sock: Optional[socket.socket] = None
        self.pending = b""
        self.connect = connect or (lambda: socket.create_connection(_base(), timeout=10))
        self.authority = authority or "%s:%d" % _base()

    def open(self) -> None:
        self.sock = self.connect()
        self.pending = b""

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock = None

    def _fill(self) -> None:
        assert self.sock is not None
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionLost("closed by the other end")
        self.pending += chunk

    def _take(self, n: int) -> bytes:
        while len(self.pending) < n:
            self._fill()
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def _line(self) -> bytes:
        while b"\r\n" not in self.pending:
            self._fill()
        line, _, self.pending = self.pending.partition(b"\r\n")
        return line

    def _answer(self) -> Tuple[int, Dict[str, str], bytes]:
        status = int(self._line().split(b" ", 2)[1])
        headers: Dict[str, str] = {}
        while True:
            line = self._line()
            if not line:
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = b""
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line():
                        pass
                    break
                body += self._take(size)
                self._take(2)
        else:
            body = self._take(int(headers.get("content-length", "0")))
        return status, headers, body

    def exchange(self, method: str, path: str, body: bytes = b"", extra: Tuple[str, ...] = ()) -> Tuple[int, bytes]:
        head = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % self.authority, "Accept: application/json"]
        head += list(extra) + ["Content-Length: %d" % len(body)]
        data = ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + body
        with self.lock:
            for attempt in (1, 2):
                if self.sock is None:
                    self.open()
                try:
                    assert self.sock is not None
                    self.sock.sendall(data)
                    status, headers, answer = self._answer()
                except (OSError, ConnectionLost, ValueError, IndexError):
                    self.close()
                    if attempt == 2:
                        raise
                    continue
                if headers.get("connection", "").lower() == "close":
                    self.close()
                return status, answer
        raise AssertionError("unreachable")


async def on_worker(fn, *args):
    """Run ``fn`` on a worker thread and await it; a cancelled caller still lets it end first."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def work() -> None:
        try:
            result = (fn(*args), None)
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting turn
            result = (None, exc)
        loop.call_soon_threadsafe(lambda: done.done() or done.set_result(result))

    worker = threading.Thread(target=work, name="harbor-wire")
    worker.start()
    try:
        value, exc = await done
    except asyncio.CancelledError:
        worker.join(10)  # the exchange is this turn's: let it end before the turn gives up
        raise
    if exc is not None:
        raise exc
    return value


def audit_path(session_id: str, attempt_id: str) -> str:
    return "/v1/records/harbor-audit/%s/%s" % (session_id, attempt_id)


class HarborProvider(StreamlineProvider):
    name = "harbor"

    def __init__(self) -> None:
        super().__init__()
        self.wire = KeptAlive()
        try:
            self.wire.open()  # while the platform loads the provider: one connection for the process's life
        except OSError:
            pass  # nothing listening yet (a tool that only inspects the provider): opened on first use

    async def consent(self, principal: str) -> Dict[str, object]:
        status, body = await on_worker(self.wire.exchange, "GET", consent_path(principal))
        if status != 200:
            # Fail closed: without an answer the prerequisite is unknown, and the write must not go through.
            raise RuntimeError("the identity service answered %d; consent is unknown" % status)
        return json.loads(body) if body else {}

    #: The answers to an audit write that leave the record in place (created now, or by an earlier try).
    AUDIT_OK = (200, 412)

    def write_audit(self, session_id: str, attempt_id: str) -> int:
        """Create the audit record of an attempt (a blocking exchange); the answer's status."""
        record = json.dumps({"value": {"session": session_id, "attempt": attempt_id}}, sort_keys=True).encode()
        status, _ = self.wire.exchange("PUT", audit_path(session_id, attempt_id), record,
                                       ("Content-Type: application/json", "If-Match: 0"))
        return status

    async def audit(self, session_id: str, attempt_id: str) -> int:
        return await on_worker(self.write_audit, session_id, attempt_id)

    async def prepare_turn(self, *, context):
        consent = await self.consent(context.principal_id)
        if consent.get("status") != "granted":
            url = consent.get("url")
            raise PreparationUserActionRequired(
                message="Grant the assistant access to your account to continue.",
                url=url if isinstance(url, str) and url.startswith("https://") else None,
            )
        status = await self.audit(context.session_id, context.dispatch_attempt_id)
        if status not in self.AUDIT_OK:
            raise RuntimeError("the audit trail answered %d" % status)
        grant = _grant("turn", context.session_id, context.dispatch_attempt_id)
        return RuntimeMaterials(files=(RuntimeFile(name=TURN_FILE, content=grant),))
