"""Deliberately broken fixture for SESSION-ENV-RESERVED: returns HOME.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SESSION-ENV-RESERVED; everything else stays correct.
"""

from __future__ import annotations

import posixpath

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-session-env-reserved"

    def _session_environment(self, context):
        environment = super()._session_environment(context)
        environment["HOME"] = posixpath.dirname(context.file_path(self.TOKEN_FILE))
        return environment
