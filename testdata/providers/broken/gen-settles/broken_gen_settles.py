"""Deliberately broken fixture for GEN-SETTLES: prepare_session blocks the event loop.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks GEN-SETTLES; everything else stays correct.
"""

from __future__ import annotations

import time

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-gen-settles"

    async def prepare_session(self, *, context):
        time.sleep(3600)  # "wait for the token service to warm up": blocks the whole event loop
        return await super().prepare_session(context=context)
