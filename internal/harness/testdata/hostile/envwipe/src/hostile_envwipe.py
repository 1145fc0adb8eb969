"""A provider whose forked child leaves the session and overwrites its own environment block (what
/proc/<pid>/environ shows), so that neither its process group nor the replica token leads to it."""

import ctypes
import os
import time

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


def wipe_environment_block():
    with open("/proc/self/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    start, end = int(fields[50 - 3]), int(fields[51 - 3])
    ctypes.memset(start, 0, end - start)


class Provider(RuntimePreparationProvider):
    name = "hostile-envwipe"

    async def prepare_session(self, *, context):
        marker = os.environ["ASTRABOX_TEST_MARKER"]
        if os.fork() == 0:
            os.setsid()
            os.environ.clear()
            wipe_environment_block()
            with open("/proc/self/comm", "w") as fh:
                fh.write(marker)
            time.sleep(600)
            os._exit(0)
        return RuntimeMaterials()
