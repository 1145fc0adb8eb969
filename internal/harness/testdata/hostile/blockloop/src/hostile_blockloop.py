"""A provider that blocks the event loop forever with a synchronous sleep."""

import time

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


def stuck_forever():
    time.sleep(3600)


class Provider(RuntimePreparationProvider):
    name = "hostile-blockloop"

    async def prepare_session(self, *, context):
        stuck_forever()
        return RuntimeMaterials()
