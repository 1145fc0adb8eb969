"""Deliberately broken fixture for UA-STATE: ready=False without a user_action.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks UA-STATE; everything else stays correct.
"""

from __future__ import annotations

from astrabox.seams import SessionUserActionState
from reference_provider.provider import CHECK_CONSENT, ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-ua-state"

    async def _state(self, client, principal_id, answer):
        if answer.get("status") == "granted":
            return SessionUserActionState(ready=True)
        return SessionUserActionState(ready=False, actions=(CHECK_CONSENT,))
