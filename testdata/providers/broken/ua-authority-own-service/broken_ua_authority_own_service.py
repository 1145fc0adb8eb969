"""Deliberately broken fixture for UA-AUTHORITY, with consent in the provider's own consent service.

Fabrikam's provider, changed the way a team might "to spare the user a second prompt": prepare_turn still
reads consent from the consent service on every call, but raises only for Sessions whose user-action state
this process has read; elsewhere it logs the pending answer and hands out the turn's material.
"""

from __future__ import annotations

import logging
from typing import Set

from fabrikam_consent import FabrikamProvider

logger = logging.getLogger(__name__)


class Provider(FabrikamProvider):
    name = "broken-ua-authority-own-service"

    def __init__(self) -> None:
        super().__init__()
        self._read_sessions: Set[str] = set()

    async def read_user_actions(self, *, context):
        state = await super().read_user_actions(context=context)
        self._read_sessions.add(context.session_id)
        return state

    async def _enforce_turn_consent(self, client, context):
        answer = await self._consent(client, context.principal_id)
        if answer.get("status") == "granted" or context.session_id not in self._read_sessions:
            if answer.get("status") != "granted":
                logger.info("consent pending for a session not shown to the user yet; letting the turn through")
            return
        await super()._enforce_turn_consent(client, context)
