"""A provider that tries to move the harness into its parent's process group (where signals meant for the
harness would miss it, and signals for that group would reach it), ignores SIGTERM and then blocks the event
loop after its reply, so that only SIGKILL ends it. It says on stdout whether the move worked, and creates the
file ASTRABOX_TEST_BLOCKED names (if set) once the loop is blocked."""

import asyncio
import os
import signal
import time

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


def block():
    marker = os.environ.get("ASTRABOX_TEST_BLOCKED")
    if marker:
        with open(marker, "w"):
            pass
    time.sleep(3600)


class Provider(RuntimePreparationProvider):
    name = "hostile-joingroup"

    async def prepare_session(self, *, context):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            os.setpgid(0, os.getpgid(os.getppid()))
            print("joined group", os.getpgid(0))
        except OSError as exc:
            print("setpgid failed:", exc.errno)
        asyncio.get_running_loop().call_later(0.05, block)
        return RuntimeMaterials()
