"""Deliberately broken fixture for TURN-FILES-ONLY: prepare_turn returns an environment.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks TURN-FILES-ONLY; everything else stays correct.
"""

from __future__ import annotations

from astrabox.seams import RuntimeMaterials
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-turn-files-only"

    async def prepare_turn(self, *, context):
        materials = await super().prepare_turn(context=context)
        return RuntimeMaterials(
            files=materials.files,
            environment={self.TOKEN_ENV: context.file_path(self.TOKEN_FILE)},
            turn_validity_seconds=materials.turn_validity_seconds,
        )
