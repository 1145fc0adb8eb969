"""Lakeshore, plus an audit record ``turn-log/<session>/<attempt>`` written first thing in every turn, in a
plain ``asyncio.to_thread``: when the turn is cancelled, the thread's write goes on and lands afterwards."""
import asyncio
import time

from astrabox.seams import RuntimeMaterials, TurnPreparationContext

from lakeshore.provider import LakeshoreProvider


class Provider(LakeshoreProvider):
    name = "broken-gen-cancel-clean-hvac"

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        path = "turn-log/%s/%s" % (context.session_id, context.dispatch_attempt_id)
        await asyncio.to_thread(self._write, path, {"principal_id": context.principal_id, "at": time.time()}, 0)
        return await super().prepare_turn(context=context)
