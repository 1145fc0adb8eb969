"""Deliberately broken fixture for SYNC-SKIP-UNCHANGED, through a service: synchronize writes the Agent record even when it is unchanged.

It subclasses the vault-oauth example (examples/providers/vault-oauth, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SYNC-SKIP-UNCHANGED; the offending write goes to the
Fabrikam Vault (its fake), never to the kit's deployment double.
"""

from __future__ import annotations

from fabrikam_vault.provider import VaultOAuthProvider
from fabrikam_vault.vault import Written


class Provider(VaultOAuthProvider):
    name = "broken-sync-skip-unchanged-vault"

    async def _write_if_changed(self, vault, key, spec, operation):
        # Reads the version for check-and-set, but never compares: an unchanged record is written again.
        version, _data = await vault.read(*key)
        outcome = await vault.write({"spec": spec, "written_by": operation.operation_id}, version, *key)
        return "written" if outcome == Written.OK else outcome
