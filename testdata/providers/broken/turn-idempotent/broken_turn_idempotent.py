"""Deliberately broken fixture for TURN-IDEMPOTENT: per-attempt material is cached in process memory only.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks TURN-IDEMPOTENT; everything else stays correct.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-turn-idempotent"

    def __init__(self) -> None:
        super().__init__()
        self._attempts: Dict[str, Tuple[int, Any]] = {}

    async def _load_attempt(self, client, path):
        return self._attempts.get(path, (0, None))

    async def _store_attempt(self, client, path, material, version):
        if self._attempts.get(path, (0, None))[0] != version:
            return False
        self._attempts[path] = (version + 1, material)
        return True
