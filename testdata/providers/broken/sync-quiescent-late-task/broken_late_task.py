"""Deliberately broken fixture for SYNC-QUIESCENT: synchronize leaves an asyncio task that writes later.

The "write-behind" is an asyncio task created on the host's loop: synchronize returns at once and the task
puts a status record 0.3 s later, after the operation returned, carrying the operation's header.
"""

from __future__ import annotations

import asyncio

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-sync-quiescent-late-task"
    _tasks = set()

    async def synchronize(self, *, context):
        await super().synchronize(context=context)
        op = context.operation

        async def status_later():
            await asyncio.sleep(0.3)
            client = self._client(context.config, operation_id=op.operation_id)
            await client.request("PUT", "/v1/records/status/%s" % op.agent_id, {"value": {"synced": op.operation_id}})

        task = asyncio.get_running_loop().create_task(status_later())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
