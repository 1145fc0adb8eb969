"""Deliberately broken fixture for LEAK-ERROR: one error text holds the model API key.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks LEAK-ERROR; everything else stays correct.
"""

from __future__ import annotations

from typing import Optional

from reference_provider.provider import ReferenceProvider

_KEY: Optional[str] = None
_RAISED = False


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
        global _RAISED
        if _KEY is not None and not _RAISED:
            _RAISED = True
            raise RuntimeError("warm-up probe rejected model key %s; retry the message" % _KEY)
        return await super().prepare_turn(context=context)
