"""Deliberately broken fixture for EP-NAME: the name is a property that differs per instance.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks EP-NAME; everything else stays correct.
"""

from __future__ import annotations

import uuid

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    def __init__(self) -> None:
        super().__init__()
        self._instance_name = "broken-" + uuid.uuid4().hex[:12]

    @property  # type: ignore[override]
    def name(self) -> str:
        return self._instance_name
