"""Deliberately broken fixture for SESSION-FILE-PATH: the environment names the file by a hard-coded path.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SESSION-FILE-PATH; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-session-file-path"

    def _session_environment(self, context):
        return {self.TOKEN_ENV: "/home/workload/.config/reference/token.json"}
