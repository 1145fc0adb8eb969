"""A provider that starts children which outlive it: one in its group, one executed in its own session, and
one forked (never executed) into its own session."""

import os
import subprocess
import time

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "hostile-linger"

    async def prepare_session(self, *, context):
        subprocess.Popen(["sleep", "300"])
        subprocess.Popen(["sleep", "301"], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            time.sleep(302)
            os._exit(0)
        return RuntimeMaterials()
