"""A provider that keeps one HTTP/1.1 keep-alive connection per process (http.client).

prepare_session asks the credential service for a token for the Session's principal and delivers it as a
file, with an environment variable naming the file's path. The blocking client runs in a worker thread
(asyncio.to_thread) and is awaited before the callback returns, so nothing is left running.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import threading
from typing import Any, Dict, Optional, Tuple
from urllib.parse import urlsplit

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationPlan, RuntimePreparationProvider

AUDIENCE = "ledgerline"
TOKEN_FILE = "ledger-token"


class _KeepAlive:
    """One persistent connection to the deployment, reopened when the server closed it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: Optional[http.client.HTTPConnection] = None
        self._target: Optional[Tuple[str, int]] = None

    def _connection(self) -> http.client.HTTPConnection:
        parts = urlsplit(os.environ.get("ASTRABOX_DOUBLE_URL", "http://127.0.0.1:9"))
        target = (parts.hostname or "127.0.0.1", parts.port or 80)
        if self._conn is None or self._target != target:
            if self._conn is not None:
                self._conn.close()
            self._conn, self._target = http.client.HTTPConnection(*target, timeout=10), target
        return self._conn

    def post_json(self, path: str, body: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        with self._lock:
            for attempt in (1, 2):
                conn = self._connection()
                try:
                    conn.request("POST", path, body=data, headers=headers)
                    resp = conn.getresponse()
                    payload = resp.read()
                    return resp.status, (json.loads(payload) if payload else {})
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    # The server closed the idle connection before this request reached it: reopen once.
                    conn.close()
                    self._conn = None
                    if attempt == 2:
                        raise
        raise RuntimeError("unreachable")


class LedgerlineProvider(RuntimePreparationProvider):
    name = "ledgerline"

    def __init__(self) -> None:
        self._http = _KeepAlive()

    def plan(self, *, config):
        return RuntimePreparationPlan(declaration={"audience": AUDIENCE, "file": TOKEN_FILE})

    def _token_from(self, answer: Dict[str, Any]) -> str:
        return str(answer["token"])

    def _content(self, token: str) -> bytes:
        return token.encode("utf-8")

    async def prepare_session(self, *, context):
        status, answer = await asyncio.to_thread(
            self._http.post_json, "/v1/credentials", {"principal_id": context.principal_id, "audience": AUDIENCE}
        )
        if status != 201:
            raise RuntimeError("the credential service answered %d" % status)
        token = self._token_from(answer)
        return RuntimeMaterials(
            files=(RuntimeFile(name=TOKEN_FILE, content=self._content(token)),),
            environment={"LEDGERLINE_TOKEN_FILE": context.file_path(TOKEN_FILE)},
        )
