"""Tailspin's runtime preparation provider.

Tailspin ported the reference provider's logic to its own systems: its records, fences and access tokens live
in Tailspin's object store (``https://objects.tailspin.example/v2/...``), reached with ``http.client`` over
TLS (which reads no proxy variables) and the default SSL context. Only consent still comes from the
deployment's consent API. ``TailspinClient`` answers the reference's record, fence and credential requests
with the store's own API:

* ``GET /v2/objects/<key>``: ``{"revision": N, "data": ...}``, or 404;
* ``POST /v2/objects/<key>`` with ``{"expect_revision": N, "data": ..., "operation": ...}``: 201, 409 when the
  revision moved, 423 when the operation has been fenced;
* ``POST /v2/fences`` with ``{"operation": ..., "agent": ...}``: 200 ``{"operation": ...}``;
* ``POST /v2/tokens`` with ``{"subject": ..., "audience": ...}``: 201 ``{"token": ..., "ttl": ...}``.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from typing import Any, Mapping, Optional, Tuple

from reference_provider.deployment import Answer, DeploymentClient, DeploymentError, deployment_url, settled
from reference_provider.provider import ReferenceProvider

STORE_HOST = "objects.tailspin.example"
RECORDS = "/v1/records/"

_tls_lock = threading.Lock()
_tls: Optional[ssl.SSLContext] = None


def _context() -> ssl.SSLContext:
    """The default SSL context (system trust, hostname checks), made once per process."""
    global _tls
    with _tls_lock:
        if _tls is None:
            _tls = ssl.create_default_context()
        return _tls


class TailspinClient:
    """The reference's client interface, answered by Tailspin's object store (consent by the deployment)."""

    def __init__(self, deployment: DeploymentClient, *, deadline: Optional[float], operation_id: Optional[str]) -> None:
        self.deployment = deployment
        self.deadline = deadline
        self.operation_id = operation_id

    def _timeout(self) -> float:
        if self.deadline is None:
            return 5.0
        return min(5.0, max(0.5, self.deadline - time.time()))

    def _store(self, method: str, path: str, payload: Any = None) -> Tuple[int, Any]:
        connection = http.client.HTTPSConnection(STORE_HOST, 443, timeout=self._timeout(), context=_context())
        try:
            headers = {"Accept": "application/json"}
            data = None
            if payload is not None:
                data = json.dumps(payload, sort_keys=True).encode("utf-8")
                headers["Content-Type"] = "application/json"
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            return response.status, (json.loads(raw) if raw else None)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise DeploymentError("%s %s failed: %s" % (method, path, type(exc).__name__)) from None
        finally:
            connection.close()

    def request_blocking(self, method: str, path: str, body: Any = None, if_match: Optional[int] = None) -> Answer:
        body = body if isinstance(body, Mapping) else {}
        if path.startswith(RECORDS):
            key = path[len(RECORDS):]
            if method == "GET":
                status, doc = self._store("GET", "/v2/objects/" + key)
                if status == 200 and isinstance(doc, Mapping):
                    return Answer(200, {"version": doc.get("revision"), "value": doc.get("data")})
                return Answer(status, None)
            payload = {"expect_revision": int(if_match or 0), "data": body.get("value")}
            if self.operation_id:
                payload["operation"] = self.operation_id
            status, _ = self._store("POST", "/v2/objects/" + key, payload)
            return Answer({201: 200, 409: 412, 423: 409}.get(status, status), None)
        if path == "/v1/fences":
            status, doc = self._store("POST", "/v2/fences", {"operation": body.get("operation_id"), "agent": body.get("agent_id")})
            fenced = doc.get("operation") if isinstance(doc, Mapping) else None
            return Answer(status, {"fenced": fenced})
        if path == "/v1/credentials":
            status, doc = self._store("POST", "/v2/tokens", {"subject": body.get("principal_id"), "audience": body.get("audience")})
            if status == 201 and isinstance(doc, Mapping):
                return Answer(200, {"token": doc.get("token"), "expires_in": doc.get("ttl")})
            return Answer(status, None)
        return self.deployment.request_blocking(method, path, body or None, if_match)

    async def request(self, method: str, path: str, body: Any = None, if_match: Optional[int] = None) -> Answer:
        return await settled(self.request_blocking, method, path, body, if_match)


class TailspinProvider(ReferenceProvider):
    name = "tailspin-objects"
    TOKEN_FILE = "tailspin-token.json"
    TOKEN_ENV = "TAILSPIN_TOKEN_FILE"

    def _client(self, config, *, deadline=None, operation_id=None):
        deployment = DeploymentClient(deployment_url(config), deadline=deadline, operation_id=None)
        return TailspinClient(deployment, deadline=deadline, operation_id=operation_id)
