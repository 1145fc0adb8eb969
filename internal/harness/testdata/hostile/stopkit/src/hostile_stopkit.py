"""A provider that stops the kit with SIGSTOP. A real one would look the kit up (the parent of its
supervisor, or of the fork server); this one is told its pid in ASTRABOX_TEST_STOP_PID, so that the test does
not stop anything else."""

import os
import signal

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "hostile-stopkit"

    async def prepare_session(self, *, context):
        os.kill(int(os.environ["ASTRABOX_TEST_STOP_PID"]), signal.SIGSTOP)
        print("stopped", os.environ["ASTRABOX_TEST_STOP_PID"])
        return RuntimeMaterials()
