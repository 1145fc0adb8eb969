"""Deliberately broken fixture for RECOVER-NO-FENCE-NEWER: recover also fences the newest operation it knows of.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks RECOVER-NO-FENCE-NEWER; everything else stays correct.
"""

from __future__ import annotations

from typing import Dict

from reference_provider.deployment import record_path
from reference_provider.provider import ReferenceProvider, _mapping

_LATEST: Dict[str, str] = {}  # agent_id -> newest operation seen by synchronize in this process


class Provider(ReferenceProvider):
    name = "broken-recover-no-fence-newer"

    async def synchronize(self, *, context):
        _LATEST[context.operation.agent_id] = context.operation.operation_id
        await super().synchronize(context=context)

    async def recover(self, *, operation):
        fenced = await super().recover(operation=operation)
        client = self._client(None, deadline=operation.deadline)
        _version, value = await self._read_record(client, record_path("agents", operation.agent_id))
        others = {_mapping(value).get("written_by"), _LATEST.get(operation.agent_id)}
        for other in sorted(o for o in others if isinstance(o, str) and o != operation.operation_id):
            # "Make sure nothing else is writing either": fences a newer operation too.
            await client.request("POST", "/v1/fences", {"agent_id": operation.agent_id, "operation_id": other})
        return fenced
