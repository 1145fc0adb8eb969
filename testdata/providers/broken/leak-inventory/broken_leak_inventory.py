"""Deliberately broken fixture for LEAK-INVENTORY: synchronize writes the model API key into the box.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks LEAK-INVENTORY; everything else stays correct.
"""

from __future__ import annotations

import posixpath

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-leak-inventory"

    async def synchronize(self, *, context):
        await super().synchronize(context=context)
        key = (context.config.get("secrets") or {}).get("model_api_key")
        if isinstance(key, str):
            path = posixpath.join(context.sandbox.home, ".config", "reference", "model-key")
            await context.sandbox.write_file(path, key.encode("utf-8"), mode=0o600)
