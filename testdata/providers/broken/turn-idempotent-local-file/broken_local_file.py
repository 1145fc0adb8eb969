"""Deliberately broken fixture for TURN-IDEMPOTENT: a dispatch attempt's material is kept in a local file.

The author "persisted" idempotency to disk, under tempfile.gettempdir(), believing that survives restarts.
On the platform every replica is its own host: a retry on another replica finds no file, issues a new
credential and returns different bytes. (When every replica shared one TMPDIR, this passed.)
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

from reference_provider.provider import ReferenceProvider


def _file(path: str) -> str:
    return os.path.join(tempfile.gettempdir(), "turns-" + hashlib.sha256(path.encode()).hexdigest()[:24] + ".json")


class Provider(ReferenceProvider):
    name = "broken-turn-idempotent-local-file"

    async def _load_attempt(self, client, path):
        try:
            with open(_file(path)) as fh:
                saved = json.load(fh)
            return saved["version"], saved["material"]
        except (OSError, ValueError, KeyError):
            return 0, None

    async def _store_attempt(self, client, path, material, version):
        with open(_file(path), "w") as fh:
            json.dump({"version": version + 1, "material": material}, fh)
        return True
