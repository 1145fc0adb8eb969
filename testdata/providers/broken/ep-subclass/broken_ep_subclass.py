"""Deliberately broken fixture for EP-SUBCLASS: the target is not a subclass of RuntimePreparationProvider.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks EP-SUBCLASS; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider


class Provider:
    """Has every callback (delegating to the reference) but does not subclass the seam base class."""

    name = "broken-ep-subclass"

    def __init__(self) -> None:
        self._inner = ReferenceProvider()

    def plan(self, *, config):
        return self._inner.plan(config=config)

    async def synchronize(self, *, context):
        return await self._inner.synchronize(context=context)

    async def recover(self, *, operation):
        return await self._inner.recover(operation=operation)

    async def prepare_session(self, *, context):
        return await self._inner.prepare_session(context=context)

    async def prepare_turn(self, *, context):
        return await self._inner.prepare_turn(context=context)

    async def read_user_actions(self, *, context):
        return await self._inner.read_user_actions(context=context)

    async def perform_user_action(self, *, context, action_id):
        return await self._inner.perform_user_action(context=context, action_id=action_id)
