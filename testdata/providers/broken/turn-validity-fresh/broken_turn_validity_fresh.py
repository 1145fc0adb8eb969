"""Deliberately broken fixture for TURN-VALIDITY-FRESH: a refresh returns the stored material unchanged.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks TURN-VALIDITY-FRESH; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-turn-validity-fresh"

    async def _renew_attempt(self, client, path, context):
        _version, stored = await self._load_attempt(client, path)
        if stored:
            return dict(stored), "returned the stored material again"  # same bytes, same expiry
        return await super()._renew_attempt(client, path, context)
