"""Deliberately broken fixture for UA-IDEMPOTENT: each perform_user_action creates a new record.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks UA-IDEMPOTENT; everything else stays correct.
"""

from __future__ import annotations

import uuid

from reference_provider.deployment import record_path
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-ua-idempotent"

    async def perform_user_action(self, *, context, action_id):
        client = self._client(None)
        # An audit entry per click, under a fresh key: a duplicate write on every repetition.
        await client.request(
            "PUT",
            record_path("consent-checks", context.owner_id, uuid.uuid4().hex),
            {"value": {"session_id": context.session_id, "action": action_id}},
        )
        return await super().perform_user_action(context=context, action_id=action_id)
