"""Deliberately broken fixture for UA-AUTHORITY: a state read that found consent granted is cached as permission.

The author wanted turns to stop waiting for the consent service: once ``read_user_actions`` has seen that a
principal's consent is granted, this replica remembers it and ``prepare_turn`` skips its own consent check
for that principal. Nothing forgets the entry when consent is withdrawn, so a turn on the same replica after
the principal's consent became pending again gets material.

So the breach needs, in this order: a Session of a principal whose consent is granted, a user-action state
read of that Session on some replica, the principal's consent turning pending, and a turn of that Session on
the replica that read (the cache is this process's memory: another replica, or the same one after its host
was lost, checks consent as it should).

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only the state read and the turn's consent enforcement.
"""

from __future__ import annotations

from typing import Set

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-ua-authority-read-cache"

    def __init__(self) -> None:
        super().__init__()
        self._granted_seen: Set[str] = set()

    async def read_user_actions(self, *, context):
        state = await super().read_user_actions(context=context)
        if state.ready:
            self._granted_seen.add(context.owner_id)
        return state

    async def _enforce_turn_consent(self, client, context):
        if context.principal_id in self._granted_seen:
            return  # granted when the state was last read here: spare the consent service
        await super()._enforce_turn_consent(client, context)
