"""Deliberately broken fixture for GEN-CANCEL-CLEAN: a cancelled request is left running.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks GEN-CANCEL-CLEAN; everything else stays correct.
"""

from __future__ import annotations

import asyncio

from reference_provider.deployment import DeploymentClient
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
