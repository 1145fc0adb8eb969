"""Deliberately broken fixture for GEN-NO-DISPATCH: prepare_session dispatches input.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks GEN-NO-DISPATCH; everything else stays correct.
(The dispatch is in prepare_session rather than prepare_turn so that turn retries stay free of new external
writes and only GEN-NO-DISPATCH breaks.)
"""

from __future__ import annotations

from reference_provider.deployment import DeploymentError
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-gen-no-dispatch"

    async def prepare_session(self, *, context):
        materials = await super().prepare_session(context=context)
        client = self._client(None)
        # "Warm the engine up" by dispatching a probe input: the platform owns dispatch.
        answer = await client.request("POST", "/v1/dispatch", {"session_id": context.session_id, "input": "ping"})
        if answer.status not in (200, 202):
            raise DeploymentError("POST /v1/dispatch answered %d" % answer.status)
        return materials
