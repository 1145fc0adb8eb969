"""requests and httpx's sync client: one client per process (its connection pool shared by a thread pool)."""

import asyncio
import concurrent.futures
import json

import httpx
import requests

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

BASE = "https://ledger.pooled.example"


class _PoolProvider(RuntimePreparationProvider):
    lib = ""

    def __init__(self):
        self._workers = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix=self.lib)

    def _send(self, method, path, doc=None):
        raise NotImplementedError

    async def _run(self, *jobs):
        loop = asyncio.get_running_loop()
        futures = [loop.run_in_executor(self._workers, self._send, *job) for job in jobs]
        try:
            # shielded: cancelling a pool future does not stop its job, which would go on unwatched
            return await asyncio.shield(asyncio.gather(*futures))
        except asyncio.CancelledError:
            await asyncio.wait(futures)
            raise

    async def prepare_session(self, *, context):
        (data,) = await self._run(("PUT", "/v1/%s/sessions/%s" % (self.lib, context.session_id), {"owner": context.principal_id}))
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=data),))

    async def prepare_turn(self, *, context):
        base = "/v1/%s/turns/%s/%s" % (self.lib, context.session_id, context.dispatch_attempt_id)
        # the state read and the attempt write go out together, on two pool threads
        await self._run(("GET", base + "/state", None), ("PUT", base, {"attempt": context.dispatch_attempt_id}))
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=context.dispatch_attempt_id.encode()),))


class RequestsProvider(_PoolProvider):
    name = "pool-requests"
    lib = "requests"

    def __init__(self):
        super().__init__()
        self._session = requests.Session()
        self._session.headers["User-Agent"] = "pooled-ledger/0.1"

    def _send(self, method, path, doc=None):
        resp = self._session.request(method, BASE + path, json=doc, timeout=10)
        resp.raise_for_status()
        return resp.content


class HttpxSyncProvider(_PoolProvider):
    name = "pool-httpx-sync"
    lib = "httpx-sync"

    def __init__(self):
        super().__init__()
        self._client = httpx.Client(base_url=BASE, timeout=10.0)

    def _send(self, method, path, doc=None):
        resp = self._client.request(method, path, content=json.dumps(doc) if doc is not None else None)
        resp.raise_for_status()
        return resp.content
