"""Deliberately broken fixture for RECOVER-TRUTH: an absent remote result is taken as proof.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks RECOVER-TRUTH; everything else stays correct.
"""

from __future__ import annotations

import logging

from reference_provider.deployment import record_path
from reference_provider.provider import ReferenceProvider

logger = logging.getLogger("broken_recover_truth")


class Provider(ReferenceProvider):
    name = "broken-recover-truth"

    async def recover(self, *, operation):
        client = self._client(None, deadline=operation.deadline)
        _version, value = await self._read_record(client, record_path("agents", operation.agent_id))
        if not value or value.get("written_by") != operation.operation_id:
            logger.info("recover operation=%s: no remote result, assuming it is quiescent", operation.operation_id)
            return True  # no fence: a held or delayed write of the operation can still land
        return await super().recover(operation=operation)
