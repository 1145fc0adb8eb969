"""Deliberately broken fixture for SYNC-QUIESCENT, through a service: synchronize leaves its Vault write running in a task and returns.

It subclasses the vault-oauth example (examples/providers/vault-oauth, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SYNC-QUIESCENT; the offending write goes to the
Fabrikam Vault (its fake), never to the kit's deployment double.
"""

from __future__ import annotations

import asyncio

from fabrikam_vault.provider import VaultOAuthProvider

_TASKS = set()  # keeps the write-behind tasks alive


class Provider(VaultOAuthProvider):
    name = "broken-sync-quiescent-vault"

    async def _write_if_changed(self, vault, key, spec, operation):
        version, data = await vault.read(*key)
        if data is not None and data.get("spec") == spec:
            return "unchanged"

        async def write_behind():
            await asyncio.sleep(0.2)  # batch the write "later"
            await vault.write({"spec": spec, "written_by": operation.operation_id}, version, *key)

        task = asyncio.ensure_future(write_behind())  # not awaited: synchronize returns before the write
        _TASKS.add(task)
        task.add_done_callback(_TASKS.discard)
        return "queued"
