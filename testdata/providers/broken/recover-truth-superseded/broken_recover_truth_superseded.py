"""Deliberately broken fixture for RECOVER-TRUTH: a record written by another operation is taken as proof.

The author's reasoning: every write of the Agent record is a compare-and-set on the version the operation
read. If the record now names another operation as its writer, that operation must have written after ours
read it, so a late write of ours carries a stale ``If-Match`` and will be refused: no fence is needed. The
flaw is the order. The other operation may have written *before* ours read the record (an earlier
synchronize, of an older Agent version); then our delayed write still matches the version and lands after
``recover`` answered True.

So the breach needs, in this order: a synchronize that writes the record, a change of the Agent's
configuration (so that the next synchronize has something to write), a synchronize whose write is held when
its host is lost, ``recover`` of that operation, and only then the held write's release. With no record, or
a record the lost operation wrote itself, it fences like the reference.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only ``recover``.
"""

from __future__ import annotations

import logging

from reference_provider.deployment import DeploymentError, record_path
from reference_provider.provider import ReferenceProvider

logger = logging.getLogger("broken_recover_truth_superseded")


class Provider(ReferenceProvider):
    name = "broken-recover-truth-superseded"

    async def recover(self, *, operation):
        client = self._client(None, deadline=operation.deadline)
        try:
            _version, value = await self._read_record(client, record_path("agents", operation.agent_id))
        except DeploymentError as exc:
            logger.warning("recover operation=%s: record not read (%s)", operation.operation_id, exc)
            return False
        writer = value.get("written_by") if isinstance(value, dict) else None
        if writer and writer != operation.operation_id:
            logger.info(
                "recover operation=%s: the record was last written by %s; a late write would be refused",
                operation.operation_id,
                writer,
            )
            return True  # no fence: a write held since before that record version can still land
        return await super().recover(operation=operation)
