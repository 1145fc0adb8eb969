"""A provider written against raw asyncio streams (no HTTP library).

Each Session gets a deterministic session file and an environment variable that points at it. Before every
engine write, prepare_turn asks the identity service for the principal's consent over a hand-written
HTTP/1.1 request: a pending consent raises PreparationUserActionRequired; otherwise the turn file for the
dispatch attempt is derived from the attempt id alone, so a reconnect retry on any replica gets the same
bytes and makes no write.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from typing import Any, Dict, Tuple
from urllib.parse import quote, urlsplit

from astrabox.seams import (
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
)

TURN_FILE = "turn-grant"
SESSION_FILE = "session-grant"


def _base() -> Tuple[str, int]:
    parts = urlsplit(os.environ.get("ASTRABOX_DOUBLE_URL", "http://127.0.0.1:9"))
    return parts.hostname or "127.0.0.1", parts.port or 80


def _dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return out


async def request_json(method: str, path: str) -> Tuple[int, Dict[str, Any]]:
    """Send one bodiless HTTP/1.1 request on a fresh connection and decode the JSON answer."""
    host, port = _base()
    reader, writer = await asyncio.open_connection(host, port)
    try:
        head = "%s %s HTTP/1.1\r\nHost: %s:%d\r\nAccept: application/json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % (
            method,
            path,
            host,
            port,
        )
        writer.write(head.encode("ascii"))
        await writer.drain()
        raw = await reader.read()
    finally:
        writer.close()
    header, _, body = raw.partition(b"\r\n\r\n")
    lines = header.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    if any(l.lower().startswith(b"transfer-encoding:") and b"chunked" in l.lower() for l in lines[1:]):
        body = _dechunk(body)
    return status, (json.loads(body) if body else {})


def consent_path(principal: str) -> str:
    return "/v1/consents/" + quote(principal, safe="")


def _grant(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest().encode("ascii")


class StreamlineProvider(RuntimePreparationProvider):
    name = "streamline"

    def plan(self, *, config):
        return RuntimePreparationPlan(declaration={"transport": "asyncio-streams", "files": [SESSION_FILE, TURN_FILE]})

    async def prepare_session(self, *, context):
        grant = _grant("session", context.session_id, context.principal_id, context.runtime_generation)
        return RuntimeMaterials(
            files=(RuntimeFile(name=SESSION_FILE, content=grant), RuntimeFile(name=TURN_FILE, content=b"")),
            environment={"STREAMLINE_GRANT_FILE": context.file_path(TURN_FILE)},
        )

    async def prepare_turn(self, *, context):
        status, consent = await request_json("GET", consent_path(context.principal_id))
        if status != 200:
            # Fail closed: without an answer the prerequisite is unknown, and the write must not go through.
            raise RuntimeError("the identity service answered %d; consent is unknown" % status)
        if consent.get("status") != "granted":
            url = consent.get("url")
            raise PreparationUserActionRequired(
                message="Grant the assistant access to your account to continue.",
                url=url if isinstance(url, str) and url.startswith("https://") else None,
            )
        grant = _grant("turn", context.session_id, context.dispatch_attempt_id)
        return RuntimeMaterials(files=(RuntimeFile(name=TURN_FILE, content=grant),))
