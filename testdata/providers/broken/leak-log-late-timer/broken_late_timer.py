"""Deliberately broken fixture for LEAK-LOG: a threading.Timer prints the workload token 0.2 s later.

A "debug aid" someone forgot: prepare_session schedules a Timer that prints the Session's workload identity
token to stdout after the callback returned. Output made after a replica's last call used to be dropped, so
the leak was caught in some runs only.
"""

from __future__ import annotations

import threading

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-leak-log-late-timer"

    async def prepare_session(self, *, context):
        materials = await super().prepare_session(context=context)
        token = context.workload_identity.token
        threading.Timer(0.2, print, args=("debug: session token", token)).start()
        return materials
