"""A provider that writes garbage to every descriptor above 2, then closes them all."""

import os

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "hostile-fds"

    async def prepare_session(self, *, context):
        fds = [int(n) for n in os.listdir("/proc/self/fd") if int(n) > 2]
        for fd in fds:
            try:
                os.write(fd, b"garbage garbage garbage\n")
            except OSError:
                pass
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        return RuntimeMaterials()
