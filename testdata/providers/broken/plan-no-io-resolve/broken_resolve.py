"""Deliberately broken fixture for PLAN-NO-IO: plan puts the fully qualified host name in the declaration.

socket.getfqdn does a reverse lookup (gethostbyaddr): name resolution is I/O, and plan must be a pure
function of the configuration.
"""

from __future__ import annotations

import socket

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-plan-no-io-resolve"

    def _declaration(self, config):
        declaration = super()._declaration(config)
        declaration["planned_on"] = "yes" if socket.getfqdn("localhost") else "no"
        return declaration
