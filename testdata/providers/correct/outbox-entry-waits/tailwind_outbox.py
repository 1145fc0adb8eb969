"""Tailwind's turn outbox: each prepare_turn files one outbox entry for its dispatch attempt while it prepares
the materials, and never gives up on the entry.

The entry is filed by a small pool of its own (``concurrent.futures.ThreadPoolExecutor``, blocking
``http.client``) as soon as the turn starts, so that it runs alongside the materials. The turn waits for it
before it returns, and, when the platform cancels the turn, still waits for it before re-raising: nothing the
turn started is left writing behind a cancelled callback (GEN-CANCEL-CLEAN). The entry is created with
``If-Match: 0``: a retry of the attempt, on any replica, finds it there (412) and changes nothing.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote, urlsplit

from reference_provider.provider import ReferenceProvider

OUTBOX = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tailwind-outbox")


def file_entry(session_id: str, attempt_id: str) -> int:
    """PUT the attempt's outbox entry if it does not exist yet; the answer's status (412: it exists)."""
    base = urlsplit(os.environ["ASTRABOX_DOUBLE_URL"])
    path = "/v1/records/tailwind-outbox/%s/%s" % (quote(session_id, safe=""), quote(attempt_id, safe=""))
    body = json.dumps({"value": {"session": session_id, "attempt": attempt_id}}, sort_keys=True)
    conn = http.client.HTTPConnection(base.hostname, base.port, timeout=10)
    try:
        conn.request("PUT", path, body, {"Content-Type": "application/json", "If-Match": "0"})
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def check_filed(status: int) -> None:
    if status not in (200, 201, 412):
        raise RuntimeError("the outbox answered %d" % status)


class Provider(ReferenceProvider):
    name = "correct-outbox-entry-waits"

    async def prepare_turn(self, *, context):
        entry = asyncio.get_running_loop().run_in_executor(
            OUTBOX, file_entry, context.session_id, context.dispatch_attempt_id)
        try:
            materials = await super().prepare_turn(context=context)
        except BaseException:
            await self._entry_done(entry)  # cancelled or failed: the entry still ends before the turn does
            raise
        check_filed(await entry)
        return materials

    @staticmethod
    async def _entry_done(entry) -> None:
        try:
            await entry
        except Exception:  # noqa: BLE001 - the turn's own error (or cancellation) is the one to report
            pass
