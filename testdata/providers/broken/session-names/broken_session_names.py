"""Deliberately broken fixture for SESSION-NAMES: the file name is ../token.json.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SESSION-NAMES; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-session-names"

    TOKEN_FILE = "../token.json"

    def _session_environment(self, context):
        return {}  # context.file_path refuses the unsafe name; no variable names the file
