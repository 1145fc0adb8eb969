"""Deliberately broken fixture for LEAK-CROSS-SESSION: session material is cached per Agent, not per principal.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks LEAK-CROSS-SESSION; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.deployment import record_path
from reference_provider.provider import ReferenceProvider, _document_bytes, _mapping, _number

from astrabox.seams import RuntimeFile, RuntimeMaterials

import time


class Provider(ReferenceProvider):
    name = "broken-leak-cross-session"

    async def prepare_session(self, *, context):
        client = self._client(context.config)
        await self._enforce_session_consent(client, context)
        path = record_path("session-material", context.agent_id)  # per Agent: the breach
        version, stored = await self._read_record(client, path)
        document = _mapping(_mapping(stored).get("document"))
        if not document or _number(document.get("expires_at")) - time.time() <= self.MIN_REMAINING_SECONDS:
            audience = _mapping(context.config.get("deployment")).get("audience") or self._audience()
            document = await self._issue(client, context.principal_id, audience)
            await client.request("PUT", path, {"value": {"document": document}}, if_match=version)
        return RuntimeMaterials(
            files=(RuntimeFile(name=self.TOKEN_FILE, content=_document_bytes(document)),),
            environment=self._session_environment(context),
        )
