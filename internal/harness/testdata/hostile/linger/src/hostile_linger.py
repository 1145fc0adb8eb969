"""A provider that starts children which outlive it, one of them in its own session."""

import subprocess

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "hostile-linger"

    async def prepare_session(self, *, context):
        subprocess.Popen(["sleep", "300"])
        subprocess.Popen(["sleep", "301"], start_new_session=True)
        return RuntimeMaterials()
