"""Northwind's provider whose recover reads a 503 from the fence service as "the operation is gone anyway".

A 503 means nothing was fenced: the lost operation's delayed write still lands after recover said True
(RECOVER-TRUTH).
"""

from northwind_tools import NorthwindTools, Unreachable


class OptimisticNorthwindTools(NorthwindTools):
    name = "northwind-tools-optimistic"

    async def recover(self, *, operation):
        try:
            status, body = await self._http(
                "POST", "/v1/fences", {"agent_id": operation.agent_id, "operation_id": operation.operation_id},
                deadline=operation.deadline,
            )
        except Unreachable:
            return False
        if status == 503:
            return True  # the fence service is overloaded; an operation this old has surely stopped
        return status == 200 and (body or {}).get("fenced") == operation.operation_id
