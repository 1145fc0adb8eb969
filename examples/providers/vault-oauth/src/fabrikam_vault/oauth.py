"""OAuth2 client credentials (RFC 6749, section 4.4) against Fabrikam's login service."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional
from urllib.parse import urlencode

from .http import ServiceError, request, settled, timeout_for

__all__ = ["TOKEN_URL", "issue_token"]

#: Fabrikam's token endpoint. ``FABRIKAM_TOKEN_URL`` overrides it.
TOKEN_URL = "https://login.fabrikam.example/oauth2/token"
#: The OAuth client this provider is registered as.
CLIENT_ID = "agent-runtime"


async def issue_token(principal_id: str, audience: str, *, deadline: Optional[float] = None) -> Dict[str, Any]:
    """Ask for a fresh access token for ``principal_id``; returns the token endpoint's JSON answer."""
    url = os.environ.get("FABRIKAM_TOKEN_URL", "") or TOKEN_URL
    form = urlencode(
        {
            "grant_type": "client_credentials",
            "client_id": CLIENT_ID,
            "audience": audience,
            "scope": "tools principal:" + principal_id,
        }
    ).encode("ascii")
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    answer = await settled(lambda: request("POST", url, body=form, headers=headers, timeout=timeout_for(deadline)))
    body = answer.body if isinstance(answer.body, dict) else {}
    if answer.status != 200 or not isinstance(body.get("access_token"), str) or not body["access_token"]:
        raise ServiceError("token endpoint answered %d" % answer.status)
    return body
