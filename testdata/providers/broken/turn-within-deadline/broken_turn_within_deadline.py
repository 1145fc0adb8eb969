"""Deliberately broken fixture for TURN-WITHIN-DEADLINE: swallows the cancellation and returns late.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks TURN-WITHIN-DEADLINE; everything else stays correct.

When the platform cancels prepare_turn, it catches the CancelledError and, instead of letting it propagate,
returns the last material this replica returned for the Session (a "best effort" fallback). It does no
further I/O, so it settles quickly after the cancellation: the breach is the ignored cancellation, not a hang.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Dict

from astrabox.seams import RuntimeMaterials
from reference_provider.provider import ReferenceProvider

logger = logging.getLogger("broken_turn_within_deadline")


class Provider(ReferenceProvider):
    name = "broken-turn-within-deadline"

    def __init__(self) -> None:
        super().__init__()
        self._last: Dict[str, RuntimeMaterials] = {}

    async def prepare_session(self, *, context):
        materials = await super().prepare_session(context=context)
        self._last[context.session_id] = RuntimeMaterials(files=materials.files)
        return materials

    async def prepare_turn(self, *, context):
        try:
            materials = await super().prepare_turn(context=context)
        except asyncio.CancelledError:
            logger.info("prepare_turn attempt=%s interrupted; finishing anyway", context.dispatch_attempt_id)
            await asyncio.sleep(0.05)
            return self._last.get(context.session_id) or RuntimeMaterials()
        self._last[context.session_id] = materials
        return materials
