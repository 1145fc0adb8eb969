"""Deliberately broken fixture for TURN-WITHIN-DEADLINE: swallows the cancellation and returns late.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks TURN-WITHIN-DEADLINE; everything else stays correct.
"""

from __future__ import annotations

import asyncio
import logging

from reference_provider.provider import ReferenceProvider

logger = logging.getLogger("broken_turn_within_deadline")


class Provider(ReferenceProvider):
    name = "broken-turn-within-deadline"

    async def prepare_turn(self, *, context):
        try:
            return await super().prepare_turn(context=context)
        except asyncio.CancelledError:
            logger.info("prepare_turn attempt=%s interrupted; finishing anyway", context.dispatch_attempt_id)
            await asyncio.sleep(0.5)
            return await super().prepare_turn(context=context)
