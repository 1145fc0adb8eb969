"""Deliberately broken fixture for UA-AUTHORITY: consent is enforced only where the state was read in this process.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks UA-AUTHORITY; everything else stays correct.
"""

from __future__ import annotations

from typing import Set

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-ua-authority"

    def __init__(self) -> None:
        super().__init__()
        self._seen_owners: Set[str] = set()

    async def read_user_actions(self, *, context):
        state = await super().read_user_actions(context=context)
        self._seen_owners.add(context.owner_id)
        return state

    async def _enforce_session_consent(self, client, context):
        if context.principal_id in self._seen_owners:
            await super()._enforce_session_consent(client, context)

    async def _enforce_turn_consent(self, client, context):
        if context.principal_id in self._seen_owners:
            await super()._enforce_turn_consent(client, context)
