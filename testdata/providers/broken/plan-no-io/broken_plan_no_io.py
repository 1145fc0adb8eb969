"""Deliberately broken fixture for PLAN-NO-IO: plan reads a file.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks PLAN-NO-IO; everything else stays correct.
"""

from __future__ import annotations

import json
import os

from astrabox.seams import RuntimePreparationPlan
from reference_provider.provider import ReferenceProvider

_DEFAULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "declaration-defaults.json")


class Provider(ReferenceProvider):
    name = "broken-plan-no-io"

    def plan(self, *, config):
        with open(_DEFAULTS, encoding="utf-8") as handle:  # I/O in plan: the breach
            defaults = json.load(handle)
        plan = super().plan(config=config)
        declaration = dict(defaults)
        declaration.update(plan.declaration)
        return RuntimePreparationPlan(session_bound=plan.session_bound, declaration=declaration)
