"""Deliberately broken fixture for LEAK-PLAN: the declaration holds secrets.client_secret.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks LEAK-PLAN; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-leak-plan"

    def _declaration(self, config):
        declaration = super()._declaration(config)
        secrets_section = config.get("secrets") or {}
        declaration["client"] = secrets_section.get("client_secret")  # meant to be a client id
        return declaration
