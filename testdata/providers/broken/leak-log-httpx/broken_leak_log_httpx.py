"""Brightwave, with a support engineer's debugging line left in: the turn's credential secret is logged at
INFO."""
import json
import logging

from astrabox.seams import RuntimeMaterials, TurnPreparationContext

from brightwave.provider import BrightwaveProvider

log = logging.getLogger("brightwave.turns")


class Provider(BrightwaveProvider):
    name = "broken-leak-log-httpx"

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        materials = await super().prepare_turn(context=context)
        doc = json.loads(materials.files[0].content)
        log.info("turn %s uses credential %s (secret %s)", context.dispatch_attempt_id, doc["credential_id"], doc["secret"])
        return materials
