"""Streamline with an audit trail of issued turn grants, over a raw socket, finished before the turn returns.

The twin of broken/gen-no-dispatch-late-socket. Each successful prepare_turn hands the audit record to a
worker thread that opens a TCP connection with ``socket.create_connection`` and writes a hand-made HTTP/1.1
PUT (no HTTP library, so no call tag: the kit attributes it by the connection the thread opened). The turn
awaits the worker before it returns, and, when the platform cancels it meanwhile, still lets the write end
before it gives up, so nothing lands after the callback settled. The record is created with ``If-Match: 0``
("must not exist"): a retry of the attempt, on any replica, finds it there and changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading

from streamline import StreamlineProvider, _base


def put_once(path: str, record: dict) -> int:
    """PUT a record that must not exist yet, on a fresh connection; the answer's status (412: it exists)."""
    host, port = _base()
    body = json.dumps({"value": record}, sort_keys=True).encode("utf-8")
    lines = [
        "PUT %s HTTP/1.1" % path,
        "Host: %s:%d" % (host, port),
        "Content-Type: application/json",
        "If-Match: 0",
        "Content-Length: %d" % len(body),
        "Connection: close",
    ]
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    status_line = b"".join(chunks).split(b"\r\n", 1)[0].split(b" ")
    return int(status_line[1]) if len(status_line) > 1 and status_line[1].isdigit() else 0


class AuditedStreamline(StreamlineProvider):
    name = "streamline-socket-audit-waits"

    async def prepare_turn(self, *, context):
        materials = await super().prepare_turn(context=context)
        path = "/v1/records/streamline-audit/%s/%s" % (context.session_id, context.dispatch_attempt_id)
        record = {"session": context.session_id, "attempt": context.dispatch_attempt_id}
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def work() -> None:
            try:
                status = put_once(path, record)
            except OSError as exc:
                status = exc
            loop.call_soon_threadsafe(lambda: done.done() or done.set_result(status))

        worker = threading.Thread(target=work, name="grant-audit-now")
        worker.start()
        try:
            status = await done
        except asyncio.CancelledError:
            worker.join(10)  # the write is this turn's: let it end before the turn gives up
            raise
        if isinstance(status, OSError):
            raise RuntimeError("the audit trail is unreachable: %s" % status) from status
        if status not in (200, 412):
            raise RuntimeError("the audit trail answered %d" % status)
        return materials
