"""Deliberately broken fixture for RECOVER-TRUTH, through a service: recover writes its fence under the Agent, which the Vault does not enforce.

It subclasses the vault-oauth example (examples/providers/vault-oauth, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks RECOVER-TRUTH; the offending write goes to the
Fabrikam Vault (its fake), never to the kit's deployment double.
"""

from __future__ import annotations

from fabrikam_vault.provider import VaultOAuthProvider
from fabrikam_vault.vault import Written


class Provider(VaultOAuthProvider):
    name = "broken-recover-truth-vault"

    async def recover(self, *, operation):
        # A "fence" keyed by the Agent, not by the operation: Vault answers 200 but refuses nothing, so a
        # held write of the operation, released later, is still applied.
        vault = self._vault(deadline=operation.deadline)
        version, _data = await vault.read("agent-fences", operation.agent_id)
        outcome = await vault.write({"operation_id": operation.operation_id}, version, "agent-fences", operation.agent_id)
        return outcome == Written.OK
