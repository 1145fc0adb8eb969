"""Ridgeline, plus a "token minted" event POSTed by a task that the turn schedules when it mints an
attempt's token, and never awaits."""
import asyncio

from ridgeline.provider import RidgelineProvider

pending = set()


class Provider(RidgelineProvider):
    name = "broken-gen-no-dispatch-aiohttp"

    async def _mint(self, principal, session_id, attempt=""):
        doc = await super()._mint(principal, session_id, attempt)
        if attempt:
            task = asyncio.create_task(self._event(session_id, attempt))
            pending.add(task)
            task.add_done_callback(pending.discard)
        return doc

    async def _event(self, session_id, attempt):
        await asyncio.sleep(0.3)
        await self._call("POST", "/v2/events", json={"kind": "token-minted", "session": session_id, "attempt": attempt})
