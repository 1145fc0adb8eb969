"""Brightwave, with a first write per turn (PUT .../attempts/<aid>/started, the same body every call) made
with a plain await: a cancellation while it is in flight abandons httpx's request, which still reaches the
API after the turn unwound."""
from astrabox.seams import RuntimeMaterials, TurnPreparationContext

from brightwave.provider import BrightwaveProvider


class Provider(BrightwaveProvider):
    name = "broken-gen-cancel-clean-httpx"

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        await self.client.put(f"/v1/sessions/{context.session_id}/attempts/{context.dispatch_attempt_id}/started",
                              json={"principal": context.principal_id})
        return await super().prepare_turn(context=context)
