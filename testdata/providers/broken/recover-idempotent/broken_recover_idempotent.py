"""Deliberately broken fixture for RECOVER-IDEMPOTENT: a second recover of the same operation returns False.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks RECOVER-IDEMPOTENT; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.deployment import record_path
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-recover-idempotent"

    async def recover(self, *, operation):
        if not await super().recover(operation=operation):
            return False
        client = self._client(None, deadline=operation.deadline)
        # "Only the first recovery counts": kept in the deployment, so it flips on every replica.
        answer = await client.request(
            "PUT", record_path("recoveries", operation.operation_id), {"value": {"recovered": True}}, if_match=0
        )
        return answer.status == 200
