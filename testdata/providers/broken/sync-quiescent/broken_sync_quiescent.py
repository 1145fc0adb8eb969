"""Deliberately broken fixture for SYNC-QUIESCENT: the record write lands about 0.2 s after synchronize returned.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SYNC-QUIESCENT; everything else stays correct.
"""

from __future__ import annotations

import threading
import time

from reference_provider.deployment import record_path
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-sync-quiescent"

    async def _write_if_changed(self, client, key, spec, operation):
        path = record_path(*key)
        version, value = await self._read_record(client, path)
        if value is not None and value.get("spec") == spec:
            return "unchanged"

        def deferred_write() -> None:
            time.sleep(0.2)
            client.deadline = None  # the callback is over; use the default timeout
            client.request_blocking(
                "PUT", path, {"value": {"spec": spec, "written_by": operation.operation_id}}, if_match=version
            )

        threading.Thread(target=deferred_write, name="deferred-agent-record", daemon=True).start()
        return "scheduled"
