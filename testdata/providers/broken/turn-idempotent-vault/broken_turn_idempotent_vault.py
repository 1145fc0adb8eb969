"""Deliberately broken fixture for TURN-IDEMPOTENT, through a service: every prepare_turn issues a new token and overwrites the attempt's secret.

It subclasses the vault-oauth example (examples/providers/vault-oauth, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks TURN-IDEMPOTENT; the offending write goes to the
Fabrikam Vault (its fake), never to the kit's deployment double.
"""

from __future__ import annotations

from fabrikam_vault.provider import VaultOAuthProvider


class Provider(VaultOAuthProvider):
    name = "broken-turn-idempotent-vault"

    async def _attempt_material(self, vault, key, context, audience):
        # The stored material is never reused: a retry of the same attempt gets a new token, written over the
        # first with check-and-set on the version it just read.
        version, _stored = await vault.read(*key)
        material = await self._new_material(context, audience)
        await vault.write(material, version, *key)
        return material, "issued material for the attempt"
