"""Deliberately broken fixture for PLAN-STABLE: the declaration holds the current time.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks PLAN-STABLE; everything else stays correct.
"""

from __future__ import annotations

import time

from astrabox.seams import RuntimePreparationPlan
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-plan-stable"

    def plan(self, *, config):
        plan = super().plan(config=config)
        declaration = dict(plan.declaration)
        declaration["planned_at"] = time.time()  # churns the runtime generation on every plan
        return RuntimePreparationPlan(session_bound=plan.session_bound, declaration=declaration)
