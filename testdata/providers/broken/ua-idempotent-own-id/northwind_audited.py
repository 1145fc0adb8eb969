"""Northwind's provider, plus an audit trail: every consent check files a new audit record.

The audit entry is keyed by a fresh id, so clicking "Check my consent again" twice, or on two replicas, files
two entries for one pending requirement: a new external effect on every call (UA-IDEMPOTENT).
"""

import uuid

from northwind_tools import CHECK, NorthwindTools, _key


class AuditedNorthwindTools(NorthwindTools):
    name = "northwind-tools-audited"

    async def perform_user_action(self, *, context, action_id):
        if action_id == CHECK.id:
            entry = {"session": context.session_id, "action": action_id}
            await self._http("PUT", _key("northwind-audit", context.owner_id, uuid.uuid4().hex), {"value": entry})
        return await super().perform_user_action(context=context, action_id=action_id)
