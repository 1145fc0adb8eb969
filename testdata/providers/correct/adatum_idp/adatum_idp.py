"""Adatum's runtime preparation provider.

Records, fences and credentials are the deployment's, handled by the reference provider's logic. Consent is
Adatum's own: its identity provider, ``https://idp.adatum.example``, keeps one grant per subject and scope.

    GET /v2/subjects/<subject>/grants/agent-tools
        200 {"subject": ..., "scope": "agent-tools", "granted_at": ...}    the subject consented
        403 {"error": "consent_required", ...}                             they have not (or withdrew it)
    GET /v2/subjects/<subject>/consent-requests/agent-tools
        200 {"consent_uri": "https://..."}                                 where the subject gives consent

Every callback that depends on consent asks the identity provider again (a grant can be withdrawn at any
moment). Each lookup opens one HTTPS connection (``http.client``), keeps it for the consent request that
follows a 403, and closes it before the callback goes on. The blocking lookup runs in a worker thread that a
cancelled callback still waits for (``settled``).
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
from typing import Any, Dict, Mapping, Tuple
from urllib.parse import quote, urlsplit

from reference_provider.deployment import DeploymentError, settled
from reference_provider.provider import ReferenceProvider

IDP_URL = os.environ.get("ADATUM_IDP_URL", "https://idp.adatum.example")
SCOPE = "agent-tools"
USER_AGENT = "adatum-agent-runtime/3.2"


class IdentityProviderError(DeploymentError):
    """The identity provider could not be asked, or answered something this client does not understand."""


class _IdpConnection:
    """One keep-alive HTTPS connection to the identity provider, for the requests of one lookup."""

    def __init__(self, base: str) -> None:
        parts = urlsplit(base)
        if parts.scheme != "https" or not parts.hostname:
            raise IdentityProviderError("ADATUM_IDP_URL must be an https:// URL")
        self._conn = http.client.HTTPSConnection(
            parts.hostname, parts.port or 443, timeout=5, context=ssl.create_default_context()
        )

    def get_json(self, path: str) -> Tuple[int, Dict[str, Any]]:
        self._conn.request("GET", path, headers={"Accept": "application/json", "User-Agent": USER_AGENT})
        response = self._conn.getresponse()
        raw = response.read()  # read to the end, so that the next request may reuse the connection
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            raise IdentityProviderError("the identity provider answered %d with a body that is not JSON" % response.status) from None
        return response.status, doc if isinstance(doc, dict) else {}

    def close(self) -> None:
        self._conn.close()


def look_up_grant(subject: str) -> Dict[str, Any]:
    """Ask the identity provider whether ``subject`` granted the agent-tools scope (blocking).

    Returns the consent answer in the reference provider's shape: ``{"status": "granted"}``, or
    ``{"status": "pending", "url": <consent URI>}`` while the subject has not consented.
    """
    who = quote(subject, safe="")
    conn = _IdpConnection(IDP_URL)
    try:
        status, grant = conn.get_json("/v2/subjects/%s/grants/%s" % (who, SCOPE))
        if status == 200:
            return {"status": "granted"}
        if status != 403 or grant.get("error") != "consent_required":
            raise IdentityProviderError("the identity provider answered %d to the grant lookup" % status)
        answer: Dict[str, Any] = {"status": "pending"}
        status, request = conn.get_json("/v2/subjects/%s/consent-requests/%s" % (who, SCOPE))
        uri = request.get("consent_uri") if status == 200 else None
        if isinstance(uri, str) and uri.startswith("https://"):
            answer["url"] = uri
        return answer
    except (OSError, http.client.HTTPException) as exc:
        raise IdentityProviderError("the identity provider could not be reached: %s" % type(exc).__name__) from None
    finally:
        conn.close()


class AdatumProvider(ReferenceProvider):
    name = "adatum"

    async def _consent(self, client, principal_id: str, *, check: bool = False) -> Mapping[str, Any]:
        # The identity provider has no "check again" request: a check is one more lookup.
        return await settled(look_up_grant, principal_id)
