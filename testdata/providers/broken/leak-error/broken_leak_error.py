"""Deliberately broken fixture for LEAK-ERROR: one error text holds the model API key.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks LEAK-ERROR; everything else stays correct.
"""

from __future__ import annotations

import asyncio
from typing import Optional

from reference_provider.provider import ReferenceProvider

_KEY: Optional[str] = None


def _remember(config) -> None:
    global _KEY
    secrets_section = config.get("secrets") or {}
    key = secrets_section.get("model_api_key")
    if isinstance(key, str):
        _KEY = key


class Provider(ReferenceProvider):
    name = "broken-leak-error"

    def plan(self, *, config):
        _remember(config)
        return super().plan(config=config)

    async def synchronize(self, *, context):
        _remember(context.config)
        await super().synchronize(context=context)

    async def prepare_session(self, *, context):
        _remember(context.config)
        return await super().prepare_session(context=context)

    async def prepare_turn(self, *, context):
        # A warm-up probe before every turn; when the platform cancels the turn during it, the
        # cancellation is re-raised with a message that names the key the probe was using.
        try:
            await asyncio.sleep(0.2)
        except asyncio.CancelledError:
            raise asyncio.CancelledError("turn cancelled while the warm-up probe held model key %s" % _KEY) from None
        return await super().prepare_turn(context=context)
