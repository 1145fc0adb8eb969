"""Deliberately broken fixture for BOUND-MATERIAL: session-bound but prepare_session returns no material.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks BOUND-MATERIAL; everything else stays correct.
"""

from __future__ import annotations

from astrabox.seams import RuntimeMaterials
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-bound-material"

    async def prepare_session(self, *, context):
        client = self._client(context.config)
        await self._enforce_session_consent(client, context)
        return RuntimeMaterials()

    async def prepare_turn(self, *, context):
        # Nothing was delivered at Session start, so there is nothing to refresh (keeps TURN-FILES-ONLY).
        client = self._client(None, deadline=context.deadline)
        await self._enforce_turn_consent(client, context)
        return RuntimeMaterials()
