"""Deliberately broken fixture for UA-IDEMPOTENT, through a service: every perform_user_action writes a new audit secret.

It subclasses the vault-oauth example (examples/providers/vault-oauth, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks UA-IDEMPOTENT; the offending write goes to the
Fabrikam Vault (its fake), never to the kit's deployment double.
"""

from __future__ import annotations

import uuid

from fabrikam_vault.provider import VaultOAuthProvider


class Provider(VaultOAuthProvider):
    name = "broken-ua-idempotent-vault"

    async def perform_user_action(self, *, context, action_id):
        # An audit entry per click, under a fresh key: a duplicate write on every repetition.
        await self._vault().write(
            {"session_id": context.session_id, "action": action_id}, 0, "consent-checks", context.owner_id, uuid.uuid4().hex
        )
        return await super().perform_user_action(context=context, action_id=action_id)
