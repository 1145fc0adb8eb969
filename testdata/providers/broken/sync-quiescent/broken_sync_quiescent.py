"""Deliberately broken fixture for SYNC-QUIESCENT: a write-behind queue.

When the Agent record differs, synchronize queues the PUT and returns successfully at once; the queue is
flushed at the start of the next synchronize or recover in the same process. The write of the first operation
therefore lands (carrying that operation's X-Astrabox-Operation header) after its synchronize returned and
after the platform published the box. No thread, task or timer is left behind, so the only evidence is the
late write itself.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SYNC-QUIESCENT; everything else stays correct.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, List

from reference_provider.deployment import record_path
from reference_provider.provider import ReferenceProvider

_PENDING: List[Callable[[], Awaitable[Any]]] = []  # queued writes of earlier operations in this process


async def _flush() -> None:
    while _PENDING:
        write = _PENDING.pop(0)
        await write()


class Provider(ReferenceProvider):
    name = "broken-sync-quiescent"

    async def synchronize(self, *, context):
        await _flush()
        await super().synchronize(context=context)

    async def recover(self, *, operation):
        await _flush()
        return await super().recover(operation=operation)

    async def _write_if_changed(self, client, key, spec, operation):
        path = record_path(*key)
        version, value = await self._read_record(client, path)
        if value is not None and value.get("spec") == spec:
            return "unchanged"

        async def write() -> None:
            client.deadline = None  # the operation's own deadline no longer applies
            await client.request(
                "PUT", path, {"value": {"spec": spec, "written_by": operation.operation_id}}, if_match=version
            )

        _PENDING.append(write)
        return "queued"
