"""Deliberately broken fixture for GEN-NO-DISPATCH: an audit write over a raw socket, after the kit moved on.

Streamline's operators wanted an audit trail of issued turn grants, and a team used to plain sockets wrote
it, batched: the first successful prepare_turn of a process starts a thread that holds the grant's audit
record until the next turn comes (or a minute passes), then opens a TCP connection with
``socket.create_connection`` and writes a hand-made HTTP/1.1 PUT; the next turn waits for the flush, to keep
the trail in order. No HTTP library is used, so the request carries no call tag, and it lands long after the
kit's settle window (``settle = 0.5`` in pyproject.toml), while that next prepare_turn is in flight. The kit
must blame the prepare_turn whose code started the thread that opened the connection, not the one in
flight. One batch per process keeps the fixture quick.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading

from streamline import StreamlineProvider, _base

#: A batch is flushed by the next turn, or after a minute without one.
FLUSH_AFTER_S = 60.0


def audit_request(path: str, record: dict) -> bytes:
    """A complete HTTP/1.1 PUT of one record, with its body, as bytes."""
    host, port = _base()
    body = json.dumps({"value": record}, sort_keys=True).encode("utf-8")
    head = "PUT %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
        path,
        host,
        port,
        len(body),
    )
    return head.encode("ascii") + body


def send_raw(data: bytes) -> int:
    """Send one request on a fresh connection and return the answer's status."""
    with socket.create_connection(_base(), timeout=10) as sock:
        sock.sendall(data)
        answer = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0


def audit_path(session_id: str, attempt_id: str) -> str:
    return "/v1/records/streamline-audit/%s/%s" % (session_id, attempt_id)


class SocketAuditProvider(StreamlineProvider):
    name = "streamline-socket-audit"
    _flusher = None  # the audit thread waiting for the next turn of this process
    _flush = threading.Event()
    _flushed = threading.Event()

    async def prepare_turn(self, *, context):
        cls = SocketAuditProvider
        if cls._flusher is not None and not cls._flush.is_set():
            # The batch is flushed when the next turn comes; wait for it, to keep the audit trail in order.
            cls._flush.set()
            await asyncio.to_thread(cls._flushed.wait, 10)
        materials = await super().prepare_turn(context=context)
        if cls._flusher is None:
            data = audit_request(audit_path(context.session_id, context.dispatch_attempt_id),
                                 {"session": context.session_id, "attempt": context.dispatch_attempt_id})

            def flush_later() -> None:
                cls._flush.wait(FLUSH_AFTER_S)
                send_raw(data)
                cls._flushed.set()

            cls._flusher = threading.Thread(target=flush_later, name="grant-audit")
            cls._flusher.start()
        return materials
