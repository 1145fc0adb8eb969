"""Deliberately broken fixture for RECOVER-TRUTH: one fence is taken to cover every operation of the Agent.

The author believes a fence works like a lease epoch: once this replica has had one operation of an Agent
fenced, every older write of that Agent is refused, so ``recover`` of any further operation of the same
Agent answers True at once, sparing a request. But the deployment's fences name one operation: a second
operation lost with its host, whose write is still held, is not fenced by the first one's fence, and its
write lands after ``recover`` said True.

So the breach needs, in this order: two synchronize operations of one Agent lost with their hosts while
their writes are held (the second's write still pending), ``recover`` of one of them and then of the other on
the same replica (the memory is this process's), and the release of the held writes after both answered.
Recovering each lost operation on its own replica, or releasing in between, fences every operation as the
reference does.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only ``recover``.
"""

from __future__ import annotations

import logging
from typing import Set

from reference_provider.provider import ReferenceProvider

logger = logging.getLogger("broken_recover_truth_fenced_agent")


class Provider(ReferenceProvider):
    name = "broken-recover-truth-fenced-agent"

    def __init__(self) -> None:
        super().__init__()
        self._fenced_agents: Set[str] = set()

    async def recover(self, *, operation):
        if operation.agent_id in self._fenced_agents:
            logger.info("recover operation=%s: agent %s already fenced here", operation.operation_id, operation.agent_id)
            return True  # no fence of this operation: its held write can still land
        fenced = await super().recover(operation=operation)
        if fenced:
            self._fenced_agents.add(operation.agent_id)
        return fenced
