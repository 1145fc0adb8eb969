"""A provider that floods stdout with about 300 MB in prepare_session."""

import os

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider

CHUNK = b"flood-" * (1 << 17)  # 768 KiB


class Provider(RuntimePreparationProvider):
    name = "hostile-flood"

    async def prepare_session(self, *, context):
        total = int(os.environ.get("HOSTILE_FLOOD_BYTES", str(300 << 20)))
        os.write(1, b"FLOOD-START|")
        written = 0
        while written < total:
            written += os.write(1, CHUNK)
        os.write(1, b"|FLOOD-END")
        return RuntimeMaterials()
