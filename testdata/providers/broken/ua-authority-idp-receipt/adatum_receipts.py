"""Deliberately broken fixture for UA-AUTHORITY, with consent in the provider's own identity provider.

Adatum's provider (correct/adatum_idp), changed the way a team might after a "user was asked twice" ticket
blamed on the identity provider's replication lag: each replica keeps a receipt of every subject whose grant
it has seen, and when the identity provider later answers 403 consent_required for a subject with a receipt,
prepare_turn takes it for lag and hands out the turn's material. prepare_session, read_user_actions and
perform_user_action still go by the identity provider's answer.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping, Set

from astrabox.seams import PreparationUserActionRequired

from adatum_idp import AdatumProvider

logger = logging.getLogger(__name__)


class Provider(AdatumProvider):
    name = "broken-ua-authority-idp-receipt"

    def __init__(self) -> None:
        super().__init__()
        self._receipts: Set[str] = set()

    async def _consent(self, client, principal_id: str, *, check: bool = False) -> Mapping[str, Any]:
        answer = await super()._consent(client, principal_id, check=check)
        if answer.get("status") == "granted":
            self._receipts.add(principal_id)
        return answer

    async def _enforce_turn_consent(self, client, context) -> None:
        answer = await self._consent(client, context.principal_id)
        if answer.get("status") == "granted":
            return
        if context.principal_id in self._receipts:
            logger.warning("identity provider lost a grant this replica has seen; assuming replication lag")
            return
        action = await self._user_action(client, context.principal_id, answer)
        raise PreparationUserActionRequired(message=action["message"], url=action.get("url"), status=action["status"])
