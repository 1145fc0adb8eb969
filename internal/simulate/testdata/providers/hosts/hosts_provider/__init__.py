"""A provider that reports the host it runs on and leaves work behind, for the simulator's isolation and
settling tests. Standard library only.

- plan: the declaration holds the replica's view of its host: the string-hash order of a set, HOME, the
  temporary directory, sysconfig's user base (computed from HOME), and what a marker file under the
  temporary directory held before plan wrote it.
- synchronize: starts a thread that prints "late-output" 0.4 s after synchronize returned and writes
  PUT /v1/records/late/<agent> 0.2 s later.
- prepare_session: raises SystemExit(3) for principal "exiter", KeyboardInterrupt for "interrupter".
"""
from __future__ import annotations

import json
import os
import sysconfig
import tempfile
import threading
import time
import urllib.request

from astrabox.seams import RuntimePreparationPlan, RuntimePreparationProvider


def _put(path):
    req = urllib.request.Request(os.environ["ASTRABOX_DOUBLE_URL"] + path, data=b"{\"value\": 1}", method="PUT",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()


class Hosts(RuntimePreparationProvider):
    name = "hosts"

    def plan(self, *, config):
        marker = os.path.join(tempfile.gettempdir(), "hosts-marker")
        seen = None
        if os.path.exists(marker):
            with open(marker) as fh:
                seen = fh.read()
        with open(marker, "w") as fh:
            fh.write(os.environ.get("ASTRABOX_REPLICA", "?"))
        order = list({"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"})
        return RuntimePreparationPlan(declaration={"order": order, "home": os.path.expanduser("~"),
                                                   "tmp": tempfile.gettempdir(), "seen": seen,
                                                   "userbase": sysconfig.get_config_var("userbase")})

    async def synchronize(self, *, context):
        agent = context.operation.agent_id

        def later():
            time.sleep(0.4)
            print("late-output", flush=True)
            time.sleep(0.2)
            _put("/v1/records/late/" + agent)

        threading.Thread(target=later, name="late-writer").start()

    async def prepare_session(self, *, context):
        if context.principal_id == "exiter":
            raise SystemExit(3)
        if context.principal_id == "interrupter":
            raise KeyboardInterrupt
        return None
