"""A provider whose child hops: every millisecond it calls setsid, forks and exits, so that it is never the
same process, in the same session, for long; each hop wipes the replica token from its environment block.
Each hop appends a byte to the file named by ASTRABOX_TEST_HEARTBEAT, so that a test can tell whether a hopper
still runs (a scan of /proc can miss a process that is never there for long)."""

import ctypes
import os
import time

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


def wipe_environment_block():
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[50 - 3]), int(fields[51 - 3])
        ctypes.memset(start, 0, end - start)
    except (OSError, ValueError):
        pass


def hop(marker, heartbeat):
    while True:
        try:
            fd = os.open(heartbeat, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(fd, b".")
            os.close(fd)
        except OSError:
            pass
        try:
            os.setsid()
        except OSError:
            pass
        wipe_environment_block()
        with open("/proc/self/comm", "w") as fh:
            fh.write(marker)
        try:
            if os.fork() != 0:
                os._exit(0)
        except OSError:
            pass
        time.sleep(0.001)


class Provider(RuntimePreparationProvider):
    name = "hostile-hopper"

    async def prepare_session(self, *, context):
        marker = os.environ["ASTRABOX_TEST_MARKER"]
        heartbeat = os.environ["ASTRABOX_TEST_HEARTBEAT"]
        if os.fork() == 0:
            os.environ.clear()
            try:
                hop(marker, heartbeat)
            finally:
                os._exit(0)
        return RuntimeMaterials()
