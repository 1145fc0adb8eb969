"""Deliberately broken fixture for PLAN-STABLE: the declaration lists the enabled features through a set.

``list(set(...))`` of strings follows the string-hash order, which differs between interpreter processes
(PYTHONHASHSEED): two replicas plan different declarations for the same configuration and the runtime
generation churns. (When every replica was forked from one process, they shared the seed and this passed.)
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider

_FEATURES = ("tools", "skills", "memory", "web", "files", "voice", "vision", "code", "search", "mail")


class Provider(ReferenceProvider):
    name = "broken-plan-stable-set-order"

    def _declaration(self, config):
        declaration = super()._declaration(config)
        declaration["features"] = list(set(_FEATURES))
        return declaration
