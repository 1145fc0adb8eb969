"""Deliberately broken fixture for SYNC-IDENTITY: the external record is keyed by Agent ID plus config version.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SYNC-IDENTITY; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-sync-identity"

    def _agent_record_key(self, context):
        return ("agents", "%s-v%d" % (context.operation.agent_id, context.config_version))
