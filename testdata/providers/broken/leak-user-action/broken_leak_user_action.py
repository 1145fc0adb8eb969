"""Deliberately broken fixture for LEAK-USER-ACTION: the issued credential is put in the user-action URL.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks LEAK-USER-ACTION; everything else stays correct.
"""

from __future__ import annotations

from urllib.parse import quote

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-leak-user-action"

    async def _user_action_url(self, client, principal_id, answer):
        url = await super()._user_action_url(client, principal_id, answer)
        if url is None:
            return None
        # "Pre-authorize" the consent page with a fresh credential: a secret in the URL.
        document = await self._issue(client, principal_id, self._audience())
        return url + ("&" if "?" in url else "?") + "assertion=" + quote(document["token"], safe="")
