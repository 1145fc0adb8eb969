"""Brightwave, plus a fire-and-forget audit event: prepare_turn schedules the POST on the loop and returns
without waiting for it, so the write lands after the callback returned."""
import asyncio

from astrabox.seams import RuntimeMaterials, TurnPreparationContext

from brightwave.provider import BrightwaveProvider

_background = set()


class Provider(BrightwaveProvider):
    name = "broken-gen-no-dispatch-httpx"

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        materials = await super().prepare_turn(context=context)
        task = asyncio.get_running_loop().create_task(self._audit(context))
        _background.add(task)
        task.add_done_callback(_background.discard)
        return materials

    async def _audit(self, context: TurnPreparationContext) -> None:
        await asyncio.sleep(0.2)  # batch with whatever else happens in this turn
        await self._send("POST", "/v1/audit-events", json={"kind": "turn-prepared", "session": context.session_id,
                                                          "attempt": context.dispatch_attempt_id},
                         headers={"Idempotency-Key": f"audit/{context.session_id}/{context.dispatch_attempt_id}"})
