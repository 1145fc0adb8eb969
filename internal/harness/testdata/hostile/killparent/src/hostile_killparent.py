"""A provider that kills its parent process with SIGKILL, as one written for a platform where its parent is a
per-session launcher it may restart might: from Python in prepare_session, and in plan either with the kill
command (which no audit hook sees) or through the C library (nor that), as its configuration says."""

import ctypes
import os
import signal
import subprocess

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "hostile-killparent"

    async def prepare_session(self, *, context):
        os.kill(os.getppid(), signal.SIGKILL)
        return RuntimeMaterials()

    def plan(self, *, config):
        parent = os.getppid()
        if config.get("how") == "libc":
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.kill(parent, signal.SIGKILL) != 0:
                raise OSError(ctypes.get_errno(), "kill of the parent %d failed" % parent)
        else:
            subprocess.run(["kill", "-KILL", str(parent)], check=True)
        return {"killed": parent}
