"""Deliberately broken fixture for PLAN-NO-IO: plan declares the skill bundles it finds on disk.

os.scandir of a directory is I/O: the plan then depends on the host's files, not on the configuration.
"""

from __future__ import annotations

import os

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-plan-no-io-listdir"

    def _declaration(self, config):
        declaration = super()._declaration(config)
        here = os.path.dirname(os.path.abspath(__file__))
        with os.scandir(here) as entries:
            declaration["bundles"] = len([e for e in entries if e.name.endswith(".bundle")])
        return declaration
