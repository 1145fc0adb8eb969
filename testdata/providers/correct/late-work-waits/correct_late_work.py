"""Correct twin of the late-work fixtures: the same pool job, asyncio task and timer, each waited for before
the callback returns, so nothing the callback started outlives it."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from reference_provider.provider import ReferenceProvider

_AUDIT = ThreadPoolExecutor(max_workers=2, thread_name_prefix="audit")


def _audit_write(session_id: str, attempt: str) -> None:
    url = urlsplit(os.environ["ASTRABOX_DOUBLE_URL"])
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        body = json.dumps({"value": {"session": session_id, "attempt": attempt}})
        conn.request("PUT", "/v1/records/audit/%s/%s" % (session_id, attempt), body, {"Content-Type": "application/json"})
        conn.getresponse().read()
    finally:
        conn.close()


class Provider(ReferenceProvider):
    name = "correct-late-work-waits"

    async def prepare_turn(self, *, context):
        materials = await super().prepare_turn(context=context)
        await asyncio.wrap_future(_AUDIT.submit(_audit_write, context.session_id, context.dispatch_attempt_id))
        return materials

    async def synchronize(self, *, context):
        await super().synchronize(context=context)

        async def settle_note():
            await asyncio.sleep(0.05)

        await asyncio.get_running_loop().create_task(settle_note())

    async def prepare_session(self, *, context):
        materials = await super().prepare_session(context=context)
        done = threading.Event()
        timer = threading.Timer(0.05, done.set)
        timer.start()
        await asyncio.get_running_loop().run_in_executor(None, timer.join)
        return materials
