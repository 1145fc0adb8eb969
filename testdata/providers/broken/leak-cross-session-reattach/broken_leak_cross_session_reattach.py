"""Deliberately broken fixture for LEAK-CROSS-SESSION: a reattachment reuses the Agent's last Session material.

The author keeps, per replica, the material this process last delivered for each Agent, to spare the
credential service when a Session is merely reattached (its box survived, only the attachment moved). The
cache is keyed by Agent instead of by principal and Session: when the last Session prepared for that Agent
on this replica belonged to another principal, the reattached Session receives that principal's credential.

So the breach needs, in this order: Sessions of two principals of one Agent, prepared on the same replica
(the cache is this process's memory), then a reattachment of the earlier one's Session on that replica.
Claims, cold starts and sandbox replacements issue fresh material as the reference does.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only ``prepare_session``.
"""

from __future__ import annotations

from typing import Dict, Tuple

from astrabox.seams import RuntimeFile, RuntimeMaterials

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-leak-cross-session-reattach"

    def __init__(self) -> None:
        super().__init__()
        self._last_by_agent: Dict[str, Tuple[RuntimeFile, ...]] = {}

    async def prepare_session(self, *, context):
        if context.trigger == "reattachment":
            files = self._last_by_agent.get(context.agent_id)
            if files is not None:
                # The box survived: hand back the files this replica delivered last, at this Session's path.
                return RuntimeMaterials(files=files, environment=self._session_environment(context))
        materials = await super().prepare_session(context=context)
        self._last_by_agent[context.agent_id] = tuple(materials.files)
        return materials
