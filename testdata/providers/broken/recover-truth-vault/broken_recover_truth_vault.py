"""Deliberately broken fixture for RECOVER-TRUTH, through a service: recover takes an absent result in the Vault as proof and writes no fence.

It subclasses the vault-oauth example (examples/providers/vault-oauth, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks RECOVER-TRUTH; the offending write goes to the
Fabrikam Vault (its fake), never to the kit's deployment double.
"""

from __future__ import annotations

import logging

from fabrikam_vault.provider import VaultOAuthProvider

logger = logging.getLogger("broken_recover_truth_vault")


class Provider(VaultOAuthProvider):
    name = "broken-recover-truth-vault"

    async def recover(self, *, operation):
        # An absent result in Vault is taken as proof that the operation is over: no fence is written, so a
        # held write of the operation, released later, is still applied by the Vault.
        _version, data = await self._vault(deadline=operation.deadline).read("agents", operation.agent_id)
        if not data or data.get("written_by") != operation.operation_id:
            logger.info("recover operation=%s: no result in vault, assuming it is quiescent", operation.operation_id)
            return True
        return await super().recover(operation=operation)
