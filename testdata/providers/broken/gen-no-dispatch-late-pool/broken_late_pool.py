"""Deliberately broken fixture for GEN-NO-DISPATCH: a write lands 0.5 s after prepare_turn returned.

Written the way a team with its own audit trail would: the provider owns a ThreadPoolExecutor, and
prepare_turn hands the audit write to it ("fire and forget") with http.client, returning at once. The write
is made by code prepare_turn started, so it must be judged against that prepare_turn, not against whatever
callback runs when it lands (before the kit waited for leftover work, it landed in the next scenario).
"""

from __future__ import annotations

import http.client
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from reference_provider.provider import ReferenceProvider

_AUDIT = ThreadPoolExecutor(max_workers=2, thread_name_prefix="audit")


def _audit_write(session_id: str, attempt: str) -> None:
    time.sleep(0.5)
    url = urlsplit(os.environ["ASTRABOX_DOUBLE_URL"])
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        body = json.dumps({"value": {"session": session_id, "attempt": attempt}})
        conn.request("PUT", "/v1/records/audit/%s/%s" % (session_id, attempt), body, {"Content-Type": "application/json"})
        conn.getresponse().read()
    finally:
        conn.close()


class Provider(ReferenceProvider):
    name = "broken-gen-no-dispatch-late-pool"

    async def prepare_turn(self, *, context):
        materials = await super().prepare_turn(context=context)
        _AUDIT.submit(_audit_write, context.session_id, context.dispatch_attempt_id)
        return materials
