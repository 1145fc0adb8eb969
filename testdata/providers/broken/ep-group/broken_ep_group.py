"""Deliberately broken fixture for EP-GROUP: a second provider declared in a near-miss entry-point group.

The distribution declares Provider in the real group and AuditProvider in a misspelt one
("runtime-preparation" with a hyphen): the platform never sees AuditProvider.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks EP-GROUP; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-ep-group"


class AuditProvider(ReferenceProvider):
    name = "broken-ep-group-audit"
