"""http.client: one HTTPS connection per process, opened at load, kept alive and shared by executor threads."""

import asyncio
import http.client
import json
import threading

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

HOST = "ledger.pooled.example"


class Provider(RuntimePreparationProvider):
    name = "pool-httpclient"

    def __init__(self):
        self._conn = http.client.HTTPSConnection(HOST, timeout=10)
        self._lock = threading.Lock()

    def _call(self, method, path, doc=None):
        body = json.dumps(doc).encode() if doc is not None else None
        headers = {"Content-Type": "application/json"} if body else {}
        with self._lock:
            self._conn.request(method, path, body=body, headers=headers)
            resp = self._conn.getresponse()
            data = resp.read()
        if resp.status >= 300:
            raise RuntimeError("ledger answered %d" % resp.status)
        return data

    async def _settled(self, method, path, doc=None):
        job = asyncio.ensure_future(asyncio.to_thread(self._call, method, path, doc))
        try:
            return await asyncio.shield(job)
        except asyncio.CancelledError:
            await asyncio.wait([job])
            raise

    async def prepare_session(self, *, context):
        data = await self._settled("PUT", "/v1/httpclient/sessions/" + context.session_id, {"owner": context.principal_id})
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=data),))

    async def prepare_turn(self, *, context):
        base = "/v1/httpclient/turns/%s/%s" % (context.session_id, context.dispatch_attempt_id)
        await self._settled("GET", base + "/state")
        await self._settled("PUT", base, {"attempt": context.dispatch_attempt_id})
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=context.dispatch_attempt_id.encode()),))
