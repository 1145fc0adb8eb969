"""Deliberately broken fixture for RECOVER-TRUTH, through a declared service: Tailspin's recover reads the
Agent object from its object store and, when the operation's result is not there, answers True without
posting a fence. A write of the operation that is still on its way (held by the kit while the host was lost)
is then applied by the store after recover answered.
"""

from __future__ import annotations

import logging

from reference_provider.deployment import record_path
from tailspin_objects import TailspinProvider

logger = logging.getLogger("tailspin.hopeful")


class Provider(TailspinProvider):
    name = "broken-recover-truth-objects"

    async def recover(self, *, operation):
        client = self._client(None, deadline=operation.deadline)
        _version, value = await self._read_record(client, record_path("agents", operation.agent_id))
        if not isinstance(value, dict) or value.get("written_by") != operation.operation_id:
            logger.info("recover operation=%s: no result in the store, taking it as over", operation.operation_id)
            return True
        return await super().recover(operation=operation)
