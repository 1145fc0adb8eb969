"""Ridgeline, with a "turn started" marker written first in every turn as a task the turn forgets when it is
cancelled (ensure_future + shield, but no drain): the PUT goes on after the turn unwound."""
import asyncio

from ridgeline.provider import RidgelineProvider


class Provider(RidgelineProvider):
    name = "broken-gen-cancel-clean-aiohttp"

    async def prepare_turn(self, *, context):
        started = asyncio.ensure_future(self._call(
            "PUT", f"/v2/markers/turn-started/{context.session_id}/{context.dispatch_attempt_id}",
            json={"session": context.session_id, "attempt": context.dispatch_attempt_id}))
        try:
            await asyncio.shield(started)
        except asyncio.CancelledError:
            raise  # the marker is best effort; let the platform have its cancellation at once
        return await super().prepare_turn(context=context)
