"""Fabrikam's runtime preparation provider.

Records, fences and credentials are the deployment's (the reference provider's client); consent is not: it
lives in Fabrikam's own consent service, ``https://consent.fabrikam.example``, which answers
``GET /v2/consents/<principal>`` with ``{"state": "GRANTED" | "AWAITING_USER", "grant_url": ...}``. Every
prepare_session and prepare_turn reads it again (consent can be withdrawn at any time), and the one offered
user action re-reads it.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any, Dict, Mapping
from urllib.parse import quote

from reference_provider.deployment import DeploymentError, settled
from reference_provider.provider import ReferenceProvider

CONSENT_URL = os.environ.get("FABRIKAM_CONSENT_URL", "https://consent.fabrikam.example")

#: Fabrikam's consent states, in the platform's words.
_STATUS = {"GRANTED": "granted", "AWAITING_USER": "pending"}


def read_consent(principal_id: str) -> Dict[str, Any]:
    """Ask the consent service about one principal (blocking; run it in a worker thread)."""
    request = urllib.request.Request(
        CONSENT_URL + "/v2/consents/" + quote(principal_id, safe=""), headers={"Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            body = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        exc.close()
        raise DeploymentError("consent service answered %d" % exc.code) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DeploymentError("consent service unreachable: %s" % type(exc).__name__) from None
    state = body.get("state") if isinstance(body, dict) else None
    if state not in _STATUS:
        raise DeploymentError("consent service answered an unknown state")
    answer: Dict[str, Any] = {"status": _STATUS[state]}
    url = body.get("grant_url")
    if isinstance(url, str) and url.startswith("https://"):
        answer["url"] = url
    return answer


class FabrikamProvider(ReferenceProvider):
    name = "fabrikam"

    async def _consent(self, client, principal_id: str, *, check: bool = False) -> Mapping[str, Any]:
        # A check is a fresh read: the consent service has no check request of its own.
        return await settled(read_consent, principal_id)
