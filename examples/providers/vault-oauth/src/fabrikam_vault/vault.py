"""A client for Vault's KV version 2 secrets engine (``/v1/secret/data/<path>``).

Reads return the stored data and its version; writes are always check-and-set (``options.cas``): ``cas=0``
creates a secret only if it does not exist, ``cas=N`` replaces version ``N`` only. Vault answers a
check-and-set mismatch with 400; a write Vault refuses by policy (here: a fenced operation) with 403.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Tuple
from urllib.parse import quote

from .http import Answer, ServiceError, request, settled, timeout_for

__all__ = ["VAULT_ADDR", "Vault", "Written"]

#: Fabrikam's Vault cluster. ``VAULT_ADDR`` overrides it, as for the vault CLI.
VAULT_ADDR = "https://vault.fabrikam.example:8200"
#: The KV v2 mount the provider keeps its state under.
MOUNT = "secret"
#: The header an operation's writes carry, so that a fence can refuse them.
OPERATION_HEADER = "X-Fabrikam-Operation"


class Written:
    """The outcome of a check-and-set write: ``ok`` (applied), ``conflict`` (version moved) or ``refused``."""

    OK = "ok"
    CONFLICT = "conflict"
    REFUSED = "refused"


class Vault:
    """Talks to Vault KV v2 within a deadline; writes carry ``operation_id`` when one is given."""

    def __init__(self, *, deadline: Optional[float] = None, operation_id: Optional[str] = None) -> None:
        self.addr = (os.environ.get("VAULT_ADDR", "") or VAULT_ADDR).rstrip("/")
        self.deadline = deadline
        self.operation_id = operation_id

    def _url(self, *segments: str) -> str:
        return "%s/v1/%s/data/%s" % (self.addr, MOUNT, "/".join(quote(str(s), safe="") for s in segments))

    def _headers(self, write: bool) -> Dict[str, str]:
        headers = {}
        token = os.environ.get("VAULT_TOKEN", "")
        if token:
            headers["X-Vault-Token"] = token
        if write:
            headers["Content-Type"] = "application/json"
            if self.operation_id:
                headers[OPERATION_HEADER] = self.operation_id
        return headers

    async def read(self, *segments: str) -> Tuple[int, Optional[Dict[str, Any]]]:
        """Return ``(version, data)`` of the secret, or ``(0, None)`` when it does not exist."""
        answer: Answer = await settled(
            lambda: request("GET", self._url(*segments), headers=self._headers(False), timeout=timeout_for(self.deadline))
        )
        if answer.status == 404:
            return 0, None
        outer = answer.body.get("data") if isinstance(answer.body, dict) else None
        if answer.status != 200 or not isinstance(outer, dict):
            raise ServiceError("vault read of %s answered %d" % ("/".join(segments[:1]), answer.status))
        metadata = outer.get("metadata") if isinstance(outer.get("metadata"), dict) else {}
        data = outer.get("data")
        if metadata.get("deletion_time") or not isinstance(data, dict):
            return int(metadata.get("version") or 0), None
        return int(metadata.get("version") or 0), data

    async def write(self, data: Dict[str, Any], cas: int, *segments: str) -> str:
        """Write ``data`` if the secret is still at version ``cas``; see :class:`Written`."""
        body = json.dumps({"options": {"cas": int(cas)}, "data": data}, sort_keys=True).encode("utf-8")
        answer: Answer = await settled(
            lambda: request(
                "POST", self._url(*segments), body=body, headers=self._headers(True), timeout=timeout_for(self.deadline)
            )
        )
        if answer.status in (200, 204):
            return Written.OK
        if answer.status == 400 and "check-and-set" in json.dumps(answer.body):
            return Written.CONFLICT
        if answer.status == 403:
            return Written.REFUSED
        raise ServiceError("vault write of %s answered %d" % ("/".join(segments[:1]), answer.status))
