"""Deliberately broken fixture for LEAK-LOG: logs the workload identity token.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks LEAK-LOG; everything else stays correct.
"""

from __future__ import annotations

import logging

from reference_provider.provider import ReferenceProvider

logger = logging.getLogger("broken_leak_log")


class Provider(ReferenceProvider):
    name = "broken-leak-log"

    async def prepare_session(self, *, context):
        logger.info("exchanging workload identity %s for %s", context.workload_identity.token, context.principal_id)
        return await super().prepare_session(context=context)
