"""httpx's AsyncClient made at load, and aiohttp with one ClientSession per event loop."""

import asyncio

import aiohttp
import httpx

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

BASE = "https://ledger.pooled.example"


class HttpxAsyncProvider(RuntimePreparationProvider):
    name = "pool-httpx-async"

    def __init__(self):
        self.client = httpx.AsyncClient(base_url=BASE, timeout=httpx.Timeout(10.0),
                                        limits=httpx.Limits(max_keepalive_connections=4))

    async def _both(self, *requests):
        tasks = [asyncio.ensure_future(self.client.request(m, p, json=d)) for m, p, d in requests]
        try:
            answers = await asyncio.shield(asyncio.gather(*tasks))
        except asyncio.CancelledError:
            await asyncio.wait(tasks)
            raise
        for a in answers:
            a.raise_for_status()
        return answers

    async def synchronize(self, *, context):
        # read the Agent's ledger entry; nothing to write when it is there
        await self._both(("GET", "/v1/httpx-async/agents/" + context.operation.agent_id, None))

    async def prepare_session(self, *, context):
        (resp,) = await self._both(("PUT", "/v1/httpx-async/sessions/" + context.session_id, {"owner": context.principal_id}))
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=resp.content),))

    async def prepare_turn(self, *, context):
        base = "/v1/httpx-async/turns/%s/%s" % (context.session_id, context.dispatch_attempt_id)
        await self._both(("GET", base + "/state", None), ("PUT", base, {"attempt": context.dispatch_attempt_id}))
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=context.dispatch_attempt_id.encode()),))


class AiohttpProvider(RuntimePreparationProvider):
    name = "pool-aiohttp"

    def __init__(self):
        self._sessions = {}

    def _session(self):
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            session = self._sessions[loop] = aiohttp.ClientSession(
                BASE, timeout=aiohttp.ClientTimeout(total=10), raise_for_status=True)
        return session

    async def _fetch(self, method, path, doc=None):
        async with self._session().request(method, path, json=doc) as resp:
            return await resp.read()

    async def _shielded(self, coro):
        task = asyncio.ensure_future(coro)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.wait([task])
            raise

    async def synchronize(self, *, context):
        await self._shielded(self._fetch("GET", "/v1/aiohttp/agents/" + context.operation.agent_id))

    async def prepare_session(self, *, context):
        data = await self._shielded(self._fetch("PUT", "/v1/aiohttp/sessions/" + context.session_id, {"owner": context.principal_id}))
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=data),))

    async def prepare_turn(self, *, context):
        base = "/v1/aiohttp/turns/%s/%s" % (context.session_id, context.dispatch_attempt_id)
        await self._shielded(self._fetch("GET", base + "/state"))
        await self._shielded(self._fetch("PUT", base, {"attempt": context.dispatch_attempt_id}))
        return RuntimeMaterials(files=(RuntimeFile(name="ledger-session.json", content=context.dispatch_attempt_id.encode()),))
