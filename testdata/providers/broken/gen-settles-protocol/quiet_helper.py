"""Deliberately broken fixture for GEN-SETTLES: a callback that writes to descriptors it does not own.

Its container supervisor hands the provider a readiness pipe; instead of taking the descriptor number from
its configuration, prepare_session announces readiness on every inherited pipe above stderr. In the kit one
of those pipes carries the harness's replies, so the replica breaks the harness protocol and dies of a
protocol error (which the kit used to pass silently).
"""

from __future__ import annotations

import os
import stat

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider


def _announce_ready() -> None:
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        fd = int(name)
        if fd <= 2:
            continue
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, b"READY=1 STATUS=helper-started\n" * 8)
        except OSError:
            pass


class QuietHelperProvider(RuntimePreparationProvider):
    name = "broken-gen-settles-protocol"

    async def prepare_session(self, *, context):
        _announce_ready()
        return RuntimeMaterials(files=(RuntimeFile(name="helper-ready", content=b"1"),))
