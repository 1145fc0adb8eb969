"""A provider that crashes the interpreter by reading address 0."""

import ctypes

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "hostile-segfault"

    async def prepare_session(self, *, context):
        ctypes.string_at(0)
        return RuntimeMaterials()
