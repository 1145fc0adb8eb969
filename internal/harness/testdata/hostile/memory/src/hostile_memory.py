"""A provider that allocates memory without bound."""

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider

HOARD = []


class Provider(RuntimePreparationProvider):
    name = "hostile-memory"

    async def prepare_session(self, *, context):
        while True:
            HOARD.append(b"\x01" * (32 << 20))
        return RuntimeMaterials()
