"""Deliberately broken fixture for GEN-CANCEL-CLEAN, through a service: a cancelled Vault write is left running in its thread.

It subclasses the vault-oauth example (examples/providers/vault-oauth, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks GEN-CANCEL-CLEAN; the offending write goes to the
Fabrikam Vault (its fake), never to the kit's deployment double.
"""

from __future__ import annotations

import asyncio
import json

from fabrikam_vault.http import ServiceError, request, timeout_for
from fabrikam_vault.provider import VaultOAuthProvider
from fabrikam_vault.vault import Vault


class HastyVault(Vault):
    async def start(self, *segments):
        body = json.dumps({"options": {"cas": 0}, "data": {"started": True}}).encode()
        # Plain to_thread: a cancellation returns at once while the thread (and its write) goes on.
        answer = await asyncio.to_thread(
            request, "POST", self._url(*segments), body=body, headers=self._headers(True), timeout=timeout_for(None)
        )
        if answer.status not in (200, 400):  # 400: a retry finds it created already
            raise ServiceError("vault write of turn-starts answered %d" % answer.status)


class Provider(VaultOAuthProvider):
    name = "broken-gen-cancel-clean-vault"

    def _vault(self, *, deadline=None, operation_id=None):
        return HastyVault(deadline=deadline, operation_id=operation_id)

    async def prepare_turn(self, *, context):
        # A first write per attempt (created once; a retry's is refused by check-and-set): when the platform cancels the turn while it is slowed, the thread keeps
        # going and the write lands after prepare_turn settled.
        await self._vault(deadline=context.deadline).start("turn-starts", context.session_id, context.dispatch_attempt_id)
        return await super().prepare_turn(context=context)
