"""Deliberately broken fixture for SYNC-NO-LOG-CONFIG: logs the Agent instructions.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SYNC-NO-LOG-CONFIG; everything else stays correct.
"""

from __future__ import annotations

import logging

from reference_provider.provider import ReferenceProvider

logger = logging.getLogger("broken_sync_no_log_config")


class Provider(ReferenceProvider):
    name = "broken-sync-no-log-config"

    async def synchronize(self, *, context):
        agent = context.config.get("agent") or {}
        logger.info("synchronizing agent %s with instructions %r", context.operation.agent_id, agent.get("instructions"))
        await super().synchronize(context=context)
