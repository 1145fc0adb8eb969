"""A provider that ignores SIGTERM and leaves the harness unable to shut down.

prepare_session returns normally, but first it ignores SIGTERM, schedules a
callback that blocks the event loop right after the reply, and replaces
sys.stdout and sys.stderr with streams whose flush never returns. Once all of
that is in place it creates the file ASTRABOX_TEST_BLOCKED names, if set, so a
test waits for the event rather than for a guessed time.
"""

import os

import asyncio
import signal
import sys
import threading
import time

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider


class NeverFlushes:
    def __init__(self, inner):
        self._inner = inner

    def write(self, s):
        return len(s)

    def flush(self):
        threading.Event().wait()

    def __getattr__(self, name):
        return getattr(self._inner, name)


def hang_in_close():
    time.sleep(0.2)
    sys.stdout = NeverFlushes(sys.stdout)
    sys.stderr = NeverFlushes(sys.stderr)
    mark_blocked()
    time.sleep(3600)


def mark_blocked():
    marker = os.environ.get("ASTRABOX_TEST_BLOCKED")
    if marker:
        with open(marker, "w"):
            pass


class Provider(RuntimePreparationProvider):
    name = "hostile-ignoreterm"

    async def prepare_session(self, *, context):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        asyncio.get_running_loop().call_later(0.05, hang_in_close)
        return RuntimeMaterials()
