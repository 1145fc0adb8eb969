"""Deliberately broken fixture for SESSION-REDACTION: a RuntimeFile subclass whose repr shows its bytes.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SESSION-REDACTION; everything else stays correct.
"""

from __future__ import annotations

import secrets

from astrabox.seams import RuntimeFile, RuntimeMaterials
from reference_provider.provider import ReferenceProvider


class InspectableFile(RuntimeFile):
    """A debugging aid left in: shows the content in repr and str."""

    def __repr__(self) -> str:
        return "InspectableFile(name=%r, content=%r)" % (self.name, self.content)

    __str__ = __repr__


class Provider(ReferenceProvider):
    name = "broken-session-redaction"

    async def prepare_session(self, *, context):
        materials = await super().prepare_session(context=context)
        session_key = secrets.token_hex(24).encode("ascii")  # generated here: no planted canary in it
        return RuntimeMaterials(
            files=tuple(materials.files) + (InspectableFile(name="session.key", content=session_key),),
            environment=materials.environment,
        )
