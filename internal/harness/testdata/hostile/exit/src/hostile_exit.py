"""A provider that ends its own process with os._exit."""

import os

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "hostile-exit"

    async def prepare_session(self, *, context):
        print("leaving now")
        os._exit(3)
        return RuntimeMaterials()
