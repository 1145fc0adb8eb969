"""Deliberately broken fixture for TURN-WITHIN-DEADLINE: no turn can ever be delivered.

It reuses the raw asyncio-streams provider of correct/asyncio_streams and puts a fixed 1.2 s "mint
backoff" in front of every prepare_turn, while the project's turn deadline is 0.5 s. Cancellation is
honoured (CancelledError propagates), so the only breach is that, with no fault injected and consent
granted, prepare_turn never finishes within its deadline: every write is refused.
"""

from __future__ import annotations

import asyncio

from streamline import StreamlineProvider

MINT_BACKOFF_SECONDS = 1.2


class SlowMintProvider(StreamlineProvider):
    name = "broken-turn-within-deadline-slow"

    async def prepare_turn(self, *, context):
        await asyncio.sleep(MINT_BACKOFF_SECONDS)
        return await super().prepare_turn(context=context)
