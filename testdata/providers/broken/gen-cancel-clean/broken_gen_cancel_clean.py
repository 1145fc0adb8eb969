"""Deliberately broken fixture for GEN-CANCEL-CLEAN: a cancelled request is left running.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks GEN-CANCEL-CLEAN; everything else stays correct.
"""

from __future__ import annotations

import asyncio

from reference_provider.deployment import DeploymentClient, record_path
from reference_provider.provider import ReferenceProvider


class HastyClient(DeploymentClient):
    async def request(self, method, path, body=None, if_match=None):
        # Plain to_thread: a cancellation returns at once while the thread (and its write) goes on.
        return await asyncio.to_thread(self.request_blocking, method, path, body, if_match)


class Provider(ReferenceProvider):
    name = "broken-gen-cancel-clean"

    def _client(self, config, *, deadline=None, operation_id=None):
        base = super()._client(config, deadline=deadline, operation_id=operation_id)
        return HastyClient(base.base_url, deadline=deadline, operation_id=operation_id)

    async def prepare_turn(self, *, context):
        # A first write per attempt (the double slows it in the deadlines scenario): when the platform cancels
        # the turn meanwhile, the thread keeps going and the write lands after prepare_turn settled.
        client = self._client(None, deadline=context.deadline)
        await client.request(
            "PUT",
            record_path("turn-starts", context.session_id, context.dispatch_attempt_id),
            {"value": {"refresh": bool(context.refresh)}},
        )
        return await super().prepare_turn(context=context)
