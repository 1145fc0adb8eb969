"""The deployment's consent API (``/v1/consents/<principal>``), at the URL the Agent configuration names."""

from __future__ import annotations

from typing import Any, Mapping, Optional
from urllib.parse import quote, urlsplit

from .http import ServiceError, request, settled, timeout_for

__all__ = ["consent", "deployment_url"]


def deployment_url(config: Optional[Mapping[str, Any]]) -> Optional[str]:
    """``config.deployment.base_url`` when it is an http(s) URL, else None."""
    deployment = config.get("deployment") if isinstance(config, Mapping) else None
    value = deployment.get("base_url") if isinstance(deployment, Mapping) else None
    if not isinstance(value, str):
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return value.rstrip("/")


async def consent(base_url: str, principal_id: str, *, check: bool = False, deadline: Optional[float] = None) -> Mapping[str, Any]:
    """Read the principal's consent, or (``check=True``) ask the consent service to check it again."""
    path = "/v1/consents/" + quote(principal_id, safe="")
    method = "POST" if check else "GET"
    if check:
        path += "/check"
    answer = await settled(lambda: request(method, base_url + path, timeout=timeout_for(deadline)))
    body = answer.body if isinstance(answer.body, dict) else {}
    if answer.status != 200 or not isinstance(body.get("status"), str):
        raise ServiceError("%s /v1/consents answered %d" % (method, answer.status))
    return body
