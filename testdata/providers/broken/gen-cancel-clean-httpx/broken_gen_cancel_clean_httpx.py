"""Brightwave, but writes are plain awaits (no shield, no drain): a cancellation while the attempt's credential
POST is in flight unwinds the turn and httpx's request is abandoned mid-flight; the fake may still apply it."""
from typing import Any

import httpx

from brightwave.provider import BrightwaveProvider


class Provider(BrightwaveProvider):
    name = "broken-gen-cancel-clean-httpx"

    async def _write(self, method: str, url: str, *, key: str, json_body: Any) -> httpx.Response:
        return await self._send(method, url, json=json_body, headers={"Idempotency-Key": key})
