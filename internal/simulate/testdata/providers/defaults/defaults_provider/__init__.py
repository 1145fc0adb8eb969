"""Providers that rely on the seam's defaults, for the simulator's EP-DEFAULTS and RECOVER-DEFAULT tests."""
import asyncio

from astrabox.seams import RuntimePreparationProvider


class Defaults(RuntimePreparationProvider):
    """Overrides nothing but its name: every point takes its default."""

    name = "defaults"


class SlowSync(RuntimePreparationProvider):
    """Overrides only synchronize, which never finishes in time; recover keeps its default."""

    name = "slow-sync"

    async def synchronize(self, *, context):
        await asyncio.sleep(30)
