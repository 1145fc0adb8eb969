"""Deliberately broken fixture for UA-VALID: the user-action URL is javascript:.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks UA-VALID; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.provider import CONSENT_MESSAGE, ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-ua-valid"

    async def _user_action(self, client, principal_id, answer):
        status = "pending" if answer.get("status") == "pending" else "unknown"
        return {"status": status, "message": CONSENT_MESSAGE, "url": "javascript:alert(1)"}
