"""Deliberately broken fixture for SYNC-QUIESCENT, through a service: synchronize queues its Vault write and returns before it is made.

It subclasses the vault-oauth example (examples/providers/vault-oauth, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SYNC-QUIESCENT; the offending write goes to the
Fabrikam Vault (its fake), never to the kit's deployment double.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, List

from fabrikam_vault.provider import VaultOAuthProvider

_PENDING: List[Callable[[], Awaitable[Any]]] = []  # queued Vault writes of earlier operations in this process


async def _flush() -> None:
    while _PENDING:
        write = _PENDING.pop(0)
        await write()


class Provider(VaultOAuthProvider):
    name = "broken-sync-quiescent-vault"

    async def synchronize(self, *, context):
        await _flush()
        await super().synchronize(context=context)

    async def recover(self, *, operation):
        await _flush()
        return await super().recover(operation=operation)

    async def _write_if_changed(self, vault, key, spec, operation):
        version, data = await vault.read(*key)
        if data is not None and data.get("spec") == spec:
            return "unchanged"

        async def write() -> None:
            vault.deadline = None  # the operation's own deadline no longer applies
            await vault.write({"spec": spec, "written_by": operation.operation_id}, version, *key)

        _PENDING.append(write)  # write-behind: synchronize returns before the record is written
        return "queued"
