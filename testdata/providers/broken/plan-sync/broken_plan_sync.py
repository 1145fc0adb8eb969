"""Deliberately broken fixture for PLAN-SYNC: plan is a coroutine function.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks PLAN-SYNC; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-plan-sync"

    async def plan(self, *, config):  # type: ignore[override]
        return super().plan(config=config)
