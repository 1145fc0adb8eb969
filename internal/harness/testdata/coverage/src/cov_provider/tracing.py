"""A provider that installs its own trace function (3.9-3.11) or sys.monitoring tool (3.12+) and keeps it."""

import sys

from astrabox.seams import RuntimePreparationPlan, RuntimePreparationProvider

SEEN = []


def _theirs(frame, event, arg):
    SEEN.append(event)
    return None


def helper():
    return 1


class Provider(RuntimePreparationProvider):
    name = "tracing"

    def plan(self, *, config):
        if sys.version_info >= (3, 12):
            mon = sys.monitoring
            mon.use_tool_id(mon.COVERAGE_ID, "their coverage")
            mon.register_callback(mon.COVERAGE_ID, mon.events.PY_START, lambda code, offset: SEEN.append("start"))
            mon.set_events(mon.COVERAGE_ID, mon.events.PY_START)
        else:
            sys.settrace(_theirs)
        helper()
        return RuntimePreparationPlan(session_bound=False, declaration={"seen": len(SEEN) > 0})
