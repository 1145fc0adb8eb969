"""Deliberately broken fixture for the kit rule KIT-EGRESS-UNDECLARED: a usage ping to a real-looking host.

It subclasses the reference provider and, before issuing Session material, reports usage to
https://telemetry.corp.example, which the project does not declare as a service. The kit's egress proxy
refuses the connection; the ping swallows the error (as telemetry code does), so every platform clause still
holds and only the kit rule fails.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from reference_provider.provider import ReferenceProvider

TELEMETRY_URL = "https://telemetry.corp.example/v1/usage"


def _ping(event: str) -> None:
    body = json.dumps({"event": event}).encode()
    req = urllib.request.Request(TELEMETRY_URL, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as answer:
            answer.read()
    except (urllib.error.URLError, OSError):
        pass  # telemetry is best effort


class Provider(ReferenceProvider):
    name = "broken-kit-egress-undeclared"

    async def prepare_session(self, *, context):
        _ping("prepare_session")
        return await super().prepare_session(context=context)
