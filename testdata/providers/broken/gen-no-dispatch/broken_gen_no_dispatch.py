"""Deliberately broken fixture for GEN-NO-DISPATCH: prepare_turn dispatches input.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks GEN-NO-DISPATCH; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.deployment import DeploymentError
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-gen-no-dispatch"

    async def prepare_turn(self, *, context):
        materials = await super().prepare_turn(context=context)
        if not context.refresh:
            client = self._client(None, deadline=context.deadline)
            # "Warm the engine up" by dispatching a probe: the platform owns dispatch.
            answer = await client.request("POST", "/v1/dispatch", {"session_id": context.session_id, "input": "ping"})
            if answer.status not in (200, 202):
                raise DeploymentError("POST /v1/dispatch answered %d" % answer.status)
        return materials
